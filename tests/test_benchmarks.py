"""Tests of the benchmarks room: data location, loaders, prompts, extraction, errors.

The prompt tests compare against the release's own prompts (``expected_prompts.jsonl.gz``,
built by the release's template code) byte for byte; the loader tests read the xlsx tables
a second, independent way (openpyxl) and compare.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import pathlib
import re
import time

import polars as pl
import pytest

from voirdire.benchmarks import data as bdata
from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.data import (
    load_templates,
    normalise_id,
    require_file,
    resolve_data_dir,
)
from voirdire.benchmarks.devbench import DevBench
from voirdire.benchmarks.mtbench import MTBench
from voirdire.benchmarks.registry import canonical_name, clear_cache, load_benchmark
from voirdire.core import ConfigError
from voirdire.judges.extract import extract_verdicts

openpyxl = pytest.importorskip("openpyxl")


# ---------------------------------------------------------------------------- helpers


def _expected(data_dir: pathlib.Path) -> list[dict]:
    path = data_dir / "expected_prompts.jsonl.gz"
    if (
        not path.is_file()
    ):  # the release has no such file (a fetched data directory): the shared copy does
        pytest.skip(
            f"{path} not found: the expected prompts come with the shared copy of the data only"
        )
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _sheet_rows(path: pathlib.Path) -> list[dict]:
    """The first sheet as dicts, read with openpyxl (independent of the polars loader)."""
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = list(wb.worksheets[0].iter_rows(values_only=True))
    finally:
        wb.close()
    header = rows[0]
    return [dict(zip(header, r)) for r in rows[1:]]


def _judgments(data_dir: pathlib.Path, rel: str) -> list[dict]:
    with gzip.open(data_dir / "judgments" / rel, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _write_xlsx(
    path: pathlib.Path, header: list[str], rows: list[list]
) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(header)
    for r in rows:
        ws.append(r)
    wb.save(path)
    return path


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(bdata.DATA_ENV, raising=False)


# ---------------------------------------------------------------------------- prompts


def test_expected_prompts_byte_for_byte(data_dir):
    rows = _expected(data_dir)
    assert len(rows) == 40
    assert {r["benchmark"] for r in rows} == {"MTBench", "DevBench"}
    mismatches = []
    for r in rows:
        qid, first, second = r["cmp_index"].split(";")
        full = load_benchmark(r["benchmark"], data_dir)
        # Five DevBench queries use the "-general" metric, which only the repetition table has.
        bench = (
            full
            if qid in full.question_ids
            else load_benchmark(r["benchmark"], data_dir, "repetition")
        )
        assert bench.task_of(qid) == r["task"]
        got = bench.build_prompt(qid, (first, second), r["option_mode"])
        if got != r["prompt"]:
            i = next(
                (k for k, (x, y) in enumerate(zip(got, r["prompt"])) if x != y),
                min(len(got), len(r["prompt"])),
            )
            mismatches.append(
                f"{r['cmp_index']}: first difference at char {i}: {got[i - 40 : i + 40]!r} vs {r['prompt'][i - 40 : i + 40]!r}"
            )
    assert not mismatches, "\n".join(mismatches)


def test_expected_prompts_from_repetition_tables(data_dir):
    """All 40 queries are (question, model) pairs of the repetition samples: same bytes there."""
    for r in _expected(data_dir):
        qid, first, second = r["cmp_index"].split(";")
        bench = load_benchmark(r["benchmark"], data_dir, "repetition")
        assert (
            bench.build_prompt(qid, [first, second], r["option_mode"]) == r["prompt"]
        ), r["cmp_index"]


def test_expected_prompts_cover_math_and_swaps(data_dir):
    """Guard: the reference set exercises both MT-Bench templates and both orders."""
    rows = _expected(data_dir)
    assert any(r["task"] == "math" for r in rows) and any(
        r["task"] != "math" and r["benchmark"] == "MTBench" for r in rows
    )
    keys = {r["cmp_index"] for r in rows}
    assert any(f"{q};{b};{a}" in keys for q, a, b in (k.split(";") for k in keys))


def test_mtbench_math_template_only_for_math(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    seen = set()
    for qid, task in mt.questions.select("question_id", "task").iter_rows():
        p = mt.build_prompt(qid, ("gpt-4", mt.reference), 3)
        has_ref = "<|The Start of Reference Answer|>" in p
        assert has_ref == (task == "math"), (qid, task)
        seen.add(task)
    assert "math" in seen


def test_mtbench_prompt_slots_follow_shown_order(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    a1, a2 = mt.answers("81", "gpt-4")
    b1, b2 = mt.answers("81", mt.reference)
    assert a1 != b1
    p = mt.build_prompt("81", ("gpt-4", mt.reference), 3)
    q = mt.build_prompt("81", (mt.reference, "gpt-4"), 3)
    assert p != q
    assert p.index("### Assistant A:\n" + a1) < p.index("### Assistant B:\n" + b1)
    assert q.index("### Assistant A:\n" + b1) < q.index("### Assistant B:\n" + a1)
    assert "### Assistant B:\n" + b2 in p


def test_mtbench_two_option_mode_uses_same_template(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    assert mt.option_modes == (2, 3)
    assert mt.build_prompt("119", ("claude-v1", mt.reference), 2) == mt.build_prompt(
        "119", ("claude-v1", mt.reference), 3
    )


def test_devbench_option_modes_change_only_the_options(data_dir):
    dev = load_benchmark("devbench", data_dir)
    t = load_templates()["devbench"]
    qid = dev.question_ids[0]
    shown = ("gpt-4-0613", "human")
    prompts = {n: dev.build_prompt(qid, shown, n) for n in (2, 3, 4)}
    for n, p in prompts.items():
        assert t["options"][str(n)] in p
        for m in {2, 3, 4} - {n}:
            assert t["options"][str(m)] not in p
    assert prompts[3].replace(t["options"]["3"], t["options"]["2"]) == prompts[2]
    assert prompts[4].replace(t["options"]["4"], t["options"]["2"]) == prompts[2]


def test_devbench_answers_are_stripped_in_prompt(data_dir):
    """deepseek-coder answers start with a space and end with a newline in the table."""
    dev = load_benchmark("devbench", data_dir)
    raw = {str(r["index"]): r for r in _sheet_rows(data_dir / "qa" / "devbench.xlsx")}
    qid = dev.question_ids[0]
    cell = raw[qid]["answer-deepseek-coder-6.7b-instruct"]
    assert cell != cell.strip()
    p = dev.build_prompt(qid, ("deepseek-coder-6.7b-instruct", "human"), 2)
    assert "<Response 1 Start>\n\n " + cell.strip() + " \n\n<Response 1 End>" in p
    assert dev.output_chars(qid, ("deepseek-coder-6.7b-instruct",)) == len(cell.strip())


def test_devbench_reference_block_and_missing_guidance(tmp_path):
    """Synthetic table: the reference block appears only with a reference answer; an empty
    guidance cell leaves the placeholder (the release's behaviour); numeric ids become text."""
    header = [
        "question",
        "index",
        "evaluating_guidance",
        "task",
        "reference_answer",
        "answer-human",
        "answer-m1",
    ]
    _write_xlsx(
        tmp_path / "qa" / "devbench.xlsx",
        header,
        [
            ["Q one", "p_a-x", "- G1", "a-x", "REF ONE", "H1 ", "  M1\n"],
            ["Q two", 7, None, "a-x", None, "H2", "M2"],
        ],
    )
    dev = DevBench(tmp_path)
    assert dev.question_ids == ("p_a-x", "7")
    assert dev.models == ("human", "m1")
    p1 = dev.build_prompt("p_a-x", ("m1", "human"), 2)
    assert p1.endswith(
        "Response 1: \n\n<Response 1 Start>\n\n M1 \n\n<Response 1 End>\n\n"
        "Response 2: \n\n<Response 2 Start>\n\n H1 \n\n<Response 2 End>\n\n"
        "Reference Answer: \n\n<Reference Answer Start>\n\n REF ONE \n\n<Reference Answer End>\n\n"
    )
    assert "Scoring criteria:\n- G1 \n\n" in p1
    p2 = dev.build_prompt("7", ("human", "m1"), 3)
    assert "Reference Answer" not in p2
    assert "<Evaluating Guidance>" in p2
    assert p2.endswith("<Response 2 Start>\n\n M2 \n\n<Response 2 End>\n\n")
    assert dev.questions.filter(pl.col("question_id") == "7")[
        "input_chars"
    ].item() == len("Q two")


def test_mtbench_synthetic_table_numeric_ids_and_empty_cells(tmp_path):
    header = [
        "question_1", "question_2", "index", "task", "reference_answer_1", "reference_answer_2",
        "answer_1-vicuna-13b-v1.3", "answer_2-vicuna-13b-v1.3", "answer_1-m", "answer_2-m",
    ]  # fmt: skip
    _write_xlsx(
        tmp_path / "qa" / "mtbench.xlsx",
        header,
        [
            ["q1", "q2", 5, "math", "r1", "r2", "v1", "v2", None, "m2"],
            ["Q1", "Q2", 6.0, "Math", None, None, "V1", "V2", "M1", "M2"],
        ],
    )
    mt = MTBench(tmp_path)
    assert mt.question_ids == ("5", "6")
    assert mt.models == ("vicuna-13b-v1.3", "m")
    p = mt.build_prompt("5", ("m", "vicuna-13b-v1.3"), 3)
    assert "### Reference answer:\nr1\n" in p
    assert "### Assistant A:\n\n\n### User:\nq2" in p  # the empty first-turn answer
    assert mt.output_chars("5", ("m", "vicuna-13b-v1.3")) == len("m2") + len(
        "v1"
    ) + len("v2")
    # "Math" is not "math": the task must match exactly, as in the release.
    assert "Reference answer" not in mt.build_prompt("6", ("m", "vicuna-13b-v1.3"), 3)


def test_prompt_building_speed(data_dir):
    for name in ("mtbench", "devbench"):
        b = load_benchmark(name, data_dir)
        pairs = [
            (q, (c, b.reference) if i % 2 else (b.reference, c))
            for i, (q, c) in enumerate(itertools.product(b.question_ids, b.candidates))
        ]
        work = (pairs * (50_000 // len(pairs) + 1))[:50_000]
        t0 = time.perf_counter()
        for q, shown in work:
            b.build_prompt(q, shown, b.default_option_mode)
        elapsed = time.perf_counter() - t0
        assert elapsed < 5.0, f"{name}: 50,000 prompts took {elapsed:.2f}s"


# ---------------------------------------------------------------------------- loaders


def test_mtbench_full_table(data_dir):
    mt = load_benchmark("MTBench", data_dir)
    assert isinstance(mt, Benchmark)
    assert (mt.name, mt.reference, mt.default_option_mode) == (
        "MTBench",
        "vicuna-13b-v1.3",
        3,
    )
    assert mt.verdict_pattern == r"\[\[([ABCD])\]\]"
    q = mt.questions
    assert q.columns == ["question_id", "task", "input_chars"]
    assert q.schema == pl.Schema(
        {"question_id": pl.String, "task": pl.String, "input_chars": pl.Int64}
    )
    assert q.height == 80
    assert q["question_id"].to_list() == [str(i) for i in range(81, 161)]
    assert sorted(q["task"].unique().to_list()) == [
        "coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing",
    ]  # fmt: skip
    assert q.group_by("task").len()["len"].to_list() == [10] * 8
    assert len(mt.models) == 31 and mt.reference in mt.models
    assert mt.models[0] == "baize-v2-13b"
    assert len(mt.candidates) == 30 and mt.reference not in mt.candidates
    assert mt.task_of("119") == "math"


def test_mtbench_lengths_match_independent_read(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    raw = {str(r["index"]): r for r in _sheet_rows(data_dir / "qa" / "mtbench.xlsx")}
    chars = dict(mt.questions.select("question_id", "input_chars").iter_rows())
    for qid, r in raw.items():
        assert chars[qid] == len(r["question_1"]) + len(r["question_2"])
    for qid in ("81", "127", "160"):
        for m in ("llama-13b", "gpt-4"):
            want = sum(
                len(raw[qid][f"answer_{t}-{m}"] or "")
                + len(raw[qid][f"answer_{t}-{mt.reference}"] or "")
                for t in (1, 2)
            )
            assert mt.output_chars(qid, (m, mt.reference)) == want
    # The one empty answer cell of the release: llama-13b, question 127, turn 1.
    assert raw["127"]["answer_1-llama-13b"] is None
    assert mt.answers("127", "llama-13b")[0] == ""
    assert mt.output_chars("127", ("llama-13b",)) == len(
        raw["127"]["answer_2-llama-13b"]
    )


def test_devbench_full_table(data_dir):
    dev = load_benchmark("DevBench", data_dir)
    assert (dev.name, dev.reference, dev.default_option_mode) == (
        "DevBench",
        "human",
        2,
    )
    assert dev.verdict_pattern == "(?:选择：|Choice: )([ABCD])"
    assert dev.option_modes == (2, 3, 4)
    q = dev.questions
    assert q.height == 112 and q["question_id"].n_unique() == 112
    assert len(dev.models) == 11 and dev.models[0] == "human"
    assert q["task"].n_unique() == 14
    assert q.group_by("task").len()["len"].to_list() == [8] * 14
    # Task names keep the table's casing: "UML_sequence-..." but "uml_class-...".
    assert "UML_sequence-faithfulness" in q["task"].to_list()
    assert "uml_class-faithfulness" in q["task"].to_list()
    raw = {r["index"]: r for r in _sheet_rows(data_dir / "qa" / "devbench.xlsx")}
    for qid, n in q.select("question_id", "input_chars").iter_rows():
        assert n == len(raw[qid]["question"])
        assert dev.task_of(qid) == raw[qid]["task"]


def test_repetition_samples(data_dir):
    mt = load_benchmark("mtbench", data_dir, sample="repetition")
    dev = load_benchmark("devbench", data_dir, sample="repetition")
    assert mt.sample == dev.sample == "repetition"
    assert mt.questions.height == 24 and dev.questions.height == 18
    assert set(mt.models) == {
        "stablelm-tuned-alpha-7b",
        "falcon-40b-instruct",
        "claude-v1",
        "llama-13b",
        "vicuna-13b-v1.3",
    }
    assert set(dev.models) == {
        "gpt-3.5-turbo-1106",
        "gpt-4-1106-preview",
        "deepseek-coder-1.3b-instruct",
        "codellama-13b-instruct",
        "human",
    }
    # 3 questions per task
    assert set(mt.questions.group_by("task").len()["len"].to_list()) == {3}
    assert set(dev.questions.group_by("task").len()["len"].to_list()) == {3}
    # The repetition DevBench table has the "-general" metric the full table lacks.
    full = load_benchmark("devbench", data_dir)
    assert "xlsx2csv_architecture_design-general" in dev.question_ids
    assert "xlsx2csv_architecture_design-general" not in full.question_ids


def test_templates_are_the_release_templates(data_dir):
    shipped = load_templates()
    with open(data_dir / "prompts.json", encoding="utf-8") as f:
        assert shipped == json.load(f)
    notice = pathlib.Path(bdata.__file__).parent / "templates" / "NOTICE.txt"
    text = notice.read_text(encoding="utf-8")
    assert "Slimshilin" in text and "MIT" in text and "Apache" in text


# ---------------------------------------------------------------------------- extraction


def _extract(
    b: Benchmark, outputs: list[str | None], mode: str = "pairwise"
) -> list[str | None]:
    """The pipeline's one extraction stage (judges/extract.py) with the benchmark's pattern."""
    raw = pl.DataFrame(
        {
            "benchmark": [b.name] * len(outputs),
            "shown": [["x", "y"]] * len(outputs),
            "option_mode": [b.default_option_mode] * len(outputs),
            "output": outputs,
            "choice": [None] * len(outputs),
        },
        schema={
            "benchmark": pl.String,
            "shown": pl.List(pl.String),
            "option_mode": pl.Int32,
            "output": pl.String,
            "choice": pl.String,
        },
    )
    return extract_verdicts(raw, {b.name: b.verdict_pattern_for(mode)})[
        "extracted"
    ].to_list()


@pytest.mark.parametrize(
    ("bench", "text", "want"),
    [
        ("mtbench", "Explanation... [[A]]", "A"),
        ("mtbench", "tie: [[C]] then later [[B]]", "C"),
        ("mtbench", "[[D]]", "D"),
        ("mtbench", "[A] only", None),
        ("mtbench", "[[E]]", None),
        ("mtbench", None, None),
        ("devbench", "Choice: B\nReason: ...", "B"),
        ("devbench", "选择：A\n理由", "A"),
        ("devbench", "**Choice**: A", None),
        ("devbench", "Choice:A", None),
        ("devbench", "Choice: a", None),
        ("devbench", "x Choice: C y Choice: A", "C"),
        ("devbench", "", None),
    ],
)
def test_extract_examples(data_dir, bench, text, want):
    b = load_benchmark(bench, data_dir)
    assert _extract(b, [text]) == [want]


@pytest.mark.parametrize("bench", ["mtbench", "devbench"])
@pytest.mark.parametrize("mode", ["pairwise", "listwise"])
def test_verdict_cue_writes_what_the_pattern_reads(data_dir, bench, mode):
    """The cue a judge is handed (``verdict_format``) and the pattern extraction reads agree."""
    b = load_benchmark(bench, data_dir)
    cue, closing = b.verdict_format
    texts = [f"Some reasoning.\n{cue}{letter}{closing}" for letter in "ABC"]
    assert _extract(b, texts, mode) == ["A", "B", "C"]


@pytest.mark.parametrize(
    ("bench", "judge_file", "no_match"),
    [
        ("MTBench", "position_bias/MTBench/gpt-3.5-turbo-1106.jsonl.gz", 19),
        ("DevBench", "position_bias/DevBench/gemini-pro.jsonl.gz", 2),
        ("MTBench", "repetition/MTBench/gpt-3.5-turbo-0125.jsonl.gz", 22),
    ],
)
def test_polars_extraction_equals_python_re(data_dir, bench, judge_file, no_match):
    b = load_benchmark(bench, data_dir)
    outputs = [r["judgment"] for r in _judgments(data_dir, judge_file)]
    assert len(outputs) > 500
    py = [
        None
        if o is None
        else (m.group(1) if (m := re.search(b.verdict_pattern, o)) else None)
        for o in outputs
    ]
    vec = _extract(b, outputs)
    diffs = [i for i, (x, y) in enumerate(zip(py, vec)) if x != y]
    assert not diffs, (
        f"the pipeline's extraction and Python's re disagree on rows {diffs[:10]}"
    )
    assert sum(v is None for v in py) == no_match
    assert set(py) - {None} <= set("ABCD")


# ---------------------------------------------------------------------------- errors


def test_unknown_benchmark_lists_known():
    with pytest.raises(
        ConfigError, match=r"known benchmarks: (?=.*MTBench)(?=.*DevBench)"
    ):
        load_benchmark("nosuchbench")
    with pytest.raises(ConfigError):
        canonical_name("mt bench 2")


@pytest.mark.parametrize(
    "name", ["mtbench", "MT-Bench", "MTBench", "mt_bench", "MT Bench"]
)
def test_benchmark_names_case_insensitive(data_dir, name):
    assert canonical_name(name) == "mtbench"
    assert load_benchmark(name, data_dir) is load_benchmark("mtbench", data_dir)


def test_devbench_names(data_dir):
    b = load_benchmark("Dev-Bench", data_dir)
    assert isinstance(b, DevBench) and b is load_benchmark("devbench", str(data_dir))
    assert load_benchmark("devbench", data_dir, "repetition") is not b


def test_unknown_sample(data_dir):
    with pytest.raises(ConfigError, match="sample"):
        load_benchmark("mtbench", data_dir, sample="half")
    with pytest.raises(ConfigError, match="sample"):
        DevBench(data_dir, sample="Full")


@pytest.mark.parametrize("bench", ["mtbench", "devbench"])
def test_bad_requests(data_dir, bench):
    b = load_benchmark(bench, data_dir)
    qid = b.question_ids[0]
    cand = b.candidates[0]
    with pytest.raises(ValueError, match="listwise"):
        b.build_prompt(qid, (cand, b.reference), b.default_option_mode, mode="listwise")
    with pytest.raises(ValueError, match="option mode"):
        b.build_prompt(qid, (cand, b.reference), 5)
    with pytest.raises(ValueError, match="option mode"):
        b.build_prompt(qid, (cand, b.reference), 1)
    with pytest.raises(ValueError):
        b.build_prompt(qid, (cand, b.reference, b.candidates[1]), b.default_option_mode)
    with pytest.raises(ValueError):
        b.build_prompt(qid, (cand, cand), b.default_option_mode)
    with pytest.raises(KeyError, match="question"):
        b.build_prompt("no-such-question", (cand, b.reference), b.default_option_mode)
    with pytest.raises(KeyError, match="model"):
        b.build_prompt(qid, ("no-such-model", b.reference), b.default_option_mode)
    with pytest.raises(KeyError):
        b.output_chars(qid, ("no-such-model",))
    with pytest.raises(KeyError):
        b.output_chars("no-such-question", (cand,))
    with pytest.raises(KeyError):
        b.task_of("no-such-question")


def test_mtbench_rejects_four_options(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    with pytest.raises(ValueError, match="option mode"):
        mt.build_prompt("81", ("gpt-4", mt.reference), 4)


def test_mtbench_question_id_is_text_not_int(data_dir):
    mt = load_benchmark("mtbench", data_dir)
    with pytest.raises(KeyError):
        mt.build_prompt(81, ("gpt-4", mt.reference), 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cls", "fname", "header", "missing"),
    [
        (
            MTBench,
            "mtbench.xlsx",
            [
                "question_1",
                "question_2",
                "index",
                "reference_answer_1",
                "reference_answer_2",
                "answer_1-vicuna-13b-v1.3",
                "answer_2-vicuna-13b-v1.3",
            ],
            "task",
        ),
        (
            MTBench,
            "mtbench.xlsx",
            [
                "question_1",
                "task",
                "index",
                "reference_answer_1",
                "reference_answer_2",
                "answer_1-vicuna-13b-v1.3",
                "answer_2-vicuna-13b-v1.3",
            ],
            "question_2",
        ),
        (
            MTBench,
            "mtbench.xlsx",
            [
                "question_1",
                "question_2",
                "task",
                "index",
                "reference_answer_1",
                "reference_answer_2",
                "answer_1-vicuna-13b-v1.3",
                "answer_2-vicuna-13b-v1.3",
                "answer_1-m",
            ],
            "answer_2-m",
        ),
        (
            DevBench,
            "devbench.xlsx",
            ["question", "task", "answer-human", "answer-m"],
            "index",
        ),
        (
            DevBench,
            "devbench.xlsx",
            ["index", "task", "answer-human", "answer-m"],
            "question",
        ),
        (
            DevBench,
            "devbench.xlsx",
            ["question", "index", "task", "answer-m"],
            "answer-human",
        ),
    ],
)
def test_missing_column(tmp_path, cls, fname, header, missing):
    path = _write_xlsx(
        tmp_path / "qa" / fname, header, [[f"v{i}" for i in range(len(header))]]
    )
    with pytest.raises(ConfigError) as err:
        cls(tmp_path)
    msg = str(err.value)
    assert repr(missing) in msg and str(path) in msg


def test_duplicate_question_id(tmp_path):
    header = ["question", "index", "task", "answer-human", "answer-m"]
    _write_xlsx(
        tmp_path / "qa" / "devbench.xlsx",
        header,
        [["q", "a", "t", "h", "m"], ["q", "a", "t", "h", "m"]],
    )
    with pytest.raises(ConfigError, match="duplicate"):
        DevBench(tmp_path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [["q", "a", "t", "h", "m"], ["q", "  ", "t", "h", "m"]],
            "empty 'index' in data row 2",
        ),
        (
            [
                ["q", "a", "t", "h", "m"],
                ["q", "b", None, "h", "m"],
                ["q", "c", "t", "h", "m"],
            ],
            "empty 'task' in data row 2",
        ),
        (
            [["q", "81.0", "t", "h", "m"], ["q", "81", "t", "h", "m"]],
            "duplicate question id '81'",
        ),
    ],
)
def test_bad_question_rows_are_named(tmp_path, rows, message):
    header = ["question", "index", "task", "answer-human", "answer-m"]
    _write_xlsx(tmp_path / "qa" / "devbench.xlsx", header, rows)
    with pytest.raises(ConfigError, match=message):
        DevBench(tmp_path)
    with pytest.raises(ConfigError, match="DevBench: unknown sample 'half'"):
        DevBench(tmp_path, sample="half")


def test_missing_table_file(tmp_path):
    (tmp_path / "qa").mkdir()
    with pytest.raises(ConfigError, match=r"qa/devbench_repetition_sample\.xlsx"):
        DevBench(tmp_path, sample="repetition")
    with pytest.raises(ConfigError, match=r"expected_prompts\.jsonl\.gz"):
        require_file(tmp_path, "expected_prompts.jsonl.gz")
    (tmp_path / "x.txt").write_text("x")
    assert require_file(tmp_path, "x.txt") == tmp_path / "x.txt"


# ---------------------------------------------------------------------------- data directory


def test_explicit_missing_dir_raises_even_with_env(tmp_path, monkeypatch):
    monkeypatch.setenv(bdata.DATA_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match="explicitly"):
        resolve_data_dir(tmp_path / "nope")


def test_env_missing_dir_raises(tmp_path, monkeypatch):
    monkeypatch.setenv(bdata.DATA_ENV, str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match=bdata.DATA_ENV):
        resolve_data_dir()
    with pytest.raises(ConfigError):
        load_benchmark("mtbench")


def test_explicit_then_env_order(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(bdata.DATA_ENV, str(b))
    assert resolve_data_dir(a) == a.resolve()
    assert resolve_data_dir(str(a)) == a.resolve()
    assert resolve_data_dir() == b.resolve()


def test_default_locations(tmp_path, monkeypatch, no_env):
    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigError) as err:
        resolve_data_dir()
    msg = str(err.value)
    assert (
        "Position-Bias-Analyzer" in msg and "Judging the Judges" in msg and "MIT" in msg
    )
    assert str(tmp_path / "shared" / "data" / "judging-the-judges") in msg
    assert str(work / "shared" / "data" / "judging-the-judges") in msg
    # <cwd>/shared/... is found ...
    inner = work / "shared" / "data" / "judging-the-judges"
    inner.mkdir(parents=True)
    assert resolve_data_dir() == inner.resolve()
    # ... but <cwd>/../shared/... comes first.
    outer = tmp_path / "shared" / "data" / "judging-the-judges"
    outer.mkdir(parents=True)
    assert resolve_data_dir() == outer.resolve()


def test_fetched_data_is_found_last(tmp_path, monkeypatch, no_env):
    """The user data directory ``voirdire data fetch`` writes is the last default, and
    nothing is looked up relative to where the package is installed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    fetched = tmp_path / "xdg" / "voirdire" / "judging-the-judges"
    assert bdata.default_data_dir() == fetched
    assert bdata.candidate_data_dirs()[-1] == fetched
    with pytest.raises(ConfigError, match="voirdire data fetch"):
        resolve_data_dir()
    fetched.mkdir(parents=True)
    assert resolve_data_dir() == fetched.resolve()
    local = tmp_path / "shared" / "data" / "judging-the-judges"
    local.mkdir(parents=True)
    assert resolve_data_dir() == local.resolve()


def test_data_dir_fixture_is_usable(data_dir):
    assert (data_dir / "qa" / "mtbench.xlsx").is_file()


def test_normalise_id():
    assert normalise_id("81") == "81"
    assert normalise_id("81.0") == "81"
    assert normalise_id("81.5") == "81.5"
    assert (
        normalise_id("idcenter_uml_class-complexity") == "idcenter_uml_class-complexity"
    )


def test_registry_cache_clear(data_dir):
    a = load_benchmark("mtbench", data_dir)
    clear_cache()
    b = load_benchmark("mtbench", data_dir)
    assert a is not b
    assert a.build_prompt("81", ("gpt-4", a.reference), 3) == b.build_prompt(
        "81", ("gpt-4", b.reference), 3
    )


def test_env_var_is_used_by_loader(data_dir, monkeypatch):
    monkeypatch.setenv(bdata.DATA_ENV, os.fspath(data_dir))
    assert load_benchmark("devbench").data_dir == pathlib.Path(data_dir).resolve()
