"""The position effect of one-order logs (``analysis/position/one_order.py``): the design of
each judge, the win rates by hand on verdicts read by the real extraction, the
randomisation p-value against exact enumeration, the fixed order's message, the clusters
drawn, and size and power by a small simulation (the full one: ``perf/bench_one_order.py``)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from tests.audit_simulate import one_order_table
from voirdire.analysis.position.one_order import (
    EFFECT_COLUMNS,
    FIXED_MESSAGE,
    HALVES_MESSAGE,
    has_one_order,
    one_order_effect,
    order_design,
)
from voirdire.judges.extract import extract_verdicts

REF = "ref"


def _rows(cases, judge="j"):
    """Judgment rows through the real extraction: ``cases`` = [(question, candidate,
    candidate_first, verdict letter or None = failed)], three-option mode (C = tie)."""
    out = []
    for q, cand, first, v in cases:
        shown = [cand, REF] if first else [REF, cand]
        out.append({"benchmark": "B", "judge": judge, "question_id": q, "task": "t", "candidate": cand,
                    "reference": REF, "shown": shown, "permutation": 0 if first else 1, "repetition": 1,
                    "mode": "pairwise", "option_mode": 3, "query_id": f"{q}/{cand}/{first}",
                    "output": None if v is None else f"[[{v}]]", "choice": None, "input_chars": 1,
                    "output_chars": 1, "prompt_chars": 1})  # fmt: skip
    raw = pl.DataFrame(out, schema_overrides={"option_mode": pl.Int32, "choice": pl.String, "output": pl.String,
                                              "permutation": pl.Int32, "repetition": pl.Int32})  # fmt: skip
    return extract_verdicts(raw, {"B": r"\[\[([ABCD])\]\]"})


def _score(first, v):
    """Independent reading: the candidate's score (1 win, ½ tie, 0 loss; None failed)."""
    if v is None:
        return None
    if v == "C":
        return 0.5
    return 1.0 if (v == "A") == first else 0.0


def test_design_of_each_judge():
    t = pl.concat(
        [
            one_order_table(20, [0.0, 1.0], design="randomised", judge="rand"),
            one_order_table(20, [0.0, 1.0], design="fixed", judge="fix"),
            one_order_table(20, [0.0, 1.0], design="both", judge="both"),
        ]
    )
    d = {r["judge"]: r for r in order_design(t).iter_rows(named=True)}
    assert (
        d["rand"]["design"] == "randomised" and d["rand"]["message"] == HALVES_MESSAGE
    )
    assert d["rand"]["candidate_first"] + d["rand"]["reference_first"] == 40
    assert d["fix"]["design"] == "fixed" and d["fix"]["reference_first"] == 0
    assert d["both"]["design"] == "both" and d["both"]["both_orders"] == 40
    assert d["both"]["message"] is None
    # all reference first is a fixed order too
    flipped = one_order_table(5, [0.0], design="fixed").with_columns(
        pl.col("shown").list.reverse()
    )
    assert order_design(flipped).get_column("design").to_list() == ["fixed"]
    eff = one_order_effect(t, replicates=20, permutations=20)
    assert eff.columns == EFFECT_COLUMNS
    assert set(eff.get_column("judge")) == {
        "rand",
        "fix",
    }  # both orders: PC/PF's, not here
    fixed = eff.filter(pl.col("judge") == "fix").row(0, named=True)
    assert fixed["message"] == FIXED_MESSAGE and fixed["design"] == "fixed"
    assert all(
        fixed[c] is None for c in ("effect", "effect_lo", "p_value", "win_first")
    )
    assert has_one_order(t) and not has_one_order(t.filter(pl.col("judge") == "both"))


def test_win_rates_by_hand():
    verdicts = ["A", "B", "C", None]
    cases = [
        (f"q{i}", cand, first, v)
        for i, (cand, first, v) in enumerate(
            itertools.product(["m1", "m2"], [True, False], verdicts)
        )
    ] + [("qx", "m1", True, "A"), ("qy", "m2", False, "A")]
    eff = one_order_effect(_rows(cases), replicates=50, permutations=50)
    for cand in ["m1", "m2", None]:
        mine = [c for c in cases if cand is None or c[1] == cand]
        s1 = [x for _, _, f, v in mine if f and (x := _score(f, v)) is not None]
        s2 = [x for _, _, f, v in mine if not f and (x := _score(f, v)) is not None]
        r = eff.filter(pl.col("candidate").eq_missing(cand)).row(0, named=True)
        assert (r["n_first"], r["n_second"]) == (len(s1), len(s2))
        assert r["win_first"] == pytest.approx(np.mean(s1))
        assert r["win_second"] == pytest.approx(np.mean(s2))
        assert r["effect"] == pytest.approx(np.mean(s1) - np.mean(s2))
        assert r["effect_lo"] <= r["effect"] + 1e-12 <= r["effect_hi"] + 2e-12


