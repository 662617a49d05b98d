"""Position effect where each pair was judged in one order only (``docs/one-order-and-calibration.md``).

A judgments table holds, per judge, one of three designs (:func:`order_design`):

- ``both``: some pair was judged in both orders; PC, PF and the flip rate apply
  (:mod:`voirdire.analysis.position.metrics`) and nothing here is computed.
- ``randomised``: each pair was judged once, some with the candidate shown first and some
  with the reference first (AlpacaEval draws the order per pair with a seeded coin). The
  order is then a randomised treatment, and the position effect is a randomised
  comparison: a model's win rate when shown first against its win rate when shown second
  (:func:`one_order_effect`). **The two halves differ in instructions too**: each half
  holds other pairs, so the difference mixes the position effect with the chance imbalance
  of the instructions between the halves; the interval and the p-value below account for
  that chance, they cannot remove it from one table.
- ``fixed``: every pair was shown in the same order (all candidate first, or all reference
  first). Position cannot be separated from the pairs: no number is given, only
  :data:`FIXED_MESSAGE`; judging the missing order would separate them.

Win score of the candidate in one verdict: 1 if it was chosen, 0.5 for a tie, 0 if the
reference was chosen (AlpacaEval's convention for its win rate); a failed verdict or a
letter outside the two answers is left out of both numerator and denominator.

Figures per (benchmark, judge) and candidate, and pooled over the candidates:

- ``win_first`` = Σ score over pairs with the candidate first / their number (``n_first``);
- ``win_second`` likewise over the pairs with the candidate second (``n_second``);
- ``effect`` = ``win_first − win_second`` (> 0: the first position is preferred). Pooled:
  the ratios of sums over every candidate's pairs.

Interval: the project's cluster bootstrap
(:func:`~voirdire.analysis.position.uncertainty.cluster_bootstrap`), resampling questions
(or the clusters a benchmark declares), 95 % percentile.

p-value: a randomisation (permutation) test of the order labels within the design (Fisher's
sharp null: each verdict would have been the same in the other order), at the unit the
order was randomised over, which the log's format declares
(:mod:`~voirdire.analysis.stats.order_randomisation`: per pair, per question shared by
every model as AlpacaEval's seeded switch, or none). Why not the bootstrap: under the sharp
null the verdicts are fixed and only the order labels are random, which the design itself
makes exchangeable, so the test's size holds whatever the dependence between pairs of one
instruction and however few instructions there are; the bootstrap's percentile interval is
only asymptotically right and assumes the clusters independent (it draws the benchmark's
clusters, which hold the randomisation unit: AlpacaEval's instructions). Its size is
measured in ``perf/bench_one_order.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from voirdire.analysis.position.pairing import (
    PAIR_KEYS,
    PAIRWISE_MODES,
    candidate_first,
    meet_orders,
    side,
)
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters
from voirdire.analysis.stats.order_randomisation import (
    MIXED_UNIT,
    UNIT_MESSAGES,
    cluster_test,
    pair_test,
)

__all__ = [
    "DESIGN_COLUMNS", "EFFECT_COLUMNS", "FIXED_MESSAGE", "HALVES_MESSAGE", "order_design", "one_order_rows",
    "one_order_effect", "has_one_order", "holm_rejections", "COUNT_ALPHA", "one_order_answers", "COMPLETE_HINT", "recorded_orders",
]  # fmt: skip

JUDGE_KEYS = ["benchmark", "judge"]
#: columns of :func:`order_design`
DESIGN_COLUMNS = [
    *JUDGE_KEYS, "pairs", "both_orders", "candidate_first", "reference_first", "design", "message",
]  # fmt: skip
#: columns of :func:`one_order_effect`; ``candidate`` null on the pooled row
EFFECT_COLUMNS = [
    *JUDGE_KEYS, "design", "candidate", "n_first", "n_second", "win_first", "win_second", "effect",
    "effect_lo", "effect_hi", "p_value", "significant", "significant_p", "message",
]  # fmt: skip
#: the unadjusted level at which ``significant`` counts candidates
COUNT_ALPHA = 0.05
FIXED_MESSAGE = (
    "every pair was shown in one fixed order: position cannot be separated from the pairs; "
    "judging the swapped order of the same pairs would separate them (a live judge with "
    "recorded_as asks only that order: docs/audit.md, Completing a log)"
)
HALVES_MESSAGE = (
    "randomised order, one per pair: the halves shown first and second differ in "
    "instructions too"
)
_SUMS = ["s1", "n1", "s2", "n2"]


def _pairwise(judgments: pl.DataFrame) -> pl.DataFrame:
    rows = judgments
    if "perturbation" in rows.columns:
        rows = rows.filter(pl.col("perturbation") == "control")
    return rows.filter(
        pl.col("mode").is_in(PAIRWISE_MODES) & pl.col("candidate").is_not_null()
    )


def order_design(judgments: pl.DataFrame) -> pl.DataFrame:
    """Which design each judge's pairwise control judgments follow.

    Args:
        judgments: ``voirdire.schema.JUDGMENT_SCHEMA`` rows (read: the
            :data:`~voirdire.analysis.position.metrics.PAIR_KEYS`, ``shown``, ``mode``,
            ``perturbation`` when present).

    Returns:
        :data:`DESIGN_COLUMNS`, one row per (benchmark, judge) with pairwise rows:
        ``pairs`` (int: judgment pairs), ``both_orders`` (pairs judged in both orders),
        ``candidate_first`` / ``reference_first`` (one-order pairs shown that way),
        ``design`` (``"both"`` when any pair has both orders, else ``"randomised"`` when
        both one-order kinds occur, else ``"fixed"``) and ``message`` (str, null for
        ``both``).
    """
    per_order = _pairwise(judgments).lazy().select(*PAIR_KEYS, side=side())
    pairs = meet_orders(per_order, PAIR_KEYS, {}).collect()
    f, s = pl.col("asked1"), pl.col("asked2")
    out = pairs.group_by(JUDGE_KEYS).agg(
        pairs=pl.len().cast(pl.Int64),
        both_orders=(f & s).sum().cast(pl.Int64),
        candidate_first=(f & ~s).sum().cast(pl.Int64),
        reference_first=(s & ~f).sum().cast(pl.Int64),
    )
    design = (
        pl.when(pl.col("both_orders") > 0)
        .then(pl.lit("both"))
        .when((pl.col("candidate_first") > 0) & (pl.col("reference_first") > 0))
        .then(pl.lit("randomised"))
        .otherwise(pl.lit("fixed"))
    )
    return (
        out.with_columns(design=design)
        .with_columns(
            message=pl.when(pl.col("design") == "fixed")
            .then(pl.lit(FIXED_MESSAGE))
            .when(pl.col("design") == "randomised")
            .then(pl.lit(HALVES_MESSAGE))
        )
        .select(DESIGN_COLUMNS)
        .sort(JUDGE_KEYS)
    )


def has_one_order(judgments: pl.DataFrame) -> bool:
    """Whether some judge's pairwise judgments are one order per pair (randomised or fixed)."""
    if not {"mode", "candidate", "shown"} <= set(judgments.columns):
        return False
    return order_design(judgments).filter(pl.col("design") != "both").height > 0


