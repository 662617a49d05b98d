"""Accuracy against gold labels (``docs/gold-labels.md``): exact enumeration of every
(gold, verdict in the shown order, verdict in the swapped order) case, the handling of
ties, failures, unlabelled pairs and orders not asked, the cluster-bootstrap intervals by
simulation, the tables of jobs without gold, and ``mitigate --reference gold``."""

from __future__ import annotations

import itertools
import random

import polars as pl
import pytest

from voirdire.analysis.mitigation.evaluation import run_mitigation
from voirdire.analysis.mitigation.grading import load_grading
from voirdire.analysis.position.gold import (
    GOLD_JUDGE_COLUMNS,
    gold_cells,
    gold_grading,
    gold_judges,
    gold_sums,
    has_gold,
    with_gold,
)
from voirdire.analysis.position.metrics import summarize
from voirdire.analysis.report.mitigation import accuracy_label, mitigation_markdown
from voirdire.core import ConfigError
from voirdire.judges.extract import extract_verdicts

CAND, REF = "cand", "ref"
VERDICTS = ["A", "B", "C", None]  # None: a failed verdict (no output)


def _rows(cases, *, option_mode=3, judge="j", task="t"):
    """Judgment rows through the real extraction: ``cases`` = [(question, gold, v_shown,
    v_swapped)], a verdict ``"-"`` meaning the order was not asked."""
    out = []
    for q, gold, v1, v2 in cases:
        for k, (v, shown) in enumerate(((v1, [CAND, REF]), (v2, [REF, CAND]))):
            if v == "-":
                continue
            out.append({"benchmark": "B", "judge": judge, "question_id": q, "task": task, "candidate": CAND,
                        "reference": REF, "shown": shown, "permutation": k, "repetition": 1, "mode": "pairwise",
                        "option_mode": option_mode, "query_id": f"{q}/{k}", "output": None if v is None else f"[[{v}]]",
                        "choice": None, "gold": gold, "input_chars": 1, "output_chars": 1, "prompt_chars": 1})  # fmt: skip
    raw = pl.DataFrame(out, schema_overrides={"option_mode": pl.Int32, "choice": pl.String, "gold": pl.String,
                                              "output": pl.String, "permutation": pl.Int32, "repetition": pl.Int32})  # fmt: skip
    return extract_verdicts(raw, {"B": r"\[\[([ABCD])\]\]"})


def _correct(v, gold, swapped, option_mode=3):
    """Independent reading of one verdict: which model (or tie) it names, compared with gold."""
    if v is None:
        return False
    if v == "C":
        return gold == "tie" and option_mode == 3
    named = {"A": REF if swapped else CAND, "B": CAND if swapped else REF}[v]
    return named == gold


@pytest.mark.parametrize("option_mode", [2, 3])
def test_exact_enumeration_of_every_case(option_mode):
    cases = [
        (f"q{i}", g, v1, v2)
        for i, (g, v1, v2) in enumerate(
            itertools.product([CAND, REF, "tie"], VERDICTS, VERDICTS)
        )
    ]
    j = _rows(cases, option_mode=option_mode)
    c1 = [_correct(v1, g, False, option_mode) for _, g, v1, _ in cases]
    c2 = [_correct(v2, g, True, option_mode) for _, g, _, v2 in cases]
    n = len(cases)  # 48 pairs, all labelled, both orders asked; failures count as wrong
    want = {
        "n_gold": n,
        "accuracy": (sum(c1) + sum(c2)) / (2 * n),
        "accuracy_shown": sum(c1) / n,
        "accuracy_swapped": sum(c2) / n,
        "both_correct": sum(a and b for a, b in zip(c1, c2)) / n,
    }
    cell = gold_cells(j).row(0, named=True)
    judge = gold_judges(j, replicates=50).row(0, named=True)
    for k, v in want.items():
        assert cell[k] == pytest.approx(v) and judge[k] == pytest.approx(v), k
    # spelled out for three-option mode: per gold label, 4 of its 16 (shown, swapped)
    # combinations have the right verdict in a given order and 1 in both: 12, 12 and 3 of 48
    if option_mode == 3:
        assert (sum(c1), sum(c2), sum(a and b for a, b in zip(c1, c2))) == (12, 12, 3)


def test_release_stats_voirdire_view_counts_as_gold_does():
    """LLMBar's reproduction (analysis/release_stats) counts voirdire's view with its own
    pair outcomes: on every case it agrees with analysis/gold, and its gold_accuracy is gold's."""
    from voirdire.analysis.position.release_stats import (
        gold_accuracy,
        pair_outcomes,
        voirdire_view,
    )

    cases = [
        (f"q{i}", g, v1, v2)
        for i, (g, v1, v2) in enumerate(
            itertools.product([CAND, REF, "tie"], VERDICTS, VERDICTS)
        )
    ]
    j = _rows(cases)
    v = voirdire_view(pair_outcomes(j), ["benchmark", "judge"]).row(0, named=True)
    s = gold_sums(j, ["benchmark", "judge"]).row(0, named=True)
    assert (v["n"], v["correct_shown"], v["correct_swapped"], v["both_correct"]) == (
        s["pairs"],
        s["correct1"],
        s["correct2"],
        s["correct_both"],
    )
    ga = gold_accuracy(j).row(0, named=True)
    assert ga["n"] == 48 and ga["accuracy"] == pytest.approx(
        gold_cells(j)["accuracy"][0]
    )


