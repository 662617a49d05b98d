"""AlpacaEval 2's length-controlled win rate against one baseline (``docs/ranking.md``).

Source: Dubois et al. 2024, ``alpaca_eval/metrics/glm_winrate.py``; the formula, the fit
and the differences from AlpacaEval are described in :mod:`voirdire.analysis.ranking.style`
(which re-exports :func:`length_controlled`). Ties count as half a win; the intervals are
the cluster bootstrap's over questions (:mod:`voirdire.analysis.ranking.refits`).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

from voirdire.analysis.ranking.boards import BOARD_KEYS
from voirdire.analysis.ranking.glm import LC_FOLDS, cv_l1_logit, group_folds, l1_logit
from voirdire.analysis.ranking.refits import bootstrap_fit, percentile_interval
from voirdire.core import ConfigError

__all__ = ["LC_SCHEMA", "baseline_comparisons", "length_controlled"]

#: columns of :func:`length_controlled` (and of the v1 formula's table)
LC_SCHEMA = (
    dict.fromkeys([*BOARD_KEYS, "model"], pl.String)
    | {"n": pl.Int64}
    | dict.fromkeys(["win_rate", "lc_win_rate", "lc_lo", "lc_hi"], pl.Float64)
    | {"formula": pl.String, "difficulty": pl.String}
)


def _lc_fit(
    g: pl.DataFrame,
    y: np.ndarray,
    qs: pl.DataFrame,
    replicates: int,
    seed: int,
    clusters,
    cv_each: bool,
):
    """(LC win rate of the estimate, (B,) of the replicates or None) for one model's
    comparisons with the baseline (``g``: ``len_m``, ``len_b``, ``question_id``); None with
    fewer than :data:`~voirdire.analysis.ranking.glm.LC_FOLDS` questions (no cross-validation).
    Replicates refit at the estimate's C unless ``cv_each``; then a β_0 the penalty holds at
    0 has no interval (every replicate would repeat 50 %)."""
    if g.get_column("question_id").n_unique() < LC_FOLDS:
        return None
    d = (g.get_column("len_b") - g.get_column("len_m")).fill_null(0.0).to_numpy()
    sd = (
        d.std(ddof=1) if d.size > 1 else 0.0
    )  # pandas' std, as AlpacaEval's std_delta_len
    x = np.c_[np.ones(d.size), np.tanh(d / sd) if sd > 0 else np.zeros(d.size)]
    folds = group_folds(g.get_column("question_id").to_list())
    _, c = cv_l1_logit(
        x, y, np.ones((1, y.size)), folds
    )  # C chosen on the data, as AlpacaEval
    if cv_each:
        fit = lambda w, x=x, y=y: cv_l1_logit(x, y, w, folds)[0]  # noqa: E731
    else:
        fit = lambda w, x=x, y=y, c=c[0]: l1_logit(x, y, w, c)  # noqa: E731
    est, boot = bootstrap_fit(g, qs, fit, replicates, seed, clusters)
    return expit(est[0]), None if (est[0] == 0 and not cv_each) else expit(boot[:, 0])


def baseline_comparisons(
    comps: pl.DataFrame, features: pl.DataFrame, baseline: str
) -> pl.DataFrame:
    """The comparisons of ``comps`` with ``baseline`` on exactly one side, each with
    ``model`` (the other side), ``y`` (float in [0, 1]: the probability that the model won
    where ``comps`` has a ``p`` column holding one — the candidate's continuous preference,
    e.g. AlpacaEval's weighted annotator —, else its win share, a tie half), ``len_m`` and
    ``len_b`` (the model's and the baseline's answer lengths, ``features``' ``length``).

    Raises:
        ConfigError: ``baseline`` is compared with no model."""
    f = features.select("benchmark", "question_id", "model", "length")
    m = pl.when(pl.col("a") == baseline).then(pl.col("b")).otherwise(pl.col("a"))
    share = pl.col("win") + 0.5 * pl.col("tie")
    if "p" in comps.columns:
        share = pl.coalesce(pl.col("p"), share)
    c = comps.filter(
        (pl.col("a") == baseline) ^ (pl.col("b") == baseline)
    ).with_columns(
        model=m, y=pl.when(pl.col("a") == baseline).then(1.0 - share).otherwise(share)
    )
    if c.height == 0:
        raise ConfigError(
            f"length control: baseline {baseline!r} is compared with no model"
        )
    c = c.join(
        f.rename({"length": "len_m"}),
        on=["benchmark", "question_id", "model"],
        how="left",
    )
    return c.join(
        f.filter(pl.col("model") == baseline).select("benchmark", "question_id", len_b="length"),
        on=["benchmark", "question_id"], how="left",
    )  # fmt: skip


def length_controlled(
    comps: pl.DataFrame,
    features: pl.DataFrame,
    baseline: str,
    *,
    replicates: int = 200,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
    cv_each: bool = False,
) -> pl.DataFrame:
    """AlpacaEval 2's length-controlled win rate of every model against ``baseline``, per board
    (``clusters``: what the bootstrap draws, as :func:`~voirdire.analysis.ranking.boards.fit_boards`'s).

    ``cv_each``: redo the cross-validation in every bootstrap replicate (the full estimator's
    interval; 50 fits more a replicate). Default: replicates refit at the estimate's C, and
    an LC rate the L1 penalty holds at exactly 50 % gets no interval.

    The outcome of a comparison is the model's probability of winning where ``comps`` has a
    ``p`` column holding one (:func:`baseline_comparisons`; AlpacaEval's own win rate is the
    mean of its annotator's continuous preference), else its win share (a tie half).

    Returns:
        :data:`LC_SCHEMA`: ``benchmark``, ``judge``, ``strategy``, ``view``, ``model`` (str),
        ``n`` (int: comparisons with the baseline), ``win_rate`` (raw, ties half),
        ``lc_win_rate``, ``lc_lo``, ``lc_hi`` (float, 0–1; all three null for a model with
        fewer than :data:`~voirdire.analysis.ranking.glm.LC_FOLDS` questions: no
        cross-validation), ``formula`` (``"minimal"``), ``difficulty`` (null: v1's
        instruction difficulty source, :mod:`~voirdire.analysis.ranking.length_control_v1`).

    Raises:
        ConfigError: ``baseline`` is compared with no model.
    """
    c = baseline_comparisons(comps, features, baseline)
    rows = []
    for key, g in c.sort([*BOARD_KEYS, "model", "question_id"]).group_by(
        [*BOARD_KEYS, "model"], maintain_order=True
    ):
        y = g.get_column("y").to_numpy()
        qs = (
            comps.filter(pl.col("benchmark") == key[0])
            .select("benchmark", "question_id")
            .unique()
        )
        lc = _lc_fit(g, y, qs, replicates, seed, clusters, cv_each)
        ci = [float(lc[0]), None, None] if lc else [None] * 3
        if lc and lc[1] is not None:
            ci[1:] = [float(v) for v in percentile_interval(lc[1], level)]
        rows.append((*key, g.height, float(y.mean()), *ci, "minimal", None))
    return pl.DataFrame(rows, schema=LC_SCHEMA, orient="row")
