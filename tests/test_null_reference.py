"""Null references of the susceptibility and of CALM's error rates: the figure a judge
with no effect reads on the same pairs. Checked by exact enumeration of the within-pair
swaps, and by simulation: a judge the perturbation does not move reads a susceptibility
and an error rate away from 0, and inside their null references."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from tests.bias_simulate import simulate_bias_judgments
from voirdire.analysis.biases.effects import bias_effects
from voirdire.analysis.biases.null_reference import susceptibility_of, swap_null
from voirdire.analysis.biases.self_enhancement import self_enhancement


def test_swap_null_matches_exact_enumeration_of_the_swaps():
    a = np.array([1, 0, 0, 0.5, 0, 0, 1, 0, 0, 0])  # target's score, control
    b = np.array([0, 1, 0, 0, 0.5, 1, 1, 0, 0, 0])  # perturbed
    n = float(a.size)
    sus, err = [], []
    for z in itertools.product(
        (0, 1), repeat=a.size
    ):  # every assignment, equally likely under the null
        z = np.array(z, dtype=bool)
        c, p = np.where(z, b, a), np.where(z, a, b)
        s, e = susceptibility_of(
            np.array([n]), np.array([c.sum()]), np.array([p.sum()])
        )
        sus.append(s[0])
        err.append(e[0])
    exact_s, exact_e = np.nanmean(sus), np.nanmean(err)
    rows = pl.DataFrame({"_key": ["g"] * a.size, "s_control": a, "s_perturbed": b})
    r = swap_null(rows, replicates=40000, seed=1).row(0, named=True)
    assert r["susceptibility_null"] == pytest.approx(exact_s, abs=0.01)
    assert r["error_rate_null"] == pytest.approx(exact_e, abs=0.01)
    assert (
        exact_e > 0.3
    )  # an absolute value: far from 0 for a judge with no effect at all
    assert (
        r["susceptibility_null_lo"]
        < r["susceptibility_null"]
        < r["susceptibility_null_hi"]
    )
    # no discordant pair (a deterministic judge the perturbation does not move): exactly 0
    same = swap_null(
        rows.with_columns(s_perturbed=pl.col("s_control")), replicates=50
    ).row(0, named=True)
    assert (
        same["susceptibility_null"]
        == same["susceptibility_null_hi"]
        == same["error_rate_null"]
        == 0.0
    )


def test_a_null_judge_reads_its_null_reference_not_zero():
    """A judge of zero susceptibility, target the worse answer (P(control) ≈ 0.15): over 60
    tables its susceptibility and error rate average away from 0 (the readings' bias) and
    at their null references, and each estimate lies inside its null band."""
    variants = [
        ("worse", "bandwagon", "80", "worse"),
        ("refined", "refinement_aware", None, "candidate"),
    ]
    judge = {
        "null": ({"repetition_noise": 0.7, "sensitivity": 1.5, "tie_rate": 0.2}, {})
    }
    rec = {k: [] for k in ("sus", "sus_null", "err", "err_null", "p", "inside")}
    for seed in range(60):
        df = simulate_bias_judgments(
            judge, variants, n_questions=60, candidates=4, repetitions=1, seed=seed
        )
        e = {
            r["perturbation"]: r
            for r in bias_effects(df, replicates=400, seed=seed)
            .filter(pl.col("slot") == "all")
            .iter_rows(named=True)
        }
        w, f = e["worse"], e["refined"]
        rec["sus"].append(w["susceptibility"])
        rec["sus_null"].append(w["susceptibility_null"])
        rec["p"].append(w["p_control"])
        rec["err"].append(f["error_rate"])
        rec["err_null"].append(f["error_rate_null"])
        rec["inside"] += [w["susceptibility_null_lo"] <= w["susceptibility"] <= w["susceptibility_null_hi"],
                          f["error_rate_null_lo"] <= f["error_rate"] <= f["error_rate_null_hi"]]  # fmt: skip
        assert w["error_rate_null"] is None and f["susceptibility_null"] is not None
    m = {k: float(np.mean(v)) for k, v in rec.items()}
    assert 0.08 < m["p"] < 0.25
    assert (
        m["err"] > 0.025 and m["err_null"] > 0.025
    )  # a null judge's error rate is not 0 ...
    assert m["err"] == pytest.approx(
        m["err_null"], rel=0.2
    )  # ... it is its null reference
    se = float(np.std(rec["sus"]) / np.sqrt(len(rec["sus"])))
    assert m["sus_null"] < -0.02 and abs(m["sus"] - m["sus_null"]) < 3 * se + 0.005
    assert m["inside"] >= 0.88


def test_self_enhancement_error_rate_has_a_null_reference():
    """Three judges that decide alike (each pair's verdicts drawn from one distribution):
    CALM's self-enhancement error rate is an absolute value, > 0, and sits at its null
    reference (judge labels exchanged within each pair)."""
    rng = np.random.default_rng(5)
    rows = []
    for q in range(60):
        for cand, p in (("own", 0.6), ("c2", 0.5), ("c3", 0.4)):
            for judge in ("j", "k1", "k2"):
                win = rng.random() < p
                for perm in (0, 1):
                    shown = [cand, "ref"] if perm == 0 else ["ref", cand]
                    letter = (
                        ("A" if perm == 0 else "B")
                        if win
                        else ("B" if perm == 0 else "A")
                    )
                    rows.append({"benchmark": "B", "judge": judge, "question_id": f"q{q}", "task": "t", "candidate": cand,
                                 "reference": "ref", "shown": shown, "permutation": perm, "repetition": 1, "mode": "pairwise",
                                 "option_mode": 3, "extracted": letter, "failed": False, "input_chars": 10,
                                 "output_chars": 10, "prompt_chars": 20})  # fmt: skip
    r = self_enhancement(pl.DataFrame(rows), {"j": "own"}, replicates=400).row(
        0, named=True
    )
    assert r["error_rate"] > 0 and r["error_rate_null"] > 0.03
    assert r["error_rate_null_lo"] <= r["error_rate"] <= r["error_rate_null_hi"]
