"""The mitigation evaluation table: every strategy × judge against a reference.

Source: ``docs/mitigation.md``, *Evaluation against a reference*. Inputs are stacked
verdict tables (:func:`voirdire.analysis.mitigation.registry.apply_strategies`: a ``strategy``
column plus :data:`~voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS`) and a reference table
(:mod:`voirdire.analysis.mitigation.grading`). All figures are computed from per-question sums, so
their cluster-bootstrap intervals (questions resampled, shared draw per benchmark) come
from :func:`voirdire.analysis.position.uncertainty.cluster_bootstrap`, with the statistics of
:mod:`voirdire.analysis.position.formulas` and statsmodels' Cohen's kappa.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.mitigation import grading as R
from voirdire.analysis.mitigation import registry
from voirdire.analysis.mitigation import verdicts as M
from voirdire.analysis.mitigation.bpde import select_for_annotation, with_labels
from voirdire.analysis.mitigation.orders import both_orders_only, one_order_judges
from voirdire.analysis.mitigation.pass_kappa import PASS_CONF, gate, pass_confusion
from voirdire.analysis.mitigation.verdicts import flip_flags
from voirdire.analysis.position.formulas import (
    pc_statistic,
    pf_statistic,
    ratio_statistic,
)
from voirdire.analysis.position.pairing import pair_sums, verdict_pairs
from voirdire.analysis.stats.agreement import kappa_statistic
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters
from voirdire.analysis.stats.draws import DRAW_ROWS

__all__ = [
    "EVAL_COLUMNS",
    "evaluate",
    "run_mitigation",
]

METRICS = ["pc", "pf", "flip", "accuracy", "kappa", "undecided", "cost", "pass_kappa"]
CATS = ("win", "tie", "loss")
EVAL_COLUMNS = [
    "benchmark", "strategy", "judge", "verdicts", "pairs", "failed_pairs", "n_ref",
    *[f"{m}{s}" for m in METRICS for s in ("", "_lo", "_hi")],
    "pass_kappa_gate", "order_invariant", "reference_source",
]  # fmt: skip

_SEP = "\x1f"
_CELLS = ["candidate", "task"]
_CONF = [f"c_{a}_{b}" for a in CATS for b in CATS]
_VALUES = [
    "rows",
    "undecided_n",
    "queries",
    "decided_ref",
    "correct",
    *_CONF,
    "n",
    "ccn",
    "v",
    "d",
    "pair_ok",
    "flips",
    *PASS_CONF,
]


STATISTICS = {
    "pc": pc_statistic,
    "pf": pf_statistic,
    "flip": ratio_statistic("flips", "pair_ok"),
    "accuracy": ratio_statistic("correct", "decided_ref"),
    "kappa": kappa_statistic(_CONF),  # against the reference (statsmodels)
    "undecided": ratio_statistic("undecided_n", "rows"),
    "cost": ratio_statistic("queries", "rows"),
    "pass_kappa": kappa_statistic(PASS_CONF),  # between the two passes
}


def _question_sums(verdicts: pl.DataFrame, ref: pl.DataFrame | None) -> pl.DataFrame:
    keys = ["benchmark", "strategy", "judge", *_CELLS, "question_id"]
    v = verdicts
    if ref is not None and ref.height:
        on = ["question_id", "candidate", "reference"]
        any_bench = (
            ref.filter(pl.col("benchmark").is_null())
            .select(*on, _r0="ref_verdict")
            .unique(on, keep="first")
        )
        by_bench = (
            ref.filter(pl.col("benchmark").is_not_null())
            .select("benchmark", *on, _r1="ref_verdict")
            .unique(["benchmark", *on], keep="first")
        )
        v = v.join(by_bench, on=["benchmark", *on], how="left").join(
            any_bench, on=on, how="left"
        )
        v = v.with_columns(ref_verdict=pl.coalesce("_r1", "_r0")).drop("_r0", "_r1")
    else:
        v = v.with_columns(ref_verdict=pl.lit(None, dtype=pl.String))
    dec = (pl.col("verdict") != "undecided") & pl.col("ref_verdict").is_not_null()
    conf = {
        f"c_{a}_{b}": (
            dec & (pl.col("verdict") == a) & (pl.col("ref_verdict") == b)
        ).sum()
        for a in CATS
        for b in CATS
    }
    base = v.group_by(keys).agg(
        rows=pl.len(),
        undecided_n=(pl.col("verdict") == "undecided").sum(),
        queries=pl.col("queries").sum(),
        decided_ref=dec.sum(),
        correct=(dec & (pl.col("verdict") == pl.col("ref_verdict"))).sum(),
        **conf,
    )
    # per-order figures: strategy folded into the judge label for the pair classifier
    po = verdicts.filter(pl.col("side").is_not_null()).with_columns(
        judge=pl.concat_str("strategy", "judge", separator=_SEP)
    )
    paired = verdict_pairs(po.drop("strategy"))
    pairs = pair_sums(paired, ["benchmark", "judge", *_CELLS, "question_id"])
    flips = (
        flip_flags(paired)
        .group_by("benchmark", "judge", *_CELLS, "question_id")
        .agg(
            pair_ok=pl.col("pair_ok").sum(),
            flips=pl.col("flip").sum(),
            _failed=(~pl.col("pair_ok")).sum(),
        )
    )
    passes = pass_confusion(paired, by=["judge", *_CELLS]).drop("pass_pairs")
    on = ["benchmark", "judge", *_CELLS, "question_id"]
    per_order = pairs.join(flips, on=on, how="full", coalesce=True).join(
        passes, on=on, how="full", coalesce=True
    )
    per_order = per_order.with_columns(
        strategy=pl.col("judge").str.split_exact(_SEP, 1).struct.field("field_0"),
        judge=pl.col("judge").str.split_exact(_SEP, 1).struct.field("field_1"),
    )
    out = sort_by_keys(
        base.join(per_order, on=keys, how="full", coalesce=True), keys
    )  # a fixed order: reproducible float sums
    return out.with_columns(
        [pl.col(c).fill_null(0).cast(pl.Float64) for c in [*_VALUES, "_failed"]]
    )


def evaluate(
    verdicts: pl.DataFrame,
    reference: pl.DataFrame | None = None,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The evaluation table, one row per (benchmark, strategy, judge).

    Args:
        verdicts: stacked verdict tables with a ``strategy`` column.
        reference: :data:`~voirdire.analysis.mitigation.grading.GRADING_COLUMNS` rows, or None (no
            accuracy/kappa).
        replicates, level, seed: cluster bootstrap over questions.
        clusters: the benchmark's declared clusters (``benchmark``, ``question_id``,
            ``cluster``; :func:`~voirdire.analysis.position.clusters.job_clusters`: an
            audited log's questions, each holding every model's item), drawn instead of the
            ``question_id`` values (:func:`~voirdire.analysis.position.uncertainty.in_clusters`),
            as PC, PF and ``rank`` draw them; None: each ``question_id`` is its own.

    Returns:
        :data:`EVAL_COLUMNS`: ``verdicts`` (final verdicts), ``pairs``/``failed_pairs``
        (per-order pairs with / without a verdict in both orders), ``n_ref`` (decided
        verdicts with a reference label); for each metric the estimate and ``_lo``/``_hi``:

        - ``pc``, ``pf`` (``docs/metrics.md``), ``flip`` (flip rate) over the strategy's
          per-order verdicts; for an order-invariant strategy (no per-order verdicts, e.g.
          swap-and-tie) PC = 1, PF = 0 and flip = 0 by construction
          (``order_invariant`` true, interval collapsed).
        - ``accuracy``: share of decided verdicts (not ``undecided``) with a reference that
          equal it; ``kappa``: Cohen's kappa against the reference over {win, tie, loss}
          on the same verdicts (an agreement figure: no gate).
        - ``pass_kappa``: Cohen's kappa between the two passes (the strategy's per-order
          verdicts of the original and the swapped order, pair by pair;
          :mod:`voirdire.analysis.mitigation.pass_kappa`, statsmodels), null for an
          order-invariant strategy (no per-order verdicts); ``pass_kappa_gate``:
          ``"pass"`` when it is ≥ 0.6 (the practitioners' gate), ``"fail"`` below, null
          when undefined. Needs no reference.
        - ``undecided``: share of final verdicts left undecided; ``cost``: queries per
          final verdict (Σ queries / final verdicts, undecided ones included).

        ``reference_source`` repeats the reference's ``source``.
    """
    sums = _question_sums(verdicts, reference)
    if not sums.height:  # e.g. every strategy needs both orders, every judge has one
        return _empty_table()
    ci = cluster_bootstrap(
        in_clusters(sums, clusters),
        _VALUES,
        STATISTICS,
        groups=["strategy", "judge"],
        cells=_CELLS,
        replicates=replicates,
        level=level,
        seed=seed,
        chunk=DRAW_ROWS,  # the statistics work row by row: the same figures
    )
    wide = ci.pivot(
        on="metric",
        index=["benchmark", "strategy", "judge"],
        values=["estimate", "lo", "hi"],
    )
    wide = wide.rename(
        {f"estimate_{m}": m for m in METRICS}
        | {f"lo_{m}": f"{m}_lo" for m in METRICS}
        | {f"hi_{m}": f"{m}_hi" for m in METRICS}
    )
    return _finish(wide, sums, reference)


