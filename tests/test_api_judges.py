"""API judges against a loopback server through the official SDKs (no Ray needed here:
these judges have no rate limit, so no limiter actor is created)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_api_server import FakeAPIServer
from voirdire.core import ConfigError, FailureClass
from voirdire.judges.api.cache import ResponseCache
from voirdire.judges.api.errors import redact
from voirdire.judges.api.pricing import cost_usd, facts_for, price_for
from voirdire.judges.api.ratelimit import TokenBucket, bucket_for
from voirdire.judges.base import JudgeContext, Query, Sampling, get_backend

KEYS = {
    "openai": "sk-test-0penai-SECRETKEY-1234567890",
    "anthropic": "test-anthropic-key-SECRETKEY-0987654321",
}
ENV = {"openai": "VOIRDIRE_TEST_OPENAI_KEY", "anthropic": "VOIRDIRE_TEST_ANTHROPIC_KEY"}
MODEL = {"openai": "gpt-4o", "anthropic": "claude-3-5-sonnet-20241022"}
FAULTS = [  # (kind, times): a prompt containing "#kind#" gets the fault that many times
    ("429", 1),
    ("500", 1),
    ("503", None),
    ("529", None),
    ("slow", None),
    ("drop", None),
    ("malformed", None),
    ("context", None),
    ("filter", None),
    ("auth", None),
]
EXPECTED = {
    "ok": None,
    "429": None,
    "500": None,  # transient: the SDK's retry succeeds
    "503": FailureClass.SERVER_ERROR,
    "529": FailureClass.SERVER_ERROR,
    "slow": FailureClass.TIMEOUT,
    "drop": FailureClass.SERVER_ERROR,
    "malformed": FailureClass.MALFORMED_RESPONSE,
    "context": FailureClass.CONTEXT_TOO_LONG,
    "filter": FailureClass.CONTENT_FILTERED,
    "auth": FailureClass.REFUSED,
}


@pytest.fixture(scope="module")
def server():
    srv = FakeAPIServer(
        keys=KEYS,
        slow_s=2.0,
        retry_after_ms=20,
        faults=[{"kind": k, "match": f"#{k}#", "times": t} for k, t in FAULTS],
    ).start()
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
    settings = cls.Settings(
        model=MODEL[api],
        base_url=server.url + ("/v1" if api == "openai" else ""),
        api_key_env=ENV[api],
        timeout_s=0.5,
        **{"max_retries": 1, **kw},
    )
    ctx = JudgeContext(
        judge=f"{api}-judge",
        benchmark="MTBench",
        data_dir=None,
        output_dir=str(tmp_path),
        sampling=Sampling(max_tokens=64),
        concurrency=8,
        identity_hash="0" * 32,
    )
    cls.preflight(settings, ctx)
    cls.check_secrets(settings, ctx)
    return cls(settings, ctx)


def _query(tag: str, rep: int = 1, prompt: str | None = None) -> Query:
    return Query(
        unit_id=f"u-{tag}-{rep}",
        query_id=f"q-{tag}",
        benchmark="MTBench",
        question_id="81",
        shown=("a", "b"),
        repetition=rep,
        option_mode=3,
        prompt=prompt or f"Judge these answers. #{tag}#",
    )


@pytest.mark.slow
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
    assert sorted(r.unit_id for r in results) == sorted(
        q.unit_id for q in queries
    )  # exactly once each
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
def test_cache_answers_repeats_without_a_call_and_keeps_repetitions_apart(
    api, server, tmp_path
):
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
    again = run(
        [_query("c", 1, prompt), _query("c", 2, prompt), _query("c", 3, prompt)]
    )
    assert server.stats["ok"][api] == before + 3  # only the new repetition was paid
    cached = {r.unit_id: r for r in again if r.cached}
    assert set(cached) == {"u-c-1", "u-c-2"} and all(
        r.cost_usd == 0.0 for r in cached.values()
    )
    assert (tmp_path / "api_cache.sqlite").is_file()


def test_context_window_checked_before_any_call(server, tmp_path):
    judge = _judge("openai", server, tmp_path, cache="off", context_window=200)
    before = server.stats["requests"]
    results = asyncio.run(
        judge.judge([_query("long", prompt="x" * 2000), _query("short", prompt="#ok#")])
    )
    by_id = {r.unit_id: r for r in results}
    assert by_id["u-long-1"].failure == FailureClass.CONTEXT_TOO_LONG.value
    assert "not sent" in by_id["u-long-1"].failure_message
    assert by_id["u-short-1"].failure is None
    assert server.stats["requests"] == before + 1


def test_missing_key_is_a_config_error_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("VOIRDIRE_NO_SUCH_KEY", raising=False)
    cls = get_backend("anthropic")
    settings = cls.Settings(
        model="claude-3-5-sonnet-20241022", api_key_env="VOIRDIRE_NO_SUCH_KEY"
    )
    with pytest.raises(ConfigError, match="VOIRDIRE_NO_SUCH_KEY"):
        cls.check_secrets(
            settings,
            JudgeContext(
                judge="c", benchmark="MTBench", data_dir=None, output_dir=None
            ),
        )
    with pytest.raises(Exception, match="NAME of an environment variable"):
        cls.Settings(model="m", api_key_env="sk-ant-api03-abc/def")
    compat = get_backend("openai_compatible")
    with pytest.raises(ConfigError, match="base_url"):
        compat.preflight(
            compat.Settings(model="llama"),
            JudgeContext(judge="l", benchmark="b", data_dir=None, output_dir=None),
        )


def _max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    j = best = 0
    for i, t in enumerate(times):
        while t - times[j] >= window:
            j += 1
        best = max(best, i - j + 1)
    return best


@pytest.mark.parametrize("rpm", [600.0, 1200.0, 6000.0])
def test_token_bucket_keeps_the_limit_where_requests_arrive(rpm):
    """Reservations asked 4x faster than allowed; each request ARRIVES a random 0..jitter_s
    after its slot. At most rpm/60 * W arrive in any window of W >= 1 s (the provider's
    rule, no allowance); without the jitter margin the same arrivals break it."""
    p = rpm / 60.0
    for burst_s, jitter_s in ((0.02, 0.1), (0.1, 0.25)):
        rng = random.Random(7)
        b = bucket_for(rpm, burst_s, jitter_s)
        now, arrivals = 0.0, []
        for _ in range(int(p * 120)):
            now += rng.expovariate(4 * p)
            at = b.earliest(now, 1)
            b.book(at, 1)
            arrivals.append(
                at + (jitter_s if rng.random() < 0.3 else rng.uniform(0, jitter_s))
            )
        for window in (1.0, 5.0, 60.0):
            assert _max_in_window(arrivals, window) <= p * window + 1e-9, (
                burst_s,
                window,
            )
        sustained = (len(arrivals) - 1) / (max(arrivals) - min(arrivals))
        assert sustained == pytest.approx(b.rate, rel=0.02) and sustained > 0.7 * p
    # the same arrival jitter against the bucket without the margin (the rule before:
    # refill p * (1 - burst_s)) breaks the one-second rule where requests arrive
    rng = random.Random(7)
    b = TokenBucket(p * 0.98, max(1.0, p * 0.02))
    now, arrivals = 0.0, []
    for _ in range(int(p * 120)):
        now += rng.expovariate(4 * p)
        at = b.earliest(now, 1)
        b.book(at, 1)
        arrivals.append(at + (0.1 if rng.random() < 0.3 else rng.uniform(0, 0.1)))
    assert _max_in_window(arrivals, 1.0) > p


def test_prices_costs_and_redaction():
    # the maintained source (genai-prices) first
    facts = facts_for("gpt-4o-2024-08-06", "openai")
    assert facts.prices == (2.50, 10.00) and facts.context_window == 128_000
    assert facts.price_source.startswith(
        "genai-prices"
    ) and facts.window_source.startswith("genai-prices")
    assert price_for("gpt-4o-mini-2024-07-18", provider="openai") == pytest.approx(
        (0.15, 0.60)
    )
    assert price_for("claude-3-5-sonnet-20241022", provider="anthropic") == (
        3.00,
        15.00,
    )
    # the judge's override wins, field by field
    assert facts_for("gpt-4o", "openai", 1.0, 2.0, 1000) == type(facts)(
        1.0, 2.0, 1000, "settings", "settings"
    )
    assert price_for("my-local-llama") is None
    assert price_for("my-local-llama", 1.0, 2.0) == (1.0, 2.0)
    # a model genai-prices does not know: the shipped fallback file answers
    llama = facts_for("meta-llama/Llama-3.1-8B-Instruct")
    assert (
        llama.context_window == 131_072
        and llama.window_source == "fallback"
        and llama.prices is None
    )
    assert cost_usd((2.5, 10.0), 1_000_000, 100_000) == pytest.approx(3.5)
    assert cost_usd((2.5, 10.0), 1_000_000, 100_000, batch=True) == pytest.approx(1.75)
    assert cost_usd(None, 10, 10) is None
    assert (
        redact("bad key sk-proj-abcdefgh1234 given", None) == "bad key [redacted] given"
    )
    assert ResponseCache.key("h", None, "p", 1) != ResponseCache.key("h", None, "p", 2)


def test_response_cache_keeps_option_probabilities_and_opens_a_0_1_file(tmp_path):
    """A log-probability reply keeps its option probabilities in the cache; a text reply
    reads back ``None``; a cache file written by 0.1 (no ``option_probs`` column) opens,
    keeps its rows and takes the new ones."""
    import sqlite3

    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, output TEXT NOT NULL, input_tokens INTEGER, "
        "output_tokens INTEGER, cost_usd REAL, model TEXT, created REAL)"
    )
    db.execute("INSERT INTO responses VALUES ('k0', '[[A]]', 10, 2, 0.5, 'gpt-4o', 0)")
    db.commit()
    db.close()
    cache = ResponseCache(old)
    assert cache.get("k0") == {
        "output": "[[A]]",
        "input_tokens": 10,
        "output_tokens": 2,
        "cost_usd": 0.5,
        "option_probs": None,
    }
    probs = {"A": 0.7, "B": 0.2, "C": 0.1}
    cache.put("k1", "[[A]]", 11, 3, 0.25, "gpt-4o", probs)
    cache.put("k2", "[[B]]", 11, 3, 0.25, "gpt-4o")
    assert (
        cache.get("k1")["option_probs"] == probs
        and cache.get("k2")["option_probs"] is None
    )
    assert cache.get("missing") is None and len(cache) == 3
    cache.close()


@pytest.mark.process
def test_prices_fall_back_to_the_shipped_file_without_the_maintained_source():
    """genai-prices made unavailable (its import blocked in a fresh interpreter): the
    fallback file gives prices and windows; a model known to neither has no cost."""
    code = (
        "import sys; sys.modules['genai_prices'] = None\n"
        "from voirdire.judges.api.pricing import facts_for, price_for, cost_usd\n"
        "f = facts_for('gpt-4o-2024-08-06', 'openai')\n"
        "print(f.prices, f.context_window, f.price_source, f.window_source)\n"
        "print(price_for('my-local-llama'), cost_usd(price_for('my-local-llama'), 10, 10))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "(2.5, 10.0) 128000 fallback fallback",
        "None None",
    ]


FAILING = {
    "500": "500",
    "503": "503",
    "529": "529",
    "429": "429",
    "drop": "drop",
    "slow": "slow",
    "malformed": "malformed",
    "html": "html",
}


@pytest.mark.slow
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("max_retries", [0, 2])
def test_total_attempts_per_query_is_max_retries_plus_one(
    api, max_retries, server, tmp_path
):
    """One retry layer (the SDK's): a query that keeps failing reaches the server exactly
    ``max_retries + 1`` times, counted by the server per prompt, whatever the fault."""
    judge = _judge(api, server, tmp_path, cache="off", max_retries=max_retries)
    prompts = {
        kind: f"attempts {api} {max_retries} #{tag}# always"
        for kind, tag in FAILING.items()
    }
    server.config["faults"] = [
        {"kind": k, "match": f"#{k}# always", "times": None} for k in FAILING
    ] + server.config["faults"]
    queries = [_query(kind, prompt=p) for kind, p in prompts.items()]

    async def go():
        try:
            return await judge.judge(queries)
        finally:
            await judge.aclose()

    try:
        results = {r.unit_id: r for r in asyncio.run(go())}
    finally:
        server.config["faults"] = server.config["faults"][len(FAILING) :]
    for kind, prompt in prompts.items():
        arrived = sum(
            n for k, n in server.stats["attempts"].items() if k.endswith(prompt)
        )
        assert arrived == max_retries + 1, (kind, arrived)
        r = results[f"u-{kind}-1"]
        assert (
            r.failure is not None
            and f"after {max_retries + 1} attempt(s)" in r.failure_message
        ), r


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_malformed_replies_are_transient_in_a_fault_storm(api, server, tmp_path):
    """A 200 whose body is not the protocol's JSON (a cut body, a proxy's HTML page) is
    asked again within the query's attempt budget: 120 queries through a storm where 5 %
    of prompts get such a reply (and others 429/500 once) all succeed on the first pass,
    and none reaches the server more than ``max_retries + 1`` times."""
    judge = _judge(api, server, tmp_path, cache="off", max_retries=3)
    storm = [
        {"kind": "429", "rate": 0.15, "times": 1},
        {"kind": "500", "rate": 0.1, "times": 1},
        {"kind": "malformed", "rate": 0.03, "times": 2},
        {"kind": "html", "rate": 0.02, "times": 1},
    ]
    saved = server.config["faults"]
    server.config["faults"] = storm
    queries = [
        _query(f"storm{i}", prompt=f"storm {api} {i}: which answer is better?")
        for i in range(120)
    ]

    async def go():
        try:
            return await judge.judge(queries)
        finally:
            await judge.aclose()

    before = dict(server.stats["injected"])
    try:
        results = asyncio.run(go())
    finally:
        server.config["faults"] = saved
    injected = {
        k: server.stats["injected"].get(k, 0) - before.get(k, 0)
        for k in ("malformed", "html", "500")
    }
    assert injected["malformed"] >= 2 and injected["html"] >= 1, (
        injected
    )  # the storm did hit
    assert [r.failure_message for r in results if r.failure] == []
    assert (
        max(n for k, n in server.stats["attempts"].items() if f"storm {api} " in k) <= 4
    )


@pytest.mark.slow
def test_default_retry_budget_is_four_attempts(server, tmp_path):
    default = get_backend("openai").Settings(model="m").max_retries
    judge = _judge("openai", server, tmp_path, cache="off", max_retries=default)
    prompt = "default budget #503#"

    async def go():
        try:
            return await judge.judge([_query("d", prompt=prompt)])
        finally:
            await judge.aclose()

    result = asyncio.run(go())[0]
    assert result.failure == FailureClass.SERVER_ERROR.value
    assert (
        sum(n for k, n in server.stats["attempts"].items() if k.endswith(prompt)) == 4
    )


def test_identity_hash_is_the_engines(tmp_path):
    """A judge built without the engine's hash computes the same one (one helper)."""
    from voirdire.engine.bind import resolve_judges
    from voirdire.engine.spec import parse_job

    job = parse_job(
        {
            "name": "h",
            "output_dir": str(tmp_path),
            "benchmark": {"name": "mtbench"},
            "judges": [
                {
                    "name": "c",
                    "backend": "openai_compatible",
                    "model": "m",
                    "base_url": "http://x/v1",
                }
            ],
        }
    )
    rj = resolve_judges(job)[0]
    ctx = JudgeContext(
        judge="c",
        benchmark="MTBench",
        data_dir=None,
        output_dir=None,
        sampling=rj.sampling,
    )
    judge = rj.backend(rj.settings, ctx)
    assert judge.identity_hash == rj.identity_hash
    asyncio.run(judge.aclose())  # the client was never used: nothing bound to a loop


