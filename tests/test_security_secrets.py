"""Secrets (issue 21, item 6): the value of every configured key variable is redacted
wherever it would be written (failure messages, whole or in a provider's masked echo,
whatever the key's shape; job.json; the report), and a ``base_url`` holding credentials is
refused before anything is written. Against the loopback fake API server."""

from __future__ import annotations

import asyncio
import json
import os
import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import voirdire
from tests.cli import voirdire as voirdire_cli
from tests.fake_api_server import FakeAPIServer
from tests.repo import REPO
from voirdire.cli import app
from voirdire.core import ConfigError, FailureClass
from voirdire.judges.api.errors import redact
from voirdire.judges.base import JudgeContext, Query, Sampling, get_backend

#: a key in no provider's shape (no sk-/AIza prefix), and the variable holding it
KEY = "tok_live_Odd7Shape9SECRET_Zq8X"
ENV = "VOIRDIRE_SECTEST_KEY"
EXAMPLE = REPO / "examples" / "own_pairs.toml"


def _job(out: Path, judge: dict) -> dict:
    job = tomllib.loads(EXAMPLE.read_text())
    pairs = job["benchmark"]["pairs"]
    pairs["path"], pairs["template"] = (
        str(REPO / pairs["path"]),
        str(REPO / pairs["template"]),
    )
    return {
        **job,
        "output_dir": str(out),
        "judges": [judge],
        "run": {"flush_seconds": 0.2},
    }


def _leaks(text: str) -> list[str]:
    """What of KEY shows in ``text``: the key, its head or tail next to a mask."""
    return [
        s for s in (KEY, KEY[:4] + "*", "*" + KEY[-4:], KEY[:8], KEY[-8:]) if s in text
    ]


@pytest.fixture(scope="module")
def server():
    srv = FakeAPIServer(
        keys={"openai": "the-key-the-server-expects"}, echo_key="masked"
    ).start()
    yield srv
    srv.stop()


def test_redact_takes_every_secret_and_masked_echoes_in_any_shape():
    assert (
        redact(
            f"Incorrect API key provided: {KEY[:4]}{'*' * 20}{KEY[-4:]}. See the docs.",
            KEY,
        )
        == "Incorrect API key provided: [redacted] See the docs."
    )
    assert (
        redact(f"a={KEY} b=other-secret-value", "other-secret-value", KEY)
        == "a=[redacted] b=[redacted]"
    )
    assert (
        redact("bad key sk-proj-abcdefgh1234 given", None) == "bad key [redacted] given"
    )
    assert redact("no secret here: 3 * 4 = 12", KEY) == "no secret here: 3 * 4 = 12"
    assert redact(None, KEY) is None


def test_a_masked_echo_of_a_key_in_another_shape_leaks_nothing(
    server, tmp_path, monkeypatch
):
    monkeypatch.setenv(ENV, KEY)
    cls = get_backend("openai")
    settings = cls.Settings(
        model="gpt-4o",
        base_url=server.url + "/v1",
        api_key_env=ENV,
        timeout_s=5,
        max_retries=0,
        cache="off",
    )
    ctx = JudgeContext(
        judge="j",
        benchmark="OwnPairs",
        data_dir=None,
        output_dir=str(tmp_path),
        sampling=Sampling(max_tokens=16),
        concurrency=1,
        identity_hash="0" * 32,
    )
    judge = cls(settings, ctx)
    q = Query(
        unit_id="u",
        query_id="q",
        benchmark="OwnPairs",
        question_id="1",
        shown=("a", "b"),
        repetition=1,
        option_mode=3,
        prompt="Which is better?",
    )

    async def go():
        try:
            return await judge.judge([q])
        finally:
            await judge.aclose()

    (r,) = asyncio.run(go())
    assert (
        r.failure == FailureClass.REFUSED.value
        and "Incorrect API key provided: [redacted]" in r.failure_message
    )
    assert _leaks(r.failure_message) == [] and "*" not in r.failure_message


