"""A log's judge is asked the (pair, order) units its own records hold (``docs/audit.md``,
:mod:`voirdire.engine.completion`): pairs of another judge's file are not its failures, not
its wrong answers, not in its PF, so a judge's figures are the same audited alone or beside
other files; AlpacaEval's annotated model is the candidate and the order shown per verdict
makes the design randomised; a verdict recorded twice is one line naming both places
(exit 2); a file given twice, or a byte-identical copy, is read once with one warning.
Logs are built here in JudgeBench's and AlpacaEval's exact formats (SYNTHETIC)."""

from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import voirdire
from tests.audit_logs import draws, write_judgebench
from tests.cli import voirdire as voirdire_cli
from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.benchmarks.logs.judgebench import JudgeBench
from voirdire.benchmarks.logs.reading import RECORDED
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]
#: JudgeBench's file name for a judge
JB = "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model={}.jsonl"
FIGURES = ("pc", "pf", "error_rate", "accuracy", "accuracy_shown", "accuracy_swapped",
           "both_correct", "n_gold")  # fmt: skip


def _two_judgebench(root: Path) -> tuple[Path, Path, list, list, list]:
    """Two judges' outputs files with disjoint pairs (``a0..a29``, ``b0..b39``); judge
    ``haiku`` has a null judgment (a failed call) on pair a3's swapped order."""
    root.mkdir(parents=True, exist_ok=True)
    d1, d2 = draws(30, 21, p_flip=0.3), draws(40, 22, p_flip=0.1)
    d1[3] = (d1[3][0], None)
    rng = random.Random(5)
    l1 = [rng.choice(["A>B", "B>A"]) for _ in d1]
    l2 = [rng.choice(["A>B", "B>A"]) for _ in d2]
    f1, f2 = root / JB.format("haiku"), root / JB.format("o1-mini")
    write_judgebench(f1, d1, l1, judge_model="haiku", ids="a")
    write_judgebench(f2, d2, l2, judge_model="o1-mini", ids="b")
    return f1, f2, d1, l1, l2


def _accuracy_shown(outcomes, labels) -> float:
    """JudgeBench's gold as voirdire reads it: correct in the order shown when the response
    the judge chose first is the labelled one (a tie, a failure: not correct)."""
    want = {"A>B": "first", "B>A": "second"}
    return sum(g1 == want[lab] for (g1, _), lab in zip(outcomes, labels)) / len(labels)


@pytest.mark.ray
def test_each_judge_is_asked_its_own_pairs_whatever_is_audited_beside_it(
    tmp_path, ray_local, monkeypatch
):
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    f1, f2, d1, l1, _ = _two_judgebench(tmp_path / "outputs")
    both = voirdire.audit([tmp_path / "outputs"], "judgebench", out=tmp_path / "both")
    alone = {
        n: voirdire.audit([f], "judgebench", out=tmp_path / n).judge_metrics
        for n, f in (("haiku", f1), ("o1-mini", f2))
    }
    j = both.judgments
    per = dict(j.group_by("judge").len().iter_rows())
    assert per == {"arena_hard:haiku": 60, "arena_hard:o1-mini": 80}
    assert both.stats.queries == 140  # nobody asked another judge's pairs
    mine = j.filter(pl.col("judge") == "arena_hard:haiku")
    assert mine["question_id"].str.starts_with("a").all()
    failed = mine.filter(pl.col("failure").is_not_null())
    assert failed.select("question_id", "shown").rows() == [
        ("a3", ["response_B", "response_A"])
    ]
    assert j.filter(pl.col("judge") == "arena_hard:o1-mini")["failure"].is_null().all()
    for name, jm in alone.items():
        row = jm.row(0, named=True)
        got = both.judge_metrics.filter(pl.col("judge") == f"arena_hard:{name}")
        for c in FIGURES:
            assert got.item(0, c) == pytest.approx(row[c], nan_ok=True), (name, c)
    haiku = alone["haiku"].row(0, named=True)
    assert haiku["accuracy_shown"] == pytest.approx(_accuracy_shown(d1, l1))
    assert haiku["error_rate"] == pytest.approx(1 / 60)