def _cli(
    args: list[str], env: dict[str, str], block: str | None = None
) -> subprocess.CompletedProcess:
    """The CLI through typer's CliRunner in a fresh interpreter (optionally with a module's
    import blocked, as if its extra were not installed); prints the exit code, then the output."""
    code = (
        (f"import sys; sys.modules[{block!r}] = None\n" if block else "")
        + "from typer.testing import CliRunner\nfrom voirdire.cli import app\n"
        + f"r = CliRunner().invoke(app, {args!r})\nprint(r.exit_code)\nprint(r.output)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(REPO),
    )


REPO = Path(__file__).resolve().parents[1]


@pytest.mark.process
def test_dry_run_without_keys_prints_the_estimate_and_warns(data_dir, tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    env["VOIRDIRE_DATA"] = str(data_dir)
    out = _cli(
        [
            "run",
            "examples/mtbench_api.toml",
            "--dry-run",
            "--output-dir",
            str(tmp_path / "o"),
        ],
        env,
    )
    assert out.returncode == 0, out.stderr
    code, _, text = out.stdout.partition("\n")
    text = " ".join(text.split())
    assert code == "0", text
    assert "4,800 queries" in text and "cost <= $" in text
    assert (
        "warning:" in text and "OPENAI_API_KEY" in text and "ANTHROPIC_API_KEY" in text
    )
    # a real run still stops before sending, naming the variable
    real = _cli(
        ["run", "examples/mtbench_api.toml", "--output-dir", str(tmp_path / "o")], env
    )
    code, _, text = real.stdout.partition("\n")
    assert code == "2" and "OPENAI_API_KEY" in " ".join(text.split())
    assert not (tmp_path / "o").exists()


@pytest.mark.process
def test_missing_extra_prints_the_exact_install_command(data_dir, tmp_path):
    """The SDK's import made to fail: the CLI names the extra as a command to paste, with
    its brackets (rich markup would swallow ``[api]`` unescaped)."""
    env = {**os.environ, "VOIRDIRE_DATA": str(data_dir), "OPENAI_API_KEY": "sk-x"}
    out = _cli(
        [
            "run",
            "examples/mtbench_api.toml",
            "--dry-run",
            "--output-dir",
            str(tmp_path / "o"),
        ],
        env,
        block="openai",
    )
    code, _, text = out.stdout.partition("\n")
    assert code == "2", out.stdout + out.stderr
    assert "pip install 'voirdire[api]'" in " ".join(text.split())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_mode_submits_once_and_resumes_by_reattaching(api, server, tmp_path):
    """Batch mode: one provider batch per call; a second worker (a resumed job, cache off)
    finds the persisted batch id and collects it instead of submitting again."""
    server.config["batch_delay_s"] = 0.3
    queries = [_query(f"b{i}", prompt=f"batch prompt {api} {i}") for i in range(5)]
    queries.append(_query("blong", prompt="y" * 5000))

    def run():
        judge = _judge(
            api,
            server,
            tmp_path,
            cache="off",
            batch=True,
            batch_poll_s=0.1,
            context_window=1000,
        )

        async def go():
            try:
                return await judge.judge(queries)
            finally:
                await judge.aclose()

        return asyncio.run(go())

    created, paid = server.stats["batches_created"], server.stats["batch_requests"]
    first = run()
    assert (
        server.stats["batches_created"] == created + 1
        and server.stats["batch_requests"] == paid + 5
    )
    by_id = {r.unit_id: r for r in first}
    assert by_id["u-blong-1"].failure == FailureClass.CONTEXT_TOO_LONG.value
    ok = [r for r in first if r.failure is None]
    assert len(ok) == 5 and all("[[" in r.output for r in ok)
    full = cost_usd(price_for(MODEL[api]), ok[0].input_tokens, ok[0].output_tokens)
    assert ok[0].cost_usd == pytest.approx(full / 2)  # batch price
    records = list((tmp_path / "api_batches").rglob("*.json"))
    assert len(records) == 1
    second = run()
    assert (
        server.stats["batches_created"] == created + 1
        and server.stats["batch_requests"] == paid + 5
    )
    assert {r.unit_id: r.output for r in second} == {r.unit_id: r.output for r in first}
