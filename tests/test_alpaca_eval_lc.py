"""AlpacaEval 2's published length-controlled win rate (``analysis/ranking/length_control_v1.py``,
``analysis/ranking/difficulty.py``): the instruction difficulty fitted across models by
AlpacaEval's joint L1 fit (checked against the optimality conditions of liblinear's
objective and against a planted difficulty), the v1 formula recomputed here from the shipped
weights' definition (``glm_winrate.predict_winrate``), the continuous preference as the win
rate, the weights read beside the logs into the normalised copy, and ``--lc-formula``."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.analysis.ranking.difficulty import _Design, _solve, instruction_difficulty
from voirdire.analysis.ranking.glm import LC_CS
from voirdire.analysis.ranking.length_control import baseline_comparisons
from voirdire.analysis.ranking.length_control_v1 import lc_board, length_controlled_v1
from voirdire.analysis.ranking.rank import rank_judgments
from voirdire.analysis.ranking.release_difficulty import board_difficulty
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.core import ConfigError

BASE = "base"
HEADER = (
    ",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\n"
)


def _world(n_inst=40, models=("m0", "m1", "m2", "m3", "m4", "m5"), seed=0):
    """Comparisons of each model with ``base`` on every instruction, the outcome a continuous
    preference drawn from a planted model ``σ(0.6 b_m + 0.8 d_i − 0.7 tanh(Δ/sd))``."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 1.5, n_inst)
    rows, feats = [], []
    for i in range(n_inst):
        lb = float(rng.integers(200, 2000))
        feats.append(("B", f"q{i}", BASE, lb))
        for k, m in enumerate(models):
            lm = float(rng.integers(200, 2000))
            feats.append(("B", f"q{i}", m, lm))
            eta = 0.6 * (k - 2.5) + 0.8 * d[i] - 0.7 * np.tanh((lb - lm) / 600)
            p = float(np.clip(expit(eta) + rng.normal(0, 0.05), 0.01, 0.99))
            first = rng.random() < 0.5
            rows.append(dict(benchmark="B", judge="j", strategy="single", view="pooled", question_id=f"q{i}",
                             a=m, b=BASE, win=float(p > 0.5), tie=0.0, p=p, first=first))  # fmt: skip
    comps = pl.DataFrame(rows)
    features = pl.DataFrame(
        feats, schema=["benchmark", "question_id", "model", "length"], orient="row"
    ).with_columns(headers=pl.lit(0.0), lists=pl.lit(0.0), bold=pl.lit(0.0))
    return comps, features, d


def _weights(models, ng, dd):
    lines = [f"{m},-1.0,{b},{a}" for m, a, b in zip(models, ng, dd)]
    return pl.DataFrame(
        {"baseline": BASE, "model": [*models, BASE], "length": -1.0,
         "difficulty": [*dd, 0.0], "not_gamed": [*ng, 0.0]}
    ), HEADER + "\n".join(lines) + f"\n{BASE},0.0,0.0,0.0\n"  # fmt: skip


