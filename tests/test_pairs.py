"""A user's own pairs (``[benchmark] name = "pairs"``): reading, prompts, bad input, and
whole jobs with a simulated judge and an ``openai_compatible`` judge on the loopback
server (``docs/own-data.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.fake_api_server import FakeAPIServer
from voirdire.benchmarks.own_pairs.prompts import load_template
from voirdire.core import ConfigError
from voirdire.judges.extract import extract_verdicts

ROWS = [
    {
        "uid": "q1",
        "prompt": "Capital of France?",
        "out_x": "Paris.",
        "out_y": "Lyon.",
        "label": 1,
        "kind": "geo",
        "ref": "Paris",
    },
    {
        "uid": "q2",
        "prompt": "2 + 2?",
        "out_x": "5",
        "out_y": "4",
        "label": 2,
        "kind": "math",
        "ref": "4",
    },
    {
        "uid": "q3",
        "prompt": "Largest ocean?",
        "out_x": "Pacific.",
        "out_y": "Atlantic.",
        "label": 1,
        "kind": "geo",
        "ref": "Pacific",
    },
    {
        "uid": "q4",
        "prompt": "3 * 3?",
        "out_x": "9",
        "out_y": "nine",
        "label": "tie",
        "kind": "math",
        "ref": "9",
    },
    {
        "uid": "q5",
        "prompt": "Opposite of hot?",
        "out_x": "warm",
        "out_y": "cold",
        "label": "b",
        "kind": "words",
        "ref": "cold",
    },
]
COLUMNS = {
    "id": "uid",
    "instruction": "prompt",
    "output_a": "out_x",
    "output_b": "out_y",
    "gold": "label",
    "task": "kind",
}

#: an own template: system and user turns, a data column of its own (``ref``), labels a/b/tie
TEMPLATE_AB = """{% block system %}You grade outputs for: {{ task }}.{% endblock %}
{% block user %}Instruction: {{ instruction }}
Hint: {{ ref }}
Output (a): {{ output_1 }}
Output (b): {{ output_2 }}
Answer "Output (a)" or "Output (b)"{% if tie %} or "Output (tie)"{% endif %}.{% endblock %}"""
PATTERN_AB = r"Output \((a|b|tie)\)\s*$"

#: another own template for the dataset directory: labels 1/2, no tie, no system turn
TEMPLATE_12 = "Which answer to {{ instruction }} is better?\n1: {{ output_1 }}\n2: {{ output_2 }}\nSay Verdict: 1 or Verdict: 2."
PATTERN_12 = r"Verdict: ([12])"


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _job(tmp_path: Path, pairs: dict, judges: list[dict], **bench) -> dict:
    return {
        "name": "own", "output_dir": str(tmp_path / "out"),
        "benchmark": {"name": "pairs", "pairs": pairs, **bench},
        "comparison": {"mode": "pairwise", "permutations": "both"},
        "run": {"batch_size": 8, "flush_seconds": 0.2},
        "sampling": {"max_tokens": 64},
        "judges": judges,
    }  # fmt: skip


def _pairs(path: Path, template: Path, **kw) -> dict:
    return {"path": str(path), "label": "Mine", "columns": COLUMNS, "template": str(template),
            "verdict_pattern": PATTERN_AB, "verdict_labels": ["a", "b", "tie"], **kw}  # fmt: skip


# --------------------------------------------------------------------------------------
# reading and prompts (no Ray)


@pytest.mark.parametrize("kind", ["jsonl", "json", "csv", "parquet"])
def test_every_file_format_gives_the_same_instances_and_gold(tmp_path, kind):
    df = pl.DataFrame(ROWS).with_columns(pl.col("label").cast(pl.String))
    path = tmp_path / f"pairs.{kind}"
    if kind == "jsonl":
        _write_jsonl(path, ROWS)
    elif kind == "json":
        path.write_text(json.dumps(ROWS))
    elif kind == "csv":
        df.write_csv(path)
    else:
        df.write_parquet(path)
    tpl = tmp_path / "t.jinja"
    tpl.write_text(TEMPLATE_AB)
    plan = voirdire.plan(
        _job(
            tmp_path,
            _pairs(path, tpl, models=["x", "y"]),
            [{"name": "s", "backend": "simulated"}],
        )
    )
    inst = plan.instances
    assert inst["question_id"].to_list() == ["q1", "q2", "q3", "q4", "q5"]
    assert (
        inst["candidate"].to_list() == ["x"] * 5
        and inst["reference"].to_list() == ["y"] * 5
    )
    assert inst["gold"].to_list() == ["x", "y", "x", "tie", "y"]  # 1, 2, 1, tie, b
    assert inst["task"].to_list() == ["geo", "math", "geo", "math", "words"]
    assert plan.units_per_judge == 10


def test_own_template_renders_system_and_user_turns_in_slot_order(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", ROWS)
    tpl = tmp_path / "t.jinja"
    tpl.write_text(TEMPLATE_AB)
    bench = voirdire.plan(
        _job(tmp_path, _pairs(path, tpl), [{"name": "s", "backend": "simulated"}])
    ).bench
    user = bench.build_prompt("q1", ("out_y", "out_x"), 3)
    assert user == ('Instruction: Capital of France?\nHint: Paris\nOutput (a): Lyon.\nOutput (b): Paris.\n'
                    'Answer "Output (a)" or "Output (b)" or "Output (tie)".')  # fmt: skip
    assert (
        bench.system_prompt("q1", ("out_y", "out_x"), 3)
        == "You grade outputs for: geo."
    )
    assert "Output (tie)" not in bench.build_prompt("q1", ("out_x", "out_y"), 2)
    assert bench.option_modes == (2, 3) and bench.default_option_mode == 3


def test_builtin_mtbench_template_is_fastchats_pair_v2(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", ROWS)
    pairs = {"path": str(path), "columns": COLUMNS}
    bench = voirdire.plan(
        _job(tmp_path, pairs, [{"name": "s", "backend": "simulated"}])
    ).bench
    assert bench.name == "p" and bench.verdict_pattern == r"\[\[([ABCD])\]\]"
    assert bench.build_prompt("q2", ("out_x", "out_y"), 3) == (
        "[User Question]\n2 + 2?\n\n[The Start of Assistant A's Answer]\n5\n[The End of Assistant A's Answer]\n\n"
        "[The Start of Assistant B's Answer]\n4\n[The End of Assistant B's Answer]"
    )
    system = bench.system_prompt("q2", ("out_x", "out_y"), 3)
    assert system.startswith(
        "Please act as an impartial judge and evaluate the quality of the responses provided by two AI"
    )
    assert system.endswith(
        '"[[A]]" if assistant A is better, "[[B]]" if assistant B is better, and "[[C]]" for a tie.'
    )


def test_builtin_llmbar_template_is_llmbars_vanilla_prompt(tmp_path):
    from voirdire.benchmarks.llmbar_prompts import load_prompt

    path = _write_jsonl(
        tmp_path / "p.jsonl", [{**r, "out_x": "{curly} {{ x }}"} for r in ROWS]
    )
    bench = voirdire.plan(_job(tmp_path, {"path": str(path), "columns": COLUMNS, "template": "llmbar"},
                               [{"name": "s", "backend": "simulated"}])).bench  # fmt: skip
    system, user = load_prompt("Vanilla")
    assert bench.system_prompt("q2", ("out_y", "out_x"), 2) == system
    assert bench.build_prompt("q2", ("out_y", "out_x"), 2) == user.format_map(
        {"input": "2 + 2?", "output_1": "4", "output_2": "{curly} {{ x }}"}
    )
    assert bench.option_modes == (2,) and bench.verdict_labels == {"a": "A", "b": "B"}


def test_edited_row_or_template_changes_the_query_ids(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", ROWS)
    tpl = tmp_path / "t.jinja"
    tpl.write_text(TEMPLATE_AB)
    job = _job(tmp_path, _pairs(path, tpl), [{"name": "s", "backend": "simulated"}])

    def keys():
        b = voirdire.plan(job).bench
        return [b.prompt_key(q) for q in b.question_ids]

    before = keys()
    _write_jsonl(path, [ROWS[0], {**ROWS[1], "out_x": "five"}, *ROWS[2:]])
    after = keys()
    assert before[0] == after[0] and before[1] != after[1]
    tpl.write_text(TEMPLATE_AB.replace("Hint", "Note"))
    assert all(a != b for a, b in zip(after, keys()))


def test_answers_form_compares_every_model_with_the_reference(tmp_path):
    rows = [
        {"q": "a?", "m1": "x", "m2": "y", "m3": "z"},
        {"q": "b?", "m1": "u", "m2": "v", "m3": "w"},
    ]
    path = _write_jsonl(tmp_path / "many.jsonl", rows)
    pairs = {"path": str(path), "columns": {"instruction": "q", "answers": {"alpha": "m1", "beta": "m2", "gamma": "m3"}},
             "reference": "beta"}  # fmt: skip
    plan = voirdire.plan(_job(tmp_path, pairs, [{"name": "s", "backend": "simulated"}]))
    assert plan.instances.select("question_id", "candidate", "reference").rows() == [
        ("1", "alpha", "beta"),
        ("1", "gamma", "beta"),
        ("2", "alpha", "beta"),
        ("2", "gamma", "beta"),
    ]
    assert (
        plan.bench.build_prompt("2", ("gamma", "beta"), 3).count(
            "w\n[The End of Assistant A"
        )
        == 1
    )


def test_verdict_labels_are_read_as_position_letters():
    raw = pl.DataFrame(
        {"benchmark": ["Mine"] * 4 + ["MTBench"], "shown": [["x", "y"]] * 5, "option_mode": [3] * 5,
         "output": ["... Output (a)", "... Output (b) ", "Output (tie)", "Output (c)", "[[B]]"], "choice": [None] * 5},
        schema_overrides={"option_mode": pl.Int32, "choice": pl.String},
    )  # fmt: skip
    got = extract_verdicts(raw, {"Mine": PATTERN_AB.replace("tie", "tie|c"), "MTBench": r"\[\[([ABCD])\]\]"},
                           {"Mine": {"a": "A", "b": "B", "tie": "C"}})  # fmt: skip
    assert got["extracted"].to_list() == ["A", "B", "C", "c", "B"]
    assert got["chosen"].to_list() == ["x", "y", None, None, "y"]
    assert got["tie"].to_list() == [False, False, True, False, False]


# --------------------------------------------------------------------------------------
# bad input: one line naming the culprit, before anything is sent


def _plan_error(tmp_path, rows=None, template=TEMPLATE_AB, **pairs_kw) -> str:
    path = _write_jsonl(tmp_path / "bad.jsonl", rows if rows is not None else ROWS)
    tpl = tmp_path / "bad.jinja"
    tpl.write_text(template)
    with pytest.raises(ConfigError) as exc:
        voirdire.plan(
            _job(
                tmp_path,
                _pairs(path, tpl, **pairs_kw),
                [{"name": "s", "backend": "simulated"}],
            )
        )
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_bad_input_missing_column(tmp_path):
    msg = _plan_error(tmp_path, columns={**COLUMNS, "output_b": "out_z"})
    assert "no column 'out_z'" in msg and "bad.jsonl" in msg


def test_bad_input_empty_column(tmp_path):
    msg = _plan_error(tmp_path, rows=[{**r, "kind": None} for r in ROWS])
    assert "column 'kind' (task) is empty" in msg


def test_bad_input_null_cell_names_the_row(tmp_path):
    msg = _plan_error(tmp_path, rows=[*ROWS[:3], {**ROWS[3], "out_y": None}, ROWS[4]])
    assert "empty 'out_y' (output_b) in row 4" in msg


def test_bad_input_duplicate_id(tmp_path):
    msg = _plan_error(tmp_path, rows=[*ROWS, {**ROWS[1], "prompt": "again"}])
    assert "duplicate id 'q2'" in msg and "rows 2 and 6" in msg


@pytest.mark.parametrize("label", [3, "c", "winner", "0"])
def test_bad_input_label_outside_the_allowed_values(tmp_path, label):
    msg = _plan_error(
        tmp_path, rows=[*ROWS[:2], {**ROWS[2], "label": label}, *ROWS[3:]]
    )
    assert f"gold label {str(label)!r}" in msg and "row 3" in msg and "'label'" in msg


def test_bad_input_template_field_the_data_lacks(tmp_path):
    msg = _plan_error(
        tmp_path, template=TEMPLATE_AB.replace("{{ ref }}", "{{ reference_answer }}")
    )
    assert "field 'reference_answer' is not in the data" in msg and "bad.jinja" in msg


def test_bad_input_template_syntax_and_missing_pattern(tmp_path):
    assert "syntax error on line" in _plan_error(
        tmp_path, template="{% block user %}{{ instruction }"
    )
    assert "verdict_pattern" in _plan_error(tmp_path, verdict_pattern=None)
    assert "no capture group" in _plan_error(tmp_path, verdict_pattern="Output")


def test_bad_input_same_model_both_outputs_and_pairs_options(tmp_path):
    rows = [{**r, "ma": "m", "mb": "n"} for r in ROWS]
    rows[1]["mb"] = "m"
    msg = _plan_error(
        tmp_path, rows=rows, columns={**COLUMNS, "model_a": "ma", "model_b": "mb"}
    )
    assert "row 2 names model 'm' for both outputs" in msg
    path = _write_jsonl(tmp_path / "ok.jsonl", ROWS)
    with pytest.raises(ConfigError, match="benchmark.candidates does not apply"):
        voirdire.plan(_job(tmp_path, {"path": str(path), "columns": COLUMNS}, [{"name": "s", "backend": "simulated"}],
                           candidates=["out_x"]))  # fmt: skip
    with pytest.raises(ConfigError, match=r"needs a \[benchmark.pairs\] table"):
        voirdire.plan(
            _job(tmp_path, None, [{"name": "s", "backend": "simulated"}])
            | {"benchmark": {"name": "pairs"}}
        )


def test_load_template_rejects_unknown_builtin():
    with pytest.raises(ConfigError, match="built-in templates: mtbench, llmbar"):
        load_template("llmbar-vanilla")


# --------------------------------------------------------------------------------------
# whole jobs: simulated and openai_compatible judges (Ray, loopback server)


@pytest.fixture(scope="module")
def server(ray_local):
    srv = FakeAPIServer(latency_s=0.0).start()
    yield srv
    srv.stop()


def _judges(srv: FakeAPIServer) -> list[dict]:
    return [
        {"name": "sim", "backend": "simulated", "primacy": 1.0, "sensitivity": 0.0},  # always slot A
        {"name": "api", "backend": "openai_compatible", "base_url": f"{srv.url}/v1", "model": "judge-7b",
         "max_retries": 0, "timeout_s": 5.0},
    ]  # fmt: skip


def _check_run(res, n_rows: int, gold: list[str | None]) -> None:
    j = res.judgments
    assert j.height == 2 * 2 * n_rows  # two judges, both orders
    assert j.filter(pl.col("failed")).height == 0
    assert sorted(j.filter(pl.col("judge") == "sim").group_by("question_id").agg(pl.col("gold").first()).sort("question_id")["gold"].to_list(),
                  key=str) == sorted(gold, key=str)  # fmt: skip
    jm = res.judge_metrics.sort("judge")
    assert jm["judge"].to_list() == ["api", "sim"]
    assert jm["n_gold"].to_list() == [sum(g is not None for g in gold)] * 2
    for r in jm.iter_rows(named=True):
        assert 0.0 <= r["accuracy_lo"] <= r["accuracy"] <= r["accuracy_hi"] <= 1.0
    csv = pl.read_csv(Path(res.output_dir) / "metrics" / "judge_metrics.csv")
    assert {
        "accuracy",
        "accuracy_shown",
        "accuracy_swapped",
        "both_correct",
        "accuracy_lo",
    } <= set(csv.columns)


@pytest.mark.ray
def test_own_jsonl_with_own_template_end_to_end(server, tmp_path):
    server.reset()
    server.config["verdicts"] = ["Output (a)", "Output (b)", "Output (tie)"]
    path = _write_jsonl(tmp_path / "mine.jsonl", ROWS)
    tpl = tmp_path / "mine.jinja"
    tpl.write_text(TEMPLATE_AB)
    res = voirdire.run(
        _job(tmp_path, _pairs(path, tpl), _judges(server)), show_progress=False
    )
    _check_run(res, len(ROWS), ["out_x", "out_y", "out_x", "tie", "out_y"])
    api = res.judgments.filter(pl.col("judge") == "api")
    assert (
        set(api["extracted"].to_list()) <= {"A", "B", "C"}
        and api["output"].str.contains(r"Output \(").all()
    )
    sent = list(server.stats["attempts"])
    assert len(sent) == 10 and all(
        p.startswith("You grade outputs for: ") and "\nInstruction: " in p for p in sent
    )
    # the simulated judge always answers slot A: right in the shown order where the gold
    # is the first output (q1, q3), in the swapped order where it is the second (q2, q5)
    sim = res.judge_metrics.filter(pl.col("judge") == "sim").row(0, named=True)
    assert (
        sim["pc"],
        sim["pf"],
        sim["accuracy_shown"],
        sim["accuracy_swapped"],
        sim["accuracy"],
        sim["both_correct"],
    ) == (0.0, -1.0, 2 / 5, 2 / 5, 4 / 10, 0.0)


@pytest.mark.ray
def test_local_hf_dataset_directory_with_own_template_end_to_end(server, tmp_path):
    import datasets  # the test extra installs it; CI must not skip this

    server.reset()
    server.config["verdicts"] = ["Verdict: 1", "Verdict: 2"]
    rows = [{k: str(v) for k, v in r.items()} for r in ROWS if r["label"] != "tie"]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(
        str(tmp_path / "ds")
    )
    tpl = tmp_path / "numbers.jinja"
    tpl.write_text(TEMPLATE_12)
    pairs = {"path": str(tmp_path / "ds"), "split": "test", "label": "HF", "columns": COLUMNS, "template": str(tpl),
             "verdict_pattern": PATTERN_12, "verdict_labels": ["1", "2"], "models": ["left", "right"]}  # fmt: skip
    res = voirdire.run(_job(tmp_path, pairs, _judges(server)), show_progress=False)
    _check_run(res, len(rows), ["left", "right", "left", "right"])
    assert set(res.judgments["option_mode"].to_list()) == {2}
    sim = res.judge_metrics.filter(pl.col("judge") == "sim").row(0, named=True)
    assert (sim["accuracy_shown"], sim["accuracy_swapped"], sim["both_correct"]) == (
        0.5,
        0.5,
        0.0,
    )
    sent = list(server.stats["attempts"])
    assert len(sent) == 8 and all(
        p.startswith("Which answer to ") for p in sent
    )  # no system turn
