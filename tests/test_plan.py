"""Planning as named stages (engine/plan.py): each stage reads only what the inputs or an
earlier stage wrote, the stages run in their order, the examples' plans did not move, and
the engine's messages speak of what a backend declares, never of a backend by name."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

import pytest

from tests.plans import plan_summary
from tests.repo import REPO
from voirdire.core import ConfigError
from voirdire.engine.plan import (
    PLAN_INPUTS,
    PLAN_OUTPUTS,
    PLAN_STAGES,
    plan_job,
)
from voirdire.engine.spec import load_job, parse_job
from voirdire.judges.base import known_backends
from voirdire.stages import Stage, check_stages, run_stages

#: each example's dry-run plan on main before planning became stages (d3044eb + the registry,
#: 99d2003), as tests.plans.plan_summary gives it: instances, units per judge, judges,
#: variants, rewrites, digest of every judge's identity hash and unit and query ids in order
EXAMPLE_PLANS = {
    "bias_suite_offline.toml": [120, 6240, 2, 13, 168, "ccddab14c8fa7b03"],
    "devbench_position_bias.toml": [1120, 2240, 5, 1, 0, "da681dad617e81c8"],
    "devbench_repetition.toml": [72, 432, 9, 1, 0, "ed6dab091545f7c9"],
    # #26: the Rating strategies are replayed as the release reads them (pairwise verdicts,
    # equal ratings to the second shown), no longer as score mode: their unit ids changed
    # (was "6d7a6eeed0ccd247"; tests/test_llmbar_ratings.py shows the old reading wrong)
    "llmbar_replay.toml": [419, 838, 65, 1, 0, "6d92840d7cc4692c"],
    "mtbench_listwise_p3_cyclic.toml": [80, 240, 3, 1, 0, "cab1f249144e60c1"],
    "mtbench_listwise_p5_all.toml": [80, 9600, 3, 1, 0, "d48fe9a0f17dc766"],
    "mtbench_position_bias.toml": [2400, 4800, 3, 1, 0, "9445c297cf74a894"],
    "mtbench_repetition.toml": [96, 576, 9, 1, 0, "c8fb61daca23575c"],
    "mtbench_score_bpc_mec.toml": [2400, 14400, 1, 1, 0, "ba74dbbd53cb2282"],
    "own_pairs.toml": [12, 24, 1, 1, 0, "814f650641b31ed6"],
}


def _stage(name, reads, writes):
    """A stage whose function takes ``reads`` and returns ``writes`` (each the value 1)."""
    ns: dict = {}
    exec(
        f"def fn({', '.join(reads)}):\n    return {{k: 1 for k in {list(writes)!r}}}",
        ns,
    )
    return Stage(name, tuple(reads), tuple(writes), ns["fn"])


def test_the_plan_stages_read_only_what_was_written_before():
    check_stages(PLAN_STAGES, PLAN_INPUTS, PLAN_OUTPUTS)
    written = set(PLAN_INPUTS)
    for s in PLAN_STAGES:
        assert set(s.reads) <= written, s.name
        written |= set(s.writes)
    # nothing is written that nobody reads and the plan does not keep
    read = {k for s in PLAN_STAGES for k in s.reads} | set(PLAN_OUTPUTS)
    assert {k for s in PLAN_STAGES for k in s.writes} <= read
    # each stage's function takes exactly what it declares it reads
    for s in PLAN_STAGES:
        assert s.reads, s.name
        with pytest.raises(TypeError, match="declares reads"):
            replace(s, reads=s.reads[:-1])


def test_the_checks_refuse_a_stage_out_of_order_or_dishonest():
    a, b = _stage("a", ["job"], ["x"]), _stage("b", ["x"], ["y"])
    assert run_stages([a, b], {"job": 0}, ["y"]) == {"job": 0, "x": 1, "y": 1}
    with pytest.raises(
        ValueError, match="stage 'b' reads x, which no earlier stage writes"
    ):
        run_stages([b, a], {"job": 0})
    with pytest.raises(
        ValueError, match="stage 'c' writes 'x', already written by stage 'a'"
    ):
        check_stages([a, _stage("c", ["job"], ["x"])], ["job"])
    with pytest.raises(ValueError, match="no stage writes z"):
        check_stages([a, b], ["job"], ["z"])
    liar = Stage("liar", ("job",), ("x",), lambda job: {"x": 1, "y": 2})
    with pytest.raises(ValueError, match="stage 'liar' declares writes"):
        run_stages([liar], {"job": 0})
    # the real stages moved out of order are refused before anything runs
    order = list(PLAN_STAGES)
    quality = next(i for i, s in enumerate(order) if s.name == "quality")
    order.insert(0, order.pop(quality))
    with pytest.raises(ValueError, match="stage 'quality' reads"):
        check_stages(order, PLAN_INPUTS)


def test_plan_job_runs_the_stages_in_order(tmp_path, data_dir):
    job = load_job(REPO / "examples" / "bias_suite_offline.toml")
    seen = []
    plan = plan_job(
        job.model_copy(update={"output_dir": str(tmp_path / "o")}),
        on_stage=lambda s: seen.append(s.name),
    )
    assert (
        seen
        == [s.name for s in PLAN_STAGES]
        == [
            "output",
            "benchmark",
            "instances",
            "judges",
            "rewriters",
            "variants",
            "quality",
            "completion",
            "rewrites",
            "preflight",
            "units",
        ]
    )
    assert {"better", "worst"} <= set(
        plan.instances.columns
    ) and plan.rewrites.height == 168


def test_a_failing_stage_stops_the_plan_there(tmp_path, data_dir):
    seen = []
    job = parse_job(
        {
            "name": "x",
            "output_dir": str(tmp_path / "o"),
            "benchmark": {
                "name": "mtbench",
                "questions": ["81"],
                "candidates": ["gpt-4"],
            },
            "judges": [{"name": "s", "backend": "simulated"}],
            "perturbations": [{"kind": "bandwagon", "target": "worse"}],
        }
    )
    with pytest.raises(ConfigError, match="needs a quality source"):
        plan_job(job, on_stage=lambda s: seen.append(s.name))
    assert seen == ["output", "benchmark", "instances", "judges", "rewriters"]


@pytest.mark.parametrize("name", sorted(EXAMPLE_PLANS))
def test_the_examples_plan_as_before(name, data_dir, monkeypatch):
    monkeypatch.chdir(REPO)  # own_pairs names its files from the repository root
    assert plan_summary(REPO / "examples" / name) == EXAMPLE_PLANS[name]


def _messages(path):
    """The string constants of a module other than docstrings (its messages and names)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(
            n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        )
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docs
    ]