def test_difficulty_is_the_l1_optimum_and_finds_the_planted_one():
    comps, feats, d = _world()
    rows = comps.join(
        feats.rename({"model": "a", "length": "len_m"}),
        on=["benchmark", "question_id", "a"],
    )
    rows = rows.join(
        feats.filter(pl.col("model") == BASE).select("question_id", len_b="length"),
        on="question_id",
    )
    rows = rows.select(model="a", cluster="question_id", y="p", len_m="len_m", len_b="len_b")  # fmt: skip
    got = instruction_difficulty(rows)
    assert got["cluster"].to_list() == [f"q{i}" for i in range(40)]
    assert got["difficulty"][0] == 0.0  # the first instruction is the reference
    # the planted difficulties, relative to the reference, come back (penalised: shrunk)
    r = np.corrcoef(got["difficulty"].to_numpy()[1:], (d - d[0])[1:])[0, 1]
    assert r > 0.9
    # optimality of liblinear's objective Σ|β| + C Σ ℓ at a fixed C: |∂ℓ| ≤ 1 where β = 0,
    # = −sign(β) elsewhere (KKT), recomputed here from the design
    m = rows["model"].to_numpy()
    mi = np.unique(m, return_inverse=True)[1]
    ii = np.array([int(q[1:]) for q in rows["cluster"]])
    dl = (rows["len_b"] - rows["len_m"]).to_numpy()
    sd = (
        pl.DataFrame({"m": m, "dl": dl})
        .with_columns(sd=pl.col("dl").std().over("m"))["sd"]
        .to_numpy()
    )
    des = _Design(mi, ii, np.tanh(dl / sd), rows["y"].to_numpy(), 6, 40)
    c = float(LC_CS[5])
    beta = _solve(des, np.ones(len(rows)), c, np.zeros(2 * 6 + 39), tol=1e-13)
    r_ = c * (expit(des.eta(beta)) - des.y)
    g = np.r_[
        np.bincount(mi, r_ * des.t, 6),
        np.bincount(mi, r_, 6),
        np.bincount(ii, r_, 40)[1:],
    ]
    zero = beta == 0
    assert np.all(np.abs(g[zero]) <= 1 + 1e-4)
    assert np.allclose(g[~zero], -np.sign(beta[~zero]), atol=1e-4)  # fmt: skip


def test_v1_is_the_published_formula_on_the_shipped_weights():
    comps, feats, _ = _world(n_inst=25)
    models = [
        f"m{k}" for k in range(5)
    ]  # m5 has no published weights: the minimal formula
    ng, dd = [-2.0, -1.0, 0.0, 0.5, 1.0], [0.9, 0.7, 1.1, 0.6, 0.8]
    w, _ = _weights(models, ng, dd)
    lc = length_controlled_v1(comps, feats, BASE, w, replicates=30)
    # one joint fit across the models of the board (no release: the audited models), the
    # first instruction the reference
    board = baseline_comparisons(comps, feats, BASE).sort("model", "question_id")
    diff = board_difficulty(board.with_columns(cluster="question_id"), BASE, "q0")
    assert diff["q0"] == 0.0 and len(diff) == 25
    assert set(lc["difficulty"].drop_nulls()) == {"audited"}
    by = {r["model"]: r for r in lc.iter_rows(named=True)}
    for m, a, b in zip(models, ng, dd):
        qs = comps.filter(pl.col("a") == m)["question_id"].to_list()
        want = np.mean(
            [expit(a + b * diff[q]) for q in qs]
        )  # predict_winrate, baseline 0
        assert by[m]["formula"] == "v1"
        assert by[m]["lc_win_rate"] == pytest.approx(want, abs=1e-12)
        assert by[m]["lc_lo"] <= by[m]["lc_win_rate"] <= by[m]["lc_hi"]
        # AlpacaEval's win rate: the mean continuous preference, not the letters' share
        assert by[m]["win_rate"] == pytest.approx(
            comps.filter(pl.col("a") == m)["p"].mean()
        )
    assert by["m5"]["formula"] == "minimal"
    # the minimal formula stays available by name; v1 without weights is one line
    assert set(lc_board(comps, feats, BASE, w, "minimal", replicates=5)["formula"]) == {
        "minimal"
    }
    with pytest.raises(
        ConfigError, match="no published weights for the baseline 'base'"
    ):
        lc_board(comps, feats, BASE, None, "v1", replicates=5)