def test_a_dry_run_counts_each_judges_own_units(tmp_path, monkeypatch):
    """A job file auditing both files: each replay judge's count is its own records', one
    order where its file holds one (JudgeBench's ``--single_game``)."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    f1, f2, *_ = _two_judgebench(tmp_path / "outputs")
    lines = [json.loads(x) for x in f2.read_text().splitlines()][:9]
    for obj in lines:  # single game: the order shown only
        obj["judgments"] = obj["judgments"][:1]
    f2.write_text("".join(json.dumps(o) + "\n" for o in lines))
    job = tmp_path / "audit.toml"
    job.write_text(
        f'name = "a"\noutput_dir = "{tmp_path / "out"}"\n[benchmark]\nname = "judgebench"\n'
        f'logs = ["{f1}", "{f2}"]\n[comparison]\noption_mode = 3\n'
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\n'
    )
    from voirdire.cli import app

    res = CliRunner().invoke(app, ["run", str(job), "--dry-run"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "arena_hard:haiku (replay): 60 queries" in out
    assert "arena_hard:o1-mini (replay): 9 queries" in out


@pytest.mark.ray
def test_alpaca_eval_model_is_the_candidate_and_the_design_randomised(
    tmp_path, ray_local, monkeypatch
):
    """Two models' annotation files, each by another annotator (AlpacaEval 1's folders
    hold several): the model is the candidate, the baseline the reference, each verdict asked
    in the order it was shown, so each annotator's design is randomised, its own 40 pairs
    only, no failure; the first-shown win rate is recomputed from the annotations."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    fx = tmp_path / "results/model-x/alpaca_eval_gpt4/annotations.json"
    fy = tmp_path / "results/model-y/alpaca_eval_gpt4/annotations.json"
    rx = write_alpaca_eval(fx, "model-x", 40, seed=4, bias=3.0)
    ry = write_alpaca_eval(fy, "model-y", 40, seed=4)
    for r in ry:  # another annotator on model-y's file
        r["annotator"] = "alpaca_eval_gpt4_0613"
    fy.write_text(json.dumps(ry))
    res = voirdire.audit([fx, fy], "alpacaeval", out=tmp_path / "a")
    j = res.judgments
    assert j.height == 80 and res.stats.queries == 80
    assert j["failure"].is_null().all()
    models = {
        "weighted_alpaca_eval_gpt4_turbo": "model-x",
        "alpaca_eval_gpt4_0613": "model-y",
    }
    for judge, model in models.items():
        mine = j.filter(pl.col("judge") == judge)
        assert mine.height == 40 and (mine["candidate"] == model).all()
        assert (mine["reference"] == "gpt4_1106_preview").all()
    rec = pl.read_parquet(Path(res.job["data_dir"]) / RECORDED)
    asked = j.select("question_id", "judge", first=pl.col("shown").list.get(0))
    assert asked.sort(pl.all()).equals(
        rec.select("question_id", "judge", "first").sort(pl.all())
    )
    design = res.order_design()
    assert design["design"].to_list() == ["randomised", "randomised"]
    eff = (
        res.one_order()
        .filter(
            (pl.col("judge") == "weighted_alpaca_eval_gpt4_turbo")
            & pl.col("candidate").is_null()
        )
        .row(0, named=True)
    )
    sw = [
        random.Random(f"is_switched_outputs{r['instruction']}0").choices([False, True])[
            0
        ]
        for r in rx
    ]
    score = [
        1.0 if r["preference"] > 1.5 else 0.0 if r["preference"] < 1.5 else 0.5
        for r in rx
    ]
    first = [
        s for s, w in zip(score, sw) if w
    ]  # switched: the model's output shown first
    second = [s for s, w in zip(score, sw) if not w]
    assert eff["n_first"] == len(first) and eff["win_first"] == pytest.approx(
        sum(first) / len(first)
    )
    assert eff["win_second"] == pytest.approx(sum(second) / len(second))


