"""The mitigation evaluation table: every strategy × judge against a reference.

Source: ``docs/mitigation.md``, *Evaluation against a reference*. Inputs are stacked
verdict tables (:func:`voirdire.analysis.mitigation.apply_strategies`: a ``strategy``
column plus :data:`~voirdire.analysis.mitigation.VERDICT_COLUMNS`) and a reference table
(:mod:`voirdire.analysis.reference`). All figures are computed from per-question sums, so
their cluster-bootstrap intervals (questions resampled, shared draw per benchmark) come
from :func:`voirdire.analysis.uncertainty.bootstrap_sums`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from voirdire.analysis import calibration as _calibration  # noqa: F401 (registers the logprob strategies)
from voirdire.analysis import mitigation as M
from voirdire.analysis import reference as R
from voirdire.analysis.gold import has_gold
from voirdire.analysis.metrics import PAIRWISE_MODES, pairwise_pairs
from voirdire.analysis.mitigation import (
    as_judgments,
    flip_flags,
    pair_orders,
)
from voirdire.analysis.pass_kappa import KAPPA_GATE, PASS_CONF, gate, kappa_statistic, pass_confusion
from voirdire.analysis.uncertainty import bootstrap_sums

__all__ = [
    "EVAL_COLUMNS",
    "KAPPA_GATE",
    "evaluate",
    "markdown_table",
    "cost_agreement_figure",
    "run_mitigation",
    "write_mitigation",
    "report_section",
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
_VALUES = ["rows", "undecided_n", "queries", "decided_ref", "correct", *_CONF, "n", "ccn", "v", "d", "pair_ok", "flips", *PASS_CONF]


def _ratio(num: str, den: str):
    def f(s):
        a, b = s[num].sum(1), s[den].sum(1)
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)

    return f


def _pf(s):
    n, d = s["n"], s["d"]
    per = np.where(n > 0, d / np.where(n > 0, n, 1), np.nan)
    ok = (n > 0).any(1)
    out = np.full(n.shape[0], np.nan)
    out[ok] = np.nanmean(per[ok], axis=1)
    return out


def _kappa(s):
    """Cohen's kappa (Cohen 1960) from the summed 3×3 confusion counts, per replicate."""
    c = np.stack([s[k].sum(1) for k in _CONF], axis=1).reshape(-1, 3, 3)
    n = c.sum((1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(c, axis1=1, axis2=2) / n
        pe = (c.sum(2) * c.sum(1)).sum(1) / n**2
        return np.where((n > 0) & (pe < 1), (po - pe) / (1 - pe), np.nan)


STATISTICS = {
    "pc": _ratio("ccn", "v"),
    "pf": _pf,
    "flip": _ratio("flips", "pair_ok"),
    "accuracy": _ratio("correct", "decided_ref"),
    "kappa": _kappa,
    "undecided": _ratio("undecided_n", "rows"),
    "cost": _ratio("queries", "rows"),
    "pass_kappa": kappa_statistic(PASS_CONF),
}


def _question_sums(verdicts: pl.DataFrame, ref: pl.DataFrame | None) -> pl.DataFrame:
    keys = ["benchmark", "strategy", "judge", *_CELLS, "question_id"]
    v = verdicts
    if ref is not None and ref.height:
        on = ["question_id", "candidate", "reference"]
        any_bench = ref.filter(pl.col("benchmark").is_null()).select(*on, _r0="ref_verdict").unique(on, keep="first")
        by_bench = ref.filter(pl.col("benchmark").is_not_null()).select("benchmark", *on, _r1="ref_verdict").unique(["benchmark", *on], keep="first")
        v = v.join(by_bench, on=["benchmark", *on], how="left").join(any_bench, on=on, how="left")
        v = v.with_columns(ref_verdict=pl.coalesce("_r1", "_r0")).drop("_r0", "_r1")
    else:
        v = v.with_columns(ref_verdict=pl.lit(None, dtype=pl.String))
    dec = (pl.col("verdict") != "undecided") & pl.col("ref_verdict").is_not_null()
    conf = {f"c_{a}_{b}": (dec & (pl.col("verdict") == a) & (pl.col("ref_verdict") == b)).sum() for a in CATS for b in CATS}
    base = v.group_by(keys).agg(
        rows=pl.len(),
        undecided_n=(pl.col("verdict") == "undecided").sum(),
        queries=pl.col("queries").sum(),
        decided_ref=dec.sum(),
        correct=(dec & (pl.col("verdict") == pl.col("ref_verdict"))).sum(),
        **conf,
    )
    # per-order figures: strategy folded into the judge label for the pair classifier
    po = verdicts.filter(pl.col("permutation").is_not_null()).with_columns(judge=pl.concat_str("strategy", "judge", separator=_SEP))
    k = pl.col("klass")
    pairs = (
        pairwise_pairs(as_judgments(po.drop("strategy")))
        .group_by("benchmark", "judge", *_CELLS, "question_id")
        .agg(
            n=pl.len(),
            ccn=(k == "consistent").sum(),
            v=k.is_in(["consistent", "primacy", "recency"]).sum(),
            d=(k == "recency").sum().cast(pl.Int64) - (k == "primacy").sum().cast(pl.Int64),
        )
    )
    flips = (
        flip_flags(pair_orders(po.drop("strategy")))
        .group_by("benchmark", "judge", *_CELLS, "question_id")
        .agg(pair_ok=pl.col("pair_ok").sum(), flips=pl.col("flip").sum(), _failed=(~pl.col("pair_ok")).sum())
    )
    passes = pass_confusion(po.drop("strategy"), by=["judge", *_CELLS]).drop("pass_pairs")
    on = ["benchmark", "judge", *_CELLS, "question_id"]
    per_order = pairs.join(flips, on=on, how="full", coalesce=True).join(passes, on=on, how="full", coalesce=True)
    per_order = per_order.with_columns(
        strategy=pl.col("judge").str.split_exact(_SEP, 1).struct.field("field_0"),
        judge=pl.col("judge").str.split_exact(_SEP, 1).struct.field("field_1"),
    )
    out = base.join(per_order, on=keys, how="full", coalesce=True)
    return out.with_columns([pl.col(c).fill_null(0).cast(pl.Float64) for c in [*_VALUES, "_failed"]])


def evaluate(
    verdicts: pl.DataFrame,
    reference: pl.DataFrame | None = None,
    *,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """The evaluation table, one row per (benchmark, strategy, judge).

    Args:
        verdicts: stacked verdict tables with a ``strategy`` column.
        reference: :data:`~voirdire.analysis.reference.REF_COLUMNS` rows, or None (no
            accuracy/kappa).
        replicates, level, seed: cluster bootstrap over questions.

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
          :mod:`voirdire.analysis.pass_kappa`, statsmodels), null for an
          order-invariant strategy (no per-order verdicts); ``pass_kappa_gate``:
          ``"pass"`` when it is ≥ 0.6 (the practitioners' gate), ``"fail"`` below, null
          when undefined. Needs no reference.
        - ``undecided``: share of final verdicts left undecided; ``cost``: queries per
          final verdict (Σ queries / final verdicts, undecided ones included).

        ``reference_source`` repeats the reference's ``source``.
    """
    sums = _question_sums(verdicts, reference)
    ci = bootstrap_sums(
        sums, groups=["strategy", "judge"], cells=_CELLS, values=_VALUES, statistics=STATISTICS,
        replicates=replicates, level=level, seed=seed,
    )  # fmt: skip
    wide = ci.pivot(on="metric", index=["benchmark", "strategy", "judge"], values=["estimate", "lo", "hi"])
    wide = wide.rename({f"estimate_{m}": m for m in METRICS} | {f"lo_{m}": f"{m}_lo" for m in METRICS} | {f"hi_{m}": f"{m}_hi" for m in METRICS})
    counts = sums.group_by("benchmark", "strategy", "judge").agg(
        verdicts=pl.col("rows").sum().cast(pl.Int64),
        pairs=pl.col("pair_ok").sum().cast(pl.Int64),
        failed_pairs=pl.col("_failed").sum().cast(pl.Int64),
        n_ref=pl.col("decided_ref").sum().cast(pl.Int64),
        order_invariant=(pl.col("n") + pl.col("pair_ok") + pl.col("_failed")).sum() == 0,
    )
    out = wide.join(counts, on=["benchmark", "strategy", "judge"], how="left")
    inv = pl.col("order_invariant")
    fixed = {"pc": 1.0, "pf": 0.0, "flip": 0.0}
    out = out.with_columns(
        [pl.when(inv).then(pl.lit(val)).otherwise(pl.col(f"{m}{s}")).alias(f"{m}{s}") for m, val in fixed.items() for s in ("", "_lo", "_hi")]
    )
    src = reference.get_column("source").unique().sort().str.join("; ").item() if reference is not None and reference.height else None
    out = out.with_columns(
        *[pl.col(f"pass_kappa{s}").fill_nan(None) for s in ("", "_lo", "_hi")],
        reference_source=pl.lit(src, dtype=pl.String),
    ).with_columns(pass_kappa_gate=gate())
    return out.select(EVAL_COLUMNS).sort("benchmark", "strategy", "judge")


def accuracy_label(sources: Sequence[str]) -> str:
    """What the ``accuracy`` column measures, by the reference's ``source``: ``accuracy``
    against gold or people's labels; ``agreement with judge X`` where the reference is a
    judge's verdicts (not the truth)."""
    judges = [s.split(" ", 2)[1] for s in sources if s.startswith("judge ")]
    if sources and len(judges) == len(sources):
        return "agreement with judge " + ", ".join(sorted(set(judges)))
    return "accuracy"


def markdown_table(table: pl.DataFrame) -> str:
    """The evaluation table as GitHub markdown: per benchmark, strategy and judge the cost
    (queries per verdict), share undecided, PC, PF, flip rate, accuracy and kappa against
    the reference (agreement, no gate), and the inter-pass kappa with its κ ≥ 0.6 gate
    (strategies with per-order verdicts), with their 95 % intervals."""

    def ci(r, m, f):
        e, lo, hi = r[m], r[f"{m}_lo"], r[f"{m}_hi"]
        if e is None or (isinstance(e, float) and np.isnan(e)):
            return "–"
        if lo is None or np.isnan(lo) or lo == hi:
            return f.format(e)
        return f"{f.format(e)} [{f.format(lo)}, {f.format(hi)}]"

    src = table.get_column("reference_source").drop_nulls().unique().to_list() if table.height else []
    head = (f"| benchmark | strategy | judge | cost | undecided | PC | PF | flip | {accuracy_label(src)} | κ vs reference "
            "| κ passes | κ passes ≥ 0.6 |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {r['benchmark']} | {r['strategy']} | {r['judge']} | {r['cost']:.2f} | {r['undecided']:.1%} | "
            f"{ci(r, 'pc', '{:.3f}')} | {ci(r, 'pf', '{:+.3f}')} | {ci(r, 'flip', '{:.3f}')} | "
            f"{ci(r, 'accuracy', '{:.3f}')} | {ci(r, 'kappa', '{:.3f}')} | {ci(r, 'pass_kappa', '{:.3f}')} | "
            f"{r['pass_kappa_gate'] or '–'} |"
        )
    lines.append("")
    lines.append(
        "κ vs reference: Cohen's kappa of the final verdicts against the reference (agreement, no gate). "
        "κ passes: Cohen's kappa between the original and the swapped order's verdicts, pair by pair, "
        f"gate κ ≥ {KAPPA_GATE} (practitioners' health metric; – for strategies that combine both orders)."
    )
    if src:
        lines.append("")
        lines.append(f"Reference: {'; '.join(src)}.")
    return "\n".join(lines) + "\n"


def cost_agreement_figure(table: pl.DataFrame, path: str | os.PathLike, title: str = "") -> Path:
    """Cost (queries per final verdict, x) against Cohen's kappa with the reference (y,
    95 % interval bars), one panel per benchmark, one colour per strategy (kappa against a
    reference is an agreement figure: no gate line; the 0.6 gate is on the inter-pass
    kappa). PNG at ``path`` (matplotlib, as :mod:`voirdire.analysis.figures`)."""
    from voirdire.analysis.figures import _save, plt

    benches = sorted(table.get_column("benchmark").unique().to_list())
    strategies = sorted(table.get_column("strategy").unique().to_list())
    cmap = plt.get_cmap("tab10")
    color = {s: cmap(i % 10) for i, s in enumerate(strategies)}
    fig, axes = plt.subplots(1, max(1, len(benches)), figsize=(6 * max(1, len(benches)), 4.5), squeeze=False)
    for ax, b in zip(axes[0], benches):
        part = table.filter(pl.col("benchmark") == b)
        for s in strategies:
            p = part.filter(pl.col("strategy") == s)
            if not p.height:
                continue
            y, lo, hi = (p.get_column(c).to_numpy().astype(float) for c in ("kappa", "kappa_lo", "kappa_hi"))
            # a small horizontal offset per strategy keeps strategies of equal cost apart
            x = p.get_column("cost").to_numpy().astype(float) * (1 + 0.04 * (strategies.index(s) - (len(strategies) - 1) / 2))
            err = np.vstack([np.nan_to_num(y - lo), np.nan_to_num(hi - y)])
            ax.errorbar(x, y, yerr=err, fmt="o", color=color[s], label=s, alpha=0.8, capsize=2)
        ax.set_xscale("log")
        costs = sorted({float(c) for c in part.get_column("cost").to_list() if c == c})
        ax.set_xticks(costs, [f"{c:g}" for c in costs])
        ax.minorticks_off()
        ax.set_xlabel("queries per final verdict")
        ax.set_ylabel("Cohen's kappa with the reference")
        ax.set_title(b)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


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
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None]:
    """Apply ``strategies`` (registered names; default
    :func:`~voirdire.analysis.mitigation.default_strategies`) to ``judgments`` and evaluate
    them against ``reference`` (``"gold"``, ``"judge:NAME"``, a labels CSV path, or a
    reference table; None: no accuracy or kappa).

    With a reference judge, the panels (strategies named ``jury*``) leave it out and its own
    rows are left out of the table (it would agree with itself by construction).

    ``labels``: people's verdicts for the pairs BPDE chose (the filled
    ``bpde_annotation.csv``; :func:`~voirdire.analysis.reference.labels_reference`): each
    of ``gate`` and ``swap-tie`` run also as ``<name>+labels`` with those pairs' verdicts
    replaced by people's (:func:`~voirdire.analysis.mitigation.with_labels`).

    Returns:
        ``(table, annotation, ref)``: :func:`evaluate`'s table; the top-``beta`` BPDE pairs
        of every judge's per-order verdicts (:func:`~voirdire.analysis.mitigation.
        select_for_annotation`); the reference table (or None).

    Raises:
        ConfigError: unknown strategy, a strategy's missing need, a bad reference.
    """
    names = list(strategies or M.default_strategies(judgments))
    regs = [M.strategy(n) for n in names]
    for reg in regs:
        M.check_needs(reg, judgments)
    ref = None
    ref_judge = None
    if isinstance(reference, pl.DataFrame):
        ref = reference
        R.check_reference(ref, judgments)
    elif reference is not None:
        ref = R.load_reference(reference, judgments)
        if reference.startswith("judge:"):
            ref_judge = reference.split(":", 1)[1]
    fns = {r.name: (M.without_judges(r.fn, [ref_judge]) if ref_judge and r.name.startswith("jury") else r.fn) for r in regs}
    if labels is not None:
        people = R.labels_reference(labels)
        R.check_reference(people, judgments)
        fns |= {f"{n}+labels": M.with_labels(fns[n], people) for n in ("gate", "swap-tie") if n in fns}
    verdicts = M.apply_strategies(judgments, fns)
    if ref_judge:
        verdicts = verdicts.filter(pl.col("judge") != ref_judge)
    table = evaluate(verdicts, ref, replicates=replicates, seed=seed)
    annotation = M.select_for_annotation(M.normalise(judgments), beta=beta)
    return table, annotation, ref


def write_mitigation(table: pl.DataFrame, annotation: pl.DataFrame | None, out: str | os.PathLike) -> dict[str, Path]:
    """Write ``mitigation.csv`` (the table), ``mitigation.md`` (markdown),
    ``figures/mitigation_cost_agreement.png`` and ``bpde_annotation.csv`` (the pairs for
    people, with an empty ``winner`` column) under ``out``; returns their paths by name."""
    d = Path(out)
    (d / "figures").mkdir(parents=True, exist_ok=True)
    paths = {"table": d / "mitigation.csv", "markdown": d / "mitigation.md"}
    table.write_csv(paths["table"])
    paths["markdown"].write_text("# Removing position bias\n\n" + markdown_table(table), encoding="utf-8")
    paths["figure"] = cost_agreement_figure(table, d / "figures" / "mitigation_cost_agreement.png", "cost versus agreement")
    if annotation is not None:
        paths["annotation"] = d / "bpde_annotation.csv"
        annotation.write_csv(paths["annotation"])
    return paths


def report_section(judgments: Sequence[pl.DataFrame], out: str | os.PathLike, replicates: int = 200) -> str:
    """HTML of the report's "Removing position bias" section: the strategies that need no
    new query on the report's judgments, without a reference (PC, PF, flip rate, share
    undecided, cost), plus accuracy and kappa against the gold labels where the judgments
    carry them (``voirdire mitigate --reference`` for other references). Writes
    ``mitigation.csv`` and the figure under ``out``. Empty string without pairwise rows."""
    import html as _html

    frames = [j for j in judgments if j.height and j.get_column("mode").is_in(PAIRWISE_MODES).any()]
    if not frames:
        return ""
    j = pl.concat(frames, how="diagonal_relaxed")
    gold = has_gold(j)  # graded against the benchmark's gold labels where it has them
    table, _, _ = run_mitigation(j, reference="gold" if gold else None, replicates=replicates)
    write_mitigation(table, None, out)
    cols = ["benchmark", "strategy", "judge", "cost", "undecided", "pc", "pf", "flip", *(["accuracy", "kappa"] if gold else []),
            "pass_kappa", "pass_kappa_lo", "pass_kappa_hi", "pass_kappa_gate"]  # fmt: skip
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html.escape('–' if v is None else f'{v:.3f}' if isinstance(v, float) else str(v))}</td>" for v in r) + "</tr>"
        for r in table.select(cols).iter_rows()
    )
    return (
        '<h2 id="mitigation">Removing position bias</h2><p class="note">Strategies that need no new query, on these '
        "judgments (docs/mitigation.md): cost = queries per final verdict; order-combining strategies have PC 1 and "
        "PF 0 by construction; pass_kappa: Cohen's kappa between the two orders' verdicts (gate ≥ 0.6), for the "
        "strategies with per-order verdicts. " + ("Accuracy and kappa against the benchmark's gold labels. " if gold else "")
        + "Against a reference: <code>voirdire mitigate DIR --reference gold | judge:NAME | labels.csv</code>."
        f"</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
