"""The mitigation evaluation's intervals and the inter-pass kappa's resample the design's own
cluster (the question), as PC, PF and ``rank`` do: on a log whose ``question_id`` is an item
(question × model) and whose questions differ in how consistent the judge is, the intervals
with the declared clusters are wider than the item-level ones and equal, within Monte Carlo
error, a question-level bootstrap written here in plain numpy and statsmodels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from tests.test_pass_kappa import CATS, _rows
from voirdire.analysis.mitigation.evaluation import evaluate
from voirdire.analysis.mitigation.pass_kappa import pass_kappa
from voirdire.analysis.mitigation.registry import apply_strategies

QUESTIONS, MODELS, R = 40, 10, 4000


def _design():
    """Every question holds one item per model; on half the questions the second pass
    repeats the first (keep 0.95), on the others it draws anew (keep 0.1): the items of one
    question are alike, so the question, not the item, is the unit."""
    rng = np.random.default_rng(3)
    pairs, tables = [], np.zeros((QUESTIONS, 3, 3))
    for q in range(QUESTIONS):
        keep = 0.95 if q % 2 else 0.1
        for m in range(MODELS):
            v1 = CATS[rng.choice(3, p=(0.45, 0.2, 0.35))]
            v2 = v1 if rng.random() < keep else CATS[rng.choice(3, p=(0.45, 0.2, 0.35))]
            pairs.append((f"q{q:02d}-m{m}", f"c{m}", v1, v2))
            tables[q, CATS.index(v1), CATS.index(v2)] += 1
    rows = _rows(pairs)
    clusters = pl.DataFrame({
        "benchmark": "B", "question_id": [p[0] for p in pairs], "cluster": [p[0][:3] for p in pairs],
    })  # fmt: skip
    return rows, clusters, tables


def _explicit(tables, stat):
    """A question-level percentile bootstrap (95 %): questions drawn with replacement."""
    rng = np.random.default_rng(11)
    idx = rng.integers(0, QUESTIONS, (R, QUESTIONS))
    boot = np.array([stat(tables[i].sum(0)) for i in idx])
    return np.quantile(boot, [0.025, 0.975])


def _kappa(t):
    return cohens_kappa(t).kappa


@pytest.mark.slow
def test_pass_kappa_resamples_questions():
    rows, clusters, tables = _design()
    items = pass_kappa(rows, replicates=R, seed=1).row(0, named=True)
    questions = pass_kappa(rows, replicates=R, seed=1, clusters=clusters).row(
        0, named=True
    )
    assert np.isclose(questions["pass_kappa"], _kappa(tables.sum(0)))
    w_items = items["pass_kappa_hi"] - items["pass_kappa_lo"]
    w_q = questions["pass_kappa_hi"] - questions["pass_kappa_lo"]
    assert w_q > 1.8 * w_items, (w_q, w_items)
    lo, hi = _explicit(tables, _kappa)
    # each end's Monte Carlo error at 4,000 replicates is about 0.005: 0.025 is 5 of them
    assert abs(questions["pass_kappa_lo"] - lo) < 0.025, (questions, lo)
    assert abs(questions["pass_kappa_hi"] - hi) < 0.025, (questions, hi)


@pytest.mark.slow
def test_mitigation_evaluation_resamples_questions():
    rows, clusters, tables = _design()
    verdicts = apply_strategies(rows, ["single"])
    items = evaluate(verdicts, replicates=R, seed=1).row(0, named=True)
    questions = evaluate(verdicts, replicates=R, seed=1, clusters=clusters).row(
        0, named=True
    )
    # PC: the share of pairs with the same verdict in both orders
    pc = lambda t: np.trace(t) / t.sum()  # noqa: E731
    assert np.isclose(questions["pc"], pc(tables.sum(0)))
    for m in ("pc", "pass_kappa"):
        w_items = items[f"{m}_hi"] - items[f"{m}_lo"]
        w_q = questions[f"{m}_hi"] - questions[f"{m}_lo"]
        assert w_q > 1.8 * w_items, (m, w_q, w_items)
    for m, stat in (("pc", pc), ("pass_kappa", _kappa)):
        lo, hi = _explicit(tables, stat)
        assert abs(questions[f"{m}_lo"] - lo) < 0.025, (m, questions[f"{m}_lo"], lo)
        assert abs(questions[f"{m}_hi"] - hi) < 0.025, (m, questions[f"{m}_hi"], hi)