def _empty_table() -> pl.DataFrame:
    """No rows, the :data:`EVAL_COLUMNS` with their types."""
    types = dict.fromkeys(EVAL_COLUMNS, pl.Float64) | dict.fromkeys(
        ["verdicts", "pairs", "failed_pairs", "n_ref"], pl.Int64
    )
    strings = ["benchmark", "strategy", "judge", "pass_kappa_gate", "reference_source"]
    types |= dict.fromkeys(strings, pl.String) | {"order_invariant": pl.Boolean}
    return pl.DataFrame(schema=types)


def _finish(
    wide: pl.DataFrame, sums: pl.DataFrame, reference: pl.DataFrame | None
) -> pl.DataFrame:
    """:data:`EVAL_COLUMNS` from the estimates and intervals per (benchmark, strategy,
    judge) (``wide``) and the per-question sums: the counts, the figures an order-invariant
    strategy has by construction, the reference's source and the pass-kappa gate."""
    counts = sums.group_by("benchmark", "strategy", "judge").agg(
        verdicts=pl.col("rows").sum().cast(pl.Int64),
        pairs=pl.col("pair_ok").sum().cast(pl.Int64),
        failed_pairs=pl.col("_failed").sum().cast(pl.Int64),
        n_ref=pl.col("decided_ref").sum().cast(pl.Int64),
        order_invariant=(pl.col("n") + pl.col("pair_ok") + pl.col("_failed")).sum()
        == 0,
    )
    out = wide.join(counts, on=["benchmark", "strategy", "judge"], how="left")
    inv = pl.col("order_invariant")
    fixed = {"pc": 1.0, "pf": 0.0, "flip": 0.0}
    out = out.with_columns(
        [
            pl.when(inv).then(pl.lit(val)).otherwise(pl.col(f"{m}{s}")).alias(f"{m}{s}")
            for m, val in fixed.items()
            for s in ("", "_lo", "_hi")
        ]
    )
    src = (
        reference.get_column("source").unique().sort().str.join("; ").item()
        if reference is not None and reference.height
        else None
    )
    out = out.with_columns(
        *[pl.col(f"pass_kappa{s}").fill_nan(None) for s in ("", "_lo", "_hi")],
        reference_source=pl.lit(src, dtype=pl.String),
    ).with_columns(pass_kappa_gate=gate())
    return out.select(EVAL_COLUMNS).sort("benchmark", "strategy", "judge")


