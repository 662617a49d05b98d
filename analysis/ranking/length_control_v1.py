"""AlpacaEval 2's published length-controlled win rate: its ``length_controlled_v1`` formula.

Source: ``alpaca_eval/metrics/glm_winrate.py`` (``GLM_INFO["length_controlled_v1"]``,
``get_length_controlled_winrate``, ``predict_winrate``). Per model ``m`` against the baseline,
AlpacaEval fits

    ``logit P(m beats baseline on i) = w_len,m tanh(Δ_mi / sd_m) + w_diff,m d_i + w_ng,m``

(``Δ`` the baseline's minus the model's length; ``d_i`` the instruction difficulty;
``w_ng`` the weight of ``not_gamed_baseline``, 1 for the model's rows and 0 for the rows of
its two "gamed" baselines, the baseline's own outputs made verbose and concise, which enter
the fit with weight 0.1 each so that answering longer or shorter alone cannot move the
rate), and its LC win rate is the prediction at equal length averaged over the model's
instructions:

    ``LC_m = mean_i σ((w_ng,m − w_ng,b) + (w_diff,m − w_diff,b) d_i)``

(the baseline's weights ``b`` are 0: its rate is 50 % by construction).

The weights the leaderboard was computed with are the ones AlpacaEval ships
(``metrics/weights/<annotator>/length_controlled_v1/baseline_<baseline>.csv``: fetched with
the logs and blob-verified, read through the benchmark's
:meth:`~voirdire.benchmarks.kind.BenchmarkKind.length_control_weights`): the gamed
baselines' annotations they were fitted with are not published, so they cannot be refitted
from the logs. ``d_i`` is fitted by AlpacaEval's own procedure
(:mod:`~voirdire.analysis.ranking.difficulty`; the published figures read a precomputed
difficulty its repository does not hold), on the data the notebook fits: every model's
annotations and the baseline's own (itself against itself, a tie at equal length on every
instruction: its ``results/<baseline>/`` file, which holds no pair to audit), the models
being those of the whole release the audited logs belong to, fitted once and cached, so
that a model's LC does not move with the others audited (``--lc-difficulty release``,
:mod:`~voirdire.analysis.ranking.release_difficulty`), or the audited ones
(``--lc-difficulty audited``; where no release is beside the logs). A model without weights gets the minimal formula
(:func:`~voirdire.analysis.ranking.length_control.length_controlled`), named in ``formula``.

The outcome of a comparison is the continuous preference where the verdict holds one
(``p``), and the win rate the mean of it (AlpacaEval's ``win_rate``). The interval is the
cluster bootstrap's over instructions of the mean predicted preference, the weights and the
difficulties held fixed: AlpacaEval's ``lc_standard_error`` is the same spread's standard error.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import expit

from voirdire.analysis.ranking.boards import BOARD_KEYS
from voirdire.analysis.ranking.length_control import (
    LC_SCHEMA,
    baseline_comparisons,
    length_controlled,
)
from voirdire.analysis.ranking.refits import bootstrap_fit, percentile_interval
from voirdire.analysis.ranking.release_difficulty import (
    board_difficulty,
    cached_difficulty,
    check_source,
    release_fit_rows,
)
from voirdire.core import ConfigError

__all__ = ["LC_FORMULAS", "length_controlled_v1", "lc_board"]

#: the formulas ``voirdire rank --style --lc-formula`` takes
LC_FORMULAS = ("auto", "v1", "minimal")


def _with_clusters(c: pl.DataFrame, clusters: pl.DataFrame | None) -> pl.DataFrame:
    """``c`` with ``cluster``: the question's cluster (AlpacaEval's instruction), else itself."""
    if clusters is None or clusters.height == 0:
        return c.with_columns(cluster=pl.col("question_id"))
    return c.join(
        clusters.select("benchmark", "question_id", "cluster"),
        on=["benchmark", "question_id"], how="left", maintain_order="left",
    ).with_columns(cluster=pl.coalesce("cluster", "question_id"))  # fmt: skip


def _deltas(weights: pl.DataFrame, baseline: str) -> dict[str, tuple[float, float]]:
    """Per model its ``not_gamed`` and ``difficulty`` weights minus the baseline's.

    Raises:
        ConfigError: ``weights`` hold no row for ``baseline``.
    """
    w = weights.filter(pl.col("baseline") == baseline)
    base = w.filter(pl.col("model") == baseline)
    if base.height != 1:
        raise ConfigError(
            f"length control v1: the weights hold no row for the baseline {baseline!r}"
        )
    b = base.row(0, named=True)
    return {
        r["model"]: (r["not_gamed"] - b["not_gamed"], r["difficulty"] - b["difficulty"])
        for r in w.iter_rows(named=True)
    }


def _difficulty(
    board: pl.DataFrame,
    baseline: str,
    first: object,
    fit: tuple[pl.DataFrame, str] | None,
    source: str,
) -> tuple[str, dict[object, float]]:
    """``(source, difficulty)`` of one board: the release's, fitted once and cached
    (:mod:`~voirdire.analysis.ranking.release_difficulty`; ``fit``: its rows and reference),
    unless ``source`` is ``"audited"`` or there is none; else fitted on the board (``first``'s
    difficulty 0).

    Raises:
        ConfigError: ``source`` ``"release"`` and no release for the board's judge."""
    if fit is not None and source != "audited":
        return "release", cached_difficulty(fit[0], baseline, fit[1])
    if source == "release":
        raise ConfigError(
            f"--lc-difficulty release: the benchmark's data holds no release for judge "
            f"{board.get_column('judge')[0]!r} against {baseline!r} (an AlpacaEval audit of "
            "logs at results/<model>/<annotator>/annotations.json, e.g. fetched by "
            "`voirdire data fetch alpaca_eval`); --lc-difficulty audited fits it on the audited models"
        )
    rows = board.filter(pl.col("len_m").is_not_null() & pl.col("len_b").is_not_null())
    return "audited", board_difficulty(rows, baseline, first)


