"""Factor regression of position consistency and preference fairness (statsmodels OLS).

Source: Shi et al., "Judging the Judges", the factor analysis (per benchmark and combined);
``docs/metrics.md``, *Factor regression*. One observation per cell (benchmark, judge,
candidate, task) with ``pc`` or ``pf`` as the response; cells with ``v = 0`` (every pair
failed or fell in no class) are left out: their PC, PF, owr and δq are not measurements
(δq would read 0.5, the largest gap). A judge that judged every pair in one order only
has no such cell (its PC, PF and owr are null); it is left out and named
(:func:`one_order_notes`), not dropped silently. Candidate terms:

- categorical (enter and leave as a whole, treatment coding, first level as baseline):
  ``judge``, ``candidate``, ``task``, ``judge_family`` (derived from the judge's name by
  :func:`judge_family`) and any string attribute the user supplies per judge;
- numeric: ``quality_gap`` (δq), the mean lengths ``input_chars``, ``output_chars``,
  ``prompt_chars`` (and ``*_tokens`` when present), and any numeric judge attribute
  (context window, price, ...). Numeric columns are standardised (z-scores) before
  fitting; this changes no RSS and keeps the design well conditioned.

Selection: bidirectional stepwise by AIC with R's ``step()`` convention for linear models,
``AIC = n·ln(RSS/n) + 2k`` with ``k`` the rank of the design (R's ``extractAIC`` with
``scale = 0``). Start from the full model; at each step try dropping every term in it and
adding every term out of it. As R's ``step()``: a term that adds no column of rank once
the others are in (aliased: e.g. ``judge_family`` next to ``judge``) has 0 Df and is
dropped before anything else (the last-listed such term first), and adding a term of 0 Df
is never a candidate move; otherwise the move with the lowest AIC is taken when its AIC is strictly below the current model's (a tie with the
current model keeps it: R orders ``<none>`` first), and the search stops when, after the
move, the new AIC is ≥ the previous AIC + 1e-7 (R's guard; for a linear model the move's
AIC is the new model's, so the strict comparison decides) or when no move lowers it.

The designs and fits compared: :func:`design_blocks` (per-term columns: treatment-coded
dummies or a z-scored numeric), :class:`Gram` (every submodel's RSS and rank from one
cross-product matrix; :func:`scorer` adds R's AIC, :func:`aic`) and :func:`final_fit` (the
selected model by statsmodels OLS).

The final model is reported as R's ``drop1`` table: ``<none>`` (the final model) and one
row per term: ``Df`` (rank lost when the term is dropped), ``Sum of Sq`` (RSS increase),
``RSS``, ``AIC``; ordered by AIC as R's ``step()`` prints it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from voirdire.analysis.position.formulas import valid

__all__ = [
    "aic",
    "design_blocks",
    "design",
    "Gram",
    "scorer",
    "ols_fit",
    "final_fit",
    "CATEGORICAL_TERMS",
    "NUMERIC_TERMS",
    "judge_family",
    "regression_frame",
    "StepResult",
    "stepwise",
    "factor_regressions",
    "one_order_judges",
    "one_order_notes",
    "drop1_tables",
]


def aic(rss: float, n: int, k: int) -> float:
    """R's ``extractAIC`` for a linear model: ``n·ln(RSS/n) + 2k`` (``-inf`` when RSS = 0)."""
    if rss <= 0:
        return -math.inf
    return n * math.log(rss / n) + 2 * k


def design_blocks(
    df: pl.DataFrame, terms: Sequence[str]
) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Design columns per term: dummies (treatment coding) or a standardised numeric."""
    out = {}
    for t in terms:
        s = df.get_column(t)
        if s.dtype == pl.String or s.dtype == pl.Categorical or s.dtype == pl.Boolean:
            s = s.cast(pl.String)
            levels = sorted(s.unique().to_list())
            vals = s.to_numpy()
            cols = [(vals == lv).astype(float) for lv in levels[1:]]
            out[t] = (
                np.column_stack(cols) if cols else np.zeros((len(vals), 0)),
                [f"{t}[{lv}]" for lv in levels[1:]],
            )
        else:
            x = s.cast(pl.Float64).to_numpy()
            sd = x.std()
            out[t] = (((x - x.mean()) / (sd if sd > 0 else 1.0))[:, None], [t])
    return out


def design(n: int, blocks: dict, terms: Sequence[str]) -> np.ndarray:
    """The (n × 1 + Σ block widths) design: an intercept column, then ``terms``' blocks."""
    return np.column_stack([np.ones(n), *[blocks[t][0] for t in terms]])