def test_the_engine_names_no_backend():
    # "template" is also a prompt template; the other built-in backends' names are not words
    names = sorted(set(known_backends()) - {"template"}, key=len, reverse=True)
    pattern = re.compile(
        r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE
    )
    found = [
        (p.name, m)
        for p in sorted((REPO / "engine").glob("*.py"))
        for m in _messages(p)
        if pattern.search(m)
    ]
    assert found == []


def _table_rows():
    """The stage tables of engine/plan.py's docstring and docs/contributing.md, each as
    (stage, reads, writes) rows of name tuples."""
    import voirdire.engine.plan as plan

    def names(text):
        return tuple(
            x.strip()
            for x in text.split(",")
            if x.strip() and not x.strip().startswith("(nothing")
        )

    lines = plan.__doc__.splitlines()
    rules = [i for i, x in enumerate(lines) if x.startswith("==========")]
    doc: list = []
    for line in lines[
        rules[1] + 1 : rules[2]
    ]:  # the table's body, between its second and third rule
        if line.startswith(" "):  # a continued reads column
            doc[-1] = (doc[-1][0], doc[-1][1] + names(line), doc[-1][2])
        else:
            doc.append((line[:12].strip(), names(line[12:66]), names(line[66:])))
    section = (
        (REPO / "docs" / "contributing.md")
        .read_text()
        .split("## Planning")[1]
        .split("\n## ")[0]
    )
    md = [
        tuple(c.strip() for c in line.strip("|").split("|"))
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| stage")
    ]
    return doc, [(s, names(r), names(w)) for s, r, w in md]


def test_the_stage_tables_in_the_docs_are_the_stages():
    want = [(s.name, s.reads, s.writes) for s in PLAN_STAGES]
    doc, md = _table_rows()
    assert doc == want
    assert md == want