def length_controlled_v1(
    comps: pl.DataFrame,
    features: pl.DataFrame,
    baseline: str,
    weights: pl.DataFrame,
    *,
    replicates: int = 200,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
    release: pl.DataFrame | None = None,
    difficulty: str = "auto",
) -> pl.DataFrame:
    """AlpacaEval's v1 length-controlled win rate (module docstring) of every model against
    ``baseline``, per board. The instruction difficulty's reference (``d = 0``) is the first
    instruction ``clusters`` lists (AlpacaEval's normalised copy lists its pairs in the logs'
    order: its first instruction, the frame of the published weights).

    Args:
        comps: comparison rows (:data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA`,
            plus ``p`` where verdicts hold a probability).
        features: answer lengths (``benchmark``, ``question_id``, ``model``, ``length``).
        weights: ``baseline``, ``model``, ``length``, ``difficulty``, ``not_gamed`` (AlpacaEval's
            shipped weights; :data:`~voirdire.benchmarks.logs.alpaca_eval.WEIGHTS_SCHEMA`).
        replicates, level, seed, clusters: the cluster bootstrap's (``clusters``: AlpacaEval's
            instructions; also the instructions whose difficulty is fitted).
        release, difficulty: the whole release's comparisons
            (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.length_control_release`) and where
            the difficulty comes from (:data:`~voirdire.analysis.ranking.release_difficulty.DIFFICULTY_SOURCES`:
            ``"release"``, fitted once on every model of the release, so a model's LC does
            not depend on the others audited; ``"audited"``, fitted on the board; ``"auto"``,
            the release where ``release`` holds the board's judge, else the board).

    Returns:
        :data:`~voirdire.analysis.ranking.length_control.LC_SCHEMA`; ``formula`` ``"v1"`` for a
        model with weights, ``"minimal"`` for one without (fitted); ``difficulty`` the v1
        rows' source (``"release"``, ``"audited"``), null for the minimal ones.

    Raises:
        ConfigError: ``weights`` hold no row for ``baseline``; ``baseline`` is compared with
            no model; an unknown ``difficulty``; ``"release"`` where ``release`` holds no
            row of a board's judge against ``baseline``.
    """
    check_source(difficulty)
    delta = _deltas(weights, baseline)
    c = _with_clusters(baseline_comparisons(comps, features, baseline), clusters)
    # the reference instruction (difficulty 0): the benchmark's first (AlpacaEval's index 0,
    # the frame of its weights), in the order its clusters list them, else the comparisons'
    order = clusters if clusters is not None and clusters.height else c
    rows, rest = [], []
    for key, board in c.sort([*BOARD_KEYS, "model", "question_id"]).group_by(
        BOARD_KEYS, maintain_order=True
    ):
        first = (
            order.filter(pl.col("benchmark") == key[0])
            .get_column("cluster")
            .head(1)
            .to_list()
        )
        fit = release_fit_rows(release, key[1], baseline)
        source, d = _difficulty(
            board, baseline, first[0] if first else None, fit, difficulty
        )
        qs = comps.filter(pl.col("benchmark") == key[0]).select("benchmark", "question_id").unique()  # fmt: skip
        for (model,), g in board.group_by("model", maintain_order=True):
            y = g.get_column("y").to_numpy()
            if model not in delta:
                rest.append(g)
                continue
            ng, dd = delta[model]
            di = np.array([d.get(k, 0.0) for k in g.get_column("cluster").to_list()])
            pred = expit(ng + dd * di)
            est, boot = bootstrap_fit(
                g, qs, lambda wt, pred=pred: (wt @ pred / wt.sum(1))[:, None], replicates, seed, clusters
            )  # fmt: skip
            lo, hi = percentile_interval(boot[:, 0], level)
            rows.append((*key, model, g.height, float(y.mean()), float(est[0]), float(lo), float(hi), "v1", source))  # fmt: skip
    out = pl.DataFrame(rows, schema=LC_SCHEMA, orient="row")
    if rest:
        left = pl.concat(rest).select(comps.columns)
        out = pl.concat([out, length_controlled(left, features, baseline, replicates=replicates,
                                                level=level, seed=seed, clusters=clusters)])  # fmt: skip
    return out.sort(*BOARD_KEYS, "model")