# --------------------------------------------------------------------------------------
# One call: strategies, reference, table, figure, files
# --------------------------------------------------------------------------------------


def run_mitigation(
    judgments: pl.DataFrame,
    *,
    reference: str | pl.DataFrame | None = None,
    strategies: Sequence[str] | None = None,
    replicates: int = 1000,
    beta: float = 0.2,
    labels: str | os.PathLike | pl.DataFrame | None = None,
    seed: int = 0,
    clusters: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None]:
    """Apply ``strategies`` (registered names; default
    :func:`~voirdire.analysis.mitigation.registry.default_strategies`) to ``judgments`` and evaluate
    them against ``reference`` (``"gold"``, ``"judge:NAME"``, a labels CSV path, or a
    reference table; None: no accuracy or kappa).

    With a reference judge, the panels (:attr:`~voirdire.analysis.mitigation.registry.Strategy.panel`) leave it out and its own
    rows are left out of the table (it would agree with itself by construction). A strategy
    that needs both orders of a pair is not computed for a judge that judged each pair in
    one order (:mod:`~voirdire.analysis.mitigation.orders`: the table has no row for it,
    :func:`~voirdire.analysis.mitigation.orders.one_order_lines` says why).

    ``clusters``: what the intervals draw (:func:`evaluate`; the directories' declared
    clusters, :func:`~voirdire.analysis.ranking.rank.dir_clusters`).

    ``labels``: human verdicts for the pairs BPDE chose (the filled
    ``bpde_annotation.csv``; :func:`~voirdire.analysis.mitigation.grading.human_grading`): each
    strategy whose record says ``human_override`` (the gate, swap-and-tie) runs also as
    ``<name>+labels`` with those pairs' verdicts
    replaced by the human labels (:func:`~voirdire.analysis.mitigation.bpde.with_labels`).

    Returns:
        ``(table, annotation, ref)``: :func:`evaluate`'s table; the top-``beta`` BPDE pairs
        of every judge's per-order verdicts (:func:`~voirdire.analysis.mitigation.bpde.
        select_for_annotation`); the reference table (or None).

    Raises:
        ConfigError: unknown strategy, a strategy's missing need
            (:func:`~voirdire.analysis.mitigation.registry.check_needs`: only list-wise
            judgments, for a strategy that pairs the two orders), a bad reference.
    """
    names = list(strategies or registry.default_strategies(judgments))
    regs = [registry.strategy(n) for n in names]
    for reg in regs:
        registry.check_needs(reg, judgments)
    ref = None
    ref_judge = None
    if isinstance(reference, pl.DataFrame):
        ref = reference
        R.check_grading(ref, judgments)
    elif reference is not None:
        ref = R.load_grading(reference, judgments)
        if reference.startswith("judge:"):
            ref_judge = reference.split(":", 1)[1]
    one = one_order_judges(judgments) if any(r.both_orders for r in regs) else None
    fns = {
        r.name: (M.without_judges(r.fn, [ref_judge]) if ref_judge and r.panel else r.fn)
        for r in regs
    }
    fns = {
        r.name: both_orders_only(fns[r.name], one) if r.both_orders else fns[r.name]
        for r in regs
    }
    if labels is not None:
        people = R.human_grading(labels)
        R.check_grading(people, judgments)
        fns |= {
            f"{r.name}+labels": with_labels(fns[r.name], people)
            for r in regs
            if r.human_override
        }
    verdicts = registry.apply_strategies(judgments, fns)
    if ref_judge:
        verdicts = verdicts.filter(pl.col("judge") != ref_judge)
    table = evaluate(verdicts, ref, replicates=replicates, seed=seed, clusters=clusters)
    annotation = select_for_annotation(M.normalise(judgments), beta=beta)
    return table, annotation, ref
