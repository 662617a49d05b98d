"""One self-contained HTML report of a :class:`~voirdire.analysis.study.Study`: rendering
only (what it shows is computed by :mod:`voirdire.analysis.build` and given to it).

The page is a Jinja2 template shipped with the package (``templates/report.html.j2``, its
macros, the bias section, the stylesheet and a 20-line table sorter), filled from the
study's tables by :func:`render_html`: Python prepares the tables as *views* (formatted,
escaped by the template), the template holds every word and tag. Figures are embedded as
base64 PNG, styles and script inline: the file opens offline in any browser and can be
mailed as is. Tables sort by clicking a header (numbers numerically). Nothing in it names a
key, a host or a path outside the output directories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from markupsafe import Markup

from voirdire.analysis.position.registry import added_metrics
from voirdire.analysis.position.regression import one_order_notes
from voirdire.analysis.report.agreement import agreement_view
from voirdire.analysis.report.bias import bias_view
from voirdire.analysis.report.coverage import (
    benchmark_reasons,
    figure_caption,
    repetition_only,
)
from voirdire.analysis.report.curve_charts import picked_judges
from voirdire.analysis.report.files import directory_file_parts
from voirdire.analysis.report.judge_table import gate_words
from voirdire.analysis.report.summary import summary_view
from voirdire.analysis.report.views import (
    F3,
    PCT,
    SIGNED,
    chart_view,
    render_template,
    table_view,
)

if TYPE_CHECKING:
    from voirdire.analysis.choice import Choice
    from voirdire.analysis.report.people_files import PeopleTables
    from voirdire.analysis.study import Study

__all__ = ["render_html"]


_PANEL = ["benchmark", "judge", "pc", "pc_lo", "pc_hi", "pf", "pf_lo", "pf_hi", "accuracy", "accuracy_lo", "accuracy_hi",
          "accuracy_shown", "accuracy_swapped", "both_correct", "error_rate", "rs", "rs_lo", "rs_hi",
          "primacy", "recency", "p_value", "direction", "pass_kappa", "pass_kappa_lo", "pass_kappa_hi", "pass_kappa_gate",
          "n_judgments", "source", "rs_source", "flag"]  # fmt: skip
_PANEL_FMT = {"accuracy": F3, "accuracy_lo": F3, "accuracy_hi": F3, "accuracy_shown": F3, "accuracy_swapped": F3, "both_correct": F3,
              "pc": F3, "pc_lo": F3, "pc_hi": F3, "pf": SIGNED, "pf_lo": SIGNED, "pf_hi": SIGNED, "error_rate": PCT,
              "rs": F3, "rs_lo": F3, "rs_hi": F3, "p_value": "{:.2g}", "pass_kappa": F3, "pass_kappa_lo": F3, "pass_kappa_hi": F3}  # fmt: skip
_PANEL_NAMES = {"pc_lo": "PC lo", "pc_hi": "PC hi", "pf_lo": "PF lo", "pf_hi": "PF hi", "rs_lo": "RS lo", "rs_hi": "RS hi",
                "primacy": "primacy pairs", "recency": "recency pairs", "p_value": "sign test p", "pass_kappa": "κ passes",
                "pass_kappa_lo": "κ lo", "pass_kappa_hi": "κ hi", "pass_kappa_gate": "{gate}", "source": "PC/PF from",
                "rs_source": "RS from"}  # fmt: skip
_JT_FMT = {
    "pc": F3,
    "pc_std": F3,
    "pf": SIGNED,
    "pf_std": F3,
    "pc_lo": F3,
    "pc_hi": F3,
    "pf_lo": SIGNED,
    "pf_hi": SIGNED,
}


#: the panel's columns counted from pairs judged in both orders
_PAIR_COUNTS = ("primacy", "recency", "p_value", "direction")


def _panel_view(panel: pl.DataFrame) -> dict[str, Any]:
    """The judges' table: :data:`_PANEL`, then each registered metric other than pc, pf and
    rs with its interval (header and format from its record)."""
    cols, fmt, names = (
        [c for c in _PANEL if c in panel.columns],
        dict(_PANEL_FMT),
        {c: h.format(gate=gate_words()) for c, h in _PANEL_NAMES.items()},
    )
    for n, m in added_metrics().items():
        for c, h in (
            (n, m.label),
            (f"{n}_lo", f"{m.label} lo"),
            (f"{n}_hi", f"{m.label} hi"),
        ):
            if c in panel.columns:
                cols.append(c)
                fmt[c], names[c] = m.fmt, h
    # a judge judged in one order has no pairs to sign-test: its cells stay empty, not
    # "p 1, direction none" (which would read as "no bias"), and a column no judge has goes
    two = pl.col("pc").is_not_null() if "pc" in panel.columns else pl.lit(False)
    blank = [c for c in _PAIR_COUNTS if c in panel.columns]
    view = panel.select(cols).with_columns(
        pl.when(two).then(pl.col(c)).otherwise(None).alias(c) for c in blank
    )
    keep = [
        c
        for c in view.columns
        if c in ("benchmark", "judge", "flag") or view.get_column(c).is_not_null().any()
    ]
    return table_view(view.select(keep), fmt, rename=names, flag_col="flag")


def _failures(study: Study) -> dict[str, Any] | None:
    fails = []
    for d in study.dirs:
        f = (
            d.judgments.filter(pl.col("failure").is_not_null())
            .group_by("judge", "failure")
            .len()
            .sort("judge", "failure")
        )
        fails += [(d.name, j, c, n) for j, c, n in f.iter_rows()]
    return (
        table_view(
            pl.DataFrame(
                fails, schema=["directory", "judge", "failure", "count"], orient="row"
            )
        )
        if fails
        else None
    )


def _benchmarks(
    study: Study, charts: dict[str, Any], n: list[int]
) -> list[dict[str, Any]]:
    from voirdire.analysis.report.study_charts import KIND_TITLES

    out = []
    for b in study.benchmarks:
        kinds = [*KIND_TITLES, *(f"metric_{m}" for m in added_metrics())]
        # a benchmark judged in one order has no PC or PF: its figures would be empty
        pc = study.panel.filter(pl.col("benchmark") == b).get_column("pc")
        one_order = not pc.is_not_null().any()
        shown = []
        for k in kinds:
            if k in ("agreement", "disagreement") or (one_order and k != "rs"):
                continue
            f = chart_view(charts, f"{k}:{b}", n)
            if f is not None:  # the judges of b it leaves out, and why
                f["caption"] = figure_caption(f["spec"], benchmark_reasons(study, b, k))
                shown.append(f)
        jt = study.judge_task.filter(pl.col("benchmark") == b).drop("benchmark")
        out.append({
            "name": b, "figures": shown,
            "judge_task": table_view(jt, _JT_FMT), "n_tasks": jt.height,
            "one_order": one_order, "left_out": [] if one_order else repetition_only(study, b),
        })  # fmt: skip
    return out


def _regressions(study: Study) -> list[dict[str, Any]]:
    return [
        {
            "scope": r.scope,
            "response": r.response.upper(),
            "n": r.n,
            "r_squared": r.r_squared,
            "start": r.start,
            "terms": r.terms,
            "drop1": table_view(
                r.drop1, {"Sum of Sq": "{:.4f}", "RSS": "{:.4f}", "AIC": "{:.2f}"}
            ),
            "path": table_view(r.path, {"RSS": "{:.4f}", "AIC": "{:.2f}"}),
            "coefficients": table_view(
                r.coefficients,
                {"estimate": "{:+.4f}", "std_error": "{:.4f}", "p_value": "{:.2g}"},
            ),
        }  # fmt: skip
        for r in study.regressions
    ]


def _power(study: Study) -> dict[str, Any] | None:
    if not study.power.height:
        return None
    wide = study.power.pivot(
        on="pf", index=["n_pairs", "queries"], values="power"
    ).sort("n_pairs")
    wide = wide.rename(
        {
            c: f"PF {float(c):+.2f}"
            for c in wide.columns
            if c not in ("n_pairs", "queries")
        }
    )
    return {
        "pc": study.power.get_column("pc")[0],
        "table": table_view(wide, {c: PCT for c in wide.columns if c.startswith("PF")}),
    }


def _judges(study: Study) -> dict[str, Any]:
    """The "Judges" section's context: the judges too unstable to read, those without RS,
    the gates, the per-judge table, the added metrics' notes, the bootstrap's replicates."""
    panel = study.panel
    return {
        "unreadable": list(panel.filter(~pl.col("readable")).select("benchmark", "judge", "flag").iter_rows()),
        "no_rs": [f"{b}/{j}" for b, j in panel.filter(pl.col("rs").is_null()).select("benchmark", "judge").iter_rows()],
        "rs_min": study.rs_min, "max_error": study.max_error, "panel": _panel_view(panel),
        "metric_notes": [f"{m.label}: {m.doc or m.name} ({m.direction_text})." for k, m in added_metrics().items()
                         if k in panel.columns],
        "replicates": study.dirs[0].ci.get_column("replicates").max() if study.dirs[0].ci.height else 0,
    }  # fmt: skip


def _mitigation(mitigation: pl.DataFrame | None, gold: bool) -> dict[str, Any] | None:
    """The mitigation table's view (accuracy and kappa with gold labels), or None."""
    if mitigation is None or not mitigation.height:
        return None
    cols = ["benchmark", "strategy", "judge", "cost", "undecided", "pc", "pf", "flip", *(["accuracy", "kappa"] if gold else []),
            "pass_kappa", "pass_kappa_lo", "pass_kappa_hi", "pass_kappa_gate"]  # fmt: skip
    return table_view(mitigation.select(cols), {c: F3 for c in cols[3:-1]})