def lc_board(
    comps: pl.DataFrame,
    features: pl.DataFrame,
    baseline: str,
    weights: pl.DataFrame | None,
    formula: str = "auto",
    release: pl.DataFrame | None = None,
    difficulty: str = "auto",
    **common,
) -> pl.DataFrame:
    """The LC win rates of one benchmark's boards by ``formula``: ``"v1"`` (AlpacaEval's
    published formula, :func:`length_controlled_v1`; needs ``weights`` for ``baseline``),
    ``"minimal"`` (:func:`~voirdire.analysis.ranking.length_control.length_controlled`) or
    ``"auto"`` (v1 where ``weights`` hold the baseline, else minimal). v1 reads the raw
    verdicts' pooled board (strategy ``single``); the strategies' boards get the minimal
    formula. ``release``, ``difficulty``: where v1's instruction difficulty comes from
    (:func:`length_controlled_v1`). ``common``: the bootstrap's ``replicates``, ``level``,
    ``seed``, ``clusters``.

    Raises:
        ConfigError: an unknown formula or difficulty source; ``"v1"`` without weights for
            the baseline; ``difficulty`` ``"release"`` without the release's rows."""
    check_source(difficulty)
    if formula not in LC_FORMULAS:
        raise ConfigError(f"unknown length-control formula {formula!r}; known: {', '.join(LC_FORMULAS)}")  # fmt: skip
    has = (
        weights is not None
        and weights.filter(
            (pl.col("baseline") == baseline) & (pl.col("model") == baseline)
        ).height
        == 1
    )
    if formula == "v1" and not has:
        raise ConfigError(
            f"length control v1: no published weights for the baseline {baseline!r} in the "
            "benchmark's data (AlpacaEval's metrics/weights/<annotator>/length_controlled_v1/, "
            "fetched by `voirdire data fetch alpaca_eval`); --lc-formula minimal fits without them"
        )
    if formula == "minimal" or not has:
        return length_controlled(comps, features, baseline, **common)
    raw = (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    parts = [
        length_controlled_v1(
            comps.filter(raw),
            features,
            baseline,
            weights,
            release=release,
            difficulty=difficulty,
            **common,
        )  # fmt: skip
    ]
    if comps.filter(~raw).height:
        parts.append(
            length_controlled(comps.filter(~raw), features, baseline, **common)
        )
    return pl.concat(parts).sort(*BOARD_KEYS, "model")
