"""The engine's cheaper paths give what the plain definitions give: the data key (its parts
written without an encoder each), a log query's characters (from the tool prompt's weights),
the replay judge answering the scheduler's rows (no Query built) and the worker's result
columns (read from the results at once)."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

import polars as pl
import pytest

from tests.audit_logs import draws, write_arena_hard, write_fastchat
from voirdire.benchmarks.logs.arena_hard import ArenaHard
from voirdire.benchmarks.logs.fastchat import FastChat
from voirdire.benchmarks.logs.tool_prompts import tool_prompts
from voirdire.core import content_hash
from voirdire.engine.rerun import data_key
from voirdire.engine.worker import JudgeWorker, results_to_columns
from voirdire.judges.base import JudgeContext, Query, Result

#: strings JSON escapes (quotes, control characters, non-ASCII, astral), and plain ones
ODD = [
    "plain",
    'quo"te',
    "back\\slash",
    "tab\tnew\nline",
    "é ✓",
    "𝔘 astral",
    "\x00",
    "",
]


class _Bench:
    """The three hooks :func:`data_key` reads, over a small table of answers."""

    def __init__(self, answers: dict[tuple[str, str], tuple[str, ...]]) -> None:
        self._answers = answers

    def prompt_key(self, q: str) -> str:
        return "" if q.endswith("0") else f"key {q} ✓"

    def question_text(self, q: str) -> str:
        if q.endswith("1"):
            raise NotImplementedError  # a benchmark that keeps no question text apart
        return f'text "{q}"\n'

    def answers(self, q: str, m: str) -> tuple[str, ...]:
        return self._answers[(q, m)]


def _reference_key(plan) -> str:
    """data_key as first written: content_hash of the parts as lists (canonical JSON each)."""
    bench, inst = plan.bench, plan.instances
    ids = sorted(inst["instance_id"].to_list())
    pairs = sorted(
        {
            (q, m)
            for q, cs in inst.select("question_id", "candidates").iter_rows()
            for m in cs
        }
    )
    texts = {}
    for q, _ in pairs:
        try:
            texts[q] = bench.question_text(q)
        except NotImplementedError:
            texts[q] = None
    parts = [ids]
    parts += [[q, bench.prompt_key(q), texts[q]] for q in sorted({q for q, _ in pairs})]
    parts += [[q, m, list(bench.answers(q, m))] for q, m in pairs]
    return content_hash(*parts)


def test_the_data_key_is_the_hash_of_the_parts_as_json():
    models = ["m é", "m2", 'm"3', "Z", "a"]
    qs = [f"q{ODD[i][:3]}{i}" for i in range(len(ODD))] + ["Ä", "a", "B"]
    answers = {}
    rows = []
    for i, (q, turns) in enumerate(itertools.product(qs, [1, 2])):
        pair = [models[i % 5], models[(i + 2) % 5]]
        for m in pair:
            answers[(q, m)] = tuple(ODD[(i + t) % len(ODD)] for t in range(turns))
        rows.append(
            {"instance_id": f"{q}:{turns}:{i}", "question_id": q, "candidates": pair}
        )
    plan = SimpleNamespace(bench=_Bench(answers), instances=pl.DataFrame(rows))
    before = data_key(plan)
    assert before == _reference_key(plan)
    # and it still tells data apart: one character of one answer changed
    k = next(iter(answers))
    answers[k] = (answers[k][0] + "!",) + answers[k][1:]
    assert data_key(plan) == _reference_key(plan) != before


@pytest.mark.parametrize("name", sorted(tool_prompts()))
def test_the_weights_count_the_rendered_prompt(name):
    tp = tool_prompts()[name]
    fixed, w_in, w_1, w_2 = tp.user_weights()
    for ins, a, b in itertools.product(
        ["", "{output_1}", "héllo ✓ 𝔘", "x" * 777], repeat=3
    ):
        values = {"instruction": ins, "output_1": a, "output_2": b}
        want = len(tp.render(values)[1])
        assert fixed + w_in * len(ins) + w_1 * len(a) + w_2 * len(b) == want, name


@pytest.mark.parametrize("fmt", ["arena-hard", "fastchat"])
def test_a_log_querys_count_is_its_prompts_length(tmp_path, fmt):
    log = tmp_path / "log.jsonl"
    if fmt == "arena-hard":
        write_arena_hard(log, draws(6, 1), model="m-1")
        bench = ArenaHard([log], data_dir=tmp_path / "copy")
    else:
        write_fastchat(log, draws(6, 2))
        bench = FastChat([log], data_dir=tmp_path / "copy")
    inst = bench.fixed_instances()
    for q, a, b in inst.select("question_id", "candidate", "reference").iter_rows():
        for shown in ((a, b), (b, a)):
            want = (len(bench.build_prompt(q, shown, 3)), bench.output_chars(q, shown))
            assert bench.query_lengths(q, shown, 3, "pairwise") == want


def test_the_replay_judge_answers_rows_as_it_answers_queries(data_dir):
    ctx = JudgeContext(
        judge="r", benchmark="MTBench", data_dir=str(data_dir), output_dir=None
    )
    worker = JudgeWorker("replay", {"recorded": "gpt-4-0613"}, ctx)
    keys = sorted(worker.backend.recorded)[:60]  # ("question;first;second", repetition)
    assert len(keys) == 60
    rows = []
    for i, (key, rep) in enumerate(keys):
        q, *shown = key.split(";")
        rows.append((f"u{i}", f"q{i}", "MTBench", q, tuple(shown), rep, 3, "pairwise",
                     None, None, None, None, None, None))  # fmt: skip
    rows.append(("gone", "qx", "MTBench", "no such question", ("x", "y"), 1, 3,
                 "pairwise", None, None, None, None, None, None))  # fmt: skip
    rows.append(("rep9", *rows[0][1:5], 9, *rows[0][6:]))  # a repetition it lacks
    by_rows = asyncio.run(worker.judge_rows(rows))
    by_queries = asyncio.run(worker.judge([Query(*r) for r in rows]))
    assert by_rows.pop("latency_s") and by_queries.pop("latency_s")
    assert by_rows == by_queries
    assert by_rows["unit_id"] == [r[0] for r in rows]
    assert by_rows["failure"][-2:] == ["missing", "missing"]
    assert "replay" in by_rows["verdict_mode"] and any(by_rows["output"])


def test_result_columns_are_the_rows_of_each_result():
    class Own(Result):
        __slots__ = ()

        def as_row(self):
            return {**Result.as_row(self), "output": "own"}

    queries = [
        Query(f"u{i}", "q", "b", "x", ("a", "b"), 1, 3, "pairwise") for i in range(4)
    ]
    results = [Result("u2", output="o", choice="A", option_probs={"A": 1.0}, latency_s=0.5),
               Result.failed("u0", "timeout", "slow", input_tokens=3),
               Result("u3", output="p", cached=True, cost_usd=0.25)]  # fmt: skip
    want = [results[1].as_row(), results[0].as_row(), results[2].as_row()]
    cols = results_to_columns(queries, results)
    assert list(cols) == list(Result("").as_row())
    rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
    assert rows[0] == want[0] and rows[2] == want[1] and rows[3] == want[2]
    assert rows[1]["unit_id"] == "u1" and rows[1]["failure"] == "error"
    own = results_to_columns(queries[:1], [Own("u0", output="x")])
    assert own["output"] == ["own"]  # a subclass's own as_row is kept
    assert results_to_columns([], []) == {}


@pytest.mark.process
def test_a_replay_worker_imports_no_download_machinery():
    """A Ray worker replaying a release imports the benchmark and the replay judge; pooch
    and requests (a tenth of a second in every worker process) come only with a fetch."""
    import subprocess
    import sys

    code = (
        "import sys, voirdire.engine.worker, voirdire.judges.replay, "
        "voirdire.benchmarks.mtbench, voirdire.benchmarks.devbench, voirdire.benchmarks.releases.catalogue; "
        "print(sorted(m for m in ('pooch', 'requests') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