class Gram:
    """Cross-products of the full design, computed once: every submodel's RSS and rank
    come from its block of ``Z'Z`` and ``Z'y`` (O(k³) per model, independent of n).

    RSS = y'y − c'G⁺c with ``G = X'X``, ``c = X'y`` and ``G⁺`` the pseudo-inverse over the
    eigenvalues above ``λ_max · 1e-10`` (their count is the rank of ``X``).
    """

    def __init__(self, y: np.ndarray, blocks: dict, terms: Sequence[str]) -> None:
        z = design(len(y), blocks, terms)
        self.g = z.T @ z
        self.c = z.T @ y
        self.yy = float(y @ y)
        self.cols: dict[str, np.ndarray] = {}
        start = 1
        for t in terms:
            w = blocks[t][0].shape[1]
            self.cols[t] = np.arange(start, start + w)
            start += w

    def rss_rank(self, terms: Sequence[str]) -> tuple[float, int]:
        """``(RSS, rank)`` of the submodel with the intercept and ``terms``."""
        idx = np.concatenate(
            [np.zeros(1, dtype=np.int64), *[self.cols[t] for t in terms]]
        )
        g, c = self.g[np.ix_(idx, idx)], self.c[idx]
        lam, vec = np.linalg.eigh(g)
        keep = lam > max(lam.max(), 0.0) * 1e-10
        proj = vec[:, keep].T @ c
        return max(self.yy - float(proj @ (proj / lam[keep])), 0.0), int(keep.sum())


def scorer(
    gram: Gram, terms: Sequence[str], n: int
) -> Callable[[Sequence[str]], tuple[float, int, float]]:
    """``score(model) -> (RSS, rank, AIC)`` of a submodel of ``terms`` (its terms in the
    order of ``terms``), each set of terms computed once."""
    cache: dict[frozenset, tuple[float, int]] = {}

    def score(model: Sequence[str]) -> tuple[float, int, float]:
        key = frozenset(model)
        if key not in cache:
            cache[key] = gram.rss_rank([t for t in terms if t in key])
        rss, k = cache[key]
        return rss, k, aic(rss, n, k)

    return score


def ols_fit(y: np.ndarray, blocks: dict, terms: Sequence[str]):
    """The final model, fitted by statsmodels OLS (pseudo-inverse: aliased columns share).
    statsmodels is imported here, when a regression runs: writing a directory's analysis
    reads this module's notes and must not pay its second of imports."""
    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.OLS(y, design(len(y), blocks, terms)).fit()


def final_fit(
    y: np.ndarray, blocks: dict, model: list[str]
) -> tuple[pl.DataFrame, float]:
    """The selected model fitted by OLS (statsmodels): its coefficients (``name``,
    ``estimate``, ``std_error``, ``p_value``) and R² (NaN when undefined)."""
    res = ols_fit(y, blocks, model)
    names = ["(Intercept)", *[nm for t in model for nm in blocks[t][1]]]
    # statsmodels computes these lazily: with no residual degree of freedom (a tiny study)
    # they divide by zero, which is NaN here, not a warning on the user's terminal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        coef = pl.DataFrame(
            {
                "name": names,
                "estimate": np.asarray(res.params, dtype=float),
                "std_error": np.asarray(res.bse, dtype=float),
                "p_value": np.asarray(res.pvalues, dtype=float),
            }
        )
        r2 = float(res.rsquared)
    return coef, r2 if np.isfinite(r2) else float("nan")


CATEGORICAL_TERMS = ["judge", "candidate", "task", "judge_family"]
NUMERIC_TERMS = [
    "quality_gap",
    "input_chars",
    "output_chars",
    "prompt_chars",
    "input_tokens",
    "output_tokens",
    "prompt_tokens",
]