def render_html(
    study: Study,
    written: dict[str, Any],
    title: str = "voirdire report",
    mitigation: pl.DataFrame | None = None,
    *,
    gold: bool = False,
    leaderboards: str | None = None,
    audit: list[dict[str, Any]] | None = None,
    choice: Choice | None = None,
    mitigation_notes: Sequence[str] = (),
    people: PeopleTables | None = None,
    verdicts: bool = False,
) -> str:
    """The report as one HTML string (``templates/report.html.j2``).

    Args:
        study: :class:`~voirdire.analysis.study.Study`.
        written: :func:`~voirdire.analysis.report.files.write_study`'s return value (the
            tables and figures on disk, by name).
        title: the page's title.
        mitigation: :func:`~voirdire.analysis.mitigation.evaluation.evaluate`'s table for
            the "Removing position bias" section, or None (no section); ``gold``: it was
            graded against the benchmark's gold labels (accuracy and kappa shown).
        leaderboards: the "Leaderboards" section's HTML
            (:func:`~voirdire.analysis.report.ranking.ranking_html`), or None (no section).
        audit: the "One order per pair, and calibration" section
            (:func:`~voirdire.analysis.report.audit_sections.audit_view`), or None.
        choice: :func:`~voirdire.analysis.choice.choose_judges`' result: the summary the
            page opens with (None: no summary).
        mitigation_notes: lines shown under the mitigation table (strategies not computed
            for a judge: :func:`~voirdire.analysis.mitigation.orders.one_order_lines`).
        people: ``voirdire people``'s tables for the section "Human boards from a few
            labels" (:func:`~voirdire.analysis.report.people_section.report_people`; its
            figures' specifications in ``written["charts"]``), or None (no section).
    """
    from voirdire.analysis.report.people_section import people_view
    from voirdire.analysis.report.vega import vega_bundle

    charts, n = written.get("charts", {}), [0]
    picked = {  # the judges each win-rate figure draws at first: their boxes checked
        k.partition(":")[2]: p
        for k, spec in charts.items()
        if k.startswith("owr:") and (p := picked_judges(spec)) is not None
    }
    judges, summary = _judges(study), summary_view(choice, picked)
    if verdicts:  # the tables whose judges' names open the viewer
        for t in [judges["panel"], *(s["table"] for s in summary)]:
            t["verdicts"] = True
    return render_template(
        "report.html.j2",
        title=title,
        kappa_gate=gate_words(""),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        settings=table_view(pl.DataFrame([d.settings for d in study.dirs])),
        failures=_failures(study),
        tokenizer=study.tokenizer,
        summary=summary,
        verdicts=verdicts,
        margin=choice.margin if choice is not None else None,
        **judges,
        benchmarks=_benchmarks(study, charts, n),
        regressions=_regressions(study),
        regression_notes=one_order_notes(study.reg_cells)
        if study.reg_cells is not None
        else [],
        agreement=agreement_view(
            study,
            charts,
            n,
            [f"agreement_{p}.csv" for p in directory_file_parts(study.dirs)],
        ),
        power=_power(study),
        gold=gold,
        mitigation=_mitigation(mitigation, gold),
        mitigation_notes=list(mitigation_notes),
        bias=bias_view(written),
        leaderboards=Markup(leaderboards) if leaderboards else None,
        audit=audit,
        people=people_view(people, charts, n) if people is not None else None,
        files=[Path(p).name for _, p in sorted(written.get("tables", {}).items())],
        vega=Markup(vega_bundle()) if n[0] or leaderboards else None,
    )