def _judgments(comps):
    """Replayed one-order judgments of ``comps``: the letter from the preference, the
    preference as ``option_probs`` (A = the answer shown first)."""
    return comps.select(
        "benchmark", "judge", "question_id", candidate="a", reference="b",
        shown=pl.when("first").then(pl.concat_list("a", "b")).otherwise(pl.concat_list("b", "a")),
        chosen=pl.when(pl.col("p") > 0.5).then("a").otherwise("b"),
        option_probs=pl.when("first")
        .then(pl.concat_list(pl.struct(key=pl.lit("A"), value="p"), pl.struct(key=pl.lit("B"), value=1 - pl.col("p"))))
        .otherwise(pl.concat_list(pl.struct(key=pl.lit("A"), value=1 - pl.col("p")), pl.struct(key=pl.lit("B"), value="p"))),
    ).with_columns(
        task=pl.lit("t"), mode=pl.lit("pairwise"), option_mode=pl.lit(3, pl.Int32), repetition=pl.lit(1, pl.Int32),
        permutation=pl.lit(0, pl.Int32), perturbation=pl.lit("control"), tie=pl.lit(False), failed=pl.lit(False),
        extracted=pl.when(pl.col("chosen") == pl.col("shown").list.first()).then(pl.lit("A")).otherwise(pl.lit("B")),
    )  # fmt: skip


def test_rank_style_reads_the_weights_and_the_preference():
    comps, feats, _ = _world(n_inst=20, models=("m0", "m1", "m2"))
    models = ["m0", "m1", "m2"]
    w, _ = _weights(models, [-1.0] * 3, [0.8] * 3)
    j = _judgments(comps)
    r = rank_judgments(j, replicates=20, features=feats, style_replicates=10, lc_weights={"B": w},
                       anchor=BASE, strategies=[])  # fmt: skip
    lc = r.length.filter(
        (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    )
    assert set(lc["formula"]) == {"v1"} and lc.height == 3
    m0 = lc.filter(pl.col("model") == "m0").row(0, named=True)
    assert m0["win_rate"] == pytest.approx(
        comps.filter(pl.col("a") == "m0")["p"].mean()
    )
    plain = rank_judgments(j, replicates=20, features=feats, style_replicates=10, anchor=BASE,
                           strategies=[])  # fmt: skip
    assert set(plain.length["formula"]) == {"minimal"}


def test_the_weights_beside_the_logs_reach_the_normalised_copy(tmp_path):
    ann = "weighted_alpaca_eval_gpt4_turbo"
    f = tmp_path / f"repo/results/model-x/{ann}/annotations.json"
    write_alpaca_eval(f, "model-x", 12, seed=1)
    wdir = tmp_path / f"repo/src/alpaca_eval/metrics/weights/{ann}/length_controlled_v1"
    wdir.mkdir(parents=True)
    (wdir / "baseline_gpt4_1106_preview.csv").write_text(
        HEADER + "model-x,-1.5,0.8,0.25\ngpt4_1106_preview,0.0,0.0,0.0\n"
    )
    bench = AlpacaEval([f], data_dir=tmp_path / "copy")
    got = AlpacaEval.length_control_weights(bench.data_dir)
    assert got.sort("model").to_dicts() == [
        {"baseline": "gpt4_1106_preview", "model": "gpt4_1106_preview", "length": 0.0, "difficulty": 0.0, "not_gamed": 0.0},
        {"baseline": "gpt4_1106_preview", "model": "model-x", "length": -1.5, "difficulty": 0.8, "not_gamed": 0.25},
    ]  # fmt: skip
    # no weights beside the logs: none in the copy (the minimal formula is fitted)
    g = tmp_path / f"other/results/model-x/{ann}/annotations.json"
    write_alpaca_eval(g, "model-x", 12, seed=1)
    assert (
        AlpacaEval.length_control_weights(
            AlpacaEval([g], data_dir=tmp_path / "c2").data_dir
        )
        is None
    )
    # a malformed weights file is one line naming it
    (wdir / "baseline_gpt4_1106_preview.csv").write_text(
        HEADER + "model-x,-1.5,oops,0.25\n"
    )
    f.write_text(json.dumps(json.loads(f.read_text())[:11]))  # another copy
    with pytest.raises(
        ConfigError,
        match=r"baseline_gpt4_1106_preview\.csv: a weight is no finite number",
    ):
        AlpacaEval([f], data_dir=tmp_path / "c3")