def test_permutation_p_against_exact_enumeration():
    # one candidate, 10 pairs: 4 shown first, 6 second; enumerate all C(10, 4) = 210 labellings
    scores = [1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.0]
    first = [True, True, True, True, False, False, False, False, False, False]
    to_letter = {
        (1.0, True): "A",
        (1.0, False): "B",
        (0.0, True): "B",
        (0.0, False): "A",
    }
    cases = [
        (f"q{i}", "m", f, "C" if s == 0.5 else to_letter[(s, f)])
        for i, (s, f) in enumerate(zip(scores, first))
    ]
    y = np.array(scores)

    def diff(idx):
        mask = np.zeros(10, bool)
        mask[list(idx)] = True
        return y[mask].mean() - y[~mask].mean()

    t_obs = diff([0, 1, 2, 3])
    all_t = [diff(c) for c in itertools.combinations(range(10), 4)]
    exact = np.mean([abs(t) >= abs(t_obs) - 1e-12 for t in all_t])
    eff = one_order_effect(_rows(cases), replicates=20, permutations=20_000, seed=3)
    for r in eff.iter_rows(named=True):  # the candidate's row and the pooled row agree
        assert r["effect"] == pytest.approx(t_obs)
        # Monte Carlo standard error sqrt(p(1-p)/20000) < 0.0036: 4 of them
        assert abs(r["p_value"] - exact) < 0.015, (r["p_value"], exact)


def test_labels_are_shuffled_within_each_candidate():
    # m1 always wins, m2 always loses, and m1 is shown first more often: pooling the labels
    # across candidates would find an order effect that is only the models' difference
    cases = [(f"a{i}", "m1", i < 8, "A" if i < 8 else "B") for i in range(10)]
    cases += [(f"b{i}", "m2", i < 2, "B" if i < 2 else "A") for i in range(10)]
    eff = one_order_effect(_rows(cases), replicates=20, permutations=500)
    for r in eff.iter_rows(named=True):
        if r["candidate"] is not None:
            assert r["effect"] == 0.0 and r["p_value"] == 1.0
    pooled = eff.filter(pl.col("candidate").is_null()).row(0, named=True)
    assert pooled["effect"] == pytest.approx(
        0.8 - 0.2
    )  # the naive difference is large,
    assert pooled["p_value"] == 1.0  # but no within-candidate shuffle changes it


def test_clusters_are_what_the_bootstrap_draws():
    t = one_order_table(30, [0.0, 0.5], delta=0.5, seed=2)
    one = pl.DataFrame(
        {
            "benchmark": "B",
            "question_id": [f"q{i}" for i in range(30)],
            "cluster": "all",
        }
    )
    eff = one_order_effect(t, replicates=100, permutations=50, clusters=one)
    # one cluster: every replicate draws it, the interval is the estimate
    assert np.allclose(eff.get_column("effect_lo"), eff.get_column("effect"))
    assert np.allclose(eff.get_column("effect_hi"), eff.get_column("effect"))
    free = one_order_effect(t, replicates=100, permutations=50)
    assert (free.get_column("effect_hi") - free.get_column("effect_lo")).min() > 0.05


def test_size_and_power_by_simulation():
    def rejections(delta, tables=60, questions=40):
        hits = 0
        for s in range(tables):
            t = one_order_table(
                questions, [0.0, 0.8], delta=delta, tie_rate=0.1, seed=s
            )
            r = one_order_effect(t, replicates=10, permutations=200, seed=s)
            hits += r.filter(pl.col("candidate").is_null()).item(0, "p_value") < 0.05
        return hits / tables

    # size 0.05: P(more than 7 of 60) < 0.01
    assert rejections(0.0) <= 7 / 60
    # effect 0.34 in win rate (tests.audit_simulate.true_effect × 0.9 for the ties), 120
    # pairs a table: the estimate's spread ≈ 0.095, power ≈ 0.95
    assert rejections(1.0, tables=40, questions=60) >= 0.8


def _unit_table(states, scores):
    """A randomised table of units (questions) shared by every candidate: ``states[u]`` the
    candidate shown first on every pair of question ``u``, ``scores[u][c]`` the score of
    candidate ``c`` there (1 win, 0 loss: chosen = candidate or reference)."""
    cases = []
    for u, (s, row) in enumerate(zip(states, scores)):
        for c, v in enumerate(row):
            cases.append(
                (f"q{u}", f"m{c}", s, ("A" if v else "B") if s else ("B" if v else "A"))
            )
    return _rows(cases)


def _pooled_effect(states, scores):
    s = np.asarray(states, bool)
    x = np.asarray(scores, float)
    return x[s].mean() - x[~s].mean()


