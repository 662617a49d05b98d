"""Leaderboards with cluster-bootstrap intervals over questions.

Per (benchmark, judge) every board (strategy × view, :mod:`~voirdire.analysis.ranking.order_views`)
is fitted in one call of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`
(the one bootstrap engine): the cells are (board, model), the summed values each cell's
wins and ties against every other model on a question, and the statistic fits every board
of every replicate at once (:mod:`~voirdire.analysis.ranking.bt`). Every call for a
benchmark draws its questions from the same list with the same seed, so replicate ``r`` is
the same draw of questions for every judge, view and the gold board: rank flips and
τ/ρ against the gold board are judged on joint replicates (:mod:`~voirdire.analysis.ranking.flips`).

Every board is fitted free of any anchor (:mod:`~voirdire.analysis.ranking.strengths`:
per replicate, strongly connected parts of the win graph, θ summing to 0 over each, the
differences across parts ``±∞`` or undefined), so ranks and rank intervals
(:mod:`~voirdire.analysis.ranking.ranks`: ``rank = 1 +`` the number of models whose
bootstrap interval of the rating *difference* lies wholly above this model's, Chatbot
Arena's rule, Chiang et al. 2024 §5, on differences; ``rank_hi = K −`` the number wholly
below; ``rank_lo = rank``) are the same whatever the anchor, on connected and disconnected
designs. The anchor enters the display alone: ``rating`` is ``anchor_rating`` plus the
difference from the anchor on the Arena scale, ``±inf`` where that difference is infinite,
NaN where it is undefined (a model never linked to the anchor, or absent from a replicate);
the anchor has no rating interval (NaN: its rating is fixed); ``bounded`` marks a model
whose estimate has no finite difference from the anchor.

Memory: the replicates are fitted :data:`CHUNK_BYTES` at a time; a board of ``K`` models
with ``R`` replicates is refused in one line, before anything is fitted, when one
``R × K × K`` float64 array (what the rank flips build) would pass
:data:`~voirdire.analysis.ranking.board_checks.MAX_PAIRWISE_BYTES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.special import expit

from voirdire.analysis.ranking.board_checks import (
    check_graph,
    check_size,
    default_anchor,
)
from voirdire.analysis.ranking.bt import fit_bt, to_rating
from voirdire.analysis.ranking.ranks import pairwise_ranks, rating_interval
from voirdire.analysis.ranking.registry import ranking_method
from voirdire.analysis.ranking.strengths import (
    Strengths,
    concat,
    fit_strengths,
    forest_levels,
    forest_strengths,
)
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters
from voirdire.analysis.stats.sparse_sums import unique_codes
from voirdire.core import ConfigError

__all__ = [
    "LEADERBOARD_COLUMNS",
    "Board",
    "Boards",
    "fit_boards",
]

LEADERBOARD_COLUMNS = [
    "benchmark", "view", "judge", "strategy", "model", "rating", "lo", "hi", "rank", "rank_lo", "rank_hi", "n",
    "win_rate", "bounded",
]  # fmt: skip
BOARD_KEYS = ["benchmark", "judge", "strategy", "view"]
#: memory for one chunk of replicates' fits (the sums and the Newton arrays), 256 MiB
CHUNK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Board:
    """One fitted board: its ``models`` (sorted), the ``anchor`` (index into ``models``; the
    display's only), the ``estimate`` (:class:`~voirdire.analysis.ranking.strengths.Strengths`,
    one row) and the bootstrap ``replicates`` (B rows; replicate ``r`` is the same draw of
    questions across every board of a benchmark)."""

    models: list[str]
    anchor: int
    estimate: Strengths
    replicates: Strengths


@dataclass
class Boards:
    """Fitted leaderboards and their replicates.

    Attributes:
        table: :data:`LEADERBOARD_COLUMNS` — ``rating`` (Arena scale, anchor at
            ``anchor_rating``; ``±inf`` where the estimate's difference from the anchor is
            infinite, NaN where undefined), ``lo``/``hi`` its percentile interval (NaN for
            the anchor, ``±inf`` where the replicates reach an infinite difference),
            ``rank``, ``rank_lo``/``rank_hi`` (int; module docstring: no anchor enters),
            ``n`` (int: decided comparisons of the model in the board), ``win_rate``
            (float: fitted probability of beating the anchor, σ of the difference),
            ``bounded`` (bool: no finite difference from the anchor in the estimate, no
            finite maximum likelihood rating).
        fitted: per board key (benchmark, judge, strategy, view) its :class:`Board`.
        anchors: benchmark -> anchor model.
    """

    table: pl.DataFrame
    fitted: dict[tuple, Board] = field(default_factory=dict)
    anchors: dict[str, str] = field(default_factory=dict)


def _cell_rows(
    comps: pl.DataFrame, boards: list[tuple], models: list[str], drawn: pl.DataFrame, clusters: pl.DataFrame | None
) -> tuple[pl.DataFrame, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Per (question, cell) the wins ``w_j`` and ties ``t_j`` of the cell's model against
    model ``j``, in long form (:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`'s
    ``long``, in integer codes: ``benchmark``, ``question_id`` (int: the index of the
    question's cluster among ``drawn``'s sorted ids), ``cell``, ``value`` (int: ``j`` for
    ``w_j``, ``K + j`` for ``t_j``), ``amount``), a row per nonzero sum, sorted by cell, after
    one row of amount 0 per cell (so the bootstrap numbers the cells in order); cells
    numbered board by board, models by name. Also per cell its board, its model and ``n``
    (its comparisons). ``drawn``: the benchmark's ``question_id`` (its clusters' ids: the
    bootstrap's draws, :func:`~voirdire.analysis.position.uncertainty.in_clusters` of
    ``clusters``), every question of ``comps`` among them. Counted with ``numpy.unique`` and
    ``numpy.bincount`` over integer codes: memory of the order of the comparisons, never of
    questions × cells × models (:func:`~voirdire.analysis.stats.sparse_sums.unique_codes`)."""
    k, nb = len(models), len(boards)
    strategies = sorted({b[0] for b in boards})
    views = sorted({b[1] for b in boards})
    board_of = np.full((len(strategies), len(views)), -1, dtype=np.int64)
    for i, (s, v) in enumerate(boards):
        board_of[strategies.index(s), views.index(v)] = i
    to_model = pl.Enum(models)
    c = comps.select(
        "win", "tie",
        s=pl.col("strategy").cast(pl.Enum(strategies)).to_physical(),
        v=pl.col("view").cast(pl.Enum(views)).to_physical(),
        q=pl.col("question_id").rank("dense").cast(pl.Int64) - 1,  # its place among the sorted ids
        ai=pl.col("a").cast(to_model).to_physical(),
        bi=pl.col("b").cast(to_model).to_physical(),
    )  # fmt: skip
    s_, v_, q, ai, bi = (
        c.get_column(x).to_numpy().astype(np.int64) for x in ("s", "v", "q", "ai", "bi")
    )
    bd = board_of[s_, v_]
    win, tie = c.get_column("win").to_numpy(), c.get_column("tie").to_numpy()
    nq = int(q.max()) + 1 if q.size else 0
    first_row = np.full(nq, -1, dtype=np.int64)
    first_row[q] = np.arange(q.size)  # a row of each question
    qids = comps.get_column("question_id").gather(first_row)  # the sorted ids
    cluster = in_clusters(
        pl.DataFrame({"benchmark": pl.repeat(comps.item(0, "benchmark"), nq, eager=True), "question_id": qids}),
        clusters,
    ).get_column("question_id")  # fmt: skip
    ids = drawn.get_column("question_id").unique().sort()
    code = (
        pl.DataFrame({"question_id": cluster})
        .join(ids.to_frame().with_row_index("_c"), on="question_id", how="left", maintain_order="left")
        .get_column("_c").to_numpy().astype(np.int64)
    )  # fmt: skip
    present = np.zeros((nb, k), dtype=bool)
    present[bd, ai] = present[bd, bi] = True
    cell_board, cell_model = np.nonzero(present)  # board by board, models by name
    cell = np.full((nb, k), -1, dtype=np.int64)
    cell[cell_board, cell_model] = np.arange(cell_board.size)
    ca, cb, u = cell[bd, ai], cell[bd, bi], cell_board.size
    # (cell, question, opponent) of each side of each comparison, sorted by cell, then question
    codes, inv = unique_codes(np.r_[(ca * nq + q) * k + bi, (cb * nq + q) * k + ai])
    half = ca.size

    def count(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        return np.bincount(inv[:half], first, minlength=codes.size) + np.bincount(
            inv[half:], second, minlength=codes.size
        )

    w, t = count(win, 1.0 - win - tie), count(tie, tie)
    at, opp = np.divmod(codes, k)
    first_q = np.full(u, nq, dtype=np.int64)
    np.minimum.at(first_q, at // nq, at % nq)
    parts = [
        (np.arange(u), first_q, np.zeros(u, dtype=np.int64), np.zeros(u))
    ]  # a row per cell first
    for j0, amount in ((0, w), (k, t)):
        nz = np.flatnonzero(amount)
        parts.append((at[nz] // nq, at[nz] % nq, j0 + opp[nz], amount[nz]))
    cells, qs, vi, amount = (np.concatenate(x) for x in zip(*parts))
    long = pl.DataFrame({
        "benchmark": pl.repeat(comps.item(0, "benchmark"), cells.size, eager=True), "question_id": code[qs],
        "cell": cells, "value": vi, "amount": amount,
    })  # fmt: skip
    n = np.bincount(np.r_[ca, cb], minlength=u)
    return long, cell_board, cell_model, n


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
        comps: :data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA` rows.
        method: a registered ranking method (``"bt"``, ``"davidson"``) or import path.
        anchor: the model shown at ``anchor_rating`` (default per benchmark:
            :func:`default_anchor`); it must be a candidate of every board. Only the
            ratings and their intervals depend on it, never the ranks.
        prior: pseudo-ties added between every two models that met (0: the plain maximum
            likelihood, Chatbot Arena's; e.g. 1 keeps undefeated or winless models finite).
        replicates, level, seed: the bootstrap's (questions resampled within a benchmark).
        clusters: ``benchmark``, ``question_id``, ``cluster``: the bootstrap draws clusters
            (:func:`~voirdire.analysis.position.uncertainty.in_clusters`); None: questions.

    Raises:
        ConfigError: no comparisons; a board with one model; an anchor that is not a
            candidate of a board; an unknown method; a judge whose
            ``replicates × models² × 8`` bytes pass :data:`MAX_PAIRWISE_BYTES` (before any fit).
    """
    fit = ranking_method(method).fit
    if comps.height == 0:
        raise ConfigError(
            "no decided pairwise comparisons to rank (list-wise or all-failed judgments?)"
        )
    check_size(comps, replicates)
    out, boards = Boards(pl.DataFrame()), []
    for bench in sorted(comps.get_column("benchmark").unique().to_list()):
        bc = _part(comps, "benchmark", bench)  # no copy of the data when there is one
        anc = anchor or default_anchor(bc)
        out.anchors[bench] = anc
        questions = in_clusters(
            bc.select("benchmark", "question_id").unique(), clusters
        )
        for judge in sorted(bc.get_column("judge").unique().to_list()):
            jc = _part(bc, "judge", judge)
            boards.append(_fit_judge(jc, bench, judge, anc, fit, questions, out, anchor_rating, prior, replicates,
                                     level, seed, clusters))  # fmt: skip
    out.table = (
        pl.concat(boards)
        .select(LEADERBOARD_COLUMNS)
        .sort("benchmark", "judge", "strategy", "view", "rank", "model")
    )
    return out


def _part(df: pl.DataFrame, col: str, value: str) -> pl.DataFrame:
    """The rows of ``df`` with ``col == value`` (``df`` itself when that is all of it)."""
    return df if df.get_column(col).n_unique() == 1 else df.filter(pl.col(col) == value)


class _Cells(NamedTuple):
    """The cells of one judge's boards (a cell: one model on one board, numbered board by
    board, models by name): each cell's board and model index, its comparisons ``n``, the
    cells of each board and each board's anchor (its position among the board's cells)."""

    board: np.ndarray
    model: np.ndarray
    n: np.ndarray
    groups: list[np.ndarray]
    anchors: list[int]


def _check_boards(
    pairs: pl.DataFrame, keys: list, bench: str, judge: str, anc: str
) -> None:
    """Every board ``keys`` (strategy, view) of ``pairs`` with two models or more, ``anc``
    among them (a disconnected board is rated piece by piece: module docstring).

    Raises:
        ConfigError: a board with one model; ``anc`` not in a board.
    """
    for s, v in keys:
        sub = pairs.filter((pl.col("strategy") == s) & (pl.col("view") == v))
        bm = check_graph(sub, f"{bench} / {judge} / {s} / {v}", connected=False)
        if anc not in bm:
            raise ConfigError(
                f"anchor {anc!r} is not a candidate of {bench} / {judge} / {s} / {v} (its models: {', '.join(bm)})"
            )


def _cells(
    cell_board: np.ndarray, cell_model: np.ndarray, n_cell: np.ndarray, nb: int, models: list[str], anc: str
) -> _Cells:  # fmt: skip
    """The :class:`_Cells` of ``nb`` boards whose anchor model is ``anc``."""
    groups = [np.flatnonzero(cell_board == b) for b in range(nb)]
    anchors = [
        int(np.flatnonzero(np.array(models)[cell_model[u]] == anc)[0]) for u in groups
    ]
    return _Cells(cell_board, cell_model, n_cell, groups, anchors)


def _statistic(cells: _Cells, fit, prior: float, anchor_rating: float, kept: list):
    """The bootstrap statistic of one judge's boards: per replicate every board fitted free
    of any anchor (:func:`~voirdire.analysis.ranking.strengths.fit_strengths`; with
    ``prior``, pseudo-ties between the models that met in the data), ``rating`` and
    ``win_rate`` per cell from its difference with its board's anchor (``±inf``/NaN where
    infinite/undefined); each call's per-board fits appended to ``kept``. A ``bt`` board whose
    comparisons form a forest (one baseline) is fitted from its edges' sums alone in closed
    form (:func:`~voirdire.analysis.ranking.strengths.forest_strengths`), no (R, K, K)
    table, falling back to the dense tables in a chunk where an edge is won one way only
    (the dense fits start from 0, not the estimate: a registered copy of ``bt`` gives the
    same bytes)."""
    met_of: dict[bytes, np.ndarray] = {}
    levels_of: dict[int, list | None] = {}  # per board: its forest (bt), or None

    def edges(sums, u, m):
        """``edge(children, parents)`` of :func:`forest_strengths` read from the sums."""

        def edge(c, p):
            def w_of(x, y):  # W of board model x over y, (R, len(x))
                return np.stack(
                    [sums[f"w_{m[j]}"][:, u[i]] + 0.5 * (sums[f"t_{m[j]}"][:, u[i]] + prior)
                     for i, j in zip(x, y)], axis=1,
                )  # fmt: skip

            return w_of(c, p), w_of(p, c)

        return edge

    def statistic(sums):
        r = sums["w_0"].shape[0]
        rel, fitted = np.empty((r, cells.board.size)), []
        for b, (u, a) in enumerate(zip(cells.groups, cells.anchors)):
            m = cells.model[u]
            levels = levels_of.get(b)
            got = (
                None
                if not levels
                else forest_strengths(levels, m.size, edges(sums, u, m))
            )
            if (
                got is None
            ):  # the dense (R, K, K) tables: a cycle, a one-way win, davidson
                w = np.stack([sums[f"w_{j}"][:, u] for j in m], axis=2)
                t = np.stack([sums[f"t_{j}"][:, u] for j in m], axis=2)
                met = (w + w.transpose(0, 2, 1) + t) > 0
                if b not in levels_of:  # the estimate comes first: the data's design
                    levels_of[b] = forest_levels(met[0]) if fit is fit_bt else None
                if prior:  # pseudo-ties between every two models that met in the data
                    t = t + prior * met_of.setdefault(u.tobytes(), met[0])
                got = fit_strengths(fit, w, t)
            fitted.append(got)
            rel[:, u] = fitted[-1].relative(a)
        kept.append(fitted)
        with np.errstate(invalid="ignore"):
            return {"rating": to_rating(rel, anchor_rating), "win_rate": expit(rel)}

    return statistic


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
    """The leaderboard rows of one judge's boards (``jc``: its comparisons) with their
    cluster-bootstrap intervals and ranks; each :class:`Board` stored in ``out.fitted``.
    Arguments as :func:`fit_boards`'s (``anc``: the benchmark's anchor, ``questions``: the
    clusters drawn)."""
    pairs = jc.select(
        "strategy", "view", "a", "b"
    ).unique()  # small: boards × K² at most
    keys = sorted(pairs.select("strategy", "view").unique().rows())
    models = sorted(
        set(pairs.get_column("a").to_list()) | set(pairs.get_column("b").to_list())
    )
    _check_boards(pairs, keys, bench, judge, anc)
    rows, cell_board, cell_model, n_cell = _cell_rows(
        jc, keys, models, questions, clusters
    )
    k, kept = len(models), []
    cells = _cells(cell_board, cell_model, n_cell, len(keys), models, anc)
    statistic = _statistic(cells, fit, prior, anchor_rating, kept)
    per_chunk = 8 * (
        2 * k * cell_board.size + 16 * max(u.size for u in cells.groups) ** 2
    )
    drawn = pl.DataFrame(
        {
            "benchmark": bench,
            "question_id": np.arange(questions.get_column("question_id").n_unique()),
        }
    )
    ci = cluster_bootstrap(rows, [*(f"w_{j}" for j in range(k)), *(f"t_{j}" for j in range(k))], statistic,
                           cells=["cell"], questions=drawn, replicates=replicates, level=level,
                           seed=seed, chunk=max(1, CHUNK_BYTES // per_chunk), long=True)  # fmt: skip
    for b, (s, v) in enumerate(keys):
        u = cells.groups[b]
        out.fitted[(bench, judge, s, v)] = Board(
            [models[i] for i in cells.model[u]], cells.anchors[b], kept[0][b],
            concat([chunk[b] for chunk in kept[1:]]),
        )  # fmt: skip
    t = _judge_table(
        ci,
        cells,
        keys,
        [out.fitted[(bench, judge, s, v)] for s, v in keys],
        level,
        anchor_rating,
    )
    return t.with_columns(benchmark=pl.lit(bench), judge=pl.lit(judge))


def _judge_table(
    ci: pl.DataFrame, cells: _Cells, keys: list, fitted: list[Board], level: float, anchor_rating: float
) -> pl.DataFrame:  # fmt: skip
    """The leaderboard columns of one judge's cells (but ``benchmark`` and ``judge``): the
    estimates of ``ci``, the rating intervals (from each board's anchor) and the ranks (from
    no anchor) of the boards ``fitted`` (one per key of ``keys``)."""
    parts = []
    for b, board in enumerate(fitted):
        u = cells.groups[b]
        with np.errstate(invalid="ignore"):
            lo, hi = rating_interval(board.replicates.relative(board.anchor), level)
        lo[board.anchor] = hi[board.anchor] = (
            np.nan
        )  # the anchor's is fixed: no interval
        rank, rank_lo, rank_hi = pairwise_ranks(board.replicates, level)
        est = board.estimate.relative(board.anchor)[0]
        parts.append(pl.DataFrame({"cell": u, "lo": to_rating(lo, anchor_rating), "hi": to_rating(hi, anchor_rating),
                                   "rank": rank, "rank_lo": rank_lo, "rank_hi": rank_hi,
                                   "bounded": ~np.isfinite(est)}))  # fmt: skip
    wide = ci.pivot(on="metric", index="cell", values="estimate")
    names = {
        i: m for board, u in zip(fitted, cells.groups) for i, m in zip(u, board.models)
    }
    info = pl.DataFrame({"cell": np.arange(cells.board.size), "strategy": [keys[b][0] for b in cells.board],
                         "view": [keys[b][1] for b in cells.board],
                         "model": [names[i] for i in range(cells.board.size)], "n": cells.n})  # fmt: skip
    t = info.join(wide, on="cell").join(pl.concat(parts), on="cell")
    return t.select(
        "strategy", "view", "model", "lo", "hi", "bounded", pl.col("n").cast(pl.Int64), rating="rating",
        win_rate="win_rate", rank=pl.col("rank").cast(pl.Int64), rank_lo=pl.col("rank_lo").cast(pl.Int64),
        rank_hi=pl.col("rank_hi").cast(pl.Int64),
    )  # fmt: skip
