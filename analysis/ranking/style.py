"""Style and length control of leaderboards, as their sources compute them (``docs/ranking.md``).

- **Style-controlled Bradley–Terry** (Chatbot Arena, "Does style matter?", Li et al. 2024;
  FastChat ``fastchat/serve/monitor/rating_systems.py``): ``logit P(a beats b) = θ_a − θ_b +
  Σ_f γ_f z_f``, ``z_f`` FastChat's normalised difference ``(f_a − f_b)/(f_a + f_b + 1)``
  over its population sd (:func:`style_differences`). θ: strength with style held equal,
  "who wins when both answers look alike?". Features (:func:`text_features`, FastChat's
  ``add_markdown_info.py``): ``length`` and the markdown ``headers``, ``lists`` and ``bold``
  counted outside fenced code. Differences from FastChat, each measured in ``docs/ranking.md``:
  (1) not centred by default (``centre=True``: FastChat's centring; voirdire's side ``a`` is
  always the candidate, so the mean is not ~0 as in the Arena's random sides, and centring
  would make θ the strength at the average style gap); (2) length in characters, not
  tokens (no tokenizer is assumed); (3) a fence runs to the next ```` ``` ```` whatever it
  holds, or to the end of an unclosed answer (FastChat's pattern, three backticks, no
  backtick, three backticks, misses blocks holding a backtick and truncated ones); (4) a
  constant feature gives 0, not NaN.
  Arena-Hard-Auto v2 (``show_result.py``) differs again: markdown per token, length without
  the +1, centred against a fixed baseline; not followed.
- **Length-controlled win rate** (AlpacaEval 2, Dubois et al. 2024; ``alpaca_eval/metrics/
  glm_winrate.py``): per model against one baseline, AlpacaEval's
  ``length_controlled_minimal`` formula ``logit P(m beats baseline) = β_0 + β_1 tanh(Δ/sd Δ)``,
  ``Δ`` = baseline's − model's length (characters; sd with ddof 1), fitted as
  ``fit_LogisticRegressionCV`` does (:mod:`~voirdire.analysis.ranking.glm`: L1 on β_0 and
  β_1, C cross-validated over 5 folds); LC win rate ``σ(β_0)``, the predicted win rate at
  equal length. Differences: AlpacaEval's default ``length_controlled_v1`` adds an
  instruction-difficulty term and a pull towards its "gamed" baselines, both estimated on
  AlpacaEval's own data, left out; the folds group a question's rows (both orders), where
  AlpacaEval's group one instruction's single row; the bootstrap replicates refit at the C
  the estimate chose (``cv_each=True`` redoes the cross-validation, 50 fits a replicate),
  and a rate the penalty holds at exactly 50 % gets no interval.

Ties count as half a win (a fractional outcome in the weighted logistic likelihood). The
intervals are the cluster bootstrap's over questions
(:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`, one cell per
comparison: its weight in each replicate, :mod:`voirdire.analysis.ranking.refits`), with one
batched fit per replicate. The style model is fitted free of any anchor as the leaderboards
are (:mod:`~voirdire.analysis.ranking.strengths`: per replicate the strongly connected parts
of the win graph, θ summing to 0 over each, γ shared; ``±∞``/NaN across parts), so its ranks
and rank intervals (:mod:`~voirdire.analysis.ranking.ranks`) do not depend on the anchor. The length-controlled win rate lives in
:mod:`voirdire.analysis.ranking.length_control` and is importable from here.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix
from scipy.special import expit

from voirdire.analysis.ranking.board_checks import check_graph, default_anchor
from voirdire.analysis.ranking.boards import BOARD_KEYS
from voirdire.analysis.ranking.bt import CLIP, to_rating
from voirdire.analysis.ranking.ranks import pairwise_ranks, rating_interval
from voirdire.analysis.ranking.refits import bootstrap_fit, percentile_interval
from voirdire.analysis.ranking.strengths import Strengths, fit_strengths, pieces
from voirdire.core import ConfigError

__all__ = [
    "STYLE_FEATURES",
    "text_features",
    "style_differences",
    "answer_features",
    "weighted_logit",
    "style_controlled",
]

STYLE_FEATURES = ("length", "headers", "lists", "bold")
#: a fenced code block, fences included; an unclosed fence runs to the end of the answer
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_HEADER = re.compile(r"^#{1,6}\s", re.M)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def text_features(text: str) -> dict[str, float]:
    """Style features of one answer, as FastChat's ``add_markdown_info.py`` counts them.

    ``length``: characters of the whole answer; ``headers``: lines starting with 1–6 ``#``
    and a space; ``lists``: lines starting (after indentation) with ``-``, ``*``, ``+`` or
    ``1.`` and a space; ``bold``: ``**...**`` or ``__...__`` spans on one line. The markdown
    counts skip fenced code blocks (a ``# comment`` in a ```` ```python ```` block is not a
    header, ``__init__`` inside one is not bold); the length keeps them.

    Returns:
        ``{"length", "headers", "lists", "bold"}`` → float.
    """
    prose = _FENCE.sub("", text)
    return {"length": float(len(text)), "headers": float(len(_HEADER.findall(prose))),
            "lists": float(len(_LIST.findall(prose))), "bold": float(len(_BOLD.findall(prose)))}  # fmt: skip


def style_differences(
    fa: np.ndarray, fb: np.ndarray, *, centre: bool = False
) -> np.ndarray:
    """Style covariates as FastChat builds them (``rating_systems.preprocess_for_style``,
    ``add_one=True``): per feature the normalised difference ``d = (f_a − f_b) / (f_a + f_b + 1)``
    divided by its population sd over the comparisons; with ``centre``, ``d − mean d`` first,
    as FastChat and Arena-Hard-Auto do. A feature that never varies gives 0 (theirs: NaN).

    Not centring is voirdire's default: a centred covariate is 0 at the *average* style
    difference, not at equal style, and its mean acts as a bonus for side ``a``; Chatbot
    Arena's sides are random, so its mean is near 0, but voirdire's ``a`` is always the
    candidate (``docs/ranking.md``: measured effect on the release data).

    Args:
        fa, fb: (N, F) feature values of the first and second answer of each comparison.

    Returns:
        (N, F) covariates (float).
    """
    d = (fa - fb) / (fa + fb + 1.0)
    sd = d.std(axis=0)
    z = d - d.mean(axis=0) if centre else d
    return np.where(sd > 0, z / np.where(sd > 0, sd, 1.0), 0.0)


def answer_features(bench, comps: pl.DataFrame) -> pl.DataFrame:
    """Style features of every answer the comparisons name, read from the benchmark
    (``bench.answers(question_id, model)``: the model's turns joined by a newline, as FastChat
    joins a conversation's assistant turns).

    Returns:
        ``benchmark``, ``question_id``, ``model`` (str) and :data:`STYLE_FEATURES` (float).
    """
    keys = pl.concat(
        [
            comps.select("benchmark", "question_id", model="a"),
            comps.select("benchmark", "question_id", model="b"),
        ]
    ).unique()
    rows = [
        (b, q, m, *text_features("\n".join(bench.answers(q, m))).values())
        for b, q, m in keys.sort(pl.all()).iter_rows()
    ]
    return pl.DataFrame(rows, schema={"benchmark": pl.String, "question_id": pl.String, "model": pl.String}
                        | dict.fromkeys(STYLE_FEATURES, pl.Float64), orient="row")  # fmt: skip


def _pair_blocks(a: np.ndarray, b: np.ndarray, k: int):
    """``grad_hess(x, c, r)`` for a design whose first ``k`` columns are the pairs' ±1
    (``+1`` at ``a``, ``−1`` at ``b``): ``x``'s products with row weights ``r`` ((R, N) ->
    (R, P)) and the Hessian's blocks with ``c`` ((R, N) -> (R, P, P)) summed through sparse
    matrices (the strengths' block from the pairs' totals, the cross block per covariate),
    never over the rows × P² of the dense product."""
    n = a.size
    rows = np.r_[np.arange(n), np.arange(n)]
    side = csr_matrix(
        (np.r_[np.ones(n), -np.ones(n)], (rows, np.r_[a, b])), shape=(n, k)
    )
    onto = csr_matrix((np.ones(n), (np.arange(n), a * k + b)), shape=(n, k * k))

    def times(z: np.ndarray, v: np.ndarray) -> np.ndarray:  # v (R, N) -> v @ x (R, P)
        return np.c_[np.asarray(side.T @ v.T).T, v @ z]

    def hessian(z: np.ndarray, c: np.ndarray) -> np.ndarray:  # Σ_n c_n x_n x_nᵀ
        r, f = c.shape[0], z.shape[1]
        t = np.asarray(onto.T @ c.T).T.reshape(r, k, k)
        t = t + t.transpose(0, 2, 1)
        h = np.empty((r, k + f, k + f))
        h[:, :k, :k] = -t
        h[:, np.arange(k), np.arange(k)] += t.sum(axis=2)
        cross = np.stack(
            [np.asarray(side.T @ (c * z[:, j]).T).T for j in range(f)], axis=2
        )
        h[:, :k, k:] = cross
        h[:, k:, :k] = cross.transpose(0, 2, 1)
        h[:, k:, k:] = np.einsum("rn,nf,ng->rfg", c, z, z, optimize=True)
        return h

    return times, hessian


def weighted_logit(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    extra: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray, int] | None = None,
    start: np.ndarray | None = None,
    max_iter: int = 50,
    tol: float = 1e-10,
) -> np.ndarray:
    """Weighted logistic regression fitted by Newton's method for every row of weights.

    Args:
        x: (N, P) design; y: (N,) outcomes in [0, 1] (fractional allowed); w: (R, N) weights.
        extra: (R, P, P) added to the negated Hessian, or None: the projector on the
            directions the likelihood does not see (zero along the gradient, so the steps
            keep the coefficients' component there at its start, 0), as
            :mod:`~voirdire.analysis.ranking.bt`'s fits.
        pairs: ``(a, b, K)`` when ``x``'s first K columns are the Bradley–Terry pairs' ±1
            (``+1`` at ``a``, ``−1`` at ``b``, (N,) int): the Hessian is then summed by
            blocks through sparse matrices (:func:`_pair_blocks`: the same matrix, R × N ×
            (F² + 3F) work for F covariates instead of R × N × P²).
        start: (R, P) or (P,) coefficients to start from (None: 0), e.g. the estimate's:
            a replicate's maximum is near it (it must keep the unseen directions' component
            at 0, as the estimate does).

    Returns:
        (R, P) coefficients (float), clipped at ±:data:`~voirdire.analysis.ranking.bt.CLIP`.
    """
    beta = np.zeros((w.shape[0], x.shape[1]))
    if start is not None:
        beta = beta + np.asarray(start, dtype=float)
    eye = np.eye(x.shape[1])
    if pairs is not None:
        a, b, k = pairs
        z = np.ascontiguousarray(x[:, k:])
        times, hessian = _pair_blocks(a, b, k)
    for _ in range(max_iter):
        if pairs is None:
            p = expit(beta @ x.T)
            g = (w * (y - p)) @ x
            h = np.einsum("rn,np,nq->rpq", w * p * (1 - p), x, x, optimize=True)
        else:
            p = expit(beta[:, a] - beta[:, b] + beta[:, k:] @ z.T)
            g = times(z, w * (y - p))
            h = hessian(z, w * p * (1 - p))
        if extra is not None:
            h = h + extra
        damp = 1e-10 * (np.trace(h, axis1=1, axis2=2) / x.shape[1] + 1.0)
        step = np.linalg.solve(h + damp[:, None, None] * eye, g[:, :, None])[:, :, 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(big > 5.0, step * (5.0 / np.maximum(big, 1e-300)), step)
        new = np.clip(beta + step, -CLIP, CLIP)
        moved = np.abs(new - beta).max()
        beta = new
        if moved < tol:
            break
    return beta


def _with_features(
    comps: pl.DataFrame, features: pl.DataFrame, names: tuple[str, ...]
) -> pl.DataFrame:
    """``comps`` with each side's ``names`` features (``<name>_a``, ``<name>_b``).

    Raises:
        ConfigError: a compared answer without features.
    """
    f = features.select("benchmark", "question_id", "model", *names)
    c = comps.join(
        f.rename({"model": "a", **{n: f"{n}_a" for n in names}}),
        on=["benchmark", "question_id", "a"],
        how="left",
    )
    c = c.join(
        f.rename({"model": "b", **{n: f"{n}_b" for n in names}}),
        on=["benchmark", "question_id", "b"],
        how="left",
    )
    if c.select(
        pl.any_horizontal(
            pl.col(f"{names[0]}_a").is_null(), pl.col(f"{names[0]}_b").is_null()
        ).any()
    ).item():
        raise ConfigError(
            "style control: some compared answers have no style features (question or model missing from the features)"
        )
    return c


def _style_design(
    board: pl.DataFrame, models: list[str], names: tuple[str, ...], centre: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, a, b)`` of one board: the (N × (K + len(names))) design, +1 / −1 in the
    columns of sides ``a`` / ``b`` among every one of the ``models`` (no anchor: the
    strengths are identified within each part by :func:`_style_strengths`), then the style
    differences of :func:`style_differences`; and each row's model indices (N,)."""
    ix = {m: i for i, m in enumerate(models)}
    a = np.array([ix[m] for m in board.get_column("a").to_list()], dtype=np.int64)
    b = np.array([ix[m] for m in board.get_column("b").to_list()], dtype=np.int64)
    x = np.zeros((board.height, len(models) + len(names)))
    rows = np.arange(board.height)
    x[rows, a] += 1.0
    x[rows, b] -= 1.0
    fa = board.select(f"{n}_a" for n in names).to_numpy().astype(float)
    fb = board.select(f"{n}_b" for n in names).to_numpy().astype(float)
    x[:, len(models) :] = style_differences(fa, fb, centre=centre)
    return x, a, b


