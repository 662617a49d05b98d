"""Mitigation strategies and their evaluation (docs/mitigation.md): hand-made tables with
known verdicts, and simulated judges with latent qualities (known true winner) whose
expected figures are computed in closed form from the judge model."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from voirdire.analysis.mitigation import bpde as B
from voirdire.analysis.mitigation import evaluation as E
from voirdire.analysis.mitigation import grading as R
from voirdire.analysis.mitigation import registry
from voirdire.analysis.mitigation import verdicts as M
from voirdire.analysis.position.simulate import simulate_judgments
from voirdire.core import ConfigError
from voirdire.judges.simulated import SimulatedSettings


def _rows(spec, option_mode=3, judge="j", bench="B"):
    """spec: list of (question, candidate, letter_candidate_first, letter_candidate_second)."""
    rows = []
    for q, c, l1, l2 in spec:
        for first, letter in ((True, l1), (False, l2)):
            shown = [c, "ref"] if first else ["ref", c]
            rows.append(
                dict(benchmark=bench, judge=judge, question_id=q, task="t", candidate=c, reference="ref", shown=shown,
                     repetition=1, mode="pairwise", option_mode=option_mode, extracted=letter, failed=letter is None,
                     query_id=f"{q}|{';'.join(shown)}", input_chars=1, output_chars=1, prompt_chars=1)
            )  # fmt: skip
    return pl.DataFrame(rows)


def _verdicts(v: pl.DataFrame) -> dict:
    return {
        (r["question_id"], r["candidate"], r["side"]): r["verdict"]
        for r in v.iter_rows(named=True)
    }


def test_normalise_letters_to_candidate_side():
    j = _rows([("q1", "x", "A", "A"), ("q2", "x", "B", "C"), ("q3", "x", None, "D")])
    v = _verdicts(M.normalise(j))
    assert v == {
        ("q1", "x", 0): "win", ("q1", "x", 1): "loss",
        ("q2", "x", 0): "loss", ("q2", "x", 1): "tie",
        ("q3", "x", 0): "undecided", ("q3", "x", 1): "undecided",
    }  # fmt: skip
    # in two-option mode C is no tie
    assert (
        _verdicts(M.normalise(_rows([("q1", "x", "C", "B")], option_mode=2)))[
            ("q1", "x", 0)
        ]
        == "undecided"
    )


def test_flip_rate_is_not_one_minus_pc():
    # (win, loss) flip; (win, tie) inconsistent but no flip; (win, win) consistent; a failed pair
    j = _rows(
        [
            ("q1", "x", "A", "A"),
            ("q2", "x", "A", "C"),
            ("q3", "x", "A", "B"),
            ("q4", "x", None, "B"),
        ]
    )
    f = M.flip_rate(M.normalise(j)).row(0, named=True)
    assert (f["pairs"], f["failed_pairs"], f["flips"]) == (3, 1, 1)
    assert f["flip_rate"] == pytest.approx(1 / 3)
    pc = M.judge_pc(M.normalise(j)).get_column("pc").item()
    assert pc == pytest.approx(1 / 3)  # only q3 consistent among 3 classified pairs
    assert f["flip_rate"] != pytest.approx(1 - pc)


def test_swap_and_tie_and_gate():
    j = _rows(
        [
            ("q1", "x", "A", "B"),
            ("q2", "x", "A", "A"),
            ("q3", "x", "C", "C"),
            ("q4", "x", None, "B"),
        ]
    )
    n = M.normalise(j)
    tie = {k[0]: v for k, v in _verdicts(M.swap_and_tie(n)).items()}
    gate = {k[0]: v for k, v in _verdicts(M.swap_and_tie(n, "undecided")).items()}
    assert tie == {"q1": "win", "q2": "tie", "q3": "tie", "q4": "undecided"}
    assert gate == {"q1": "win", "q2": "undecided", "q3": "tie", "q4": "undecided"}
    assert M.swap_and_tie(n).get_column("queries").to_list() == [2, 2, 2, 2]
    with pytest.raises(ValueError):
        M.swap_and_tie(n, "coin")


def test_swap_and_tie_rows_in_string_order():
    """The combined verdicts come sorted by their keys as strings sort (byte order, nulls
    first), whatever order the names first appear in: swap_and_tie groups and sorts the
    few-valued keys by integer codes (an Enum of the sorted names), which must keep that
    order; the keys are Strings again on the way out, rows without a side pass through."""
    names = ["zeta", "Beta", "alpha", "éclair", "beta"]  # first seen: not sorted
    rows = [
        {"benchmark": "B", "judge": j, "question_id": "q", "task": None,
         "candidate": c, "reference": "ref", "verdict": v, "queries": 1, "side": s,
         "repetition": 1}
        for c in names for j in ("j2", "j1")
        for s, v in ((0, "win"), (1, "loss" if c != "beta" else "win"))
    ]  # fmt: skip
    rows.append(dict(rows[0], candidate="mid", side=None, verdict="tie"))
    v = M.conform(pl.DataFrame(rows, schema=M.VERDICT_SCHEMA))
    out = M.swap_and_tie(v)
    assert out.schema == pl.Schema(M.VERDICT_SCHEMA)
    assert out.equals(out.sort(M.VERDICT_KEYS))
    assert out.select("judge", "candidate").rows()[:6] == [
        ("j1", "Beta"), ("j1", "alpha"), ("j1", "beta"), ("j1", "zeta"), ("j1", "éclair"),
        ("j2", "Beta"),
    ]  # fmt: skip
    assert out.filter(pl.col("candidate") == "beta").get_column(
        "verdict"
    ).to_list() == ["win", "win"]
    assert out.filter(pl.col("candidate") == "alpha").get_column(
        "verdict"
    ).to_list() == ["tie", "tie"]
    assert out.filter(pl.col("candidate") == "mid").get_column("verdict").to_list() == [
        "tie"
    ]


def test_jury_majority_weighted_and_composable():
    a = _rows([("q1", "x", "A", "B"), ("q2", "x", "A", "A")], judge="a")
    b = _rows([("q1", "x", "A", "A"), ("q2", "x", "B", "B")], judge="b")
    c = _rows([("q1", "x", "B", "B"), ("q2", "x", None, "B")], judge="c")
    n = M.normalise(pl.concat([a, b, c]))
    v = _verdicts(M.jury_vote(n))
    # q1 first order: win, win, loss -> win; second: win, loss, win -> win
    assert v[("q1", "x", 0)] == "win" and v[("q1", "x", 1)] == "win"
    # q2 first: win, loss, (failed) -> tie for the largest count -> tie
    assert v[("q2", "x", 0)] == "tie" and v[("q2", "x", 1)] == "win"
    jv = M.jury_vote(n)
    assert set(jv.get_column("judge").to_list()) == {"panel-3"}
    assert jv.get_column("queries").to_list() == [3, 3, 3, 3]
    w = pl.DataFrame(
        {"benchmark": ["B"] * 3, "judge": ["a", "b", "c"], "weight": [0.1, 0.1, 1.0]}
    )
    assert (
        _verdicts(M.jury_vote(n, weights=w))[("q1", "x", 0)] == "loss"
    )  # c outweighs a + b
    both = M.pipeline(M.normalise, M.jury_vote, M.swap_and_tie)(pl.concat([a, b, c]))
    assert {r["question_id"]: r["verdict"] for r in both.iter_rows(named=True)} == {
        "q1": "win",
        "q2": "tie",
    }
    assert both.get_column("queries").to_list() == [6, 6]


def test_bpde_selection_and_labels_round_trip(tmp_path):
    # repetitions: q1 always win (entropy 0), q2 half win half loss (1 bit), q3 win/tie/loss/win
    j = pl.concat(
        [
            _rows(
                [("q1", "x", "A", "B"), ("q2", "x", "A", "A"), ("q3", "x", "A", "C")]
            ),
            _rows(
                [("q1", "x", "A", "B"), ("q2", "x", "B", "B"), ("q3", "x", "B", "B")]
            ).with_columns(repetition=pl.lit(2, dtype=pl.Int64)),
        ]
    )
    s = B.bpde(M.normalise(j)).sort("question_id")
    h3 = -(0.5 * np.log2(0.5) + 2 * 0.25 * np.log2(0.25))
    assert s.get_column("bpde").to_list() == pytest.approx([0.0, 1.0, h3])
    top = B.select_for_annotation(M.normalise(j), beta=0.5)  # ceil(1.5) = 2 pairs
    assert top.get_column("question_id").to_list() == ["q3", "q2"]
    path = tmp_path / "annotate.csv"
    top.with_columns(winner=pl.Series(["reference", "tie"])).write_csv(path)
    labels = R.human_grading(path)
    R.check_grading(labels, j)
    assert dict(
        zip(labels.get_column("question_id"), labels.get_column("ref_verdict"))
    ) == {"q3": "loss", "q2": "tie"}
    final = B.override(
        M.swap_and_tie(M.normalise(j.filter(pl.col("repetition") == 1))), labels
    )
    assert {r["question_id"]: r["verdict"] for r in final.iter_rows(named=True)} == {
        "q1": "win",
        "q2": "tie",
        "q3": "loss",
    }


def test_labels_majority_and_bad_input(tmp_path):
    j = _rows([("q1", "x", "A", "B"), ("q2", "y", "A", "B")])
    lab = pl.DataFrame({"question": ["q1", "q1", "q1", "q2", "q2"], "candidate": ["x", "x", "x", "y", "y"],
                        "reference": ["ref"] * 5, "winner": ["candidate", "candidate", "tie", "candidate", "reference"]})  # fmt: skip
    ref = R.human_grading(lab)
    assert dict(zip(ref.get_column("question_id"), ref.get_column("ref_verdict"))) == {
        "q1": "win",
        "q2": "tie",
    }
    with pytest.raises(ConfigError, match="unknown candidate.*zz"):
        R.check_grading(R.human_grading(lab.with_columns(candidate=pl.lit("zz"))), j)
    with pytest.raises(ConfigError, match="match no judged pair.*q9/x"):
        R.check_grading(R.human_grading(lab.with_columns(question=pl.lit("q9"))), j)
    with pytest.raises(ConfigError, match="winner values.*'left'"):
        R.human_grading(lab.with_columns(winner=pl.lit("left")))
    with pytest.raises(ConfigError, match="missing column.*winner"):
        R.human_grading(lab.drop("winner"))
    with pytest.raises(ConfigError, match="reference judge 'gpt-9'.*judges: j"):
        R.load_grading("judge:gpt-9", j)
    with pytest.raises(ConfigError, match="not found"):
        R.load_grading(str(tmp_path / "none.csv"), j)
    registry.register_strategy(
        "needs-probs", M.normalise, needs=["option_probs"], replace=True
    )
    try:
        with pytest.raises(ConfigError, match="'needs-probs' needs 'option_probs'"):
            registry.apply_strategies(j, ["single", "needs-probs"])
    finally:
        registry.STRATEGIES.unregister("needs-probs")
    with pytest.raises(ConfigError, match="unknown strategy 'bogus'"):
        registry.apply_strategies(j, ["bogus"])


def test_kappa_from_sums_matches_statsmodels():
    rng = np.random.default_rng(1)
    cats = np.array(["win", "tie", "loss"])
    n = 300
    truth = rng.integers(0, 3, n)
    said = np.where(rng.random(n) < 0.7, truth, rng.integers(0, 3, n))
    v = pl.DataFrame({"strategy": "s", "benchmark": "B", "judge": "j", "question_id": [f"q{i % 30}" for i in range(n)],
                      "task": "t", "candidate": [f"c{i}" for i in range(n)], "reference": "r", "verdict": cats[said],
                      "queries": 1, "side": None, "repetition": 1}).cast({"side": pl.Int64})  # fmt: skip
    ref = v.select(
        "benchmark",
        "question_id",
        "candidate",
        "reference",
        ref_verdict=pl.Series(cats[truth]),
        source=pl.lit("s"),
    )
    t = E.evaluate(v, ref, replicates=200).row(0, named=True)
    table = np.zeros((3, 3))
    np.add.at(table, (said, truth), 1)
    assert t["kappa"] == pytest.approx(float(cohens_kappa(table, return_results=False)))
    assert t["accuracy"] == pytest.approx((said == truth).mean())
    assert t["kappa_lo"] < t["kappa"] < t["kappa_hi"]
    assert t["order_invariant"] and t["pc"] == 1.0 and t["pf"] == 0.0


# --------------------------------------------------------------------------------------
# Simulated judges: a primacy-biased judge against the true winner
# --------------------------------------------------------------------------------------

PI, SENS = 0.85, 1.5


def _maj3(p):
    return p**3 + 3 * p**2 * (1 - p)


@pytest.fixture(scope="module")
def sim():
    biased = SimulatedSettings(primacy=PI, sensitivity=SENS)
    judges = {
        "biased": biased,
        "biased-2": biased,
        "biased-3": biased,
        "oracle": SimulatedSettings(sensitivity=1e9),
    }
    j = simulate_judgments(
        judges, n_questions=300, candidates=10, tasks=3, option_mode=2, seed=7
    )
    ref = R.load_grading("judge:oracle", j)
    strat = {
        n: M.without_judges(registry.strategy(n).fn, ["oracle"])
        for n in ("single", "swap-tie", "gate", "jury")
    }
    table = E.evaluate(registry.apply_strategies(j, strat), ref, replicates=400)
    # expected figures given each pair's latent gap (the judge model of judges/simulated.py)
    gap = (
        j.filter((pl.col("judge") == "biased") & (pl.col("permutation") == 0))
        .get_column("true_gap")
        .to_numpy()
    )
    u = np.exp(-SENS * gap)
    s = 1 - u
    p_a, p_b = (
        s + u * PI,
        s + u * (1 - PI),
    )  # correct when the better answer is in A / in B
    both_right, both_wrong = p_a * p_b, (u * PI) * (u * (1 - PI))
    ja, jb = _maj3(p_a), _maj3(p_b)
    expected = {
        "single": dict(accuracy=np.mean((p_a + p_b) / 2), pf=np.mean((1 - p_a) * p_b - p_a * (1 - p_b)),
                       flip=np.mean(p_a * (1 - p_b) + (1 - p_a) * p_b), undecided=0.0, cost=1.0),
        "swap-tie": dict(accuracy=np.mean(both_right), pf=0.0, flip=0.0, undecided=0.0, cost=2.0),
        "gate": dict(accuracy=both_right.sum() / (both_right + both_wrong).sum(), pf=0.0, flip=0.0,
                     undecided=1 - np.mean(both_right + both_wrong), cost=2.0),
        "jury": dict(accuracy=np.mean((ja + jb) / 2), pf=np.mean((1 - ja) * jb - ja * (1 - jb)),
                     flip=np.mean(ja * (1 - jb) + (1 - ja) * jb), undecided=0.0, cost=3.0),
    }  # fmt: skip
    return j, ref, table, expected


def _row(table, strategy, judge="biased"):
    return table.filter(
        (pl.col("strategy") == strategy) & (pl.col("judge") == judge)
    ).row(0, named=True)


def test_oracle_reference_is_the_true_winner(sim):
    j, ref, _, _ = sim
    pairs = j.filter(
        (pl.col("judge") == "oracle") & (pl.col("permutation") == 0)
    ).height
    assert ref.height >= 0.999 * pairs and set(
        ref.get_column("ref_verdict").unique()
    ) == {"win", "loss"}
    assert "not with people" in ref.get_column("source").item(0)


@pytest.mark.parametrize("strategy", ["single", "swap-tie", "gate"])
def test_simulated_primacy_judge_matches_closed_form(sim, strategy):
    _, _, table, expected = sim
    r, e = _row(table, strategy), expected[strategy]
    # 3000 pairs: the sampling sd of these shares is below 0.006
    for m in ("accuracy", "pf", "flip", "undecided", "cost"):
        assert r[m] == pytest.approx(e[m], abs=0.02), m
        assert r[f"{m}_lo"] - 0.005 <= e[m] <= r[f"{m}_hi"] + 0.005, m


def test_swap_and_tie_removes_pf_and_gate_raises_accuracy(sim):
    _, _, table, expected = sim
    single, tie, gate = (
        _row(table, "single"),
        _row(table, "swap-tie"),
        _row(table, "gate"),
    )
    # the biased judge's PF is clearly primacy (negative), its CI excludes 0
    assert expected["single"]["pf"] < -0.1 and single["pf_hi"] < 0
    # order-combining strategies: PF 0 within its (collapsed) CI
    for r in (tie, gate):
        assert r["pf_lo"] <= 0.0 <= r["pf_hi"] and r["pf"] == 0.0
    # the gate raises accuracy on the decided pairs, at the price of undecided ones
    assert expected["gate"]["accuracy"] > expected["single"]["accuracy"] + 0.05
    assert gate["accuracy_lo"] > single["accuracy_hi"]
    assert gate["undecided"] == pytest.approx(expected["gate"]["undecided"], abs=0.02)
    # against a strict true winner, the MT-Bench tie rule cannot raise accuracy: a tie is a
    # decided verdict that is never right (P(both right) <= P(one order right))
    assert expected["swap-tie"]["accuracy"] < expected["single"]["accuracy"]
    assert tie["accuracy"] < single["accuracy"]


def test_simulated_jury_matches_closed_form(sim):
    _, _, table, expected = sim
    r, e = _row(table, "jury", "panel-3"), expected["jury"]
    for m in ("accuracy", "pf", "flip", "cost"):
        assert r[m] == pytest.approx(e[m], abs=0.02), m
    assert r["accuracy"] > _row(table, "single")["accuracy"]


def test_pairing_the_two_orders_is_a_need_the_strategies_declare():
    """A strategy declares that it pairs the two orders (``paired``, every built-in one):
    on judgments that are all list-wise its needs check refuses it in one line, wherever it
    runs (``apply_strategies`` too, not only ``run_mitigation``); one that declares it reads
    list-wise judgments (``paired=False``) runs on them."""
    j = simulate_judgments(
        {"x": SimulatedSettings(primacy=0.7)}, n_questions=12, candidates=3, seed=2
    )
    listwise = j.with_columns(mode=pl.lit("listwise"))
    assert all(s.paired for s in registry.strategies().values())
    one_line = "^no pairwise or score judgments to mitigate"
    with pytest.raises(ConfigError, match=one_line):
        registry.apply_strategies(listwise, ["single"])
    with pytest.raises(ConfigError, match=one_line):
        E.run_mitigation(listwise, strategies=["swap-tie"], replicates=10)
    single = registry.strategy("single").fn

    def read_as_pairs(df: pl.DataFrame) -> pl.DataFrame:  # list-wise rows read as pairs
        return single(df.with_columns(mode=pl.lit("pairwise")))

    reg = registry.register_strategy("listwise-single", read_as_pairs, paired=False)
    try:
        got = registry.apply_strategies(listwise, ["listwise-single"])
        want = registry.apply_strategies(j, ["single"])
        assert got.drop("strategy").equals(want.drop("strategy")) and not reg.paired
        table, _, _ = E.run_mitigation(
            listwise, strategies=["listwise-single"], replicates=10
        )
        assert table.get_column("strategy").unique().to_list() == ["listwise-single"]
    finally:
        registry.STRATEGIES.unregister("listwise-single")
