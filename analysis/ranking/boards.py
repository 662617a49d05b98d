"""Leaderboards with cluster-bootstrap intervals over questions.

Per (benchmark, judge) every board (strategy × view, :mod:`~voirdire.analysis.ranking.views`)
is fitted in one call of :func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`
(the one bootstrap engine): the cells are (board, model), the summed values each cell's
wins and ties against every other model on a question, and the statistic fits every board
of every replicate at once (:mod:`~voirdire.analysis.ranking.bt`). Every call for a
benchmark draws its questions from the same list with the same seed, so replicate ``r`` is
the same draw of questions for every judge, view and the people's board: rank flips and
τ/ρ against people are judged on joint replicates (:mod:`~voirdire.analysis.ranking.flips`).

Ranks and intervals come from :mod:`~voirdire.analysis.ranking.ranks`: ``rank = 1 +`` the
number of models whose bootstrap interval of the rating *difference* lies wholly above this
model's (Chatbot Arena's rule, Chiang et al. 2024 §5, on differences, which do not depend on
the anchor), ``rank_hi = K −`` the number wholly below, ``rank_lo = rank``. A model absent
from a replicate (or not linked to the anchor in it) is NaN there; the anchor has no rating
interval (NaN: its rating is fixed); an interval reaching the bound of θ has an infinite end
and ``bounded`` marks an estimate at the bound.

Memory: the replicates are fitted :data:`CHUNK_BYTES` at a time; a board of ``K`` models
with ``R`` replicates is refused in one line, before anything is fitted, when one
``R × K × K`` float64 array (what the rank flips build) would pass :data:`MAX_PAIRWISE_BYTES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from voirdire.analysis.position.uncertainty import cluster_bootstrap, in_clusters
from voirdire.analysis.ranking.bt import CLIP, to_rating
from voirdire.analysis.ranking.ranks import pairwise_ranks, pieces, rating_interval
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
    "win_rate", "bounded",
]  # fmt: skip
BOARD_KEYS = ["benchmark", "judge", "strategy", "view"]
#: refuse a judge whose ``replicates × models²`` float64 array would pass this (256 MiB: the
#: rank flips hold about three such arrays at once; 300 models allow 372 replicates)
MAX_PAIRWISE_BYTES = 256 * 2**20
#: memory for one chunk of replicates' fits (the sums and the Newton arrays), 256 MiB
CHUNK_BYTES = 256 * 2**20


@dataclass
class Boards:
    """Fitted leaderboards and their replicates.

    Attributes:
        table: :data:`LEADERBOARD_COLUMNS` — ``rating`` (Arena scale, anchor at
            ``anchor_rating``), ``lo``/``hi`` its percentile interval (NaN for the anchor,
            ``±inf`` where the replicates reach the bound of θ), ``rank``,
            ``rank_lo``/``rank_hi`` (int; module docstring), ``n`` (int: decided comparisons
            of the model in the board), ``win_rate`` (float: fitted probability of beating
            the anchor, σ(θ)), ``bounded`` (bool: the estimate is at the bound of θ, no
            finite maximum likelihood).
        theta: per board key (benchmark, judge, strategy, view) ``(models, (B, K) θ of the
            replicates, (K,) θ estimate)``; replicate ``r`` is the same draw of questions
            across every board of a benchmark; NaN where a model has no rating in a
            replicate (absent, or not linked to the anchor).
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
    counts = pl.concat([
        comps.group_by(m="a").len(), comps.group_by(m="b").len()
    ]).group_by("m").agg(pl.col("len").sum())  # fmt: skip
    return counts.sort(["len", "m"], descending=[True, False]).item(0, "m")


def check_graph(comps: pl.DataFrame, where: str) -> list[str]:
    """The models of one board's comparisons, sorted, after checking them.

    Raises:
        ConfigError: fewer than two models, or a comparison graph in several pieces (naming
            the board and a model of the second piece).
    """
    pairs = comps.select("a", "b").unique()  # at most K² rows, whatever the data's size
    models = sorted(
        set(pairs.get_column("a").to_list()) | set(pairs.get_column("b").to_list())
    )
    if len(models) < 2:
        raise ConfigError(
            f"{where}: a leaderboard needs at least two models; the comparisons name {models or 'none'}"
        )
    ix = {m: i for i, m in enumerate(models)}
    a = np.array([ix[x] for x in pairs.get_column("a").to_list()], dtype=np.int64)
    b = np.array([ix[x] for x in pairs.get_column("b").to_list()], dtype=np.int64)
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