def test_credentials_in_base_url_are_refused_without_echoing_them(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(ENV, KEY)
    judge = {
        "name": "api",
        "backend": "openai",
        "model": "gpt-4o",
        "api_key_env": ENV,
        "base_url": "http://user:hunter2-password@127.0.0.1:9/v1",
    }
    with pytest.raises(ConfigError, match="base_url may not hold credentials") as err:
        voirdire.plan(_job(tmp_path / "o", judge))
    assert "hunter2" not in str(err.value) and "\n" not in str(err.value)
    job = tmp_path / "job.toml"
    text = EXAMPLE.read_text().replace('"examples/', f'"{REPO}/examples/')
    job.write_text(
        text.replace(
            'backend = "simulated"',
            'backend = "openai"\nmodel = "gpt-4o"\n'
            f'api_key_env = "{ENV}"\nbase_url = "http://user:hunter2-password@127.0.0.1:9/v1"',
        )
    )
    r = CliRunner().invoke(
        app, ["run", str(job), "--no-progress", "--output-dir", str(tmp_path / "o")]
    )
    assert (
        r.exit_code == 2
        and "hunter2" not in r.output
        and "base_url may not hold credentials" in r.output
    )
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def ray_env() -> dict[str, str]:
    return {ENV: KEY}  # in the environment before Ray starts: its workers inherit it


@pytest.mark.ray
@pytest.mark.slow
def test_no_file_of_a_run_holds_the_key(ray_local, server, tmp_path):
    judge = {
        "name": "api",
        "backend": "openai",
        "model": "gpt-4o",
        "api_key_env": ENV,
        "max_retries": 0,
        "base_url": server.url + "/v1",
        "timeout_s": 5,
        "cache": "off",
        "rate_limit_key": KEY,
    }  # a key pasted into a setting: job.json must not hold it
    res = voirdire.run(_job(tmp_path / "o", judge))
    assert res.stats.failures == res.judgments.height > 0
    assert (
        res.judgments["failure_message"].str.contains("[redacted]", literal=True).all()
    )
    record = json.loads((tmp_path / "o" / "job.json").read_text())
    assert record["job"]["judges"][0]["rate_limit_key"] == "[redacted]"
    for p in sorted(
        (tmp_path / "o").rglob("*")
    ):  # job.json, raw/ and rewrites parts, judgments, report.md
        if p.is_file():
            text = (
                str(pl.read_parquet(p).to_dicts())
                if p.suffix == ".parquet"
                else p.read_bytes().decode("latin-1")
            )
            assert _leaks(text) == [], p


@pytest.mark.ray
def test_a_failure_message_read_from_a_log_is_redacted_in_every_copy(tmp_path):
    """An OpenAI batch whose error lines echo the key (whole, masked, and a key-shaped
    string), audited by ``voirdire audit`` with ``OPENAI_API_KEY`` set: the failure
    messages are redacted as the log is read, so neither the log cache's normalised copy
    (``failures.parquet``) nor ``raw/``, ``judgments.parquet`` or any other written file
    holds the key; the failures stay failures with their reason. Before, the replay judge
    named no key variable and the reasons were stored as read."""

    from tests.test_audit_batch import RX, draws, write_openai

    ds = draws(3, seed=1)
    inp, outp = write_openai(tmp_path, ds, (ds[0][0], ds[3][0]))
    echo = f"Incorrect API key provided: {KEY}; masked {KEY[:4]}****{KEY[-4:]}"
    outp.write_text(
        outp.read_text()
        .replace("boom", echo)
        .replace("overloaded", "sk-proj-abcdefgh12345678 refused")
    )
    cache, out = tmp_path / "cache", tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": KEY, "VOIRDIRE_LOG_CACHE": str(cache)}
    r = voirdire_cli("audit", str(inp), str(outp), "--format",
         "openai-batch", "--option", f"custom_id={RX}", "--out", str(out), env=env, cwd=REPO)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert _leaks(r.stdout + r.stderr) == []
    failures = pl.read_parquet(next(cache.rglob("failures.parquet")))["why"].to_list()
    raw = pl.read_parquet(list((out / "raw").rglob("*.parquet")))
    messages = raw["failure_message"].drop_nulls().to_list()
    judged = pl.read_parquet(out / "judgments.parquet")["failure_message"]
    for texts in (failures, messages, judged.drop_nulls().to_list()):
        assert len(texts) == 2 and all("[redacted]" in t for t in texts), texts
        assert not any("sk-proj" in t or _leaks(t) for t in texts), texts
    for p in [*out.rglob("*"), *cache.rglob("*")]:
        if p.is_file():
            text = (
                str(pl.read_parquet(p).to_dicts())
                if p.suffix == ".parquet"
                else p.read_bytes().decode("latin-1")
            )
            assert _leaks(text) == [] and "sk-proj" not in text, p