def _style_strengths(
    x: np.ndarray,
    board: pl.DataFrame,
    a: np.ndarray,
    b: np.ndarray,
    k: int,
    w: np.ndarray,
) -> tuple[Strengths, np.ndarray]:
    """The style-controlled Bradley–Terry of every replicate ``w`` ((R, N) row weights),
    free of any anchor: :func:`~voirdire.analysis.ranking.strengths.fit_strengths` on the
    replicates' win tables (a tie half a win; the parts of the win graph, ``±∞``/NaN
    across them), the model refitted on the rows inside each part with θ summing to 0
    there. Returns the :class:`~voirdire.analysis.ranking.strengths.Strengths` and the
    covariates' coefficients γ (R, F), shared by the parts."""
    win, tie = board.get_column("win").to_numpy(), board.get_column("tie").to_numpy()
    r, n = w.shape
    onto = csr_matrix((np.ones(n), (np.arange(n), a * k + b)), shape=(n, k * k)).T

    def table(v: np.ndarray) -> np.ndarray:  # (R, K, K): row weights summed per (a, b)
        return np.asarray(onto @ (w * v).T).T.reshape(r, k, k)

    t = table(tie)
    wins = table(win) + table(1.0 - win - tie).transpose(0, 2, 1)
    gamma: list[np.ndarray] = []

    def fit(wm: np.ndarray, tm: np.ndarray) -> np.ndarray:
        met = (wm + wm.transpose(0, 2, 1) + tm) > 0  # within a part only
        lab = pieces(met)
        same = lab[:, :, None] == lab[:, None, :]
        extra = np.zeros((r, x.shape[1], x.shape[1]))
        extra[:, :k, :k] = same / same.sum(axis=2, keepdims=True)
        beta = weighted_logit(x, y, w * met[:, a, b], extra=extra, pairs=(a, b, k))
        gamma.append(beta[:, k:])
        return beta[:, :k]

    y = win + 0.5 * tie
    fitted = fit_strengths(fit, wins, t + t.transpose(0, 2, 1))
    return fitted, gamma[0]


