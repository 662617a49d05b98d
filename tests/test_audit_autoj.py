"""``--format autoj``: Auto-J's pairwise leaderboard files (GAIR-NLP/auto-j, no licence file:
nothing of theirs is here; the files are built in its exact format). The exchanged
predictions are stored as the judge saw the pair; voirdire's PC and both-orders accuracy
equal ``codes/leaderboard/pairwise_eval.py``'s Consistency and Agreement (its formulas
written out below) on every combination of label, prediction and exchanged prediction."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.cli import voirdire as voirdire_cli
from voirdire.api import audit_job
from voirdire.benchmarks.logs.autoj import AutoJ
from voirdire.benchmarks.logs.reading import RECORDED
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("post_summarization", "code_generation")
#: every (label, prediction, exchanged prediction as the judge saw it), each a weight 1-4
TABLE = [
    (lab, p, e, 1 + (9 * lab + 3 * p + e) % 4)
    for lab in (0, 1, 2)
    for p in (0, 1, 2)
    for e in (0, 1, 2)
]


def write_autoj(d: Path, rows, *, exchanged=True, str_labels=False, blank=False):
    """``testdata_pairwise.jsonl``, ``pairwise_example_output.jsonl`` and (``exchanged``)
    ``pairwise_exchange_example_output.jsonl`` as Auto-J's README lays them out: one record
    a pair, ``rows`` = ``(label, output, exchanged output)``; ``blank``: a blank line
    after the first record of every file (Auto-J's reader skips it)."""
    d.mkdir(parents=True, exist_ok=True)
    test, pred, exch = [], [], []
    for i, (lab, p, e) in enumerate(rows):
        test.append({"scenario": SCENARIOS[i % 2], "label": str(lab) if str_labels and i % 2 else lab,
                     "prompt": f"prompt {i}", "response 1": f"first answer {i}",
                     "response 2": f"second answer {i}"})  # fmt: skip
        pred.append({"output": p})
        exch.append({"output": e})
    files = {"testdata_pairwise.jsonl": test, "pairwise_example_output.jsonl": pred}
    if exchanged:
        files["pairwise_exchange_example_output.jsonl"] = exch
    for name, recs in files.items():
        lines = [json.dumps(r) for r in recs]
        if blank:
            lines.insert(1, "")
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


def expand(table):
    return [(lab, p, e) for lab, p, e, w in table for _ in range(w)]


# pairwise_eval.py's formulas, written out (exchange_to_ori_label, check_res, group_wise_collect)
def exchange_to_ori_label(x):
    return {0: 1, 1: 0, 2: 2}[x]


def autoj_figures(rows):
    """(Agreement, Consistency, single Agreement) as pairwise_eval.py computes them (x 100,
    before rounding): correct_both / total, 1 - exchange_dont_agree / total, correct / total."""
    total = correct = both = disagree = 0
    for lab, p, e in rows:
        e = exchange_to_ori_label(e)
        total += 1
        correct += lab == p
        both += p == e == lab
        disagree += p != e
    return 100 * both / total, 100 * (1 - disagree / total), 100 * correct / total


# ------------------------------------------------------------------ reading


def test_exchanged_predictions_are_stored_as_the_judge_saw_them(tmp_path):
    rows = expand(TABLE)
    d = write_autoj(tmp_path / "aj", rows, str_labels=True, blank=True)
    b = AutoJ([d], data_dir=tmp_path / "copy")
    assert b.pairs.height == len(rows)
    assert b.pairs["model_a"].unique().to_list() == ["response 1"]
    gold = {0: "response 1", 1: "response 2", 2: "tie"}
    assert b.pairs["gold"].to_list() == [gold[lab] for lab, _, _ in rows]
    assert b.pairs["task"].to_list()[:2] == list(SCENARIOS)
    assert b.pairs["instruction"][3] == "prompt 3"
    assert b.pairs["output_b"][3] == "second answer 3"
    rec = pl.read_parquet(Path(b.data_dir) / RECORDED)
    assert rec["judge"].unique().to_list() == ["pairwise_example_output"]
    letter = {0: "A", 1: "B", 2: "C"}
    for q, first, out, choice in rec.select(
        "question_id", "first", "output", "choice"
    ).iter_rows():
        lab, p, e = rows[int(q) - 1]
        k = p if first == "response 1" else e  # the record of that order's file
        assert json.loads(out) == {"output": k} and choice == letter[k]
        # the winner as Auto-J reads it: the exchanged output mapped back
        win = {"A": first, "B": "response 2" if first == "response 1" else "response 1", "C": "tie"}[choice]  # fmt: skip
        ori = p if first == "response 1" else exchange_to_ori_label(e)
        assert win == {0: "response 1", 1: "response 2", 2: "tie"}[ori]
    assert rec.height == 2 * len(rows)


def test_which_prediction_file_is_exchanged(tmp_path):
    d = write_autoj(tmp_path / "aj", [(0, 0, 1), (1, 2, 0)])
    (d / "pairwise_exchange_example_output.jsonl").rename(d / "swapped.jsonl")
    with pytest.raises(ConfigError, match=r"shows response 2 first\? name it"):
        AutoJ([d], data_dir=tmp_path / "c")
    b = AutoJ(
        [d], data_dir=tmp_path / "c", log={"exchanged": "swapped.jsonl", "judge": "j"}
    )
    rec = pl.read_parquet(Path(b.data_dir) / RECORDED).filter(
        pl.col("first") == "response 2"
    )
    assert rec["output"].to_list() == ['{"output": 1}', '{"output": 0}']
    assert rec["judge"].unique().to_list() == ["j"]
    job = audit_job([d], "autoj", log={"exchanged": str(d / "swapped.jsonl")})
    assert job.comparison.permutations == "both"
    (d / "swapped.jsonl").unlink()
    job = audit_job([d], "autoj", out=tmp_path / "o")
    assert job.comparison.permutations == "both"  # the judge's records: one order only
    with pytest.raises(ConfigError, match=r"exchanged 'nope.jsonl' names none"):
        AutoJ([d], data_dir=tmp_path / "c2", log={"exchanged": "nope.jsonl"})


def _bad(tmp_path, name, edit):
    d = write_autoj(tmp_path / name, [(0, 0, 1), (1, 2, 0), (2, 2, 2)])
    edit(d)
    return d


def test_malformed_names_file_line_and_field(tmp_path):
    t, p = "testdata_pairwise.jsonl", "pairwise_example_output.jsonl"

    def short(d):
        (d / p).write_text('{"output": 0}\n{"output": 1}\n')

    def out3(d):
        (d / p).write_text('{"output": 0}\n{"output": 3}\n{"output": 0}\n')

    def outstr(d):
        (d / p).write_text('{"output": 0}\n{"output": 1}\n{"output": "1"}\n')

    def nofield(d):
        lines = (d / t).read_text().splitlines()
        rec = json.loads(lines[1])
        del rec["response 2"]
        (d / t).write_text("\n".join([lines[0], json.dumps(rec), lines[2]]) + "\n")

    def badlabel(d):
        (d / t).write_text((d / t).read_text().replace('"label": 2', '"label": "tie"'))

    def truncated(d):
        (d / t).write_text((d / t).read_text()[:-40])

    cases = [
        (short, rf"predictions \S+{p} hold 2 records, test data \S+{t} holds 3"),
        (out3, rf"{p}: line 2: field 'output' is 3, not 0, 1 or 2"),
        (outstr, rf"{p}: line 3: field 'output' is '1', not 0, 1 or 2"),
        (nofield, rf"{t}: line 2: no field 'response 2'"),
        (badlabel, rf"{t}: line 3: field 'label' is 'tie', not 0, 1 or 2"),
        (truncated, rf"{t}: line 3: not valid JSON"),
    ]
    for i, (edit, msg) in enumerate(cases):
        d = _bad(tmp_path, f"b{i}", edit)
        with pytest.raises(ConfigError, match=msg):
            AutoJ([d], data_dir=tmp_path / f"c{i}")
    j = tmp_path / "judgebench.jsonl"
    j.write_text('{"pair_id": "p1", "judgments": []}\n')
    with pytest.raises(
        ConfigError, match=r"line 1: no field 'label' \(test data\) or 'output'"
    ):
        AutoJ([j], data_dir=tmp_path / "cj")
    d = _bad(tmp_path, "cli", out3)
    r = voirdire_cli("audit", str(d), "--format", "autoj", "--out", str(tmp_path / "o"), cwd=ROOT, env={"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert f"{p}: line 2: field 'output' is 3" in " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr


# ------------------------------------------------------------------ through the engine


def test_audit_equals_pairwise_eval(tmp_path, ray_local, monkeypatch):
    """Every (label, prediction, exchanged) combination, weighted 1-4, in two scenarios:
    voirdire's PC = Auto-J's Consistency and both_correct = its Agreement, overall and per
    scenario; without the exchanged file only the order shown is asked and accuracy_shown
    = the single-order Agreement."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    rows = expand(TABLE)
    d = write_autoj(tmp_path / "aj", rows)
    res = voirdire.audit([d], "autoj", out=tmp_path / "a")
    agree, consist, single = autoj_figures(rows)
    jm = res.judge_metrics.row(0, named=True)
    assert jm["judge"] == "pairwise_example_output"
    assert 100 * jm["pc"] == pytest.approx(consist)
    assert 100 * jm["both_correct"] == pytest.approx(agree)
    assert 100 * jm["accuracy_shown"] == pytest.approx(single)
    assert res.judgments.height == 2 * len(rows) and res.stats.queries == 2 * len(rows)
    for i, s in enumerate(SCENARIOS):
        cell = res.cell_metrics.filter(pl.col("task") == s).row(0, named=True)
        a, c, _ = autoj_figures(rows[i::2])
        assert 100 * cell["pc"] == pytest.approx(c)
        assert 100 * cell["both_correct"] == pytest.approx(a)
    one = write_autoj(tmp_path / "one", rows, exchanged=False)
    res1 = voirdire.audit([one], "autoj", out=tmp_path / "a1", log={"judge": "j"})
    jm1 = res1.judge_metrics.row(0, named=True)
    assert res1.stats.queries == len(rows) and jm1["judge"] == "j"
    assert jm1["pc"] is None
    assert 100 * jm1["accuracy_shown"] == pytest.approx(single)
