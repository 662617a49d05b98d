"""PC, PF and RS: one definition each (the registered statistic), one edge rule.

On aed099d the per-judge table (``judge_metrics``) and the bootstrap's estimate
(``bootstrap_ci``) computed each figure by separate code: PC and RS read 0 in the table and
NaN / no row in the bootstrap for a judge with nothing measured, and the two disagreed in
the last bits on ordinary data, although ``bootstrap_ci`` documents its estimate as equal
to ``judge_metrics``'s. Here both read the registered statistic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest

from tests.test_metrics import cell, pair, reps, table
from voirdire.analysis.mitigation.verdicts import judge_pc, normalise
from voirdire.analysis.position.metrics import judge_metrics
from voirdire.analysis.position.simulate import simulate_judgments
from voirdire.analysis.position.uncertainty import bootstrap_ci

FIGURES = ("pc", "pf", "rs")


def _edge_table() -> pl.DataFrame:
    """Judges at the edges: ``dead`` (every judgment failed, repeated), ``odd`` (only a
    letter outside the options: no pair consistent or inconsistent), ``fair`` (ordinary)."""
    return table(
        cell("m", ["--", "--"], judge="dead"),
        reps("---", q="q9", judge="dead"),
        cell("m", ["DD", "DD"], judge="odd"),
        reps("DD", q="q9", judge="odd"),
        cell("m", ["AB", "AA", "BB", "CC"], judge="fair"),
        reps("AAB", q="q9", judge="fair"),
    )


def _estimates(judgments: pl.DataFrame) -> dict[tuple[str, str], float | None]:
    """(judge, metric) -> bootstrap estimate, None where NaN or absent."""
    ci = bootstrap_ci(judgments, replicates=1)
    out = {}
    for r in ci.iter_rows(named=True):
        e = r["estimate"]
        out[(r["judge"], r["metric"])] = None if e is None or math.isnan(e) else e
    return out


def _same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a == b)


def test_edges_agree_between_table_and_bootstrap():
    j = _edge_table()
    est = _estimates(j)
    jm = {r["judge"]: r for r in judge_metrics(j).iter_rows(named=True)}
    for judge, row in jm.items():
        for m in FIGURES:
            assert _same(row[m], est.get((judge, m))), (
                judge,
                m,
                row[m],
                est.get((judge, m)),
            )


def test_undefined_is_null_not_zero():
    """The old 0 was wrong: PC = Σccn/Σv and RS = mean RS_j have nothing to divide for a
    judge that never answered (exact arithmetic raises), and 0 is the figure of a judge
    that did answer, e.g. inconsistent on every pair (PC) — two opposite judges read the
    same. RS_j = m_j/n_j ≥ 1/n_j > 0 for any query with an answer, so RS = 0 is a value no
    answering judge can reach."""
    j = pl.concat([_edge_table(), table(cell("m", ["AA", "BB"], judge="flaky"))])
    jm = {r["judge"]: r for r in judge_metrics(j).iter_rows(named=True)}
    with pytest.raises(ZeroDivisionError):
        Fraction(0, 0)  # Σccn/Σv of "dead" and "odd": 0 pairs consistent of 0 measured
    assert jm["flaky"]["pc"] == 0.0  # every pair inconsistent: the real PC 0
    assert jm["dead"]["pc"] is None and jm["odd"]["pc"] is None
    assert jm["dead"]["rs"] is None  # every repetition failed: nothing measured
    # the lowest RS a judge that answers can get with three repetitions is 1/3
    low = judge_metrics(table(reps("ABC", q="q9", judge="low"))).row(0, named=True)
    assert low["rs"] == pytest.approx(1 / 3)
    assert jm["fair"]["pc"] == 0.5 and jm["fair"]["rs"] == pytest.approx(2 / 3)


def test_jury_weight_pc_is_the_registered_pc():
    j = _edge_table()
    jm = {r["judge"]: r["pc"] for r in judge_metrics(j).iter_rows(named=True)}
    pcs = {r["judge"]: r["pc"] for r in judge_pc(normalise(j)).iter_rows(named=True)}
    assert pcs == jm  # None for dead and odd (was 0.0), 0.5 for fair


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_table_equals_bootstrap_estimate_bit_for_bit(seed):
    """``bootstrap_ci``'s documented contract: its estimate equals ``judge_metrics``'s. On
    aed099d PF and RS differed in the last bits (mean of per-cell PF in the paper's form
    against the mean of d/n; sorted cumulative sum against the bootstrap's sums)."""
    j = simulate_judgments(
        {
            f"j{k}": {"primacy": 0.1 * k - 0.2, "fail_rate": 0.05, "repetition_noise": 0.3, "tie_rate": 0.1}
            for k in range(5)
        },
        n_questions=40,
        candidates=5,
        tasks=3,
        repetitions=3,
        seed=seed,
    )  # fmt: skip
    est = _estimates(j)
    for row in judge_metrics(j).iter_rows(named=True):
        for m in FIGURES:
            assert _same(row[m], est[(row["judge"], m)]), (row["judge"], m)


def test_pf_edge_one_rule():
    """PF: a judge with error pairs beside a measured one has PF 0 (n > 0 pairs, none
    leaning), in the table and the bootstrap alike; the rule for 'nothing measured' is
    null, as for PC and RS (:func:`test_one_order_judge_has_no_pf`)."""
    j = table(pair("m", "--", judge="e"), pair("m", "AB", judge="e", q="q2"))
    est = _estimates(j)
    row = judge_metrics(j).row(0, named=True)
    assert row["pf"] == 0.0 == est[("e", "pf")]


def test_one_order_judge_has_no_pf(tmp_path):
    """A judge that judged each pair in one order (AlpacaEval, Auto-J with one prediction
    file) has every pair an error: no pair consistent or inconsistent, so PF is undefined
    like PC (it read +0.000, a fair judge's figure, with std 0), in the table, the
    bootstrap, the per-task pooling and the terminal; the judges that did measure keep
    their PF beside it. The same for a judge whose every judgment failed."""
    from rich.console import Console

    from voirdire.analysis.position.cells import cell_metrics
    from voirdire.analysis.position.metrics import judge_from_cells
    from voirdire.analysis.report.terminal import print_judge_table

    one_order = ["A.", ".B", "B.", ".A", "A."]
    j = pl.concat(
        [
            table(cell("m1", one_order, judge="once"), cell("m2", one_order[:3], judge="once")),
            _edge_table(),
            table(cell("m", ["AB", "AA", "BB", "BB"], judge="both")),
        ]
    )  # fmt: skip
    jm = {r["judge"]: r for r in judge_metrics(j).iter_rows(named=True)}
    est = _estimates(j)
    for judge in ("once", "dead", "odd"):
        row = jm[judge]
        assert row["n_cells"] > 0
        assert [row[c] for c in ("pc", "pc_std", "pf", "pf_std")] == [None] * 4, judge
        assert est[(judge, "pf")] is None and est[(judge, "pc")] is None
    assert jm["both"]["pf"] == pytest.approx(1 / 4) == est[("both", "pf")]
    assert jm["both"]["pf_std"] == 0.0
    by_task = judge_from_cells(cell_metrics(j), keys=["benchmark", "judge", "task"])
    assert by_task.filter(pl.col("judge") == "once").item(0, "pf") is None
    from voirdire.analysis.report.task_charts import pf_bars

    bars = pf_bars(by_task, ["both", "once"], "PF").to_dict()  # no bar for it, no error
    shown = {r["judge"] for r in next(iter(bars["datasets"].values()))}
    assert "once" not in shown and "both" in shown
    ci = bootstrap_ci(j, replicates=50)
    once = ci.filter((pl.col("judge") == "once") & (pl.col("metric") == "pf"))
    assert once.select(pl.col("lo", "hi").is_nan().all()).row(0) == (True, True)
    console = Console(record=True, width=200)
    print_judge_table(judge_metrics(j.filter(pl.col("judge") == "once")), console)
    line = next(x for x in console.export_text().splitlines() if "once" in x)
    assert "0.000" not in line, line
