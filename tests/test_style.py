"""Style control and the length-controlled win rate against their sources, computed independently.

- Markdown counts skip fenced code (FastChat / Arena-Hard-Auto ``add_markdown_info.py``).
- The covariates are FastChat's ``(a − b)/(a + b + 1)``, scaled by the population sd (centred on
  request), checked by hand and through an independent statsmodels fit of the same model.
- The LC win rate is AlpacaEval's ``fit_LogisticRegressionCV``: L1 on every coefficient, C
  chosen from ``logspace(-4, 4, 10)`` by five group folds; the expected value comes from a
  direct scipy optimisation of liblinear's objective in this file.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize

CODE_ANSWER = """# Plan

Here is the class:

```python
# a comment, not a header
class Thing:
    def __init__(self):  # __init__ is not bold
        self.x = `1`  # a backtick inside the block
- not a list item
```

- one real item
**one real bold span**

```
# an unclosed block at the end (a truncated answer)
__main__
- no item
"""


def test_markdown_inside_code_fences_is_not_counted():
    from voirdire.analysis.ranking.style import text_features

    f = text_features(CODE_ANSWER)
    assert f == {
        "length": float(len(CODE_ANSWER)),
        "headers": 1.0,
        "lists": 1.0,
        "bold": 1.0,
    }
    # outside fences the source's patterns still count: 1–6 '#', ordered lists with '.', both bolds
    prose = "## a\n####### not\n1. x\n2) not\n* y\n__b__ and **c**\n"
    assert text_features(prose) == {
        "length": float(len(prose)),
        "headers": 1.0,
        "lists": 2.0,
        "bold": 2.0,
    }


def test_style_differences_by_hand():
    from voirdire.analysis.ranking.style import style_differences

    fa = np.array([[3.0, 0.0], [0.0, 2.0], [1.0, 0.0], [5.0, 1.0]])
    fb = np.array([[1.0, 0.0], [0.0, 1.0], [4.0, 0.0], [5.0, 3.0]])
    for col in range(2):
        d = [
            (a - b) / (a + b + 1) for a, b in zip(fa[:, col], fb[:, col])
        ]  # the +1 (FastChat add_one)
        m, sd = statistics.fmean(d), statistics.pstdev(d)
        assert style_differences(fa, fb, centre=True)[:, col] == pytest.approx(
            [(v - m) / sd for v in d], abs=1e-12
        )
        assert style_differences(fa, fb)[:, col] == pytest.approx(
            [v / sd for v in d], abs=1e-12
        )
    # a feature that never varies is a column of 0, not NaN
    assert np.all(style_differences(np.ones((3, 1)), np.ones((3, 1))) == 0.0)


def test_style_controlled_equals_an_independent_glm_with_plus_one():
    import statsmodels.api as sm

    from voirdire.analysis.ranking.style import style_controlled

    rng = np.random.default_rng(3)
    models, questions = ["m0", "m1", "m2"], [f"q{i:02d}" for i in range(40)]
    feats = pl.DataFrame(
        [
            ("b", q, m, float(rng.integers(0, 6)), float(rng.integers(0, 3)))
            for q in questions
            for m in models
        ],
        schema=["benchmark", "question_id", "model", "length", "bold"],
        orient="row",
    )
    val = {(q, m): (ln, bo) for _, q, m, ln, bo in feats.iter_rows()}
    rows = []
    for q in questions:
        for i, j in [(0, 1), (0, 2), (1, 2)]:
            a, b = models[i], models[j]
            x = 0.3 * (j - i) + 0.8 * (val[q, a][0] - val[q, b][0]) / (
                val[q, a][0] + val[q, b][0] + 1
            )
            rows.append(
                (
                    "b",
                    "J",
                    "single",
                    "pooled",
                    q,
                    a,
                    b,
                    float(rng.random() < 1 / (1 + math.exp(-x))),
                    0.0,
                )
            )
    comps = pl.DataFrame(
        rows,
        schema=[
            "benchmark",
            "judge",
            "strategy",
            "view",
            "question_id",
            "a",
            "b",
            "win",
            "tie",
        ],
        orient="row",
    )
    sc = style_controlled(
        comps, feats, names=("length", "bold"), anchor="m0", replicates=2
    )
    # the same model by hand: dummies for m1, m2 (m0 the anchor) and the normalised differences
    design, y = [], []
    for _, _, _, _, q, a, b, win, _ in rows:
        da, db = val[q, a], val[q, b]
        dummies = [(a == m) - (b == m) for m in ("m1", "m2")]
        design.append(
            [*dummies, *((da[k] - db[k]) / (da[k] + db[k] + 1) for k in range(2))]
        )
        y.append(win)
    design = np.array(design, dtype=float)
    design[:, 2:] /= design[:, 2:].std(
        axis=0
    )  # scaled, not centred (voirdire's default)
    fit = sm.GLM(np.array(y), design, family=sm.families.Binomial()).fit(tol=1e-12)
    scale = 400 / math.log(10)
    got = dict(zip(sc.get_column("term"), sc.get_column("rating")))
    assert got["m1"] - 1000 == pytest.approx(scale * fit.params[0], abs=1e-5)
    assert got["m2"] - 1000 == pytest.approx(scale * fit.params[1], abs=1e-5)
    assert got["style:length"] == pytest.approx(fit.params[2], abs=1e-7)
    assert got["style:bold"] == pytest.approx(fit.params[3], abs=1e-7)


def _liblinear_l1(x, y, w, c):
    """argmin Σ|β| + C Σ w [y softplus(−xβ) + (1−y) softplus(xβ)], by L-BFGS-B on β = u − v, u, v ≥ 0."""
    p = x.shape[1]

    def f(uv):
        s = x @ (uv[:p] - uv[p:])
        loss = np.logaddexp(0, -s) * y + np.logaddexp(0, s) * (1 - y)
        return uv.sum() + c * (w * loss).sum()

    def grad(uv):
        s = x @ (uv[:p] - uv[p:])
        g = c * ((w * (1 / (1 + np.exp(-s)) - y)) @ x)
        return np.r_[1 + g, 1 - g]

    res = minimize(f, np.zeros(2 * p), jac=grad, bounds=[(0, None)] * (2 * p), method="L-BFGS-B",
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000})  # fmt: skip
    return res.x[:p] - res.x[p:]


def test_lc_win_rate_is_alpacaevals_cross_validated_l1_fit():
    from voirdire.analysis.ranking.length_control import length_controlled

    rng = np.random.default_rng(11)
    nq = 30
    questions = [f"q{i:02d}" for i in range(nq)]
    len_base = rng.integers(200, 800, nq).astype(float)
    len_m = len_base * np.exp(rng.normal(0.3, 0.5, nq))
    feats = pl.DataFrame(
        {
            "benchmark": ["b"] * (2 * nq),
            "question_id": questions * 2,
            "model": ["base"] * nq + ["m"] * nq,
            "length": np.r_[len_base, len_m],
        }
    )
    rows, y = [], []
    for i, q in enumerate(
        questions
    ):  # both orders; the model is 'a' in the rows (ties: half)
        pwin = 1 / (
            1 + math.exp(-(0.2 + 1.5 * math.tanh((len_m[i] - len_base[i]) / 300)))
        )
        for _ in range(2):
            u = rng.random()
            win, tie = (
                (1.0, 0.0)
                if u < pwin - 0.05
                else ((0.0, 1.0) if u < pwin + 0.05 else (0.0, 0.0))
            )
            rows.append(("b", "J", "single", "pooled", q, "m", "base", win, tie))
            y.append(win + 0.5 * tie)
    comps = pl.DataFrame(
        rows,
        schema=[
            "benchmark",
            "judge",
            "strategy",
            "view",
            "question_id",
            "a",
            "b",
            "win",
            "tie",
        ],
        orient="row",
    )
    lc = length_controlled(comps, feats, "base", replicates=20)

    # AlpacaEval by hand: std_delta_len = (len_baseline − len_model) / pandas std; formula
    # "np.tanh(std_delta_len) + not_gamed_baseline - 1" (no free intercept: all of β penalised)
    delta = [len_base[i] - len_m[i] for i in range(nq) for _ in range(2)]
    sd = statistics.stdev(delta)
    x = np.array([[1.0, math.tanh(v / sd)] for v in delta])
    y = np.array(y)
    fold = np.array(
        [i % 5 for i in range(nq) for _ in range(2)]
    )  # GroupKFold: equal groups, in turn
    cs = [10.0**e for e in np.linspace(-4, 4, 10)]
    scores = []
    for c in cs:
        total = 0.0
        for f in range(5):
            beta = _liblinear_l1(
                x[fold != f], y[fold != f], np.ones((fold != f).sum()), c
            )
            q = np.clip(1 / (1 + np.exp(-x[fold == f] @ beta)), 1e-15, 1 - 1e-15)
            yt = y[fold == f]
            total += -np.mean(yt * np.log(q) + (1 - yt) * np.log(1 - q))
        scores.append(total)
    best = cs[int(np.argmin(scores))]
    beta = _liblinear_l1(x, y, np.ones(y.size), best)
    expected = 1 / (1 + math.exp(-beta[0]))
    assert 1e-4 < best < 1e4  # the penalty is chosen, neither off nor the largest
    assert lc.item(0, "lc_win_rate") == pytest.approx(expected, abs=1e-6)
    assert lc.item(0, "lc_lo") <= lc.item(0, "lc_win_rate") <= lc.item(0, "lc_hi")
    assert lc.item(0, "win_rate") == pytest.approx(y.mean())


def test_lc_win_rate_needs_five_questions():
    from voirdire.analysis.ranking.length_control import length_controlled

    feats = pl.DataFrame(
        {"benchmark": ["b"] * 8, "question_id": ["q0", "q1", "q2", "q3"] * 2, "model": ["base"] * 4 + ["m"] * 4,
         "length": [100.0, 200.0, 300.0, 400.0, 150.0, 150.0, 150.0, 150.0]}
    )  # fmt: skip
    comps = pl.DataFrame(
        [
            ("b", "J", "single", "pooled", f"q{i}", "m", "base", float(i % 2), 0.0)
            for i in range(4)
        ],
        schema=[
            "benchmark",
            "judge",
            "strategy",
            "view",
            "question_id",
            "a",
            "b",
            "win",
            "tie",
        ],
        orient="row",
    )
    lc = length_controlled(comps, feats, "base", replicates=5)
    assert (
        lc.item(0, "n") == 4
        and lc.item(0, "lc_win_rate") is None
        and lc.item(0, "win_rate") == 0.5
    )


def test_lc_rate_held_at_half_by_the_penalty_has_no_interval_unless_cv_each():
    from voirdire.analysis.ranking.length_control import length_controlled

    rng = np.random.default_rng(5)
    nq = 20
    qs = [f"q{i:02d}" for i in range(nq)]
    feats = pl.DataFrame(
        {"benchmark": ["b"] * (2 * nq), "question_id": qs * 2, "model": ["base"] * nq + ["m"] * nq,
         "length": np.r_[np.full(nq, 500.0), rng.integers(300, 700, nq).astype(float)]}
    )  # fmt: skip
    # a coin-flip judge: held-out questions are predicted best at 50 %, so CV picks C = 1e-4 and β = 0
    wins = [0.0, 1.0] * nq
    comps = pl.DataFrame(
        [("b", "J", "single", "pooled", q, "m", "base", wins[2 * i + k], 0.0) for i, q in enumerate(qs) for k in range(2)],
        schema=["benchmark", "judge", "strategy", "view", "question_id", "a", "b", "win", "tie"],
        orient="row",
    )  # fmt: skip
    lc = length_controlled(comps, feats, "base", replicates=10)
    assert (
        lc.item(0, "lc_win_rate") == 0.5
        and lc.item(0, "lc_lo") is None
        and lc.item(0, "lc_hi") is None
    )
    each = length_controlled(comps, feats, "base", replicates=10, cv_each=True)
    assert each.item(0, "lc_win_rate") == 0.5 and each.item(
        0, "lc_lo"
    ) <= 0.5 <= each.item(0, "lc_hi")