#: (pattern, family) tried in order against the lower-cased judge name
_FAMILIES = [
    (r"gpt-4o", "gpt-4o"),
    (r"gpt-4", "gpt-4"),
    (r"gpt-3\.5", "gpt-3.5"),
    (r"o[13](-|$)", "openai-o"),
    (r"claude-3-5|claude-3\.5", "claude-3.5"),
    (r"claude-3", "claude-3"),
    (r"claude", "claude"),
    (r"gemini-1\.5", "gemini-1.5"),
    (r"gemini", "gemini"),
    (r"llama-?3", "llama-3"),
    (r"llama", "llama"),
    (r"mi[sx]tral", "mistral"),
    (r"qwen", "qwen"),
]
_AIC_TOL = 1e-7


def judge_family(name: str) -> str:
    """The family of a judge from its name: ``gpt-4-0613`` → ``gpt-4``,
    ``gpt-3.5-turbo-1106`` → ``gpt-3.5``, ``claude-3-opus-20240229`` → ``claude-3``,
    ``gemini-pro`` → ``gemini``, ...; otherwise the name up to its first ``-`` (ours)."""
    low = name.lower()
    for pat, fam in _FAMILIES:
        if re.search(pat, low):
            return fam
    return low.split("-")[0] or low


def regression_frame(
    cells: pl.DataFrame, judge_attributes: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Observations for the regression: the cells with ``v > 0`` (at least one consistent
    or inconsistent pair / series: ``docs/metrics.md``, *Per judge*), ``judge_family`` added
    and the user's judge attributes joined.

    Args:
        cells: cell metrics (``voirdire.analysis.position.formulas.CELL_COLUMNS``; token columns
            optional).
        judge_attributes: optional table with a ``judge`` column (str) and one column per
            attribute (numeric: a numeric term; string: a categorical term). Judges
            absent from it get nulls, and cells with a null in a term's column are left out
            of regressions using that term set.

    Raises:
        ValueError: ``cells`` lacks a count column (``n``, ``consistent``, ``primacy``,
            ``recency``, ``balanced``), or ``judge_attributes`` lacks a ``judge`` column or
            names a column that collides with a cell column.
    """
    missing = [
        c
        for c in ("n", "consistent", "primacy", "recency", "balanced")
        if c not in cells.columns
    ]
    if missing:
        raise ValueError(f"cell metrics lack column(s) {missing}")
    df = cells.filter((pl.col("n") > 0) & (valid() > 0)).with_columns(
        judge_family=pl.col("judge").map_elements(judge_family, return_dtype=pl.String)
    )
    if judge_attributes is not None:
        if "judge" not in judge_attributes.columns:
            raise ValueError("judge attributes need a 'judge' column")
        clash = [
            c for c in judge_attributes.columns if c != "judge" and c in df.columns
        ]
        if clash:
            raise ValueError(
                f"judge attribute column(s) {clash} collide with cell columns"
            )
        df = df.join(
            judge_attributes.unique("judge", keep="first"), on="judge", how="left"
        )
    return df


def one_order_judges(cells: pl.DataFrame) -> pl.DataFrame:
    """The (benchmark, judge) pairs of ``cells`` (cell metrics) none of whose cells has a
    pair judged in both orders (``both_orders`` 0 in every cell: a one-order log's judge),
    sorted; empty where ``cells`` has no ``both_orders`` column."""
    if "both_orders" not in cells.columns:
        return cells.select("benchmark", "judge").clear()
    return (
        cells.group_by("benchmark", "judge")
        .agg(pl.col("both_orders").sum())
        .filter(pl.col("both_orders") == 0)
        .select("benchmark", "judge")
        .sort("benchmark", "judge")
    )


def one_order_notes(cells: pl.DataFrame) -> list[str]:
    """One line per judge of :func:`one_order_judges`: the regression left it out because
    it has one order only (plain text: escape it where it is shown)."""
    return [
        f"{b}: judge {j} left out of the regression: it has one order only (no pair "
        "judged in both orders, so its cells have no PC or PF)"
        for b, j in one_order_judges(cells).iter_rows()
    ]


def candidate_terms(df: pl.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    """Terms that can enter: present, non-null and not constant in ``df`` (a term with one
    level or zero variance has no effect to estimate)."""
    out = []
    for t in [*CATEGORICAL_TERMS, *NUMERIC_TERMS, *extra]:
        if (
            t in df.columns
            and t not in out
            and df.get_column(t).drop_nulls().n_unique() > 1
        ):
            out.append(t)
    return out


@dataclass
class StepResult:
    """Outcome of :func:`stepwise`.

    Attributes:
        response: the response column (``"pc"`` or ``"pf"``).
        scope: what was regressed (a benchmark name or ``"combined"``).
        n: observations (cells).
        start: the candidate terms (the starting full model).
        terms: the selected terms, in scope order.
        drop1: R's drop1 table of the final model: ``term`` (str, ``<none>`` first row
            before sorting), ``Df`` (int, null for ``<none>``), ``Sum of Sq`` (float),
            ``RSS`` (float), ``AIC`` (float); sorted by AIC.
        path: the moves: ``step`` (int), ``move`` (``"- term"`` / ``"+ term"``, first row
            ``""``), ``Df``, ``RSS``, ``AIC`` after the move.
        coefficients: the final OLS fit: ``name``, ``estimate``, ``std_error``, ``p_value``
            (numeric terms in standard-deviation units).
        r_squared: of the final fit.
    """

    response: str
    scope: str
    n: int
    start: list[str]
    terms: list[str]
    drop1: pl.DataFrame
    path: pl.DataFrame
    coefficients: pl.DataFrame
    r_squared: float
    notes: list[str] = field(default_factory=list)


def _observations(
    df: pl.DataFrame, response: str, terms: Sequence[str], scope: str
) -> pl.DataFrame:
    """The rows of ``df`` with the response and every term present.

    Raises:
        ValueError: an unknown column, or fewer than 3 rows left.
    """
    missing = [c for c in [response, *terms] if c not in df.columns]
    if missing:
        raise ValueError(f"unknown column(s) {missing}")
    data = df.drop_nulls([response, *terms])
    if data.height < 3:
        raise ValueError(
            f"{scope or 'regression'}: {data.height} observations, need at least 3"
        )
    return data


def _best_move(
    model: list[str], terms: Sequence[str], score: Callable, k: int, cur: float
) -> tuple | None:
    """The move R's ``step()`` takes from ``model`` (rank ``k``, AIC ``cur``), or None to stop.

    A move is ``(AIC, "- term" | "+ term", Df, RSS, rank)`` after it: every drop, then
    every add, in term order. A 0-Df (aliased) drop is taken first, the last-listed one;
    otherwise the move of lowest AIC among those of non-zero Df, if strictly below ``cur``.
    """
    moves = []
    for t in model:
        r2, k2, a2 = score([m for m in model if m != t])
        moves.append((a2, f"- {t}", k - k2, r2, k2))
    for t in terms:
        if t not in model:
            r2, k2, a2 = score([*model, t])
            moves.append((a2, f"+ {t}", k2 - k, r2, k2))
    aliased = [m for m in moves if m[1].startswith("- ") and m[2] == 0]
    if aliased:  # as R's step(): drop a 0-Df (aliased) term first, the last-listed one
        return aliased[-1]
    # R leaves out moves of 0 Df (adding an aliased term) and orders the others by
    # AIC with <none> (the current model) first: a move is taken only when its AIC
    # is strictly lower
    moves = [m for m in moves if m[2] != 0]
    best = min(moves, key=lambda m: m[0]) if moves else None
    if best is None or not best[0] < cur:
        return None
    return best


def _drop1(
    model: list[str], score: Callable, rss: float, k: int, cur: float
) -> pl.DataFrame:
    """R's ``drop1`` table of ``model`` (RSS ``rss``, rank ``k``, AIC ``cur``): ``term``,
    ``Df``, ``Sum of Sq``, ``RSS``, ``AIC``, ``<none>`` and one row per term, by AIC."""
    rows = [("<none>", None, None, rss, cur)]
    for t in model:
        r2, k2, a2 = score([m for m in model if m != t])
        rows.append((t, k - k2, r2 - rss, r2, a2))
    return pl.DataFrame(
        rows,
        schema={
            "term": pl.String,
            "Df": pl.Int64,
            "Sum of Sq": pl.Float64,
            "RSS": pl.Float64,
            "AIC": pl.Float64,
        },
        orient="row",
    ).sort("AIC")


def stepwise(
    df: pl.DataFrame,
    response: str,
    terms: Sequence[str] | None = None,
    *,
    scope: str = "",
    max_steps: int = 1000,
) -> StepResult:
    """Bidirectional stepwise selection by AIC from the full model; see the module docstring.

    Args:
        df: observations (e.g. :func:`regression_frame`); rows with a null in the response
            or a candidate term are dropped.
        response: response column.
        terms: candidate terms (default :func:`candidate_terms` of ``df``).

    Raises:
        ValueError: fewer than 3 observations, or an unknown column.
    """
    terms = list(terms) if terms is not None else candidate_terms(df)
    data = _observations(df, response, terms, scope)
    n = data.height
    y = data.get_column(response).cast(pl.Float64).to_numpy()
    blocks = design_blocks(data, terms)
    terms = [t for t in terms if blocks[t][0].shape[1] > 0]
    score = scorer(Gram(y, blocks, terms), terms, n)
    model = list(terms)
    rss, k, cur = score(model)
    path = [(0, "", None, rss, cur)]
    notes: list[str] = []
    for step in range(1, max_steps + 1):
        best = _best_move(model, terms, score, k, cur)
        if best is None:
            break
        a2, move, df_, r2, k2 = best
        if (
            a2 >= cur + _AIC_TOL
        ):  # R's guard after the move: `if (bAIC >= AIC + 1e-07) break`
            break
        t = move[2:]
        model = (
            [m for m in model if m != t]
            if move.startswith("- ")
            else [m for m in terms if m in {*model, t}]
        )
        if df_ == 0:
            notes.append(f"{t} dropped: aliased (0 Df) with the other terms")
        rss, k, cur = r2, k2, a2
        path.append((step, move, df_, rss, cur))
    drop1 = _drop1(model, score, rss, k, cur)
    path_df = pl.DataFrame(
        path,
        schema={
            "step": pl.Int64,
            "move": pl.String,
            "Df": pl.Int64,
            "RSS": pl.Float64,
            "AIC": pl.Float64,
        },
        orient="row",
    )
    coef, r2 = final_fit(y, blocks, model)
    return StepResult(
        response, scope, n, list(terms), model, drop1, path_df, coef, r2, notes
    )


def factor_regressions(
    cells: pl.DataFrame,
    judge_attributes: pl.DataFrame | None = None,
    responses: Sequence[str] = ("pc", "pf"),
    combined: bool = True,
) -> list[StepResult]:
    """Stepwise regressions per benchmark and, with several benchmarks, combined.

    Args:
        cells: cell metrics (one row per cell, see :func:`regression_frame`).
        judge_attributes: optional per-judge attributes (see :func:`regression_frame`).
        responses: response columns.
        combined: also regress all benchmarks together (``scope == "combined"``; the task
            term nests the benchmark, candidates with the same name are one level).

    Returns:
        One :class:`StepResult` per (scope, response) that has at least 3 observations and
        one candidate term; benchmark scopes sorted by name, then ``combined``. Its
        ``notes`` name the scope's judges left out for having one order only
        (:func:`one_order_notes`).
    """
    df = regression_frame(cells, judge_attributes)
    extra = [
        c
        for c in (judge_attributes.columns if judge_attributes is not None else [])
        if c != "judge"
    ]
    scopes: list[tuple[str, pl.DataFrame]] = [
        (b, df.filter(pl.col("benchmark") == b))
        for b in sorted(df.get_column("benchmark").unique().to_list())
    ]
    if combined and len(scopes) > 1:
        scopes.append(("combined", df))
    out = []
    for scope, part in scopes:
        terms = candidate_terms(part, extra)
        if part.height < 3 or not terms:
            continue
        mine = cells if scope == "combined" else cells.filter(benchmark=scope)
        for r in responses:
            res = stepwise(part, r, terms, scope=scope)
            res.notes[:0] = one_order_notes(mine)
            out.append(res)
    return out


def drop1_tables(results: Sequence[StepResult]) -> pl.DataFrame:
    """All drop1 tables stacked, with ``scope`` and ``response`` columns first."""
    frames = [
        r.drop1.with_columns(scope=pl.lit(r.scope), response=pl.lit(r.response))
        for r in results
    ]
    if not frames:
        return pl.DataFrame(
            schema={
                "scope": pl.String,
                "response": pl.String,
                "term": pl.String,
                "Df": pl.Int64,
                "Sum of Sq": pl.Float64,
                "RSS": pl.Float64,
                "AIC": pl.Float64,
            }
        )
    return pl.concat(frames).select(
        "scope", "response", "term", "Df", "Sum of Sq", "RSS", "AIC"
    )
