"""Calibration against people (``analysis/position/calibration_error.py``): ECE and Brier by
hand on small tables, the reading of option probabilities (order, tie letter, NaN), the
calibrated judge's expected ECE by exact enumeration, and a calibrated and a
miscalibrated simulated judge (the full simulation: ``perf/bench_calibration.py``)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from tests.audit_simulate import calibration_table
from voirdire.analysis.position.calibration_error import (
    CALIBRATION_COLUMNS,
    _ece_calibrated,
    brier_of,
    calibration_error,
    ece_of,
    forecasts,
    has_forecasts,
    reliability_table,
)
from voirdire.core import ConfigError


def _table(rows, probs=None):
    """``rows`` = [(question, shown first is the candidate, gold, p_candidate or None)];
    ``probs``: option_probs per row (letter -> probability) instead."""
    out = pl.DataFrame(
        {
            "benchmark": "B",
            "judge": "j",
            "question_id": [r[0] for r in rows],
            "candidate": "c",
            "reference": "r",
            "shown": [["c", "r"] if r[1] else ["r", "c"] for r in rows],
            "mode": "pairwise",
            "gold": pl.Series([r[2] for r in rows], dtype=pl.String),
        }
    )
    if probs is None:
        return out.with_columns(
            p_candidate=pl.Series([r[3] for r in rows], dtype=pl.Float64)
        )
    arr = pa.array(
        [None if d is None else list(d.items()) for d in probs],
        type=pa.map_(pa.string(), pa.float64()),
    )
    return out.with_columns(pl.from_arrow(pa.table({"option_probs": arr})).to_series())


def test_ece_and_brier_by_hand():
    p = [0.05, 0.15, 0.15, 0.95, 0.95, 0.55, 0.10, 1.0]
    gold = ["r", "c", "r", "c", "c", "r", "c", "c"]
    t = _table([(f"q{i}", True, g, x) for i, (x, g) in enumerate(zip(p, gold))])
    # bins (10 equal-width, a forecast at an edge goes up, 1.0 into the last):
    #   0: {0.05→0}: |0 − 0.05| = 0.05;  1: {0.15→1, 0.15→0, 0.10→1}: |2 − 0.40| = 1.60
    #   5: {0.55→0}: 0.55;  9: {0.95→1, 0.95→1, 1.0→1}: |3 − 2.90| = 0.10
    ece = (0.05 + 1.60 + 0.55 + 0.10) / 8
    brier = (
        0.05**2 + 0.85**2 + 0.15**2 + 0.05**2 + 0.05**2 + 0.55**2 + 0.9**2 + 0.0
    ) / 8
    r = calibration_error(t, replicates=50).row(0, named=True)
    assert r["n"] == 8 and r["source"] == "p_candidate"
    assert r["ece"] == pytest.approx(ece) and ece_of(
        p, [g == "c" for g in gold]
    ) == pytest.approx(ece)
    assert r["brier"] == pytest.approx(brier)
    rel = reliability_table(t)
    assert rel.get_column("bin").to_list() == [0, 1, 5, 9]
    assert rel.get_column("n").to_list() == [1, 3, 1, 3]
    assert rel.filter(pl.col("bin") == 1).item(0, "mean_y") == pytest.approx(2 / 3)
    assert rel.filter(pl.col("bin") == 1).item(0, "mean_p") == pytest.approx(0.4 / 3)


def test_option_probs_are_read_from_the_candidates_letter():
    rows = [
        ("q1", True, "c", None),  # A = candidate: 0.6 / (0.6 + 0.2)
        ("q2", False, "r", None),  # B = candidate: 0.6 / (0.6 + 0.2)
        ("q3", False, "c", None),  # a NaN letter: no forecast
        ("q4", True, "tie", None),  # a tie label: counted, not scored
        ("q5", True, None, None),  # no label
        ("q6", True, "c", None),  # no probabilities
        ("q7", True, "c", None),  # both answers' probabilities 0: no forecast
    ]
    probs = [
        {"A": 0.6, "B": 0.2, "C": 0.2},
        {"A": 0.2, "B": 0.6, "C": 0.2},
        {"A": float("nan"), "B": 0.5},
        {"A": 0.5, "B": 0.5},
        {"A": 0.9, "B": 0.1},
        None,
        {"A": 0.0, "B": 0.0, "C": 1.0},
    ]
    t = _table(rows, probs)
    f = forecasts(t)
    assert f.get_column("question_id").to_list() == ["q1", "q2", "q4"]
    assert f.get_column("p").to_list() == pytest.approx([0.75, 0.75, 0.5])
    assert f.get_column("y").to_list() == [1.0, 0.0, None]
    r = calibration_error(t, replicates=20).row(0, named=True)
    assert (r["n"], r["n_tie_gold"], r["source"]) == (2, 1, "option_probs")
    assert r["brier"] == pytest.approx((0.25**2 + 0.75**2) / 2)
    # a p_candidate value wins over the letters where both are given
    both = t.with_columns(p_candidate=pl.Series([0.9] + [None] * 6, dtype=pl.Float64))
    assert forecasts(both).get_column("p").to_list()[0] == pytest.approx(0.9)
    assert (
        calibration_error(both, replicates=5).item(0, "source")
        == "p_candidate+option_probs"
    )


def test_bad_probability_and_no_forecasts():
    t = _table([("q1", True, "c", 1.5)])
    with pytest.raises(ConfigError, match="p_candidate"):
        calibration_error(t)
    none = _table([("q1", True, None, 0.5)])
    assert not has_forecasts(none) and has_forecasts(_table([("q1", True, "c", 0.5)]))
    empty = calibration_error(none)
    assert empty.height == 0 and empty.columns == CALIBRATION_COLUMNS
    assert forecasts(none.drop("gold")).height == 0


def test_calibrated_expectation_by_exact_enumeration():
    p = np.array([0.12, 0.18, 0.7, 0.95])
    exact = 0.0
    for ys in itertools.product([0, 1], repeat=p.size):
        y = np.array(ys)
        exact += np.prod(np.where(y == 1, p, 1 - p)) * ece_of(p, y)
    got = _ece_calibrated(p, np.arange(p.size), 10, 40_000, np.random.default_rng(0))
    assert got == pytest.approx(exact, abs=0.004)  # Monte Carlo error ≈ 0.0008
    assert brier_of(p, p) == 0.0


def test_calibrated_and_miscalibrated_judges():
    covered, gaps = 0, []
    for s in range(12):
        t, _ = calibration_table(80, 3, slope=1.0, seed=s, both_orders=s % 2 == 0)
        r = calibration_error(t, replicates=200, draws=100, seed=s).row(0, named=True)
        covered += r["ece_lo"] <= r["ece_calibrated"] <= r["ece_hi"]
        gaps.append(r["ece"] - r["ece_calibrated"])
        bad, _ = calibration_table(80, 3, slope=3.0, seed=s)
        b = calibration_error(bad, replicates=200, draws=100, seed=s).row(0, named=True)
        # overconfident (slope 3): the interval lies above the calibrated level, and the
        # figure is large (the population ECE of this judge is ≈ 0.15)
        assert b["ece_lo"] > b["ece_calibrated"] and b["ece"] > 0.1
        assert b["brier"] > r["brier"]
    assert (
        abs(np.mean(gaps)) < 0.02
    )  # a calibrated judge sits at the small-sample level
    assert covered >= 9
