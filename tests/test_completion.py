"""Completing a one-order judgment log with a live judge (``docs/audit.md``, "Completing a
log"; :mod:`voirdire.engine.completion`): the log's verdicts count as the live judge's only
with ``recorded_as`` (refused otherwise, before any query), the live judge is asked only the
missing order with the tool's own prompt, the dry run counts and prices those queries, a
rerun asks nothing, and the run reports both orders (PC, PF, kappa, flips). Logs are built
here in AlpacaEval's and a plain table's exact formats (SYNTHETIC), answered by the loopback
OpenAI-compatible server and by SmolLM2 on the CPU (vLLM)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import voirdire
from tests.fake_api_server import FakeAPIServer
from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.benchmarks.logs.tool_prompts import tool_prompt, tool_prompts
from voirdire.core import ConfigError
from voirdire.engine.bind import resolve_judges
from voirdire.engine.job import estimate_job
from voirdire.engine.plan import plan_job
from voirdire.engine.spec import parse_job

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
N = 8  # pairs in the log, one order each


def _log(tmp_path: Path, n: int = N) -> Path:
    f = tmp_path / "results" / "model-x" / ANNOTATOR / "annotations.json"
    write_alpaca_eval(f, "model-x", n, seed=3)
    return f


def _job(tmp_path: Path, judge: dict, **extra) -> dict:
    return {
        "name": "complete-alpaca", "output_dir": str(tmp_path / "out"),
        "benchmark": {"name": "alpacaeval", "logs": [str(_log(tmp_path))],
                      "data_dir": str(tmp_path / "copy")},
        "comparison": {"mode": "pairwise", "permutations": "both"},
        "run": {"batch_size": 4, "flush_seconds": 0.2},
        "sampling": {"max_tokens": 32},
        "judges": [judge], **extra,
    }  # fmt: skip


def _api(url: str, **kw) -> dict:
    return {"name": "alpaca+judge-7b", "backend": "openai_compatible", "base_url": f"{url}/v1",
            "model": "judge-7b", "max_retries": 0, "timeout_s": 10.0, **kw}  # fmt: skip


@pytest.fixture()
def bare_server():
    srv = FakeAPIServer(latency_s=0.0).start()
    yield srv
    srv.stop()


# ------------------------------------------------------------------ the tools' prompts


def test_tool_prompts_are_filled_in_one_pass_in_the_order_shown():
    tp = tool_prompt("ArenaHard")
    sysm, user = tp.render(
        {"instruction": "Q?", "output_1": "first {ANSWER_B}", "output_2": "second"}
    )
    assert sysm.startswith("Please act as an impartial judge") and "[[B>>A]]" in sysm
    assert user == (
        "<|User Prompt|>\nQ?\n\n<|The Start of Assistant A's Answer|>\nfirst {ANSWER_B}\n"
        "<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\nsecond\n"
        "<|The End of Assistant B's Answer|>"
    )
    _, user = tool_prompt("AlpacaEval").render(
        {"instruction": "I", "output_1": "one", "output_2": "two"}
    )
    assert user.index(
        '"model_identifier": "m",\n        "output": """one"""'
    ) < user.index('"model_identifier": "M",\n        "output": """two"""')
    assert tool_prompt("PRD", "math").name == "prd-math"
    assert tool_prompt("PRD", "writing").name == "prd-general"
    for tp in (
        tool_prompts().values()
    ):  # every shipped prompt names its source and reads its labels
        assert "@" in tp.source and set(tp.verdict_labels.values()) <= {"A", "B", "C"}


@pytest.mark.parametrize(
    "fmt,text,letter",
    [("ArenaHard", "I think [[A>B]] at first; final: [[B>>A]]", "B"),
     ("ArenaHard", "My final verdict is tie: [[A=B]]", "C"),
     ("AlpacaEval", "M", "B"), ("AlpacaEval", "The best model is: m", "A"),
     ("PRD", "Assistant 1: 8/10\nAssistant 2: 6/10\n1", "A"),
     ("FastChat", "explanation ... [[C]]", "C")],
)  # fmt: skip
def test_a_live_verdict_is_read_by_the_tools_rule(fmt, text, letter):
    from voirdire.benchmarks.registry import benchmark_class
    from voirdire.judges.extract import extract_verdicts

    cls = benchmark_class(fmt.lower())
    raw = pl.DataFrame({"benchmark": [cls.name], "shown": [["x", "y"]], "option_mode": [3],
                        "output": [text], "choice": [None]}, schema_overrides={"choice": pl.String})  # fmt: skip
    got = extract_verdicts(
        raw, {cls.name: cls.verdict_pattern}, {cls.name: cls.verdict_labels}
    )
    assert got["extracted"].to_list() == [letter]


# ------------------------------------------------------------------ refusals, before any query


def test_a_live_judge_without_recorded_as_is_refused_before_any_query(
    tmp_path, bare_server
):
    job = parse_job(_job(tmp_path, _api(bare_server.url)))
    with pytest.raises(
        ConfigError, match=r"recorded_as = .*weighted_alpaca_eval_gpt4_turbo"
    ):
        plan_job(job, dry_run=True)
    path = tmp_path / "job.toml"
    path.write_text(_toml(_job(tmp_path, _api(bare_server.url))))
    res = CliRunner().invoke(_cli(), ["run", str(path), "--no-progress"])
    assert res.exit_code == 2 and "recorded_as" in res.output
    assert (
        res.output.startswith("error: judge 'alpaca+judge-7b'")
        and "Traceback" not in res.output
    )
    assert (
        bare_server.stats["requests"] == 0 and not (tmp_path / "out" / "raw").exists()
    )


@pytest.mark.parametrize(
    "judge,extra,match",
    [({"recorded_as": "gpt-5"}, {}, "holds no verdicts of 'gpt-5'; judges in it: weighted"),
     ({"backend": "replay", "recorded": ANNOTATOR, "recorded_as": ANNOTATOR}, {}, "already answers from recordings"),
     ({"recorded_as": ANNOTATOR}, {"perturbations": [{"kind": "bandwagon", "shares": [80]}]}, "no \\[\\[perturbations\\]\\]"),
     ({"recorded_as": ANNOTATOR}, {"comparison": {"repetitions": 2}}, "repetitions = 1")],
)  # fmt: skip
def test_what_a_completing_judge_cannot_be_is_refused(tmp_path, judge, extra, match):
    j = {**_api("http://127.0.0.1:9"), **judge}
    if j["backend"] == "replay":
        j = {
            k: v
            for k, v in j.items()
            if k in ("name", "backend", "recorded", "recorded_as")
        }
    data = _job(tmp_path, j, **{k: v for k, v in extra.items() if k != "comparison"})
    data["comparison"].update(extra.get("comparison", {}))
    with pytest.raises(ConfigError, match=match):
        plan_job(parse_job(data), dry_run=True)


def test_recorded_as_enters_the_judges_identity(tmp_path):
    plain = _api("http://127.0.0.1:9")
    a = resolve_judges(parse_job(_job(tmp_path, plain)))[0]
    b = resolve_judges(parse_job(_job(tmp_path, {**plain, "recorded_as": ANNOTATOR})))[
        0
    ]
    assert b.identity == {**a.identity, "recorded_as": ANNOTATOR}
    assert a.identity_hash != b.identity_hash


# ------------------------------------------------------------------ the dry run


def test_dry_run_counts_and_prices_the_missing_order_only(tmp_path):
    judge = _api("http://127.0.0.1:9", recorded_as=ANNOTATOR, price_input_per_mtok=1.0,
                 price_output_per_mtok=2.0)  # fmt: skip
    job = parse_job(_job(tmp_path, judge))
    plan = plan_job(job, dry_run=True)
    assert plan.units_per_judge == 2 * N and plan.recorded == {judge["name"]: N}
    est = estimate_job(job, plan)[judge["name"]]
    assert est["queries"] == N  # the swapped order of every pair
    # the tokens are those of the swapped prompts alone: the shown order's are not counted
    bench = plan.bench
    from voirdire.benchmarks.logs.reading import RECORDED

    shown = pl.read_parquet(Path(bench.data_dir) / RECORDED).select(
        "question_id", "first", "second"
    )
    texts = [
        bench.system_prompt(q, (b, a), 3) + "\n\n" + bench.build_prompt(q, (b, a), 3)
        for q, a, b in shown.iter_rows()
    ]  # fmt: skip
    from voirdire.judges.api.tokens import estimate_prompt_tokens

    want = sum(estimate_prompt_tokens(t, None, "judge-7b", False) for t in texts)
    assert est["input_tokens"] == want
    assert est["cost_usd_max"] == pytest.approx((want + N * 32 * 2) / 1e6)
    path = tmp_path / "job.toml"
    path.write_text(_toml(_job(tmp_path, judge)))
    res = CliRunner().invoke(_cli(), ["run", str(path), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert f"{N} queries ({N} answered by the log's {ANNOTATOR})" in res.output
    assert "cost <= $" in res.output


def test_one_order_of_a_two_order_table_counts_only_the_missing_orders(tmp_path):
    """A plain table holding both orders for pairs 0-1 and one order for pairs 2-5 (shown
    as written for 2-3, swapped for 4-5): 8 verdicts recorded, 4 queries asked, each the
    order the table lacks."""
    rows = []
    for i in range(6):
        orders = ["a", "b"] if i < 2 else (["a"] if i < 4 else ["b"])
        for f in orders:
            rows.append({"item": f"q{i}", "ma": "x", "mb": "y", "first": f, "v": "A",
                         "ins": f"question {i}", "oa": f"x says {i}", "ob": f"y says {i}"})  # fmt: skip
    path = tmp_path / "verdicts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cols = {"instance": "item", "model_a": "ma", "model_b": "mb", "first": "first",
            "verdict": "v", "instruction": "ins", "output_a": "oa", "output_b": "ob"}  # fmt: skip
    data = _job(tmp_path, _api("http://127.0.0.1:9", recorded_as="judge"))
    data["benchmark"] = {"name": "logtable", "logs": [str(path)], "data_dir": str(tmp_path / "c"),
                         "log": {"columns": cols}}  # fmt: skip
    job = parse_job(data)
    plan = plan_job(job, dry_run=True)
    assert plan.units_per_judge == 12 and plan.recorded == {"alpaca+judge-7b": 8}
    from voirdire.engine.completion import live_batches
    from voirdire.engine.units import iter_unit_batches

    rj = plan.judges[0]
    batches = iter_unit_batches(
        plan.bench, plan.instances, job.comparison, judge=rj.name,
        identity_hash=rj.identity_hash, needs_prompt=True, batch_size=5,
    )  # fmt: skip
    asked = [
        (u.question_id.split("|")[0], u.shown)
        for b in live_batches(plan, rj, batches)
        for u in b.units
    ]
    assert sorted(asked) == [
        ("q2", ("y", "x")),
        ("q3", ("y", "x")),
        ("q4", ("x", "y")),
        ("q5", ("x", "y")),
    ]
    # FastChat's pair-v2 is a plain table's prompt
    u = next(iter(live_batches(plan, rj, iter_unit_batches(
        plan.bench, plan.instances, job.comparison, judge=rj.name,
        identity_hash=rj.identity_hash, needs_prompt=True, batch_size=5))))  # fmt: skip
    q = u.units[0].query()
    assert q.system.startswith(
        "Please act as an impartial judge"
    ) and q.prompt.startswith("[User Question]\nquestion 2")


# ------------------------------------------------------------------ end to end, loopback server


@pytest.fixture(scope="module")
def server(ray_local):
    srv = FakeAPIServer(latency_s=0.0).start()
    yield srv
    srv.stop()


@pytest.mark.ray
def test_only_the_missing_order_is_asked_and_a_rerun_asks_nothing(server, tmp_path):
    server.reset()
    server.config["verdicts"] = ["m", "M"]
    job = _job(tmp_path, _api(server.url, recorded_as=ANNOTATOR))
    res = voirdire.run(job, show_progress=False)
    assert server.stats["requests"] == N and res.stats.queries == N
    sent = list(server.stats["attempts"])
    j = res.judgments.filter(pl.col("judge") == "alpaca+judge-7b")
    assert j.height == 2 * N and j["question_id"].n_unique() == N
    rec = j.filter(pl.col("verdict_mode") == "replay")
    asked = j.filter(pl.col("verdict_mode") != "replay")
    assert rec.height == asked.height == N
    pairs = pl.read_parquet(tmp_path / "copy" / "instances.parquet")
    logged = pl.read_parquet(tmp_path / "copy" / "recorded.parquet")
    first = dict(zip(logged["question_id"], logged["first"]))  # the order the log shows
    assert all(
        r["shown"][0] == first[r["question_id"]] for r in rec.iter_rows(named=True)
    )
    assert all(
        r["shown"][1] == first[r["question_id"]] for r in asked.iter_rows(named=True)
    )
    # asked with AlpacaEval's prompt, the log's second output shown first
    outs = {
        q: ob if f == a else oa
        for q, a, oa, ob in pairs.select("question_id", "model_a", "output_a", "output_b").iter_rows()
        for f in [first[q]]
    }  # fmt: skip
    for r in asked.iter_rows(named=True):
        hit = [p for p in sent if f'"output": """{outs[r["question_id"]]}"""' in p]
        assert hit and all(
            p.index('"model_identifier": "m"') < p.index(outs[r["question_id"]])
            for p in hit
        )
    assert (
        set(asked["extracted"].to_list()) <= {"A", "B"} and asked["failed"].sum() == 0
    )
    m = res.judge_metrics.filter(pl.col("judge") == "alpaca+judge-7b").row(
        0, named=True
    )
    assert {"pc", "pf", "pass_kappa"} <= set(m)
    # PC and PF of the completed judge, recomputed pair by pair (log order, asked order)
    letters: dict = {}
    for r in j.iter_rows(named=True):
        letters.setdefault(r["question_id"], [None, None])[
            r["verdict_mode"] != "replay"
        ] = r["extracted"]
    consistent = sum(a != b for a, b in letters.values())  # A, B: the same answer
    assert m["pc"] == pytest.approx(consistent / N)
    # PF: the mean over cells (here the pair's candidate, the model, docs/metrics.md) of
    # (recency - primacy) / pairs
    cand = dict(zip(pairs["question_id"], pairs["model_a"]))
    cells: dict = {}
    for q, (a, b) in letters.items():
        c = cells.setdefault(cand[q], [0, 0])
        c[0] += (a == b == "B") - (a == b == "A")
        c[1] += 1
    assert m["pf"] == pytest.approx(sum(r / n for r, n in cells.values()) / len(cells))
    record = json.loads((tmp_path / "out" / "job.json").read_text())
    assert record["judges"]["alpaca+judge-7b"]["identity"]["recorded_as"] == ANNOTATOR
    again = voirdire.run(job, show_progress=False)
    assert server.stats["requests"] == N and again.stats.queries == 0
    assert again.judgments.filter(pl.col("judge") == "alpaca+judge-7b").height == 2 * N


# ------------------------------------------------------------------ end to end, SmolLM2 on the CPU


@pytest.mark.vllm
@pytest.mark.ray
@pytest.mark.slow
def test_smollm2_on_the_cpu_is_asked_only_the_missing_order(
    vllm_server, ray_local, tmp_path
):
    """SmolLM2 behind vLLM's own server (the test run's one server: no engine of this
    test's) completes a one-order log: only the missing order is asked, and a rerun asks
    nothing."""
    from tests.real_model import SERVED_NAME

    judge = {"name": "alpaca+smollm2", "backend": "openai_compatible",
             "base_url": vllm_server, "model": SERVED_NAME, "verdict_mode": "free",
             "max_retries": 1, "timeout_s": 300, "recorded_as": ANNOTATOR}  # fmt: skip
    data = _job(tmp_path, judge)
    data["benchmark"]["logs"] = [str(_log(tmp_path, 3))]
    data["sampling"] = {"temperature": 0.0, "max_tokens": 4}
    res = voirdire.run(data, show_progress=False)
    j = res.judgments
    assert res.stats.queries == 3 and j.height == 6
    asked = j.filter(pl.col("verdict_mode") != "replay")
    assert asked.height == 3 and asked["failure"].null_count() == 3
    again = voirdire.run(data, show_progress=False)
    assert again.stats.queries == 0


def _cli():
    from voirdire.cli import app

    return app


def _toml(data: dict) -> str:
    import tomli_w

    return tomli_w.dumps(data)