def test_a_verdict_recorded_twice_is_one_line_naming_both_places(tmp_path):
    f = tmp_path / JB.format("haiku")
    write_judgebench(f, draws(4, 1), ["A>B"] * 4)
    lines = f.read_text().splitlines()
    f.write_text("\n".join([*lines, lines[1]]) + "\n")  # pair p1 again, as line 5
    with pytest.raises(ConfigError) as e:
        JudgeBench([f], data_dir=tmp_path / "c")
    msg = str(e.value)
    assert "\n" not in msg and "judged 'p1' with 'response_A' shown first twice" in msg
    assert (
        f"at {f}: line 2 and at {f}: line 5" in msg
        and "(1 more verdicts recorded twice)" in msg
    )
    # AlpacaEval: one annotations.json saved again, re-indented (not the same bytes)
    a = tmp_path / "r/model-x/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    rows = write_alpaca_eval(a, "model-x", 5, seed=2)
    b = tmp_path / "copy/annotations.json"
    b.parent.mkdir()
    b.write_text(json.dumps(rows, indent=1))
    r = voirdire_cli("audit", str(a), str(b), "--format", "alpacaeval",
         "--out", str(tmp_path / "o"), cwd=ROOT, env={"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "DuplicateError" not in r.stderr
    err = " ".join(r.stderr.split())
    assert err.startswith(
        "error: AlpacaEval log: judge 'weighted_alpaca_eval_gpt4_turbo'"
    )
    assert f"at {a}: [0] and at {b}: [0] (4 more verdicts recorded twice)" in err


def test_a_file_given_twice_is_read_once_with_one_warning(tmp_path):
    f = tmp_path / "results/model-x/alpaca_eval_gpt4/annotations.json"
    write_alpaca_eval(f, "model-x", 6, seed=3)
    with pytest.warns(UserWarning) as caught:
        bench = AlpacaEval([f, f.parent, f], data_dir=tmp_path / "c1")
    said = [str(w.message) for w in caught]
    assert said == [
        f"AlpacaEval: 2 log file(s) given twice, read once: {f} (the same file); {f} (the same file)"
    ]
    assert pl.read_parquet(Path(bench.data_dir) / RECORDED).height == 6
    # a copy with the same bytes under another model's folder (AlpacaEval 1's falcon-7b)
    g = tmp_path / "results/model-y/alpaca_eval_gpt4/annotations.json"
    g.parent.mkdir(parents=True)
    shutil.copyfile(f, g)
    with pytest.warns(
        UserWarning,
        match=rf"1 log file\(s\) given twice, read once: {g} \(the same bytes as {f}\)",
    ):
        bench = AlpacaEval([f, g], data_dir=tmp_path / "c2")
    assert pl.read_parquet(Path(bench.data_dir) / RECORDED).height == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # distinct files: no warning
        JudgeBench([_two_judgebench(tmp_path / "jb")[0]], data_dir=tmp_path / "c3")


@pytest.mark.ray
def test_alpaca_eval_seeded_per_pair_is_tested_per_pair(
    tmp_path, ray_local, monkeypatch
):
    """A run whose switch was seeded by the instruction and the model's output
    (``[benchmark.log] seed_columns``): the coin is each pair's, not shared by the models on
    an instruction, so the randomisation test shuffles pairs, and says so (at 8e88b73 the
    format's unit stayed the instruction: the message claimed a per-question design broken
    by the data)."""
    from voirdire.analysis.stats.order_randomisation import MIXED_UNIT, UNIT_MESSAGES

    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    cols = ("instruction", "output_2")
    files = []
    for model in ("model-x", "model-y"):  # the same 30 instructions
        f = (
            tmp_path
            / f"results/{model}/weighted_alpaca_eval_gpt4_turbo/annotations.json"
        )
        rows = write_alpaca_eval(f, model, 30, seed=4)
        for r in rows:  # the same preference in the order shown, another switch
            was = random.Random(f"is_switched_outputs{r['instruction']}0").choices(
                [False, True]
            )[0]
            key = "is_switched_outputs" + "".join(r[c] for c in sorted(cols)) + "0"
            now = random.Random(key).choices([False, True])[0]
            shown = 3 - r["preference"] if was else r["preference"]
            r["preference"] = 3 - shown if now else shown
        f.write_text(json.dumps(rows))
        files.append(f)
    res = voirdire.audit(
        files, "alpacaeval", out=tmp_path / "a", log={"seed_columns": list(cols)}
    )
    first = res.judgments.group_by("question_id").agg(
        pl.col("shown").list.get(0).eq(pl.col("candidate")).first()
    )
    q = first.with_columns(ins=pl.col("question_id").str.split("|").list.get(0))
    assert (
        q.group_by("ins").agg(pl.col("shown").n_unique()).get_column("shown").max() == 2
    )
    pooled = res.one_order().filter(pl.col("candidate").is_null()).row(0, named=True)
    assert UNIT_MESSAGES["pair"] in pooled["message"]
    assert MIXED_UNIT not in pooled["message"]


def test_one_pair_given_with_other_content_is_refused_naming_both_places(tmp_path):
    """Two judges' files on the same pairs are one set of pairs; the same ``question_id``
    with another answer, instruction or gold label is two pairs under one name, which the
    verdicts cannot tell apart: refused in one line naming both places (at 8e88b73 the
    first file's pair was kept and the second judge's verdicts read against it)."""
    d = draws(6, 3)
    labels = ["A>B", "B>A"] * 3
    f1, f2 = tmp_path / JB.format("haiku"), tmp_path / JB.format("o1-mini")
    write_judgebench(f1, d, labels, judge_model="haiku")
    write_judgebench(f2, d, labels, judge_model="o1-mini")
    same = JudgeBench([f1, f2], data_dir=tmp_path / "c1")
    assert same.pairs.height == 6  # the same pairs from both files: fine, kept once
    recs = [json.loads(x) for x in f2.read_text().splitlines()]
    first = [json.loads(x) for x in f1.read_text().splitlines()]
    first[1]["label"] = None  # a label one file leaves out is no other content
    f1.write_text("".join(json.dumps(r) + "\n" for r in first))
    merged = JudgeBench([f1, f2], data_dir=tmp_path / "c3").pairs
    assert (
        merged.height == 6
        and merged.filter(pl.col("question_id") == "p1").item(0, "gold") == "response_B"
    )
    assert merged.select("question_id", "instruction").equals(
        same.pairs.select("question_id", "instruction")
    )
    recs[2]["response_A"] = "another answer"  # pair p2, line 3 of the second file
    recs[4]["label"] = "B>A"  # pair p4: another gold label
    f2.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(ConfigError) as e:
        JudgeBench([f1, f2], data_dir=tmp_path / "c2")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == (
        f"JudgeBench log: pair 'p2' is given twice with other content (output_a): "
        f"at {f1}: line 3 and at {f2}: line 3 (1 more pairs given with other content)"
    )
    # through the command: exit 2, the one line, before any judge is asked
    r = voirdire_cli("audit", str(f1), str(f2), "--format", "judgebench",
         "--out", str(tmp_path / "o"), cwd=ROOT, env={"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "pair 'p2' is given twice with other content (output_a)" in " ".join(
        r.stderr.split()
    )
    assert not (tmp_path / "o").exists()
