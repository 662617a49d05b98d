"""The judge simulator: the metrics recover its parameters; the backend and the table
generator share one decision rule; the bootstrap and sign test on known data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from voirdire.analysis.position.metrics import judge_metrics
from voirdire.analysis.position.pair_model import expected_pair_rates, settings_for
from voirdire.analysis.position.simulate import power_table, simulate_judgments
from voirdire.analysis.position.uncertainty import bootstrap_ci, sign_test
from voirdire.judges.base import Query
from voirdire.judges.simulated import SimulatedSettings, simulate_choice


def _expected_rs(pi: float, rho: float, reps: int = 3) -> float:
    """E[max_k |C_k| / n] for an always-unsure judge (A with π, B otherwise), repetitions
    copying the first draw with 1 − ρ, by enumerating every outcome."""
    total = 0.0
    p1 = {"A": pi, "B": 1 - pi}
    for first in "AB":
        # each later repetition: copy (1 − ρ) or a fresh draw (ρ)
        later = {
            "A": rho * pi + (1 - rho) * (first == "A"),
            "B": rho * (1 - pi) + (1 - rho) * (first == "B"),
        }
        for rest in itertools.product("AB", repeat=reps - 1):
            prob = p1[first] * math.prod(later[c] for c in rest)
            seq = (first, *rest)
            total += prob * max(seq.count("A"), seq.count("B")) / reps
    return total


def test_metrics_recover_known_position_bias():
    judges = {
        "primacy": dict(primacy=0.7, sensitivity=0.0),  # PC = 2π(1 − π), PF = 1 − 2π
        "tie": dict(primacy=0.5, tie_rate=0.2, sensitivity=0.0),
        "shaky": dict(primacy=0.7, sensitivity=0.0, repetition_noise=0.6),
        "realistic": dict(primacy=0.35, tie_rate=0.1, sensitivity=2.0),
    }
    df = simulate_judgments(
        judges, n_questions=300, candidates=8, tasks=3, repetitions=3, seed=3
    )
    jm = {r["judge"]: r for r in judge_metrics(df).iter_rows(named=True)}
    assert jm["primacy"]["pc"] == pytest.approx(2 * 0.7 * 0.3, abs=0.02)
    assert jm["primacy"]["pf"] == pytest.approx(1 - 2 * 0.7, abs=0.02)
    assert jm["primacy"]["rs"] == 1.0  # no repetition noise: every repetition the same
    t = expected_pair_rates(judges["tie"], np.zeros(1))
    assert jm["tie"]["pc"] == pytest.approx(
        float(t["consistent"][0]), abs=0.02
    )  # .45² + .45² + .1² = 0.415
    assert jm["tie"]["pf"] == pytest.approx(0.0, abs=0.02)
    assert jm["shaky"]["rs"] == pytest.approx(_expected_rs(0.7, 0.6), abs=0.015)
    # with quality gaps: expectation over the simulated pairs' true gaps
    pairs = df.filter((pl.col("judge") == "realistic") & (pl.col("permutation") == 0))
    e = expected_pair_rates(
        judges["realistic"], pairs.get_column("true_gap").to_numpy(), 3
    )
    v = e["consistent"] + e["primacy"] + e["recency"]
    assert jm["realistic"]["pc"] == pytest.approx(
        e["consistent"].mean() / v.mean(), abs=0.02
    )
    assert jm["realistic"]["pf"] == pytest.approx(
        (e["recency"] - e["primacy"]).mean(), abs=0.02
    )
    assert jm["realistic"]["error_rate"] == 0.0


def test_failures_are_recorded():
    df = simulate_judgments(
        {"j": dict(fail_rate=0.1)}, n_questions=200, candidates=5, seed=1
    )
    jm = judge_metrics(df).row(0, named=True)
    assert jm["error_rate"] == pytest.approx(0.1, abs=0.02)
    assert (
        df.filter(pl.col("failed")).get_column("extracted").null_count()
        == df.filter(pl.col("failed")).height
    )


def test_backend_follows_the_same_model():
    s = SimulatedSettings(primacy=0.8, sensitivity=0.0, tie_rate=0.25)
    letters = [
        simulate_choice(
            s,
            Query(
                unit_id=str(i),
                query_id=f"q{i}",
                benchmark="B",
                question_id=f"x{i}",
                shown=("m1", "m2"),
                repetition=1,
                option_mode=3,
            ),
        )
        for i in range(3000)
    ]
    share = {k: letters.count(k) / len(letters) for k in "ABC"}
    assert share["C"] == pytest.approx(0.25, abs=0.03)
    assert share["A"] == pytest.approx(0.75 * 0.8, abs=0.03)
    # the generator under the same settings
    df = simulate_judgments({"j": s}, n_questions=300, candidates=5, seed=2)
    gen = df.get_column("extracted").value_counts(normalize=True)
    g = dict(zip(gen["extracted"], gen["proportion"]))
    assert g["C"] == pytest.approx(0.25, abs=0.03) and g["A"] == pytest.approx(
        0.6, abs=0.03
    )


def test_backend_perturbed_query_is_one_more_repetition_of_its_control():
    """The engine's simulated judge without susceptibility at repetition_noise 0.5: a
    perturbed query agrees with its control at repetition r as often as the control's
    repetition 2 agrees with its repetition 1 (RR = CR within sampling error), at every r.
    Closed form for this always-unsure judge (A with 0.7, B 0.3): agreement =
    (1 − ρ) + ρ · (0.7² + 0.3²) = 0.79."""
    s = SimulatedSettings(primacy=0.7, sensitivity=0.0, repetition_noise=0.5)
    n, reps = 4000, 3

    def ask(i: int, rep: int, perturbed: bool) -> str:
        qid = f"q{i}" + ("|bandwagon" if perturbed else "")
        q = Query(unit_id=f"{qid}#{rep}", query_id=qid, benchmark="B", question_id=f"x{i}", shown=("m1", "m2"),
                  repetition=rep, option_mode=2, perturbation_kind="bandwagon" if perturbed else None,
                  target_slot="A" if perturbed else None, control_query_id=f"q{i}" if perturbed else None)  # fmt: skip
        return simulate_choice(s, q)

    control = np.array(
        [[ask(i, r, False) for r in range(1, reps + 1)] for i in range(n)]
    )
    perturbed = np.array(
        [[ask(i, r, True) for r in range(1, reps + 1)] for i in range(n)]
    )
    expected = 0.5 + 0.5 * (0.7**2 + 0.3**2)
    se = math.sqrt(expected * (1 - expected) / n)
    cr = (control[:, 0] == control[:, 1]).mean()
    assert abs(cr - expected) < 4 * se
    for r in range(reps):
        rr = (control[:, r] == perturbed[:, r]).mean()
        assert abs(rr - expected) < 4 * se, (r + 1, rr, cr)
        assert abs(rr - cr) < 4 * math.sqrt(2) * se, (r + 1, rr, cr)


def test_settings_for_hits_target_and_power_grows():
    s = settings_for(0.7, 0.2)
    r = expected_pair_rates(s, np.ones(1), 2)
    assert float(r["consistent"][0]) == pytest.approx(0.7, abs=1e-6)
    assert float(r["recency"][0] - r["primacy"][0]) == pytest.approx(0.2, abs=1e-6)
    with pytest.raises(ValueError):
        settings_for(0.9, 0.3)
    pt = power_table([0.05, 0.3], [25, 800], pc=0.7, replicates=60)
    pw = {(r["pf"], r["n_pairs"]): r["power"] for r in pt.iter_rows(named=True)}
    assert pw[(0.3, 800)] == 1.0
    assert pw[(0.05, 25)] < 0.3
    assert pw[(0.05, 800)] > pw[(0.05, 25)]


def test_bootstrap_matches_point_estimates_and_covers():
    df = simulate_judgments(
        {
            "a": dict(primacy=0.6, sensitivity=1.0, repetition_noise=0.3),
            "b": dict(primacy=0.4, sensitivity=1.0),
        },
        n_questions=60,
        candidates=4,
        tasks=3,
        repetitions=2,
        seed=5,
    )
    ci = bootstrap_ci(df, replicates=200)
    jm = {r["judge"]: r for r in judge_metrics(df).iter_rows(named=True)}
    for r in ci.iter_rows(named=True):
        assert r["estimate"] == pytest.approx(jm[r["judge"]][r["metric"]], abs=1e-12)
        assert r["lo"] <= r["estimate"] <= r["hi"]
    assert set(ci.get_column("metric")) == {"pc", "pf", "rs"}
    by_task = bootstrap_ci(df, replicates=50, by_task=True)
    assert by_task.get_column("task").n_unique() == 3


def test_sign_test_against_hand_binomial():
    df = simulate_judgments(
        {"j": dict(primacy=0.65, sensitivity=0.5)}, n_questions=40, candidates=3, seed=9
    )
    r = sign_test(df).row(0, named=True)
    k, n = r["primacy"], r["primacy"] + r["recency"]
    lo = min(k, n - k)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(lo + 1)) / 2**n)
    assert r["p_value"] == pytest.approx(p, rel=1e-9)
    assert r["direction"] == ("primacy" if k > n - k else "recency")
