"""One call from judgments to leaderboards: views, boards, flips (``voirdire rank``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.position.clusters import benchmark_clusters
from voirdire.analysis.ranking.boards import Boards, fit_boards
from voirdire.analysis.ranking.flips import rank_flips
from voirdire.analysis.ranking.gold import GOLD, gold_comparisons
from voirdire.analysis.ranking.length_control_v1 import lc_board
from voirdire.analysis.ranking.order_views import order_views
from voirdire.analysis.ranking.style import style_controlled
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError
from voirdire.engine.judge_names import check_reserved
from voirdire.stages import Stage, run_stages

__all__ = ["RANK_STAGES", "Ranking", "dir_clusters", "rank_judgments"]


@dataclass
class Ranking:
    """Leaderboards of one or more directories.

    Attributes:
        leaderboard: :data:`~voirdire.analysis.ranking.boards.LEADERBOARD_COLUMNS` rows
            (``metrics/leaderboard.csv``).
        flips: :data:`~voirdire.analysis.ranking.flips.FLIP_COLUMNS` rows
            (``metrics/rank_flips.csv``).
        boards: the fitted boards with their replicates.
        method: the ranking method's name; replicates: bootstrap replicates.
        style: :func:`~voirdire.analysis.ranking.style.style_controlled` rows of the raw
            pooled and the order-invariant boards (``metrics/leaderboard_style.csv``; ranks
            free of the anchor, as ``leaderboard``'s), when
            answer features were given; length:
            :func:`~voirdire.analysis.ranking.style.length_controlled` rows against the
            anchor (``metrics/lc_win_rate.csv``), likewise.
    """

    leaderboard: pl.DataFrame
    flips: pl.DataFrame
    boards: Boards
    method: str
    replicates: int
    style: pl.DataFrame | None = None
    length: pl.DataFrame | None = None

    def summary(self) -> pl.DataFrame:
        """Per (benchmark, judge, strategy): rank flips between the first and swapped
        boards (null for an order-invariant strategy: none by construction) and τ against
        the gold board where there is one. Columns ``benchmark``, ``judge``,
        ``strategy``, ``models`` (int), ``order_flips``, ``order_flips_significant`` (int:
        family-wise, :func:`~voirdire.analysis.ranking.flips.rank_flips`),
        ``order_flips_null`` (float: the mean flips of an order-blind judge on the same
        verdicts), ``order_flips_p`` (float: permutation p-value of any order effect),
        ``order_tau``, ``order_tau_p`` (float), ``gold_tau`` (float)."""
        f = self.flips
        order = f.filter((pl.col("view") == "first") & (pl.col("view_b") == "swapped")).select(
            "benchmark", "judge", "strategy", "models",
            order_flips="flips", order_flips_significant="flips_significant",
            order_flips_null="flips_null", order_flips_p="flips_p",
            order_tau="kendall_tau", order_tau_p="tau_p",
        )  # fmt: skip
        gold = (
            f.filter(pl.col("judge_b") == GOLD)
            .group_by("benchmark", "judge", "strategy")
            .agg(
                gold_tau=pl.col("kendall_tau")
                .sort_by(pl.col("view") == "pooled", descending=True)
                .first()
            )
        )
        keys = (
            self.leaderboard.filter(pl.col("judge") != GOLD)
            .group_by("benchmark", "judge", "strategy")
            .agg(models=pl.col("model").n_unique().cast(pl.Int64))
        )
        return (
            keys.join(
                order.drop("models"), on=["benchmark", "judge", "strategy"], how="left"
            )
            .join(gold, on=["benchmark", "judge", "strategy"], how="left")
            .sort("benchmark", "judge", "strategy")
        )


def _named_models(benchmark: str) -> bool:
    """Whether a benchmark's candidates are named models (its registered class's
    ``named_models``; a name no class has, e.g. a user's own pairs: yes)."""
    cls = BENCHMARKS.find(benchmark)
    return cls is None or cls.named_models


def dir_clusters(tables: Sequence) -> pl.DataFrame | None:
    """The bootstrap clusters of output directories' results
    (:class:`~voirdire.analysis.outputs.Results`: their ``clusters``), or None."""
    parts = [t.clusters for t in tables if getattr(t, "clusters", None) is not None]
    return pl.concat(parts).unique(maintain_order=True) if parts else None


def _pairwise_rows(judgments: pl.DataFrame) -> pl.DataFrame:
    """The control rows of ``judgments`` in pairwise mode, the rows every board reads.

    Raises:
        ConfigError: a reserved judge name; a benchmark whose answers are anonymous; no
            pairwise judgments.
    """
    check_reserved(judgments.get_column("judge").unique().sort())
    rows = control_rows(judgments)
    if "mode" in rows.columns:
        rows = rows.filter(pl.col("mode") == "pairwise")
    anonymous = [
        b
        for b in rows.get_column("benchmark").unique().sort().to_list()
        if not _named_models(b)
    ]
    if anonymous:
        raise ConfigError(
            f"benchmark {', '.join(anonymous)}: its pairs are two anonymous answers, not named models, so no "
            "leaderboard exists (rank the other directories on their own)"
        )
    if rows.height == 0:
        raise ConfigError(
            "no pairwise judgments to rank (leaderboards need pairwise comparisons)"
        )
    return rows


def _with_probabilities(comps: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """``comps`` with ``p``: on the raw verdicts' pooled board the candidate's probability of
    winning where the verdicts hold one (``option_probs``: a log-probability judge,
    AlpacaEval's continuous preference; the mean over a pair's orders), else null."""
    from voirdire.analysis.position.calibration_error import candidate_probability

    keys = ["benchmark", "judge", "question_id", "a", "b"]
    if (
        "option_probs" not in rows.columns
        or rows.get_column("option_probs").null_count() == rows.height
    ):
        return comps
    p = (
        rows.select("benchmark", "judge", "question_id", a="candidate", b="reference")
        .with_columns(p=candidate_probability(rows))
        .filter(pl.col("p").is_not_null())
        .group_by(keys)
        .agg(pl.col("p").mean())
    )
    raw = (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    return comps.join(p, on=keys, how="left", maintain_order="left").with_columns(
        p=pl.when(raw).then(pl.col("p"))
    )  # fmt: skip


def _style_boards(
    comps: pl.DataFrame,
    features: pl.DataFrame,
    anchors: dict[str, str],
    anchor: str | None,
    anchor_rating: float,
    common: dict,
    lc: tuple[dict, str, dict, str] = ({}, "auto", {}, "auto"),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The style-controlled ratings and the LC win rates (against each benchmark's anchor
    ``anchors``; ``lc``: each benchmark's published weights, the formula, each benchmark's
    release rows and the difficulty source,
    :func:`~voirdire.analysis.ranking.length_control_v1.lc_board`) of the raw pooled and the
    order-invariant boards of ``comps``; ``common``: the bootstrap's ``replicates``,
    ``level``, ``seed``, ``clusters``."""
    judged = comps.filter(
        ((pl.col("strategy") == "single") & (pl.col("view") == "pooled"))
        | (pl.col("view") == "combined")
    )
    style = style_controlled(
        judged, features, anchor=anchor, anchor_rating=anchor_rating, **common
    )
    weights, formula, release, source = lc
    length = pl.concat([lc_board(judged.filter(pl.col("benchmark") == b), features, a, weights.get(b), formula,
                                 release.get(b), source, **common)
                        for b, a in anchors.items()])  # fmt: skip
    return style, length


def rank_judgments(
    judgments: pl.DataFrame,
    *,
    method: str = "bt",
    strategies: Sequence[str] | None = None,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    prior: float = 0.0,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    features: pl.DataFrame | None = None,
    style_replicates: int = 200,
    clusters: pl.DataFrame | None = None,
    lc_weights: Mapping[str, pl.DataFrame] | None = None,
    lc_formula: str = "auto",
    lc_release: Mapping[str, pl.DataFrame] | None = None,
    lc_difficulty: str = "auto",
) -> Ranking:
    """Leaderboards of every judge, strategy and order view of ``judgments`` (control
    queries, pairwise rows), the gold board where gold labels exist, and the rank flips.

    Args:
        judgments: ``JUDGMENT_SCHEMA`` rows.
        method: a ranking method (``"bt"``, ``"davidson"``, an import path).
        strategies: mitigation strategies (default: those the judgments allow); ``single``
            (each order's own verdict) always.
        anchor, anchor_rating: the model fixed at ``anchor_rating`` (default: the model in
            the most comparisons, e.g. a benchmark's reference).
        prior: pseudo-ties between every two models that met
            (:func:`~voirdire.analysis.ranking.boards.fit_boards`; 0: plain maximum likelihood).
        replicates, level, seed: the cluster bootstrap's (questions resampled); ``replicates``
            is also the number of random order swaps of the order test
            (:mod:`~voirdire.analysis.ranking.order_test`).
        features: answer style features (:func:`~voirdire.analysis.ranking.style.answer_features`):
            adds style-controlled ratings and LC win rates (``style_replicates`` replicates).
        clusters: what every bootstrap draws (``benchmark``, ``question_id``, ``cluster``;
            default: :func:`benchmark_clusters`, e.g. PandaLM's questions, not its items).
        lc_weights, lc_formula: each benchmark's published length-control weights
            (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.length_control_weights`) and the
            LC formula (``"auto"``, ``"v1"``, ``"minimal"``:
            :func:`~voirdire.analysis.ranking.length_control_v1.lc_board`).
        lc_release, lc_difficulty: each benchmark's whole-release comparisons
            (:meth:`~voirdire.benchmarks.kind.BenchmarkKind.length_control_release`) and
            where the v1 instruction difficulty comes from (``"auto"``, ``"release"``,
            ``"audited"``: :mod:`~voirdire.analysis.ranking.release_difficulty`).

    Raises:
        ConfigError: a judge named ``gold`` (the gold board; ``people``, its former
            name) or ``panel-N`` (a jury); no pairwise judgments; a benchmark whose answers are anonymous (no
            named models); a board with one model; an
            anchor that is not a candidate; an unknown method or strategy.
    """
    settings = dict(
        method=method, prior=prior, replicates=replicates, level=level, seed=seed
    )
    inputs = {
        "judgments": judgments, "strategies": strategies, "clusters": clusters, "settings": settings,
        "anchor": (anchor, anchor_rating), "style_inputs": (features, style_replicates, dict(lc_weights or {}), lc_formula, dict(lc_release or {}), lc_difficulty),
    }  # fmt: skip
    return run_stages(RANK_STAGES, inputs, ("ranking",))["ranking"]


def _views(judgments, strategies, clusters) -> dict:
    rows = _pairwise_rows(judgments)
    comps = pl.concat([order_views(rows, strategies), gold_comparisons(rows)])
    if clusters is None:  # the located data
        clusters = benchmark_clusters(rows.get_column("benchmark").unique().to_list())
    return {"rows": rows, "comps": comps, "drawn": clusters}


def _fit(comps, drawn, settings, anchor) -> dict:
    s = settings
    boards = fit_boards(
        comps, method=s["method"], anchor=anchor[0], anchor_rating=anchor[1], prior=s["prior"],
        replicates=s["replicates"], level=s["level"], seed=s["seed"], clusters=drawn,
    )  # fmt: skip
    return {"boards": boards}


def _flips(boards, comps, settings) -> dict:
    s = settings
    flips = rank_flips(
        boards, level=s["level"], comps=comps, method=s["method"], prior=s["prior"],
        permutations=s["replicates"], seed=s["seed"],
    )  # fmt: skip
    return {"flips": flips}


def _style(boards, flips, rows, comps, drawn, settings, anchor, style_inputs) -> dict:
    features, style_replicates, weights, formula, release, difficulty = style_inputs
    s = settings
    ranking = Ranking(boards.table, flips, boards, s["method"], s["replicates"])
    if features is not None:
        ranking.style, ranking.length = _style_boards(
            _with_probabilities(comps, rows), features, boards.anchors, anchor[0], anchor[1],
            dict(replicates=style_replicates, level=s["level"], seed=s["seed"], clusters=drawn),
            (weights, formula, release, difficulty),
        )  # fmt: skip
    return {"ranking": ranking}


#: :func:`rank_judgments` as named stages (``voirdire rank``'s progress line names them)
RANK_STAGES = (
    Stage("views", ("judgments", "strategies", "clusters"), ("rows", "comps", "drawn"), _views),
    Stage("boards", ("comps", "drawn", "settings", "anchor"), ("boards",), _fit),
    Stage("flips", ("boards", "comps", "settings"), ("flips",), _flips),
    Stage("style", ("boards", "flips", "rows", "comps", "drawn", "settings", "anchor", "style_inputs"), ("ranking",), _style),
)  # fmt: skip
