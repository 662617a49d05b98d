"""Leaderboards with cluster-bootstrap intervals over questions.

Per (benchmark, judge) every board (strategy × view, :mod:`~voirdire.analysis.ranking.views`)
is fitted in one call of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`
(the one bootstrap engine): the cells are (board, model), the summed values each cell's
wins and ties against every other model on a question, and the statistic fits every board
of every replicate at once (:mod:`~voirdire.analysis.ranking.bt`). Every call for a
benchmark draws its questions from the same list with the same seed, so replicate ``r`` is
the same draw of questions for every judge, view and the people's board: rank flips and
τ/ρ against people are judged on joint replicates (:mod:`~voirdire.analysis.ranking.flips`).

Ranks follow Chatbot Arena's rule (Chiang et al. 2024, *Chatbot Arena*, §5 and the
leaderboard's notebook): ``rank = 1 +`` the number of models of the board whose interval
lies wholly above this model's (lower bound above its upper bound). ``rank_lo``/``rank_hi``
are the percentile interval of the model's rank among the replicates (1 + the number of
models rated higher in that replicate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from voirdire.analysis.position.uncertainty import cluster_bootstrap, in_clusters
from voirdire.analysis.ranking.bt import to_rating
from voirdire.analysis.ranking.registry import ranking_method
from voirdire.core import ConfigError

__all__ = [
    "LEADERBOARD_COLUMNS",
    "Boards",
    "default_anchor",
    "check_graph",
    "fit_boards",
]

LEADERBOARD_COLUMNS = [
    "benchmark", "view", "judge", "strategy", "model", "rating", "lo", "hi", "rank", "rank_lo", "rank_hi", "n",
    "win_rate",
]  # fmt: skip
BOARD_KEYS = ["benchmark", "judge", "strategy", "view"]


@dataclass
class Boards:
    """Fitted leaderboards and their replicates.

    Attributes:
        table: :data:`LEADERBOARD_COLUMNS` — ``rating`` (Arena scale, anchor at
            ``anchor_rating``), ``lo``/``hi`` its percentile interval, ``rank`` (Arena's rule),
            ``rank_lo``/``rank_hi`` (int), ``n`` (int: decided comparisons of the model in the
            board), ``win_rate`` (float: fitted probability of beating the anchor, σ(θ)).
        theta: per board key (benchmark, judge, strategy, view) ``(models, (B, K) θ of the
            replicates, (K,) θ estimate)``; replicate ``r`` is the same draw of questions
            across every board of a benchmark.
        anchors: benchmark -> anchor model.
    """

    table: pl.DataFrame
    theta: dict[tuple, tuple[list[str], np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )
    anchors: dict[str, str] = field(default_factory=dict)


def default_anchor(comps: pl.DataFrame) -> str:
    """The model in the most comparisons (ties: the first by name) — the reference of a
    candidates-vs-reference benchmark."""
    both = pl.concat([comps.select(m="a"), comps.select(m="b")])
    counts = both.group_by("m").len().sort(["len", "m"], descending=[True, False])
    return counts.item(0, "m")


def check_graph(comps: pl.DataFrame, where: str) -> list[str]:
    """The models of one board's comparisons, sorted, after checking them.

    Raises:
        ConfigError: fewer than two models, or a comparison graph in several pieces (naming
            the board and a model of the second piece).
    """
    models = sorted(
        set(comps.get_column("a").to_list()) | set(comps.get_column("b").to_list())
    )
    if len(models) < 2:
        raise ConfigError(
            f"{where}: a leaderboard needs at least two models; the comparisons name {models or 'none'}"
        )
    ix = {m: i for i, m in enumerate(models)}
    a = np.array([ix[x] for x in comps.get_column("a").to_list()])
    b = np.array([ix[x] for x in comps.get_column("b").to_list()])
    n, lab = connected_components(
        coo_matrix((np.ones(a.size), (a, b)), shape=(len(models),) * 2), directed=False
    )
    if n > 1:
        other = next(m for m, c in zip(models, lab) if c != lab[0])
        raise ConfigError(
            f"{where}: the comparison graph is disconnected ({n} pieces; {models[0]!r} and {other!r} are never linked "
            f"by comparisons), so their ratings cannot be compared"
        )
    return models


def _cell_rows(
    comps: pl.DataFrame, boards: list[tuple], models: list[str]
) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Per (question, cell) the wins ``w_j`` and ties ``t_j`` of the cell's model against
    model ``j``; cells numbered board by board, models by name."""
    ix = {m: i for i, m in enumerate(models)}
    cell_board, cell_model, cell_of = [], [], {}
    for bi, key in enumerate(boards):
        sub = comps.filter(
            pl.all_horizontal(
                [pl.col(c) == v for c, v in zip(["strategy", "view"], key)]
            )
        )
        for m in sorted(
            set(sub.get_column("a").to_list()) | set(sub.get_column("b").to_list())
        ):
            cell_of[(*key, m)] = len(cell_board)
            cell_board.append(bi)
            cell_model.append(ix[m])
    cells = pl.DataFrame(
        [(*k, c) for k, c in cell_of.items()],
        schema={
            "strategy": pl.String,
            "view": pl.String,
            "m": pl.String,
            "cell": pl.Int64,
        },
        orient="row",
    )
    c = comps.with_columns(
        ai=pl.col("a").replace_strict(ix, return_dtype=pl.Int64),
        bi=pl.col("b").replace_strict(ix, return_dtype=pl.Int64),
    )
    c = c.join(
        cells.rename({"m": "a", "cell": "ca"}), on=["strategy", "view", "a"]
    ).join(cells.rename({"m": "b", "cell": "cb"}), on=["strategy", "view", "b"])
    long = pl.concat([
        c.select("benchmark", "question_id", cell="ca", opp="bi", w="win", t="tie"),
        c.select("benchmark", "question_id", cell="cb", opp="ai", w=1.0 - pl.col("win") - pl.col("tie"), t="tie"),
    ]).group_by("benchmark", "question_id", "cell", "opp").agg(pl.col("w").sum(), pl.col("t").sum())  # fmt: skip
    k = len(models)
    wide = long.pivot(
        on="opp",
        index=["benchmark", "question_id", "cell"],
        values=["w", "t"],
        aggregate_function="sum",
    )
    cols = {
        f"w_{j}": pl.col(f"w_{j}") if f"w_{j}" in wide.columns else pl.lit(0.0)
        for j in range(k)
    }
    cols |= {
        f"t_{j}": pl.col(f"t_{j}") if f"t_{j}" in wide.columns else pl.lit(0.0)
        for j in range(k)
    }
    wide = wide.select("benchmark", "question_id", "cell", **cols).sort(
        "cell", "question_id"
    )
    return wide, np.array(cell_board), np.array(cell_model)


def fit_boards(
    comps: pl.DataFrame,
    *,
    method: str = "bt",
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    prior: float = 0.0,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
) -> Boards:
    """Leaderboards with cluster-bootstrap intervals for every board of ``comps``.

    Args:
        comps: :data:`~voirdire.analysis.ranking.views.COMPARISON_SCHEMA` rows.
        method: a registered ranking method (``"bt"``, ``"davidson"``) or import path.
        anchor: the model fixed at ``anchor_rating`` (default per benchmark:
            :func:`default_anchor`); it must be a candidate of every board.
        prior: pseudo-ties added between every two models that met (0: the plain maximum
            likelihood, Chatbot Arena's; e.g. 1 keeps undefeated or winless models finite).
        replicates, level, seed: the bootstrap's (questions resampled within a benchmark).
        clusters: ``benchmark``, ``question_id``, ``cluster``: the bootstrap draws clusters
            (:func:`~voirdire.analysis.position.uncertainty.in_clusters`); None: questions.

    Raises:
        ConfigError: no comparisons; a board with one model or a disconnected graph; an
            anchor that is not a candidate of a board; an unknown method.
    """
    fit = ranking_method(method).fit
    if comps.height == 0:
        raise ConfigError(
            "no decided pairwise comparisons to rank (list-wise or all-failed judgments?)"
        )
    out, boards = Boards(pl.DataFrame()), []
    for (bench,), bc in comps.sort(BOARD_KEYS).group_by(
        ["benchmark"], maintain_order=True
    ):
        anc = anchor or default_anchor(bc)
        out.anchors[bench] = anc
        questions = in_clusters(
            bc.select("benchmark", "question_id").unique(), clusters
        )
        for (judge,), jc in bc.group_by(["judge"], maintain_order=True):
            boards.append(_fit_judge(jc, bench, judge, anc, fit, questions, out, anchor_rating, prior, replicates,
                                     level, seed, clusters))  # fmt: skip
    out.table = (
        pl.concat(boards)
        .select(LEADERBOARD_COLUMNS)
        .sort("benchmark", "judge", "strategy", "view", "rank", "model")
    )
    return out


def _fit_judge(
    jc,
    bench,
    judge,
    anc,
    fit,
    questions,
    out: Boards,
    anchor_rating,
    prior,
    replicates,
    level,
    seed,
    clusters=None,
) -> pl.DataFrame:
    keys = jc.select("strategy", "view").unique(maintain_order=True).rows()
    models = sorted(
        set(jc.get_column("a").to_list()) | set(jc.get_column("b").to_list())
    )
    for s, v in keys:
        sub = jc.filter((pl.col("strategy") == s) & (pl.col("view") == v))
        bm = check_graph(sub, f"{bench} / {judge} / {s} / {v}")
        if anc not in bm:
            raise ConfigError(
                f"anchor {anc!r} is not a candidate of {bench} / {judge} / {s} / {v} (its models: {', '.join(bm)})"
            )
    rows, cell_board, cell_model = _cell_rows(jc, keys, models)
    k, kept = len(models), []
    groups = [np.flatnonzero(cell_board == b) for b in range(len(keys))]
    met_of: dict[bytes, np.ndarray] = {}

    def statistic(sums):
        wc = np.stack([sums[f"w_{j}"] for j in range(k)], axis=2)
        tc = np.stack([sums[f"t_{j}"] for j in range(k)], axis=2)
        theta = np.empty(wc.shape[:2])
        rank = np.empty(wc.shape[:2])
        for u in groups:
            m = cell_model[u]
            w, t = wc[:, u][:, :, m], tc[:, u][:, :, m]
            if prior:  # pseudo-ties between every two models that met in the data (the estimate comes first)
                met = met_of.setdefault(u.tobytes(), (w[0] + w[0].T + t[0]) > 0)
                t = t + prior * met
            th = fit(w, t, anchor=int(np.flatnonzero(np.array(models)[m] == anc)[0]))
            theta[:, u] = th
            rank[:, u] = 1 + (th[:, None, :] > th[:, :, None]).sum(axis=2)
        kept.append(theta)
        return {
            "rating": to_rating(theta, anchor_rating),
            "rank": rank,
            "win_rate": expit(theta),
        }

    rows = in_clusters(rows, clusters)
    ci = cluster_bootstrap(rows, [*(f"w_{j}" for j in range(k)), *(f"t_{j}" for j in range(k))], statistic,
                           cells=["cell"], questions=questions, replicates=replicates, level=level,
                           seed=seed)  # fmt: skip
    est, boot = kept
    for b, (s, v) in enumerate(keys):
        u = groups[b]
        out.theta[(bench, judge, s, v)] = (
            [models[i] for i in cell_model[u]],
            boot[:, u],
            est[0, u],
        )
    wide = ci.pivot(on="metric", index="cell", values=["estimate", "lo", "hi"])
    n = (
        pl.concat(
            [jc.select("strategy", "view", m="a"), jc.select("strategy", "view", m="b")]
        )
        .group_by("strategy", "view", "m")
        .len()
    )
    info = pl.DataFrame({"cell": np.arange(cell_board.size), "strategy": [keys[b][0] for b in cell_board],
                         "view": [keys[b][1] for b in cell_board],
                         "model": [models[i] for i in cell_model]})  # fmt: skip
    t = info.join(wide, on="cell").join(
        n.rename({"m": "model", "len": "n"}), on=["strategy", "view", "model"]
    )
    t = t.select(
        "strategy", "view", "model", pl.col("n").cast(pl.Int64),
        rating="estimate_rating", lo="lo_rating", hi="hi_rating", win_rate="estimate_win_rate",
        rank_lo=pl.col("lo_rank").round().cast(pl.Int64), rank_hi=pl.col("hi_rank").round().cast(pl.Int64),
    )  # fmt: skip
    above = (
        t.join(t.select("strategy", "view", olo="lo"), on=["strategy", "view"])
        .group_by("strategy", "view", "model", "hi")
        .agg(rank=(pl.col("olo") > pl.col("hi")).sum().cast(pl.Int64) + 1)
    )
    t = t.join(above.drop("hi"), on=["strategy", "view", "model"])
    return t.with_columns(benchmark=pl.lit(bench), judge=pl.lit(judge))