def test_question_unit_p_against_exact_enumeration():
    # 8 questions, each shown one way round to all 6 models (AlpacaEval's seeded switch), 4
    # candidate first; a strong question effect: every model wins the easy questions
    rng = np.random.default_rng(3)
    easy = np.array([1, 1, 1, 0, 0, 0, 1, 0], bool)
    scores = np.where(easy[:, None], rng.random((8, 6)) < 0.9, rng.random((8, 6)) < 0.1)
    labellings = [
        [u in pick for u in range(8)] for pick in itertools.combinations(range(8), 4)
    ]
    stats = np.array([_pooled_effect(s, scores) for s in labellings])
    exact = [(np.abs(stats) >= abs(t) - 1e-12).mean() for t in stats]
    pair_rejects = question_rejects = 0
    for lab, p_exact in zip(labellings[::5], exact[::5]):
        t = _unit_table(lab, scores)
        q = one_order_effect(t, replicates=2, permutations=4000, units={"B": "cluster"})
        q = q.filter(pl.col("candidate").is_null()).row(0, named=True)
        assert q["p_value"] == pytest.approx(p_exact, abs=0.03)
        assert "whole questions" in q["message"]
        question_rejects += q["p_value"] < 0.05
        per_pair = one_order_effect(t, replicates=2, permutations=4000)
        pair_rejects += (
            per_pair.filter(pl.col("candidate").is_null())["p_value"][0] < 0.05
        )
    # the exact test's size: at most 5 % of the labellings reject under the sharp null
    assert np.mean(np.array(exact) <= 0.05) <= 0.05
    assert question_rejects <= 1
    # shuffling pairs apart ignores that the 6 pairs of a question share one coin
    assert pair_rejects >= 5


def test_a_question_shown_both_ways_falls_back_to_pairs():
    t = one_order_table(30, [0.0, 0.5, 1.0], switch="question", seed=2)
    ok = one_order_effect(t, replicates=2, permutations=50, units={"B": "cluster"})
    assert ok.filter(pl.col("candidate").is_null())["message"][0].endswith(
        "shared by all models (the unit the format randomised)"
    )
    # one pair of question q0 turned round: the declared unit no longer holds
    i = t.with_row_index().filter(pl.col("question_id") == "q0")["index"][0]
    bad = t.with_columns(shown=pl.when(pl.int_range(pl.len()) == i).then(pl.col("shown").list.reverse())
                         .otherwise(pl.col("shown")))  # fmt: skip
    got = one_order_effect(bad, replicates=2, permutations=50, units={"B": "cluster"})
    msg = got.filter(pl.col("candidate").is_null())["message"][0]
    assert "shuffles pairs instead" in msg
    none = one_order_effect(t, replicates=2, permutations=50, units={"B": "none"})
    assert none["p_value"].is_nan().all() and none["effect"].is_not_nan().all()


def test_the_unit_is_the_formats_record():
    from voirdire.analysis.position.clusters import benchmark_order_units

    units = benchmark_order_units(["AlpacaEval", "PRD", "my own pairs"])
    assert units == {"AlpacaEval": "cluster", "PRD": "pair", "my own pairs": "pair"}


@pytest.mark.parametrize(
    "columns,unit",
    [
        (None, "cluster"),  # AlpacaEval's default: the instruction
        (["instruction"], "cluster"),
        (
            ["dataset", "instruction"],
            "cluster",
        ),  # the dataset is fixed by the instruction
        (
            ["instruction", "output_2"],
            "pair",
        ),  # a coin per (instruction, model's output)
        (["generator_2", "instruction"], "pair"),
        (["output_1", "output_2"], "pair"),
        (["dataset"], "none"),  # one coin for all the instructions of a dataset
    ],
)
def test_alpaca_evals_unit_follows_its_seed_columns(columns, unit):
    """AlpacaEval's switch is seeded by ``[benchmark.log] seed_columns``: the unit the
    analysis reads is the kind's record under the job's settings (its ``job.json``), not the
    default's instruction whatever the settings (at 8e88b73: ``"cluster"`` always)."""
    from voirdire.analysis.position.clusters import (
        benchmark_order_units,
        job_order_units,
    )

    log = {} if columns is None else {"seed_columns": columns}
    table = {"name": "AlpacaEval", "logs": ["x.json"], "log": log}
    assert benchmark_order_units(["AlpacaEval"], {"AlpacaEval": table}) == {
        "AlpacaEval": unit
    }
    t = one_order_table(4, [0.0], design="randomised").with_columns(
        benchmark=pl.lit("AlpacaEval")
    )
    job = {"benchmark": "AlpacaEval", "job": {"benchmark": table}}
    assert job_order_units(t, job) == {"AlpacaEval": unit}