def one_order_rows(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per scored verdict of the judges whose design is ``randomised`` or ``fixed``:
    the :data:`~voirdire.analysis.position.metrics.PAIR_KEYS`, ``first`` (bool: the
    candidate was shown first) and ``score`` (float: 1 candidate chosen, 0.5 tie, 0
    reference chosen); failed verdicts and letters outside the two answers left out."""
    design = order_design(judgments).filter(pl.col("design") != "both")
    ok = ~(pl.col("failed").fill_null(True) | pl.col("extracted").is_null())
    score = (
        pl.when(pl.col("tie").fill_null(False))
        .then(0.5)
        .when(pl.col("chosen") == pl.col("candidate"))
        .then(1.0)
        .when(pl.col("chosen") == pl.col("reference"))
        .then(0.0)
    )
    return (
        _pairwise(judgments)
        .join(design.select(JUDGE_KEYS), on=JUDGE_KEYS)
        .filter(ok)
        .select(
            *PAIR_KEYS,
            first=candidate_first(),
            score=score,
        )
        .filter(pl.col("score").is_not_null())
    )


def _difference(s: dict[str, np.ndarray], pooled: bool) -> np.ndarray:
    """win_first − win_second per replicate: per cell ((R, U)) or pooled ((R,))."""
    a, n1, b, n2 = (s[c] for c in _SUMS)
    if pooled:
        a, n1, b, n2 = (x.sum(1) for x in (a, n1, b, n2))
    return np.where(
        (n1 > 0) & (n2 > 0),
        a / np.where(n1 > 0, n1, 1) - b / np.where(n2 > 0, n2, 1),
        np.nan,
    )


def _statistics(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"effect": _difference(s, False), "pooled": _difference(s, True)}


def one_order_effect(
    judgments: pl.DataFrame,
    *,
    replicates: int = 1000,
    permutations: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
    units: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """The position effect of the judges that judged each pair in one order only.

    Args:
        judgments: ``voirdire.schema.JUDGMENT_SCHEMA`` rows (pairwise and score
            mode; control rows only are read).
        replicates: cluster-bootstrap replicates of the interval; permutations: shuffles of
            the randomisation test; level: interval coverage; seed: numpy seed (one for the
            bootstrap, one derived stream for the shuffles).
        clusters: drawn instead of the questions where a benchmark declares them
            (:func:`~voirdire.analysis.position.uncertainty.in_clusters`).
        units: the randomisation unit of each benchmark's order (``"pair"``, ``"cluster"``:
            its ``clusters``, or its questions where it declares none, ``"none"``;
            :func:`~voirdire.analysis.position.clusters.benchmark_order_units`); a
            benchmark not named: ``"pair"``.

    Returns:
        :data:`EFFECT_COLUMNS`: for a ``randomised`` judge one row per candidate and a
        pooled row (``candidate`` null): ``n_first``, ``n_second`` (int: scored verdicts),
        ``win_first``, ``win_second``, ``effect`` (float, shares; NaN where a half is
        empty), ``effect_lo``/``effect_hi`` (the percentile interval), ``p_value`` (the
        randomisation test at the benchmark's unit; NaN where a half is empty or the
        order was not randomised), on the pooled row ``significant`` (int: candidates with
        ``p ≤`` :data:`COUNT_ALPHA`, unadjusted) and ``significant_p`` (float: the chance of
        at least that many under the sharp null, from the same shuffles at the same unit:
        :meth:`~.order_randomisation.OrderTest.count_null`; null on candidate rows), and
        ``message`` (:data:`HALVES_MESSAGE` and what the test
        shuffled, :data:`~.order_randomisation.UNIT_MESSAGES`); for a ``fixed`` judge one row with null figures and
        :data:`FIXED_MESSAGE`. Empty (with these columns) when every judge has both orders.
    """
    design = order_design(judgments).filter(pl.col("design") != "both")
    rows = one_order_rows(judgments)
    parts = []
    fixed = design.filter(pl.col("design") == "fixed")
    if fixed.height:
        parts.append(fixed.select(*JUDGE_KEYS, "design", "message"))
    rand = design.filter(pl.col("design") == "randomised").select(
        *JUDGE_KEYS, "message"
    )
    rows = rows.join(rand.select(JUDGE_KEYS), on=JUDGE_KEYS)
    if rows.height:
        parts.append(
            _randomised(rows, rand, replicates, permutations, level, seed, clusters, units or {})
        )  # fmt: skip
    schema = {
        "benchmark": pl.String, "judge": pl.String, "design": pl.String, "candidate": pl.String,
        "n_first": pl.Int64, "n_second": pl.Int64, "win_first": pl.Float64,
        "win_second": pl.Float64, "effect": pl.Float64, "effect_lo": pl.Float64,
        "effect_hi": pl.Float64, "p_value": pl.Float64, "significant": pl.Int64,
        "significant_p": pl.Float64, "message": pl.String,
    }  # fmt: skip
    if not parts:
        return pl.DataFrame(schema=schema)
    out = pl.concat(parts, how="diagonal_relaxed")
    return (
        out.with_columns([pl.lit(None, dtype=t).alias(c) for c, t in schema.items() if c not in out.columns])
        .select([pl.col(c).cast(t) for c, t in schema.items()])
        .sort(*JUDGE_KEYS, "candidate", nulls_last=True)
    )  # fmt: skip


def _randomised(
    rows: pl.DataFrame,
    rand: pl.DataFrame,
    replicates: int,
    permutations: int,
    level: float,
    seed: int,
    clusters: pl.DataFrame | None,
    units: Mapping[str, str],
) -> pl.DataFrame:
    """The figures of the randomised judges (:func:`one_order_effect`)."""
    rows = rows.sort(PAIR_KEYS, maintain_order=True)  # the shuffles' order: the table's
    f = pl.col("first")
    sums = rows.select(
        *JUDGE_KEYS, "candidate", "question_id",
        s1=pl.when(f).then(pl.col("score")).otherwise(0.0),
        n1=f.cast(pl.Float64),
        s2=pl.when(~f).then(pl.col("score")).otherwise(0.0),
        n2=(~f).cast(pl.Float64),
    )  # fmt: skip
    ci = cluster_bootstrap(
        in_clusters(sums, clusters), _SUMS, _statistics, groups=["judge"], cells=["candidate"],
        replicates=replicates, level=level, seed=seed,
    )  # fmt: skip
    ci = ci.filter(pl.col("metric") != "pooled").vstack(
        ci.filter(pl.col("metric") == "pooled").with_columns(
            pl.lit(None, dtype=ci.schema["candidate"]).alias("candidate")
        )
    )
    counts = pl.concat(
        [
            sums.group_by(*JUDGE_KEYS, "candidate").agg(pl.col(_SUMS).sum()),
            sums.group_by(JUDGE_KEYS)
            .agg(pl.col(_SUMS).sum())
            .with_columns(pl.lit(None, dtype=pl.String).alias("candidate")),
        ],
        how="diagonal",
    ).select(
        *JUDGE_KEYS, "candidate",
        n_first=pl.col("n1").cast(pl.Int64), n_second=pl.col("n2").cast(pl.Int64),
        win_first=pl.when(pl.col("n1") > 0).then(pl.col("s1") / pl.col("n1")),
        win_second=pl.when(pl.col("n2") > 0).then(pl.col("s2") / pl.col("n2")),
    )  # fmt: skip
    pvals, said = _p_values(rows, permutations, seed, clusters, units)
    keys = [*JUDGE_KEYS, "candidate"]
    return (
        counts.join(
            ci.select(*keys, effect="estimate", effect_lo="lo", effect_hi="hi"),
            on=keys, how="left", nulls_equal=True,
        )
        .join(pvals, on=keys, how="left", nulls_equal=True)
        .join(rand, on=JUDGE_KEYS, how="left")
        .join(said, on=JUDGE_KEYS, how="left")
        .with_columns(design=pl.lit("randomised"),
                      message=pl.concat_str("message", "test", separator="; ", ignore_nulls=True))
        .drop("test")
    )  # fmt: skip


def _p_values(
    rows: pl.DataFrame,
    permutations: int,
    seed: int,
    clusters: pl.DataFrame | None,
    units: Mapping[str, str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The randomisation p per (benchmark, judge, candidate) and pooled (candidate null) at
    each benchmark's unit, the pooled row also ``significant``/``significant_p`` (the count
    of candidates at :data:`COUNT_ALPHA` and its null), and per judge what the test
    shuffled (``test``)."""
    rng = np.random.default_rng([seed, 1])
    with_unit = in_clusters(rows.with_columns(unit=pl.col("question_id")), clusters)
    with_unit = with_unit.with_columns(unit=pl.col("question_id"))
    p_rows, said = [], []
    for (b, j), grp in with_unit.group_by(JUDGE_KEYS, maintain_order=True):
        unit = units.get(b, "pair")
        test = None
        if unit == "cluster":
            test = cluster_test(grp, permutations, rng)
            said.append((b, j, UNIT_MESSAGES[unit] if test is not None else MIXED_UNIT))
        elif unit == "none":
            said.append((b, j, UNIT_MESSAGES[unit]))
            cands = grp.get_column("candidate").unique().to_list()
            p_rows.extend((b, j, c, float("nan"), None, None) for c in [*cands, None])
            continue
        else:
            said.append((b, j, UNIT_MESSAGES["pair"]))
        if test is None:
            test = pair_test(grp, permutations, rng)
        count, count_p = test.count_null(COUNT_ALPHA)
        for c, p in test.p_values().items():
            p_rows.append(
                (b, j, c, p, *((count, count_p) if c is None else (None, None)))
            )
    pvals = pl.DataFrame(
        p_rows,
        schema={
            "benchmark": pl.String,
            "judge": pl.String,
            "candidate": pl.String,
            "p_value": pl.Float64,
            "significant": pl.Int64,
            "significant_p": pl.Float64,
        },
        orient="row",
    )
    return pvals, pl.DataFrame(said, schema=[*JUDGE_KEYS, "test"], orient="row")  # fmt: skip


