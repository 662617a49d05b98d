"""Logprob calibration (docs/mitigation.md): synthetic option probabilities with a known
slot prior, p(letter | order) ∝ π(slot) · q(answer at that slot)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from voirdire.analysis.mitigation import calibration as C
from voirdire.analysis.mitigation import evaluation as E
from voirdire.analysis.mitigation import registry
from voirdire.analysis.mitigation import verdicts as M
from voirdire.core import ConfigError

PRIOR = {"A": 0.8, "B": 0.2}


def _table(n=400, prior=PRIOR, tie=None, seed=3, judge="j"):
    """Both orders of n (question, candidate) pairs; tie: content weight of the tie letter C."""
    rng = np.random.default_rng(seed)
    qx, qr = rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
    rows, probs = [], []
    for i in range(n):
        for first in (True, False):
            a, b = (qx[i], qr[i]) if first else (qr[i], qx[i])
            w = {"A": prior["A"] * a, "B": prior["B"] * b}
            if tie is not None:
                w["C"] = 0.3 * tie
            z = sum(w.values())
            p = {k: v / z for k, v in w.items()}
            shown = [f"c{i % 5}", "ref"] if first else ["ref", f"c{i % 5}"]
            rows.append(dict(benchmark="B", judge=judge, question_id=f"q{i // 5}", task="t", candidate=f"c{i % 5}",
                             reference="ref", shown=shown, repetition=1, mode="pairwise", option_mode=3 if tie else 2,
                             extracted=max(p, key=p.get), failed=False))  # fmt: skip
            probs.append(list(p.items()))
    df = pl.DataFrame(rows)
    m = pl.from_arrow(pa.array(probs, type=pa.map_(pa.string(), pa.float64())))
    return df.with_columns(option_probs=m), np.sign(qx - qr)


@pytest.mark.parametrize("tie", [None, 1.0])
def test_slot_prior_recovered_and_pf_removed_exactly(tie):
    j, truth = _table(tie=tie)
    prior = C.slot_prior(j)
    assert dict(
        zip(prior.get_column("letter"), prior.get_column("prior"))
    ) == pytest.approx(PRIOR, abs=1e-12)
    r = C.pf_removed(j).row(0, named=True)
    assert r["pf_raw"] < -0.2  # a strong primacy judge
    assert r["pf_debiased"] == pytest.approx(0.0, abs=1e-12) and r[
        "removed"
    ] == pytest.approx(1.0)
    # debiased per-order verdicts do not depend on the order
    deb = M.flip_rate(C.logprob_verdicts(j)).row(0, named=True)
    assert deb["flips"] == 0
    cal = C.logprob_calibrated(j)
    assert cal.get_column("queries").unique().to_list() == [2]
    if (
        tie is None
    ):  # two options: the calibrated verdict is the better answer, every time
        order = cal.join(
            pl.DataFrame({"question_id": [f"q{i // 5}" for i in range(len(truth))], "candidate": [f"c{i % 5}" for i in range(len(truth))],
                          "truth": np.where(truth > 0, "win", "loss")}), on=["question_id", "candidate"])  # fmt: skip
        assert (order.get_column("verdict") == order.get_column("truth")).all()


def test_arithmetic_mean_would_not_be_exact():
    # the estimator is the log-space mean: the plain mean of p(A) over orders is biased
    j, _ = _table()
    plain = (
        C.option_probs_long(j).filter(pl.col("letter") == "A").get_column("prob").mean()
    )
    assert abs(plain - PRIOR["A"]) > 0.02  # 0.759 here, against 0.8


def test_logprob_strategies_in_the_evaluation():
    j, _ = _table()
    v = registry.apply_strategies(
        j, ["logprob-raw", "logprob-debiased", "logprob-calibrated"]
    )
    t = E.evaluate(v, None, replicates=100)
    pf = dict(zip(t.get_column("strategy"), t.get_column("pf")))
    assert (
        pf["logprob-raw"] < -0.2
        and pf["logprob-debiased"] == pytest.approx(0.0, abs=1e-12)
        and pf["logprob-calibrated"] == 0.0
    )


def test_logprob_strategy_on_a_job_without_option_probs():
    j, _ = _table()
    with pytest.raises(ConfigError, match="'logprob-calibrated' needs 'option_probs'"):
        registry.apply_strategies(j.drop("option_probs"), ["logprob-calibrated"])
    with pytest.raises(ConfigError, match="'logprob-raw' needs 'option_probs'"):
        registry.apply_strategies(j.with_columns(option_probs=None), ["logprob-raw"])


def test_judgments_without_probabilities_are_undecided_not_dropped():
    """400 pairs in both orders (800 judgments); the candidate-second order of the first
    200 pairs carries no option probabilities (failed, or a backend that gave none). Every
    judgment stays a verdict row: the per-order strategies give 200 undecided rows of 800,
    the calibrated one 200 undecided pairs of 400 (an order without probabilities never
    falls back to the other, biased, order), and the cost counts every judgment."""
    j, _ = _table()
    idx = pl.int_range(pl.len())
    hole = (idx % 2 == 1) & (
        idx < 400
    )  # the second (candidate-second) order of pairs 0..199
    j = j.with_columns(
        option_probs=pl.when(hole).then(None).otherwise(pl.col("option_probs"))
    )
    for name in ("logprob-raw", "logprob-debiased"):
        v = registry.apply_strategies(j, [name])
        assert (
            v.height == 800
            and (v["verdict"] == "undecided").sum() == 200
            and v["queries"].sum() == 800
        )
    cal = C.logprob_calibrated(j)
    assert cal.height == 400 and cal["queries"].to_list() == [2] * 400
    assert (cal["verdict"] == "undecided").sum() == 200
    t = E.evaluate(
        registry.apply_strategies(j, ["logprob-debiased", "logprob-calibrated"]),
        None,
        replicates=50,
    )
    row = {r["strategy"]: r for r in t.iter_rows(named=True)}
    assert (
        row["logprob-debiased"]["undecided"] == pytest.approx(0.25)
        and row["logprob-debiased"]["cost"] == 1.0
    )
    assert (
        row["logprob-debiased"]["failed_pairs"] == 200
        and row["logprob-debiased"]["pairs"] == 200
    )
    assert (
        row["logprob-calibrated"]["undecided"] == pytest.approx(0.5)
        and row["logprob-calibrated"]["cost"] == 2.0
    )


def _noisy_table(n=300, seed=5):
    """Both orders of n pairs, p(letter | order) ∝ π(slot) · q(answer there) · exp(ε) with
    ε ~ N(0, 0.6) per judgment and letter (so the debiased verdicts do flip); then NaN
    probabilities: both letters of every 7th judgment, letter B of every 11th. Returns the
    table and, per judgment, (first, p_A, p_B) as numbers (NaN kept)."""
    rng = np.random.default_rng(seed)
    qx, qr = rng.uniform(0.05, 1.0, n), rng.uniform(0.05, 1.0, n)
    rows, probs, raw = [], [], []
    for i in range(n):
        for first in (True, False):
            k = len(rows)
            a, b = (qx[i], qr[i]) if first else (qr[i], qx[i])
            w = np.array([PRIOR["A"] * a, PRIOR["B"] * b]) * np.exp(
                rng.normal(0, 0.6, 2)
            )
            p = w / w.sum()
            if k % 7 == 3:
                p = np.array([np.nan, np.nan])
            elif k % 11 == 5:
                p = np.array([p[0], np.nan])
            shown = [f"c{i}", "ref"] if first else ["ref", f"c{i}"]
            rows.append(dict(benchmark="B", judge="noisy", question_id=f"q{i}", task="t", candidate=f"c{i}",
                             reference="ref", shown=shown, repetition=1, mode="pairwise", option_mode=2,
                             extracted="A", failed=False))  # fmt: skip
            probs.append([("A", float(p[0])), ("B", float(p[1]))])
            raw.append((first, p[0], p[1]))
    m = pl.from_arrow(pa.array(probs, type=pa.map_(pa.string(), pa.float64())))
    return pl.DataFrame(rows).with_columns(option_probs=m), raw


def _expected_debiased(raw):
    """PC, valid pairs and undecided share of ``logprob-debiased``, computed here with numpy
    (PriDe's prior from the pairs with both orders usable; a judgment with a NaN is
    undecided; PC = consistent / pairs with a verdict in both orders)."""
    arr = np.array([(f, a, b) for f, a, b in raw], dtype=float).reshape(-1, 2, 3)
    ok = ~np.isnan(arr[:, :, 1:]).any(axis=2)  # (pair, order)
    both = ok.all(axis=1)
    lm = np.log(arr[both][:, :, 1:]).mean(axis=1)  # (pair, letter)
    pi = np.exp(lm - lm.max(axis=1, keepdims=True))
    prior = (pi / pi.sum(axis=1, keepdims=True)).mean(axis=0)
    prior = prior / prior.sum()
    d = arr[:, :, 1:] / prior  # debiased, per (pair, order, letter)
    cand_first = arr[:, :, 0] == 1
    win = np.where(cand_first, d[:, :, 0] > d[:, :, 1], d[:, :, 1] > d[:, :, 0])
    consistent = (win[:, 0] == win[:, 1]) & both
    return consistent.sum() / both.sum(), int(both.sum()), 1 - ok.mean()


def test_nan_option_probabilities_are_undecided_never_a_consistent_tie():
    """NaN option probabilities (vLLM's softmax of all -inf) are missing: the judgment is
    undecided, the slot prior is estimated without it, and PC is that of the usable
    pairs (computed independently). On 68e7136 a NaN reached the prior, every debiased
    probability became NaN, and NaN compared as a tie in both orders: PC 1.000."""
    j, raw = _noisy_table()
    pc, pairs, undecided = _expected_debiased(raw)
    assert 0.5 < pc < 0.97  # the noise makes the debiased verdicts flip
    t = E.evaluate(
        registry.apply_strategies(j, ["logprob-debiased"]), None, replicates=20
    )
    row = t.row(0, named=True)
    assert row["pc"] == pytest.approx(pc, abs=1e-12) and row["pairs"] == pairs
    assert row["undecided"] == pytest.approx(undecided, abs=1e-12)
    # a judge whose every probability is NaN decides nothing: no PC, all undecided
    nan = pl.from_arrow(
        pa.array(
            [[("A", float("nan")), ("B", float("nan"))]] * j.height,
            type=pa.map_(pa.string(), pa.float64()),
        )
    )
    allnan = j.with_columns(option_probs=nan, judge=pl.lit("nan"))
    names = ["logprob-raw", "logprob-debiased", "logprob-calibrated"]
    t = E.evaluate(registry.apply_strategies(allnan, names), None, replicates=20)
    for r in t.iter_rows(named=True):
        assert r["undecided"] == 1.0, r["strategy"]
        if (
            r["strategy"] != "logprob-calibrated"
        ):  # order-invariant: PC 1 by construction
            assert r["pairs"] == 0 and not r["pc"] == pytest.approx(1.0), r["strategy"]