def check_size(comps: pl.DataFrame, replicates: int) -> None:
    """Refuse, before anything is fitted, a (benchmark, judge) whose models ``K`` make one
    ``replicates × K × K`` float64 array larger than :data:`MAX_PAIRWISE_BYTES`.

    Raises:
        ConfigError: naming the benchmark, judge, sizes and the largest replicates allowed.
    """
    per: dict[tuple, set] = {}
    for bn, jd, a, b in (
        comps.select("benchmark", "judge", "a", "b").unique().iter_rows()
    ):
        per.setdefault((bn, jd), set()).update((a, b))  # the distinct pairs only
    (bench, judge), k = max(((g, len(m)) for g, m in per.items()), key=lambda r: r[1])
    need = int(replicates) * k * k * 8
    if need > MAX_PAIRWISE_BYTES:
        raise ConfigError(
            f"{bench} / {judge}: {k} models x {replicates} replicates needs {need / 2**20:,.0f} MiB for one "
            f"replicates x models^2 array (limit {MAX_PAIRWISE_BYTES / 2**20:.0f} MiB); use at most "
            f"{max(MAX_PAIRWISE_BYTES // (8 * k * k), 0)} replicates, or rank fewer models"
        )  # fmt: skip


def _cell_rows(
    comps: pl.DataFrame, boards: list[tuple], models: list[str]
) -> tuple[pl.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Per (question, cell) the wins ``w_j`` and ties ``t_j`` of the cell's model against
    model ``j``; cells numbered board by board, models by name; rows sorted by cell and
    question, only where the cell's model was compared. Also per cell its board, its model
    and ``n`` (its comparisons). Counted with ``numpy.bincount`` over integer codes: memory
    of the order of the (questions × cells × models) result, not of copies of the data."""
    k, nb = len(models), len(boards)
    qids = comps.get_column("question_id").unique().sort().to_list()
    key = pl.DataFrame(
        {"strategy": [b[0] for b in boards], "view": [b[1] for b in boards], "_b": np.arange(nb)}
    )  # fmt: skip
    c = comps.join(key, on=["strategy", "view"]).select(
        "_b", "win", "tie",
        q=pl.col("question_id").replace_strict({q: i for i, q in enumerate(qids)}, return_dtype=pl.Int64),
        ai=pl.col("a").replace_strict({m: i for i, m in enumerate(models)}, return_dtype=pl.Int64),
        bi=pl.col("b").replace_strict({m: i for i, m in enumerate(models)}, return_dtype=pl.Int64),
    )  # fmt: skip
    bd, q, ai, bi = (c.get_column(x).to_numpy() for x in ("_b", "q", "ai", "bi"))
    win, tie = c.get_column("win").to_numpy(), c.get_column("tie").to_numpy()
    present = np.zeros((nb, k), dtype=bool)
    present[bd, ai] = present[bd, bi] = True
    cell_board, cell_model = np.nonzero(present)  # board by board, models by name
    cell = np.full((nb, k), -1, dtype=np.int64)
    cell[cell_board, cell_model] = np.arange(cell_board.size)
    ca, cb, u, nq = cell[bd, ai], cell[bd, bi], cell_board.size, len(qids)
    size = nq * u * k

    def count(cells, opp, weights):
        return np.bincount((q * u + cells) * k + opp, weights, minlength=size)

    w = (count(ca, bi, win) + count(cb, ai, 1.0 - win - tie)).reshape(nq, u, k)
    t = (count(ca, bi, tie) + count(cb, ai, tie)).reshape(nq, u, k)
    seen = np.bincount(np.r_[q * u + ca, q * u + cb], minlength=nq * u).reshape(nq, u)
    uu, qq = np.nonzero(seen.T)  # by cell, then question
    wide = pl.DataFrame({
        "benchmark": np.full(uu.size, comps.item(0, "benchmark")), "question_id": np.array(qids)[qq], "cell": uu,
        **{f"w_{j}": w[qq, uu, j] for j in range(k)}, **{f"t_{j}": t[qq, uu, j] for j in range(k)},
    })  # fmt: skip
    n = np.bincount(np.r_[ca, cb], minlength=u)
    return wide, cell_board, cell_model, n


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
            anchor that is not a candidate of a board; an unknown method; a judge whose
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
    pairs = jc.select(
        "strategy", "view", "a", "b"
    ).unique()  # small: boards × K² at most
    keys = sorted(pairs.select("strategy", "view").unique().rows())
    models = sorted(
        set(pairs.get_column("a").to_list()) | set(pairs.get_column("b").to_list())
    )
    for s, v in keys:
        sub = pairs.filter((pl.col("strategy") == s) & (pl.col("view") == v))
        bm = check_graph(sub, f"{bench} / {judge} / {s} / {v}")
        if anc not in bm:
            raise ConfigError(
                f"anchor {anc!r} is not a candidate of {bench} / {judge} / {s} / {v} (its models: {', '.join(bm)})"
            )
    rows, cell_board, cell_model, n_cell = _cell_rows(jc, keys, models)
    k, kept = len(models), []
    groups = [np.flatnonzero(cell_board == b) for b in range(len(keys))]
    anchors = [
        int(np.flatnonzero(np.array(models)[cell_model[u]] == anc)[0]) for u in groups
    ]
    met_of: dict[bytes, np.ndarray] = {}

    def statistic(sums):
        r = sums["w_0"].shape[0]
        theta, piece = (
            np.empty((r, cell_board.size)),
            np.empty((r, cell_board.size), dtype=np.int64),
        )
        for u, a in zip(groups, anchors):
            m = cell_model[u]
            w = np.stack([sums[f"w_{j}"][:, u] for j in m], axis=2)
            t = np.stack([sums[f"t_{j}"][:, u] for j in m], axis=2)
            met = (w + w.transpose(0, 2, 1) + t) > 0
            if prior:  # pseudo-ties between every two models that met in the data (the estimate comes first)
                t = t + prior * met_of.setdefault(u.tobytes(), met[0])
            theta[:, u] = fit(w, t, anchor=a)
            piece[:, u] = pieces(met)
        kept.append((theta, piece))
        rated = np.where(
            piece == piece[:, u_anchor], theta, np.nan
        )  # NaN: no link to the anchor
        return {"rating": to_rating(rated, anchor_rating), "win_rate": expit(rated)}

    u_anchor = np.empty(
        cell_board.size, dtype=np.int64
    )  # each cell's board's anchor cell
    for u, a in zip(groups, anchors):
        u_anchor[u] = u[a]
    per_chunk = 8 * (2 * k * cell_board.size + 16 * max(u.size for u in groups) ** 2)
    rows = in_clusters(rows, clusters)
    ci = cluster_bootstrap(rows, [*(f"w_{j}" for j in range(k)), *(f"t_{j}" for j in range(k))], statistic,
                           cells=["cell"], questions=questions, replicates=replicates, level=level,
                           seed=seed, chunk=max(1, CHUNK_BYTES // per_chunk))  # fmt: skip
    est = kept[0][0][0]
    boot = np.concatenate([th for th, _ in kept[1:]])
    piece = np.concatenate([p for _, p in kept[1:]])
    boot = np.where(piece == piece[:, u_anchor], boot, np.nan)
    parts = []
    for b, (s, v) in enumerate(keys):
        u = groups[b]
        out.theta[(bench, judge, s, v)] = (
            [models[i] for i in cell_model[u]],
            boot[:, u],
            est[u],
        )
        lo, hi = rating_interval(boot[:, u], level)
        lo[anchors[b]] = hi[anchors[b]] = np.nan  # the anchor's is fixed: no interval
        rank, rank_lo, rank_hi = pairwise_ranks(boot[:, u], piece[:, u], level)
        parts.append(pl.DataFrame({"cell": u, "lo": to_rating(lo, anchor_rating), "hi": to_rating(hi, anchor_rating),
                                   "rank": rank, "rank_lo": rank_lo, "rank_hi": rank_hi,
                                   "bounded": np.abs(est[u]) >= CLIP - 0.5}))  # fmt: skip
    wide = ci.pivot(on="metric", index="cell", values="estimate")
    info = pl.DataFrame({"cell": np.arange(cell_board.size), "strategy": [keys[b][0] for b in cell_board],
                         "view": [keys[b][1] for b in cell_board],
                         "model": [models[i] for i in cell_model], "n": n_cell})  # fmt: skip
    t = info.join(wide, on="cell").join(pl.concat(parts), on="cell")
    t = t.select(
        "strategy", "view", "model", "lo", "hi", "bounded", pl.col("n").cast(pl.Int64), rating="rating",
        win_rate="win_rate", rank=pl.col("rank").cast(pl.Int64), rank_lo=pl.col("rank_lo").cast(pl.Int64),
        rank_hi=pl.col("rank_hi").cast(pl.Int64),
    )  # fmt: skip
    return t.with_columns(benchmark=pl.lit(bench), judge=pl.lit(judge))
