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
batched fit per replicate. The length-controlled win rate lives in
:mod:`voirdire.analysis.ranking.length_control` and is importable from here.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
from scipy.special import expit

from voirdire.analysis.ranking.boards import BOARD_KEYS, check_graph, default_anchor
from voirdire.analysis.ranking.bt import CLIP, to_rating
from voirdire.analysis.ranking.length_control import length_controlled
from voirdire.analysis.ranking.refits import bootstrap_fit, percentile_interval
from voirdire.core import ConfigError

__all__ = [
    "STYLE_FEATURES",
    "text_features",
    "style_differences",
    "answer_features",
    "weighted_logit",
    "style_controlled",
    "length_controlled",
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


def weighted_logit(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    max_iter: int = 50,
    tol: float = 1e-10,
) -> np.ndarray:
    """Weighted logistic regression fitted by Newton's method for every row of weights.

    Args:
        x: (N, P) design; y: (N,) outcomes in [0, 1] (fractional allowed); w: (R, N) weights.

    Returns:
        (R, P) coefficients (float), clipped at ±:data:`~voirdire.analysis.ranking.bt.CLIP`.
    """
    beta = np.zeros((w.shape[0], x.shape[1]))
    eye = np.eye(x.shape[1])
    for _ in range(max_iter):
        p = expit(beta @ x.T)
        g = (w * (y - p)) @ x
        h = np.einsum("rn,np,nq->rpq", w * p * (1 - p), x, x, optimize=True)
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
    board: pl.DataFrame, free: list[str], names: tuple[str, ...], centre: bool
) -> np.ndarray:
    """The (N × (len(free) + len(names))) design of one board: +1 / −1 in the columns of
    sides ``a`` / ``b`` among the ``free`` models (the anchor has none), then the style
    differences of :func:`style_differences`."""
    ix = {m: i for i, m in enumerate(free)}
    a, b = board.get_column("a").to_list(), board.get_column("b").to_list()
    x = np.zeros((board.height, len(free) + len(names)))
    for r, (ma, mb) in enumerate(zip(a, b)):
        if ma in ix:
            x[r, ix[ma]] += 1.0
        if mb in ix:
            x[r, ix[mb]] -= 1.0
    fa = board.select(f"{n}_a" for n in names).to_numpy().astype(float)
    fb = board.select(f"{n}_b" for n in names).to_numpy().astype(float)
    x[:, len(free) :] = style_differences(fa, fb, centre=centre)
    return x


def _ranked_terms(
    terms: list[str],
    nf: int,
    fitted: tuple[np.ndarray, np.ndarray, np.ndarray],
    anchor_rating: float,
) -> pl.DataFrame:
    """``term``, ``rating``, ``lo``, ``hi``, ``rank`` of one board from the ``fitted``
    (estimate, lo, hi) coefficients: the anchor (``terms[0]``) at ``anchor_rating``, the
    ``nf`` free models on the Arena scale, the covariates as fitted; the models ranked by
    Arena's rule (1 + the models whose ``lo`` is above one's ``hi``), covariates null."""

    def scale(v: np.ndarray) -> np.ndarray:
        return np.r_[
            to_rating(0.0, anchor_rating), to_rating(v[:nf], anchor_rating), v[nf:]
        ]

    est, lo, hi = fitted
    part = pl.DataFrame(
        {"term": terms, "rating": scale(est), "lo": scale(lo), "hi": scale(hi)}
    )
    m = part.filter(~pl.col("term").str.starts_with("style:"))
    rank = (
        m.join(m.select(olo="lo"), how="cross")
        .group_by("term")
        .agg(rank=(pl.col("olo") > pl.col("hi")).sum().cast(pl.Int64) + 1)
    )
    return part.join(rank, on="term", how="left")


def style_controlled(
    comps: pl.DataFrame, features: pl.DataFrame, *, names: tuple[str, ...] = STYLE_FEATURES, anchor: str | None = None,
    anchor_rating: float = 1000.0, replicates: int = 200, level: float = 0.95, seed: int = 0,
    clusters: pl.DataFrame | None = None, centre: bool = False,
) -> pl.DataFrame:  # fmt: skip
    """Style-controlled Bradley–Terry ratings per board (Chatbot Arena's style control).

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
        ``style:<feature>`` for a covariate), ``rating`` (Arena scale for models; the
        coefficient γ in logit units for covariates), ``lo``, ``hi`` (float), ``rank``
        (int, Arena's rule among the models; null for covariates).

    Raises:
        ConfigError: a board with one model or a disconnected graph, an anchor that is not
            a candidate, an answer without features.
    """
    c = _with_features(comps, features, names)
    out = []
    for key, board in c.sort(BOARD_KEYS).group_by(BOARD_KEYS, maintain_order=True):
        models = check_graph(board, " / ".join(key))
        anc = anchor or default_anchor(comps.filter(pl.col("benchmark") == key[0]))
        if anc not in models:
            raise ConfigError(
                f"anchor {anc!r} is not a candidate of {' / '.join(key)} (its models: {', '.join(models)})"
            )
        free = [m for m in models if m != anc]
        x = _style_design(board, free, names, centre)
        y = (board.get_column("win") + 0.5 * board.get_column("tie")).to_numpy()
        qs = (
            comps.filter(pl.col("benchmark") == key[0])
            .select("benchmark", "question_id")
            .unique()
        )
        est, boot = bootstrap_fit(
            board,
            qs,
            lambda w, x=x, y=y: weighted_logit(x, y, w),
            replicates,
            seed,
            clusters,
        )
        lo, hi = percentile_interval(boot, level)
        terms = [anc, *free, *(f"style:{n}" for n in names)]
        part = _ranked_terms(terms, len(free), (est, lo, hi), anchor_rating)
        out.append(part.with_columns(**dict(zip(BOARD_KEYS, map(pl.lit, key)))))
    return (
        pl.concat(out).select(*BOARD_KEYS, "term", "rating", "lo", "hi", "rank")
        if out
        else pl.DataFrame()
    )
