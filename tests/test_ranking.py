"""Leaderboards (analysis/ranking): fits against independent ones, interval coverage by
simulation, order views and swap-tie, flips, bad input (docs/ranking.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy.optimize import minimize
from scipy.stats import kendalltau, spearmanr

from tests.ranking_sim import judgments, round_robin
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.bt import SCALE, Method, fit_bt, fit_davidson
from voirdire.analysis.ranking.flips import rank_flips, spearman, tau_b
from voirdire.analysis.ranking.order_views import order_views
from voirdire.analysis.ranking.registry import RANKINGS
from voirdire.core import ConfigError


def _tables(rng, k=7):
    w = rng.integers(0, 9, (k, k)).astype(float)
    np.fill_diagonal(w, 0)
    t = rng.integers(0, 3, (k, k)).astype(float)
    t = np.triu(t, 1) + np.triu(t, 1).T
    return w, t


def test_bt_matches_statsmodels_logit_on_the_expanded_design():
    w, t = _tables(np.random.default_rng(3))
    k = w.shape[0]
    xs, ys = [], []
    for i in range(k):  # each comparison twice: a win is two 1s, a tie one 1 and one 0
        for j in range(k):
            x = np.zeros(k)
            x[i], x[j] = 1.0, -1.0
            ties = int(t[i, j]) if i < j else 0
            xs += [x] * (2 * int(w[i, j]) + 2 * ties)
            ys += [1] * (2 * int(w[i, j])) + [1, 0] * ties
    xs, ys = np.array(xs), np.array(ys)
    ref = sm.Logit(ys, xs[:, 1:]).fit(disp=0, tol=1e-12, maxiter=200).params
    assert np.abs(fit_bt(w, t, anchor=0)[1:] - ref).max() < 1e-6


def test_davidson_matches_a_direct_maximisation():
    w, t = _tables(np.random.default_rng(4), k=5)
    k = w.shape[0]

    def nll(z):
        th, lnu, s = np.r_[0.0, z[: k - 1]], z[-1], 0.0
        for i in range(k):
            for j in range(k):
                if i != j:
                    d = np.logaddexp(
                        np.logaddexp(th[i], th[j]), lnu + (th[i] + th[j]) / 2
                    )
                    s += w[i, j] * (th[i] - d) + (
                        t[i, j] * (lnu + (th[i] + th[j]) / 2 - d) if i < j else 0.0
                    )
        return -s

    ref = minimize(
        nll,
        np.zeros(k),
        method="Nelder-Mead",
        options=dict(xatol=1e-10, fatol=1e-13, maxiter=40000, maxfev=40000),
    ).x
    th, nu = fit_davidson(w, t, anchor=0, return_nu=True)
    assert np.abs(th[1:] - ref[:-1]).max() < 1e-5 and abs(np.log(nu) - ref[-1]) < 1e-5


def test_intervals_cover_the_true_ratings_in_200_simulated_tables():
    rng = np.random.default_rng(7)
    theta = np.linspace(-1.0, 1.0, 6)
    comps = pl.concat(
        [round_robin(theta, 40, rng, strategy=f"t{s:03d}") for s in range(200)]
    )
    lb = fit_boards(comps, anchor="m00", replicates=200).table.filter(
        pl.col("model") != "m00"
    )
    true = pl.DataFrame(
        {
            "model": [f"m{i:02d}" for i in range(6)],
            "true": 1000 + SCALE * (theta - theta[0]),
        }
    )
    cov = lb.join(true, on="model").with_columns(
        inside=(pl.col("lo") <= pl.col("true")) & (pl.col("true") <= pl.col("hi"))
    )
    per_model = cov.group_by("model").agg(pl.col("inside").mean())
    assert per_model.get_column("inside").min() >= 0.90, per_model


def _primacy_judge():
    """Strengths 0..4: the better answer is picked when the gap is 2 or more, else the one
    shown first; every pair has the weaker model as candidate."""
    s = {f"m{i}": i for i in range(5)}
    pairs = [(f"m{i}", f"m{j}") for i in range(5) for j in range(i + 1, 5)]
    return judgments(
        pairs,
        8,
        lambda sh: "A" if abs(s[sh[0]] - s[sh[1]]) < 2 or s[sh[0]] > s[sh[1]] else "B",
    )


def test_primacy_orders_disagree_and_swap_tie_restores_the_true_order():
    boards = fit_boards(order_views(_primacy_judge(), ["swap-tie"]), replicates=50)
    lb = boards.table

    def order(strategy, view):
        b = lb.filter((pl.col("strategy") == strategy) & (pl.col("view") == view)).sort(
            "rating", descending=True
        )
        return b.get_column("model").to_list()

    truth = ["m4", "m3", "m2", "m1", "m0"]
    assert order("single", "first") != order("single", "swapped")
    assert order("swap-tie", "combined") == truth
    flips = rank_flips(boards).filter(
        (pl.col("view") == "first") & (pl.col("view_b") == "swapped")
    )
    # the orders disagree (τ < 1) but reverse no pair: a model tied with another in one board
    # (equal records) is no flip, however the solver rounds their θ
    assert flips.item(0, "kendall_tau") < 1.0 and flips.item(0, "flips") == 0


def test_vectorised_tau_and_rho_equal_scipy():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(20, 9)), rng.normal(size=(20, 9))
    y[:, 3] = y[:, 4]  # a tie
    assert np.allclose(tau_b(x, y), [kendalltau(a, b).statistic for a, b in zip(x, y)])
    assert np.allclose(
        spearman(x, y), [spearmanr(a, b).statistic for a, b in zip(x, y)]
    )


def test_bad_input_is_one_line_naming_it():
    rng = np.random.default_rng(0)
    one = round_robin(np.zeros(2), 3, rng).with_columns(b=pl.col("a"))
    with pytest.raises(ConfigError, match="at least two models"):
        fit_boards(one, replicates=5)
    # a disconnected board is ranked piece by piece (tests/test_ranking_ranks.py)
    with pytest.raises(ConfigError, match="anchor 'nobody' is not a candidate"):
        fit_boards(round_robin(np.zeros(3), 3, rng), anchor="nobody", replicates=5)
    with pytest.raises(ConfigError, match="unknown ranking method"):
        fit_boards(round_robin(np.zeros(3), 3, rng), method="elo-ish", replicates=5)


def test_a_ranking_method_is_one_decorator():
    m = RANKINGS.register(Method("bt-copy", lambda w, t: fit_bt(w, t)))
    try:
        comps = round_robin(np.array([0.0, 0.5, 1.0]), 10, np.random.default_rng(2))
        a = fit_boards(comps, method="bt-copy", replicates=20).table
        b = fit_boards(comps, method="bt", replicates=20).table
        assert a.equals(b) and RANKINGS.get("bt-copy") is m
    finally:
        RANKINGS.unregister("bt-copy")


def test_length_control_brings_a_short_strong_model_back_up():
    from tests.ranking_sim import length_loving
    from voirdire.analysis.ranking.length_control import length_controlled
    from voirdire.analysis.ranking.style import style_controlled

    theta = np.array([0.0, 0.2, 0.4, 0.6, 1.0])  # m04 the strongest, and the shortest
    comps, feats = length_loving(
        theta,
        np.array([600.0, 700.0, 800.0, 900.0, 200.0]),
        80,
        4.0,
        np.random.default_rng(0),
    )
    raw = fit_boards(comps, anchor="m00", replicates=50).table.sort(
        "rating", descending=True
    )
    assert (
        raw.get_column("model").to_list()[-1] == "m04"
    )  # the length-loving judge puts it last
    sc = style_controlled(comps, feats, names=("length",), anchor="m00", replicates=50)
    models = sc.filter(~pl.col("term").str.starts_with("style:")).sort(
        "rating", descending=True
    )
    assert models.get_column("term").to_list()[0] == "m04"
    gamma = sc.filter(pl.col("term") == "style:length")
    assert gamma.item(0, "lo") > 0  # the preference for length is found
    lc = length_controlled(comps, feats, "m00", replicates=50).filter(
        pl.col("model") == "m04"
    )
    assert lc.item(0, "win_rate") < 0.5 < lc.item(0, "lc_win_rate")
    assert (
        lc.item(0, "lc_lo") <= float(1 / (1 + np.exp(-1.0))) <= lc.item(0, "lc_hi")
    )  # the true win rate at equal length


def test_gold_board_from_gold_labels_and_files_written(tmp_path):
    from voirdire.analysis.ranking.gold import read_gold
    from voirdire.analysis.ranking.rank import rank_judgments
    from voirdire.analysis.report.leaderboard import view_title
    from voirdire.analysis.report.ranking import write_ranking

    gap = (
        pl.col("reference").str.slice(1).cast(pl.Int64)
        - pl.col("candidate").str.slice(1).cast(pl.Int64)
    ).abs()
    j = _primacy_judge().with_columns(  # gold: a tie between neighbours, else the stronger model
        gold=pl.when(gap == 1)
        .then(pl.lit("tie"))
        .otherwise(pl.max_horizontal(pl.col("candidate"), pl.col("reference")))
    )
    r = rank_judgments(j, strategies=["swap-tie"], replicates=30)
    gold = r.leaderboard.filter(pl.col("judge") == "gold").sort(
        "rating", descending=True
    )
    assert gold.get_column("model").to_list() == ["m4", "m3", "m2", "m1", "m0"]
    assert set(gold.get_column("strategy")) == {"gold"} and set(
        gold.get_column("view")
    ) == {"gold"}
    assert "people" not in set(r.leaderboard["judge"]) | set(r.flips["judge_b"])
    assert view_title("gold", "gold", "gold") == "gold board"
    vs = r.flips.filter(
        (pl.col("judge_b") == "gold") & (pl.col("strategy") == "swap-tie")
    )
    assert vs.item(0, "kendall_tau") == pytest.approx(1.0) and vs.item(0, "flips") == 0
    s = r.summary().filter(pl.col("strategy") == "single")
    # pooled, a gap of one is a win each way: the gold tie; the same board as the gold one
    assert s.item(0, "order_tau") < 1.0 and s.item(0, "gold_tau") == pytest.approx(1.0)
    paths = write_ranking(r, tmp_path)
    lb = pl.read_csv(paths["leaderboard"])
    assert lb.columns[:12] == [
        "benchmark",
        "view",
        "judge",
        "strategy",
        "model",
        "rating",
        "lo",
        "hi",
        "rank",
        "rank_lo",
        "rank_hi",
        "n",
    ]
    assert pl.read_csv(paths["rank_flips"]).height == r.flips.height
    # an older rank named the gold board ``people``: it reads back as ``gold``
    for name in ("leaderboard", "rank_flips"):
        new = pl.read_csv(paths[name])
        named = [c for c in ("judge", "view", "judge_b", "view_b") if c in new.columns]
        old = new.with_columns(pl.col(c).replace("gold", "people") for c in named)
        assert (
            not old.equals(new)
            and read_gold(old).equals(new)
            and read_gold(new).equals(new)
        )
    assert (
        paths["figure:sim/sim"].stat().st_size > 0
        and "Leaderboards" in paths["html"].read_text()
    )


def test_cli_rank_bad_input_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from voirdire.cli import app

    res = CliRunner().invoke(app, ["rank", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1


def test_text_features_count_length_and_markdown():
    from voirdire.analysis.ranking.style import text_features

    # "2) four" is no list item in FastChat's pattern (digits and a dot)
    text = "# Title\nSome **bold** and __more__.\n\n- one\n* two\n1. three\n2) four\nnot-a-list\n## Sub"
    assert text_features(text) == {
        "length": float(len(text)),
        "headers": 2.0,
        "lists": 3.0,
        "bold": 2.0,
    }


def test_a_benchmark_of_anonymous_answers_has_no_leaderboard():
    from voirdire.analysis.ranking.rank import rank_judgments
    from voirdire.benchmarks.registry import BENCHMARKS

    anonymous = next(
        c.name for c in BENCHMARKS.items().values() if not c.named_models
    )  # output_1 / output_2 pairs
    with pytest.raises(ConfigError, match="anonymous answers, not named models"):
        rank_judgments(
            _primacy_judge().with_columns(benchmark=pl.lit(anonymous)), replicates=5
        )


def test_a_prior_keeps_an_undefeated_model_finite():
    comps = round_robin(np.array([0.0, 0.3, 0.6]), 6, np.random.default_rng(5))
    m00_wins = (
        pl.when(pl.col("a") == "m00")
        .then(1.0)
        .when(pl.col("b") == "m00")
        .then(0.0)
        .otherwise(pl.col("win"))
    )
    comps = comps.with_columns(win=m00_wins)
    plain = fit_boards(comps, anchor="m01", replicates=20).table.filter(
        pl.col("model") == "m00"
    )
    assert plain.item(0, "win_rate") > 1 - 1e-9  # no finite maximum: at the bound
    smooth = fit_boards(comps, anchor="m01", prior=1.0, replicates=20).table.filter(
        pl.col("model") == "m00"
    )
    w = smooth.item(0, "win_rate")
    assert 0.5 < w < 1 - 1e-6 and smooth.item(0, "hi") < 1000 + SCALE * 10


def test_rank_refuses_an_output_folder_that_is_not_ours(tmp_path):
    from typer.testing import CliRunner

    from voirdire.cli import app

    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("mine")
    res = CliRunner().invoke(
        app, ["rank", str(tmp_path / "nowhere"), "--out", str(foreign)]
    )
    assert (
        res.exit_code == 2 and "chapter1.tex" in res.output
    )  # (the console wraps the one line)
    assert (foreign / "chapter1.tex").read_text() == "mine" and not (
        foreign / "metrics"
    ).exists()