def _ranked_terms(
    models: list[str],
    anchor: int,
    names: tuple[str, ...],
    est: tuple[Strengths, np.ndarray],
    boot: tuple[Strengths, np.ndarray],
    level: float,
    anchor_rating: float,
) -> pl.DataFrame:
    """``term``, ``rating``, ``lo``, ``hi``, ``rank``, ``rank_lo``, ``rank_hi`` of one
    board: the models first (the anchor's row first), their ratings on the Arena scale from
    their difference with ``anchor`` (``±inf``/NaN where infinite/undefined; the anchor
    without an interval) and their ranks from no anchor
    (:func:`~voirdire.analysis.ranking.ranks.pairwise_ranks`: Arena's rule on the pairwise
    differences), then the covariates ``style:<name>`` (γ in logit units, ranks null)."""
    with np.errstate(invalid="ignore"):
        lo, hi = rating_interval(boot[0].relative(anchor), level)
    lo[anchor] = hi[anchor] = np.nan  # the anchor's rating is fixed: no interval
    rank, rank_lo, rank_hi = pairwise_ranks(boot[0], level)
    glo, ghi = percentile_interval(boot[1], level)
    order = [anchor, *(i for i in range(len(models)) if i != anchor)]
    null = [None] * len(names)
    return pl.DataFrame(
        {
            "term": [*(models[i] for i in order), *(f"style:{n}" for n in names)],
            "rating": np.r_[to_rating(est[0].relative(anchor)[0], anchor_rating)[order], est[1][0]],
            "lo": np.r_[to_rating(lo, anchor_rating)[order], glo],
            "hi": np.r_[to_rating(hi, anchor_rating)[order], ghi],
            "rank": [*rank[order].tolist(), *null],
            "rank_lo": [*rank_lo[order].tolist(), *null],
            "rank_hi": [*rank_hi[order].tolist(), *null],
        },
        schema_overrides={c: pl.Int64 for c in ("rank", "rank_lo", "rank_hi")},
    )  # fmt: skip