def test_unlabelled_pairs_and_orders_not_asked_are_left_out():
    cases = [
        ("q1", CAND, "A", "B"),   # right in both
        ("q2", REF, "A", "-"),    # shown order only (wrong); not in swapped nor both
        ("q3", None, "A", "B"),   # no label: left out everywhere
        ("q4", "tie", "C", None),  # tie right; swapped failed: counted, not correct
    ]  # fmt: skip
    r = gold_cells(_rows(cases)).row(0, named=True)
    assert r["n_gold"] == 3
    assert r["accuracy_shown"] == pytest.approx(2 / 3)  # q1, q4 of q1, q2, q4
    assert r["accuracy_swapped"] == pytest.approx(1 / 2)  # q1 of q1, q4
    assert r["accuracy"] == pytest.approx(3 / 5)
    assert r["both_correct"] == pytest.approx(1 / 2)  # q1 of q1, q4
    only_shown = gold_cells(_rows([("q1", CAND, "A", "-"), ("q2", REF, "B", "-")])).row(
        0, named=True
    )
    assert only_shown["accuracy_swapped"] is None and only_shown["both_correct"] is None
    assert only_shown["accuracy"] == only_shown["accuracy_shown"] == 1.0


def test_judge_figures_pool_over_cells_and_intervals_cover_by_simulation():
    # a judge right with probability 0.7 in each order, independently, on 300 questions
    p, n_q, trials, covered = 0.7, 300, 30, 0
    for t in range(trials):
        rng = random.Random(t)
        cases = [
            (
                f"q{i}",
                CAND,
                "A" if rng.random() < p else "B",
                "B" if rng.random() < p else "A",
            )
            for i in range(n_q)
        ]
        r = gold_judges(_rows(cases), replicates=300, seed=t).row(0, named=True)
        covered += r["accuracy_lo"] <= p <= r["accuracy_hi"]
        assert r["accuracy_lo"] <= r["accuracy"] <= r["accuracy_hi"]
    assert (
        covered >= 25
    )  # nominal 95 %: 28.5 of 30 expected; binomial 1st percentile ~ 25
    two = pl.concat(
        [
            _rows([("q1", CAND, "A", "B")], task="x"),
            _rows([("q2", CAND, "B", "A"), ("q3", CAND, "A", "A")], task="y"),
        ]
    )
    j = gold_judges(two, replicates=20).row(0, named=True)
    assert j["accuracy"] == pytest.approx(3 / 6) and j["both_correct"] == pytest.approx(
        1 / 3
    )  # pooled, not a mean of cells
    assert set(GOLD_JUDGE_COLUMNS) <= set(gold_judges(two, replicates=20).columns)


def test_tables_without_gold_are_unchanged():
    j = _rows([("q1", None, "A", "B"), ("q2", None, "B", "B")])
    jm, cm = summarize(j)
    assert not has_gold(j) and not has_gold(j.drop("gold"))
    assert with_gold(j, jm, cm) == (jm, cm)
    assert with_gold(j.drop("gold"), jm, cm)[0].columns == jm.columns
    jm2, cm2 = with_gold(
        _rows([("q1", CAND, "A", "B")]), *summarize(_rows([("q1", CAND, "A", "B")]))
    )
    assert (
        jm2.columns == jm.columns + GOLD_JUDGE_COLUMNS and "both_correct" in cm2.columns
    )


def test_mitigate_reference_gold_grades_strategies_against_the_labels():
    # gold: always the candidate; the judge answers slot A in both orders: the shown
    # order is right, the swapped one wrong; on q3 both orders right
    cases = [("q1", CAND, "A", "A"), ("q2", CAND, "A", "A"), ("q3", CAND, "A", "B")]
    j = _rows(cases)
    ref = gold_grading(j)
    assert ref.select("question_id", "ref_verdict").rows() == [
        ("q1", "win"),
        ("q2", "win"),
        ("q3", "win"),
    ]
    assert ref["source"].unique().to_list() == ["gold labels (B)"]
    assert load_grading("gold", j).height == 3
    table, _, _ = run_mitigation(
        j, reference="gold", strategies=["single", "swap-tie", "gate"], replicates=20
    )
    acc = dict(table.select("strategy", "accuracy").iter_rows())
    assert acc["single"] == pytest.approx(4 / 6)  # = gold accuracy pooled (no failures)
    assert acc["single"] == pytest.approx(gold_judges(j, replicates=20)["accuracy"][0])
    assert acc["swap-tie"] == pytest.approx(
        1 / 3
    )  # q1, q2 inconsistent -> tie (wrong); q3 win
    assert acc["gate"] == pytest.approx(1.0)  # only q3 decided
    assert table.filter(pl.col("strategy") == "gate")["undecided"][0] == pytest.approx(
        2 / 3
    )
    assert "| accuracy | κ vs reference |" in mitigation_markdown(table)
    with pytest.raises(ConfigError, match="carry no gold label"):
        gold_grading(j.with_columns(gold=pl.lit(None, dtype=pl.String)))


def test_agreement_with_a_judge_is_not_called_accuracy():
    assert (
        accuracy_label(["judge gpt-4-0613 (agreement with a judge, not with people)"])
        == "agreement with judge gpt-4-0613"
    )
    assert accuracy_label(["gold labels (LLMBar)"]) == "accuracy"
    assert accuracy_label(["human labels (x.csv)"]) == "accuracy"
    assert accuracy_label([]) == "accuracy"
    cases = [("q1", CAND, "A", "B"), ("q2", CAND, "B", "A")]
    j = pl.concat([_rows(cases, judge="r"), _rows(cases, judge="x")])
    table, _, _ = run_mitigation(
        j, reference="judge:r", strategies=["single"], replicates=20
    )
    header = mitigation_markdown(table).splitlines()[0]
    assert "| agreement with judge r |" in header and "| accuracy |" not in header