#: how a one-order log gets PC, PF and κ: the other order judged (docs/audit.md)
COMPLETE_HINT = (
    "PC, PF and κ need both orders: a live judge with recorded_as asks only the missing "
    "order (docs/audit.md, Completing a log)"
)


def holm_rejections(p_values: np.ndarray, alpha: float = 0.05) -> int:
    """How many of ``p_values`` Holm's step-down procedure rejects at family-wise level
    ``alpha`` (Holm 1979: sorted ascending, the ``i``-th (from 0) is rejected while
    ``p ≤ alpha / (m − i)``); NaNs are not hypotheses."""
    p = np.sort(np.asarray(p_values, dtype=float)[~np.isnan(p_values)])
    m = p.size
    k = 0
    while k < m and p[k] <= alpha / (m - k):
        k += 1
    return k


def _answer(judge: str, rows: pl.DataFrame, alpha: float, many: bool) -> str:
    """One judge's sentence (its :func:`one_order_effect` rows)."""
    who = f"{judge}: " if many else ""
    pooled = rows.filter(pl.col("candidate").is_null())
    if rows.get_column("design")[0] == "fixed" or not pooled.height:
        return f"{who}{FIXED_MESSAGE}"
    r = pooled.row(0, named=True)
    e, lo, hi, pv = r["effect"], r["effect_lo"], r["effect_hi"], r["p_value"]
    n = (r["n_first"] or 0) + (r["n_second"] or 0)
    if e is None or not np.isfinite(e):
        return f"{who}one order per pair, but no model was scored in both positions"
    models = rows.filter(pl.col("candidate").is_not_null())
    k = holm_rejections(models.get_column("p_value").to_numpy(), alpha)
    where = "less" if e < 0 else "more"
    unit = "per question" if "whole questions" in (r["message"] or "") else "per pair"
    return (
        f"{who}shown first, a model wins {abs(e) * 100:.1f} points {where} than shown second "
        f"({e:+.3f} [{lo:+.3f}, {hi:+.3f}], randomisation p {pv:.2g} with the order drawn "
        f"{unit}, {n:,} verdicts); {k} of {models.height} models differ at {alpha:g} after "
        f"Holm's correction{_count_clause(r)}"
    )