def style_controlled(
    comps: pl.DataFrame, features: pl.DataFrame, *, names: tuple[str, ...] = STYLE_FEATURES, anchor: str | None = None,
    anchor_rating: float = 1000.0, replicates: int = 200, level: float = 0.95, seed: int = 0,
    clusters: pl.DataFrame | None = None, centre: bool = False,
) -> pl.DataFrame:  # fmt: skip
    """Style-controlled Bradley–Terry ratings per board (Chatbot Arena's style control),
    fitted free of any anchor as the leaderboards are (:func:`_style_strengths`): the ranks
    and rank intervals are the same whatever the anchor, on connected and disconnected
    designs; the anchor places the ratings alone.

    Args:
        comps: :data:`~voirdire.analysis.ranking.order_views.COMPARISON_SCHEMA` rows.
        features: per (benchmark, question_id, model) the ``names`` columns
            (:func:`answer_features`).
        names: the style features used as covariates.
        anchor, anchor_rating, replicates, level, seed, clusters: as
            :func:`~voirdire.analysis.ranking.boards.fit_boards` (fewer replicates by
            default: each is a Newton fit on every comparison).
        centre: centre the covariates as FastChat does (:func:`style_differences`).

    Returns:
        ``benchmark``, ``judge``, ``strategy``, ``view``, ``term`` (a model's name, or
        ``style:<feature>`` for a covariate), ``rating`` (Arena scale for models, ``±inf``
        where the difference from the anchor is infinite, NaN where undefined; the
        coefficient γ in logit units for covariates), ``lo``, ``hi`` (float; NaN for the
        anchor), ``rank``, ``rank_lo``, ``rank_hi`` (int, as the leaderboards':
        :mod:`~voirdire.analysis.ranking.ranks`; null for covariates).

    Raises:
        ConfigError: a board with one model, an anchor that is not a candidate, an answer
            without features.
    """
    c = _with_features(comps, features, names)
    out = []
    for key, board in c.sort(BOARD_KEYS).group_by(BOARD_KEYS, maintain_order=True):
        models = check_graph(board, " / ".join(key), connected=False)
        anc = anchor or default_anchor(comps.filter(pl.col("benchmark") == key[0]))
        if anc not in models:
            raise ConfigError(
                f"anchor {anc!r} is not a candidate of {' / '.join(key)} (its models: {', '.join(models)})"
            )
        x, a, b = _style_design(board, models, names, centre)
        qs = (
            comps.filter(pl.col("benchmark") == key[0])
            .select("benchmark", "question_id")
            .unique()
        )
        fits: list[tuple[Strengths, np.ndarray]] = []  # the estimate's, the replicates'
        k = len(models)

        def fit(w, x=x, board=board, a=a, b=b, k=k, fits=fits):
            fits.append(_style_strengths(x, board, a, b, k, w))
            return fits[-1][1]

        bootstrap_fit(board, qs, fit, replicates, seed, clusters)
        part = _ranked_terms(
            models, models.index(anc), names, fits[0], fits[1], level, anchor_rating
        )
        out.append(part.with_columns(**dict(zip(BOARD_KEYS, map(pl.lit, key)))))
    return (
        pl.concat(out).select(*BOARD_KEYS, "term", "rating", "lo", "hi", "rank", "rank_lo", "rank_hi")
        if out
        else pl.DataFrame()
    )  # fmt: skip
