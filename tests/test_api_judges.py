"""API judges against a loopback server through the official SDKs (no Ray needed here:
these judges have no rate limit, so no limiter actor is created)."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from tests.fake_api_server import FakeAPIServer
from voirdire.judges.api_common import (
    ResponseCache,
    bucket_for,
    cost_usd,
    price_for,
    redact,
)
from voirdire.judges.base import JudgeContext, Query, Sampling, get_backend

from voirdire.core import ConfigError, FailureClass

KEYS = {"openai": "sk-test-0penai-SECRETKEY-1234567890", "anthropic": "test-anthropic-key-SECRETKEY-0987654321"}
ENV = {"openai": "VOIRDIRE_TEST_OPENAI_KEY", "anthropic": "VOIRDIRE_TEST_ANTHROPIC_KEY"}
MODEL = {"openai": "gpt-4o", "anthropic": "claude-3-5-sonnet-20241022"}
FAULTS = [  # (kind, times): a prompt containing "#kind#" gets the fault that many times
    ("429", 1), ("500", 1), ("503", None), ("529", None), ("slow", None), ("drop", None),
    ("malformed", None), ("context", None), ("filter", None), ("auth", None),
]
EXPECTED = {
    "ok": None, "429": None, "500": None,  # transient: the SDK's retry succeeds
    "503": FailureClass.SERVER_ERROR, "529": FailureClass.SERVER_ERROR, "slow": FailureClass.TIMEOUT,
    "drop": FailureClass.SERVER_ERROR, "malformed": FailureClass.MALFORMED_RESPONSE,
    "context": FailureClass.CONTEXT_TOO_LONG, "filter": FailureClass.CONTENT_FILTERED, "auth": FailureClass.REFUSED,
}


@pytest.fixture(scope="module")
def server():
    srv = FakeAPIServer(keys=KEYS, slow_s=2.0, retry_after_ms=20,
                        faults=[{"kind": k, "match": f"#{k}#", "times": t} for k, t in FAULTS]).start()
    old = {k: os.environ.get(v) for k, v in ENV.items()}
    for api, var in ENV.items():
        os.environ[var] = KEYS[api]
    yield srv
    srv.stop()
    for api, var in ENV.items():
        if old[api] is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old[api]


def _judge(api: str, server: FakeAPIServer, tmp_path: Path, **kw):
    cls = get_backend(api)
    settings = cls.Settings(model=MODEL[api], base_url=server.url + ("/v1" if api == "openai" else ""),
                            api_key_env=ENV[api], timeout_s=0.5, sdk_max_retries=1, retry_backoff_s=0.01,
                            **kw)
    ctx = JudgeContext(judge=f"{api}-judge", benchmark="MTBench", data_dir=None, output_dir=str(tmp_path),
                       sampling=Sampling(max_tokens=64), concurrency=8, identity_hash="0" * 32)
    cls.preflight(settings, ctx)
    return cls(settings, ctx)


def _query(tag: str, rep: int = 1, prompt: str | None = None) -> Query:
    return Query(unit_id=f"u-{tag}-{rep}", query_id=f"q-{tag}", benchmark="MTBench", question_id="81",
                 shown=("a", "b"), repetition=rep, option_mode=3, prompt=prompt or f"Judge these answers. #{tag}#")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_every_fault_ends_as_output_or_its_failure_class(api, server, tmp_path):
    judge = _judge(api, server, tmp_path, cache="off")
    queries = [_query(tag) for tag in EXPECTED]

    async def go():
        try:
            return await judge.judge(queries)
        finally:
            await judge.aclose()

    results = asyncio.run(go())
    assert sorted(r.unit_id for r in results) == sorted(q.unit_id for q in queries)  # exactly once each
    by_id = {r.unit_id: r for r in results}
    for tag, expected in EXPECTED.items():
        r = by_id[f"u-{tag}-1"]
        assert (r.output is None) != (r.failure is None), (tag, r)
        if expected is None:
            assert r.failure is None and "[[" in r.output, (tag, r.failure_message)
            assert r.input_tokens and r.output_tokens and r.cost_usd > 0
        else:
            assert r.failure == expected.value, (tag, r.failure, r.failure_message)
            assert r.failure_message
        for key in KEYS.values():
            assert key not in (r.failure_message or "") and key not in (r.output or "")
    # the 401 message echoed the key: it was redacted
    assert "[redacted]" in by_id["u-auth-1"].failure_message


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_cache_answers_repeats_without_a_call_and_keeps_repetitions_apart(api, server, tmp_path):
    def run(queries):
        judge = _judge(api, server, tmp_path, cache="job")

        async def go():
            try:
                return await judge.judge(queries)
            finally:
                await judge.aclose()

        return asyncio.run(go())

    prompt = f"cache test {api} #ok#"
    before = server.stats["ok"][api]
    first = run([_query("c", 1, prompt), _query("c", 2, prompt)])
    assert server.stats["ok"][api] == before + 2  # two repetitions, two paid calls
    assert not any(r.cached for r in first)
    again = run([_query("c", 1, prompt), _query("c", 2, prompt), _query("c", 3, prompt)])
    assert server.stats["ok"][api] == before + 3  # only the new repetition was paid
    cached = {r.unit_id: r for r in again if r.cached}
    assert set(cached) == {"u-c-1", "u-c-2"} and all(r.cost_usd == 0.0 for r in cached.values())
    assert (tmp_path / "api_cache.sqlite").is_file()


def test_context_window_checked_before_any_call(server, tmp_path):
    judge = _judge("openai", server, tmp_path, cache="off", context_window=200)
    before = server.stats["requests"]
    results = asyncio.run(judge.judge([_query("long", prompt="x" * 2000), _query("short", prompt="#ok#")]))
    by_id = {r.unit_id: r for r in results}
    assert by_id["u-long-1"].failure == FailureClass.CONTEXT_TOO_LONG.value
    assert "not sent" in by_id["u-long-1"].failure_message
    assert by_id["u-short-1"].failure is None
    assert server.stats["requests"] == before + 1


def test_missing_key_is_a_config_error_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("VOIRDIRE_NO_SUCH_KEY", raising=False)
    cls = get_backend("anthropic")
    settings = cls.Settings(model="claude-3-5-sonnet-20241022", api_key_env="VOIRDIRE_NO_SUCH_KEY")
    with pytest.raises(ConfigError, match="VOIRDIRE_NO_SUCH_KEY"):
        cls.preflight(settings, JudgeContext(judge="c", benchmark="MTBench", data_dir=None, output_dir=None))
    with pytest.raises(Exception, match="NAME of an environment variable"):
        cls.Settings(model="m", api_key_env="sk-ant-api03-abc/def")
    compat = get_backend("openai_compatible")
    with pytest.raises(ConfigError, match="base_url"):
        compat.preflight(compat.Settings(model="llama"), JudgeContext(judge="l", benchmark="b", data_dir=None,
                                                                       output_dir=None))


def test_token_bucket_keeps_every_window_under_the_limit():
    """Reservations asked 4x faster than allowed: the booked times never put more than
    rpm/60 * T requests in any window of T >= 1 s (so never more than rpm in a minute)."""
    rng = random.Random(7)
    rpm = 600.0
    for burst_s in (0.02, 0.1):
        b = bucket_for(rpm, burst_s)
        now, times = 0.0, []
        for _ in range(3000):
            now += rng.expovariate(40.0)
            at = b.earliest(now, 1)
            b.book(at, 1)
            times.append(at)
        times.sort()
        for window in (0.25, 1.0, 5.0, 60.0):
            j = best = 0
            for i, t in enumerate(times):
                while t - times[j] >= window:
                    j += 1
                best = max(best, i - j + 1)
            assert best <= b.capacity + b.rate * window + 1e-9, window
            if window >= 1.0:
                assert best <= rpm / 60.0 * window + 1e-9, (burst_s, window, best)
        sustained = (len(times) - 1) / (times[-1] - times[0])
        assert sustained == pytest.approx(rpm / 60.0 * (1 - burst_s), rel=0.01)


def test_prices_costs_and_redaction():
    assert price_for("gpt-4o-2024-08-06") == (2.50, 10.00)
    assert price_for("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert price_for("claude-3-5-sonnet-20241022") == (3.00, 15.00)
    assert price_for("my-local-llama") is None
    assert price_for("my-local-llama", 1.0, 2.0) == (1.0, 2.0)
    assert cost_usd((2.5, 10.0), 1_000_000, 100_000) == pytest.approx(3.5)
    assert cost_usd((2.5, 10.0), 1_000_000, 100_000, batch=True) == pytest.approx(1.75)
    assert redact("bad key sk-proj-abcdefgh1234 given", None) == "bad key [redacted] given"
    assert ResponseCache.key("h", None, "p", 1) != ResponseCache.key("h", None, "p", 2)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_mode_submits_once_and_resumes_by_reattaching(api, server, tmp_path):
    """Batch mode: one provider batch per call; a second worker (a resumed job, cache off)
    finds the persisted batch id and collects it instead of submitting again."""
    server.config["batch_delay_s"] = 0.3
    queries = [_query(f"b{i}", prompt=f"batch prompt {api} {i}") for i in range(5)]
    queries.append(_query("blong", prompt="y" * 5000))

    def run():
        judge = _judge(api, server, tmp_path, cache="off", batch=True, batch_poll_s=0.1, context_window=1000)

        async def go():
            try:
                return await judge.judge(queries)
            finally:
                await judge.aclose()

        return asyncio.run(go())

    created, paid = server.stats["batches_created"], server.stats["batch_requests"]
    first = run()
    assert server.stats["batches_created"] == created + 1 and server.stats["batch_requests"] == paid + 5
    by_id = {r.unit_id: r for r in first}
    assert by_id["u-blong-1"].failure == FailureClass.CONTEXT_TOO_LONG.value
    ok = [r for r in first if r.failure is None]
    assert len(ok) == 5 and all("[[" in r.output for r in ok)
    full = cost_usd(price_for(MODEL[api]), ok[0].input_tokens, ok[0].output_tokens)
    assert ok[0].cost_usd == pytest.approx(full / 2)  # batch price
    records = list((tmp_path / "api_batches").rglob("*.json"))
    assert len(records) == 1
    second = run()
    assert server.stats["batches_created"] == created + 1 and server.stats["batch_requests"] == paid + 5
    assert {r.unit_id: r.output for r in second} == {r.unit_id: r.output for r in first}