def _count_clause(pooled: dict) -> str:
    """`` (k at p ≤ 0.05 unadjusted; as many with no position effect: p x)``, or nothing
    where the count's null is undefined."""
    k, p = pooled.get("significant"), pooled.get("significant_p")
    if k is None or p is None or not np.isfinite(p):
        return ""
    return (
        f" ({k} at p ≤ {COUNT_ALPHA:g} unadjusted; as many with no position effect: "
        f"p {p:.2g})"
    )


def one_order_answers(effect: pl.DataFrame, alpha: float = 0.05) -> dict[str, str]:
    """The answer of each benchmark whose judges judged every pair in one order (a
    :func:`one_order_effect` table): the pooled first-minus-second win rate with its
    interval and randomisation p, how many models differ after Holm's correction
    (:func:`holm_rejections`), and what would give PC, PF and κ (:data:`COMPLETE_HINT`);
    a fixed order says position cannot be told apart (:data:`FIXED_MESSAGE`).

    Returns:
        ``{benchmark: sentence}``, the benchmark's name first; benchmarks with no row
        are absent."""
    out: dict[str, str] = {}
    if not effect.height:
        return out
    for (b,), rows in effect.sort("benchmark", "judge").group_by(
        "benchmark", maintain_order=True
    ):
        judges = rows.get_column("judge").unique(maintain_order=True).to_list()
        parts = [
            _answer(j, rows.filter(pl.col("judge") == j), alpha, len(judges) > 1)
            for j in judges
        ]
        fixed = all(p.endswith(FIXED_MESSAGE) for p in parts)
        tail = "" if fixed else f". {COMPLETE_HINT[0].upper()}{COMPLETE_HINT[1:]}."
        out[b] = f"{b}, one order per pair: " + "; ".join(parts) + (tail or ".")
    return out


def recorded_orders(
    judges: list[dict], judgments: pl.DataFrame, design: pl.DataFrame | None = None
) -> str | None:
    """What a job of replayed judges (``judges``: ``job.json``'s judge records, every one
    ``backend = "replay"``: an audit, a replay) recorded of the orders, for the settings a
    report shows in place of the job's ``permutations`` (which the log's judge never
    read): ``"as recorded: K of N pairs in both orders"``; None for a job with a live
    judge. ``design``: :func:`order_design` of ``judgments`` when already computed."""
    if not judges or any(j.get("backend") != "replay" for j in judges):
        return None
    d = order_design(judgments) if design is None else design
    if not d.height:
        return None
    both, pairs = (
        int(d.get_column("both_orders").sum()),
        int(d.get_column("pairs").sum()),
    )
    return f"as recorded: {both:,} of {pairs:,} pairs in both orders"
