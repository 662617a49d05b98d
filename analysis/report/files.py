"""The one place that writes the analysis to disk: tables (CSV, Parquet), figures (PNG,
SVG), ``report.md``, ``report.html`` and the mitigation files.

Every other module of :mod:`voirdire.analysis` computes tables in memory and returns them
(the interactive figures are specifications, :mod:`voirdire.analysis.report.study_charts`,
written here through vl-convert; the matplotlib figures draw to the path given here); these
functions decide the file names and layout of an output directory and of a report
directory.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.outputs import CELL_METRIC_COLUMNS, JUDGE_METRIC_COLUMNS, Results
from voirdire.analysis.position.gold import GOLD_CELL_COLUMNS, GOLD_JUDGE_COLUMNS
from voirdire.analysis.position.registry import added_metrics
from voirdire.analysis.report.audit_sections import audit_sections
from voirdire.analysis.report.markdown import markdown_report
from voirdire.analysis.report.mitigation import mitigation_markdown
from voirdire.core import ConfigError, content_hash, slug
from voirdire.escape import FORMULA_START as _FORMULA_START
from voirdire.escape import markdown, spreadsheet_text
from voirdire.exceptions import StaleReportWarning
from voirdire.file_set import FileSet, atomic_path, check_set, set_digest
from voirdire.layout import (
    ANALYSIS_MANIFEST,
    MITIGATION_MANIFEST,
    PEOPLE_MANIFEST,
    REPORT_MANIFEST,
)

# figures (matplotlib) and the study (statsmodels) are imported where they are drawn or
# computed: writing one directory's files (every run) needs neither
if TYPE_CHECKING:
    from collections.abc import Sequence

    from voirdire.analysis.choice import Choice
    from voirdire.analysis.report.shown import DirShown
    from voirdire.analysis.study import Study

__all__ = [
    "NAME_PART",
    "file_part",
    "write_csv",
    "write_text",
    "write_html",
    "write_dir",
    "check_report",
    "retire_stale_report",
    "report_inputs",
    "write_study",
    "write_bias",
    "write_mitigation",
]


#: the longest part of a file name made from one label (characters); a judge's, a
#: benchmark's or a directory's name longer than this is cut and a hash of it appended,
#: so two files never share a name and no name passes the system's 255 bytes
NAME_PART = 80


def directory_file_parts(dirs: Sequence[Any]) -> list[str]:
    """The part of the file names of each of ``dirs`` (objects with ``name``): the
    :func:`file_part` of its name, with ``_<i>`` (its place) added where another directory
    has the same one, so that two directories of one folder name write two files."""
    parts = [file_part(d.name) for d in dirs]
    return [f"{p}_{i}" if parts.count(p) > 1 else p for i, p in enumerate(parts)]


def file_part(label: str) -> str:
    """The part of a file name that stands for ``label`` (a benchmark, judge, directory or
    scope): :func:`voirdire.core.slug` (runs of characters outside ``[A-Za-z0-9._-]``
    become ``_``); when that is longer than :data:`NAME_PART` characters, its first
    ``NAME_PART - 9`` characters, ``-`` and 8 hex characters of the label's
    :func:`~voirdire.core.content_hash`. The one rule for file names of the analysis."""
    s = slug(label).strip(".") or "_"
    if len(s) <= NAME_PART:
        return s
    return f"{s[: NAME_PART - 9]}-{content_hash(label, size=4)}"


#: first characters a spreadsheet reads as a formula (OWASP, "CSV Injection"; the escape
#: module's, which also undoes the neutralising on read-back)
FORMULA_START = _FORMULA_START


def write_csv(df: pl.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``df`` as CSV at ``path`` (folder created; under a temporary name, then renamed
    in place: :func:`voirdire.file_set.atomic_path`), every string cell that a
    spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or
    a carriage return) written as text: prefixed with ``'`` (OWASP's advice for CSV
    injection). Only String and Categorical/Enum columns are touched; numbers, negative
    ones included, stay numbers. The one writer of the analysis's CSV files; returns the
    path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    texts = [
        c
        for c, t in df.schema.items()
        if t == pl.String or isinstance(t, (pl.Categorical, pl.Enum))
    ]
    starts = "^[" + re.escape("".join(FORMULA_START)) + "]"
    # column names too: a labels file's columns are copied into people_to_label.csv
    names = {
        c: q
        for c in df.columns
        if (q := spreadsheet_text(c)) != c and q not in df.columns
    }
    quoted = df.with_columns(
        pl.when(pl.col(c).cast(pl.String).str.contains(starts))
        .then("'" + pl.col(c).cast(pl.String))
        .otherwise(pl.col(c).cast(pl.String))
        .alias(c)
        for c in texts
    ).rename(names)
    with atomic_path(
        out
    ) as tmp:  # whole or absent: a killed writer leaves no half table
        quoted.write_csv(tmp)
    return out


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, its folder created if needed, under a temporary
    name then renamed in place (:func:`voirdire.file_set.atomic_path`); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return out


def write_html(path: str | os.PathLike, page: str) -> Path:
    """Write an HTML page (``voirdire.analysis.report.html.render_html``) to ``path``."""
    return write_text(path, page)


def write_dir(
    tables: Results, shown: DirShown, out: str | os.PathLike, appendix: str = ""
) -> None:
    """Write ``judgments.parquet``, ``metrics/*.csv`` and ``report.md`` of one directory's
    ``tables`` (:func:`voirdire.analysis.outputs.compute_dir`) and what its report shows
    beyond them (``shown``: :func:`voirdire.analysis.build.dir_shown`; nothing is computed
    here) under ``out`` (created if needed): ``judge_metrics.csv`` (with the gold-label columns where computed, then a column
    per registered metric other than pc, pf and rs), ``cell_metrics.csv`` (with the
    gold-label columns where computed) and, when computed,
    ``slot_shares.csv``, ``bias_effects.csv``, ``self_enhancement.csv``; for one-order
    judges or probabilities with labels the sections of
    :func:`~voirdire.analysis.report.audit_sections.audit_sections`; ``appendix``
    (Markdown) ends ``report.md`` (``voirdire report DIR``'s people section).

    The files are one set, named last by ``analysis_manifest.json``
    (:class:`voirdire.file_set.FileSet`); a report beside them that was built from another
    analysis (:func:`check_report` refuses it) loses ``report.html``, ``verdicts.html``
    and ``report_manifest.json``, with a :class:`~voirdire.exceptions.StaleReportWarning`.
    """
    out = Path(out)
    m = out / "metrics"
    # one set (voirdire.file_set): the old manifest removed first, each file staged and
    # renamed in place, analysis_manifest.json last
    with FileSet(out, ANALYSIS_MANIFEST, "voirdire analyze") as s:
        tables.judgments.write_parquet(
            s.staged(out / "judgments.parquet"), compression="zstd"
        )
        s.add(out / "judgments.parquet")
        jm, cm = tables.judge_metrics, tables.cell_metrics
        added = [
            c for c in added_metrics() if c in jm.columns
        ]  # registered metrics other than pc, pf, rs
        jm_cols = (
            JUDGE_METRIC_COLUMNS
            + [c for c in GOLD_JUDGE_COLUMNS if c in jm.columns]
            + added
        )
        s.add(write_csv(jm.select(jm_cols), m / "judge_metrics.csv"))
        cm_cols = CELL_METRIC_COLUMNS + [
            c for c in GOLD_CELL_COLUMNS if c in cm.columns
        ]
        s.add(write_csv(cm.select(cm_cols), m / "cell_metrics.csv"))
        for name, table in (
            ("slot_shares", tables.slot_shares),
            ("bias_effects", tables.bias_effects),
            ("self_enhancement", tables.self_enhancement),
        ):
            if table is not None:
                s.add(write_csv(table, m / f"{name}.csv"))
        md = markdown_report(
            tables.job,
            shown.position,
            tables.judge_metrics,
            tables.cell_metrics,
            tables.slot_shares,
            shown.series,
        )
        # one order per pair, or probabilities with labels: their sections and files, else ""
        extra, extra_csvs = audit_sections(shown, out)
        for name, table in extra_csvs.items():
            s.add(write_csv(table, m / f"{name}.csv"))
        if "reliability" in extra_csvs:  # the figure audit_sections drew beside them
            s.add(out / "figures" / "reliability.png")
        for more in (extra, appendix):
            if more:
                md = md.rstrip("\n") + "\n\n" + more
        md = _answer_first(md, shown)
        s.add(write_text(out / "report.md", md))
    retire_stale_report(out, "analysis")  # a report of the analysis just replaced


def report_inputs(
    out_dir: str | os.PathLike,
    dirs: Sequence[str | os.PathLike],
    people_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """What a report in ``out_dir`` of ``dirs`` records of its inputs in its manifest's
    ``meta``: ``inputs``, per directory its path relative to ``out_dir`` and the SHA-256 of
    its ``analysis_manifest.json`` (None where it has none), and ``people``, the same of the
    ``voirdire people`` files the report shows, in ``people_dir`` (None without them).
    Reads only."""
    out = Path(out_dir)
    inputs = [
        {"dir": Path(os.path.relpath(d, out)).as_posix(), "analysis": set_digest(d, ANALYSIS_MANIFEST)}
        for d in dirs
    ]  # fmt: skip
    where = people_dir
    people = None
    if where is not None:
        people = {
            "dir": Path(os.path.relpath(where, out)).as_posix(),
            "manifest": set_digest(where, PEOPLE_MANIFEST),
        }
    return {"inputs": inputs, "people": people}


def check_report(out_dir: str | os.PathLike) -> dict[str, Any]:
    """Refuse a report in ``out_dir`` that is not one whole set (``report_manifest.json``
    missing, or a file not the one it names: :func:`voirdire.file_set.check_set`), or that
    sits beside, or was built from, an analysis other than the one there now: an input
    directory still there (its ``job.json``) whose ``analysis_manifest.json`` is not the one
    recorded (metrics newer than the report). Returns the manifest's ``meta``.

    Raises:
        ConfigError: one line naming the report or the directory.
    """
    from voirdire.layout import JOB_FILE

    out = Path(out_dir)
    meta = check_set(out, REPORT_MANIFEST, "voirdire report", ("report.html",))
    inputs = meta.get("inputs")
    if not isinstance(inputs, list):
        raise ConfigError(
            f"{out / REPORT_MANIFEST}: records no inputs; run voirdire report again"
        )
    for item in inputs:
        rel = item.get("dir") if isinstance(item, dict) else None
        if not isinstance(rel, str) or "\x00" in rel:
            raise ConfigError(
                f"{out / REPORT_MANIFEST}: an input is not a path; run voirdire report again"
            )
        d = out / rel
        if not (d / JOB_FILE).is_file():
            continue  # moved or removed: the report stands as it was written
        if set_digest(d, ANALYSIS_MANIFEST) != item.get("analysis"):
            raise ConfigError(
                f"{out / 'report.html'} was built from another analysis of {d} (its metrics "
                "are newer than the report, or cut short); run voirdire report again"
            )
    people = meta.get("people")
    if people is not None:
        rel = people.get("dir") if isinstance(people, dict) else None
        if not isinstance(rel, str) or "\x00" in rel:
            raise ConfigError(
                f"{out / REPORT_MANIFEST}: people's files are not a path; run voirdire report again"
            )
        d = out / rel
        if d.is_dir() and set_digest(d, PEOPLE_MANIFEST) != people.get("manifest"):
            raise ConfigError(
                f"{out / 'report.html'} shows other people's files than those in {d} (voirdire "
                "people ran again, or was cut short); run voirdire report again"
            )
    return meta


def retire_stale_report(out: str | os.PathLike, what: str = "analysis") -> list[Path]:
    """Remove a report's pages and manifest from ``out`` when they no longer stand beside the
    files there (:func:`check_report` refuses them: another analysis, or other people's
    files), with a :class:`~voirdire.exceptions.StaleReportWarning` naming ``what`` was
    replaced: report.html never sits beside metrics newer than it. Returns what was removed."""
    from voirdire.layout import REPORT_HTML, VERDICTS_HTML

    out = Path(out)
    if not (out / REPORT_HTML).is_file() and not (out / REPORT_MANIFEST).is_file():
        return []
    try:
        check_report(out)
        return []
    except ConfigError:
        gone = [
            out / n
            for n in (REPORT_HTML, VERDICTS_HTML, REPORT_MANIFEST)
            if (out / n).is_file()
        ]
        for p in gone:
            p.unlink()
    warnings.warn(
        f"removed {', '.join(p.name for p in gone)} from {out}: built from an earlier "
        f"{what}; run voirdire report {out} again",
        StaleReportWarning,
        stacklevel=3,
    )
    return gone


def _answer_first(md: str, shown: DirShown) -> str:
    """``md`` with a one-order log's answer under its title (the first thing read)."""
    if shown.one_order is None or not shown.one_order.height:
        return md
    from voirdire.analysis.position.one_order import one_order_answers

    lines = [markdown(a) for a in one_order_answers(shown.one_order).values()]
    title, _, rest = md.partition("\n")
    return "\n\n".join([title, *lines, rest.lstrip("\n")]) if lines else md


def write_study(
    study: Study, out: str | Path, choice: Choice, formats: Sequence[str] = ("png",)
) -> dict[str, Any]:
    """Write the study's CSV tables under ``out/metrics/`` (with ``choice.csv``, the
    summary's ranking) and its figures' static files under ``out/figures/`` (``formats``:
    ``png``, ``svg``). Returns ``{"tables": {name: path}, "figures": {key: path},
    "charts": {key: Vega-Lite specification}}``, keys ``"kind:scope"``."""
    from voirdire.analysis.position.regression import drop1_tables

    out = Path(out)
    mdir, fdir = out / "metrics", out / "figures"
    mdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    tables: dict[str, Path] = {}

    def csv(name: str, df: pl.DataFrame) -> None:
        p = mdir / f"{name}.csv"
        write_csv(df, p)
        tables[name] = p

    csv("choice", choice.table)
    csv("panel", study.panel)
    csv("judge_task", study.judge_task)
    csv("cells", study.cells)
    if study.reg_cells is not None:
        csv("regression_cells", study.reg_cells)
    if study.regressions:
        csv("regression_drop1", drop1_tables(study.regressions))
        for r in study.regressions:
            csv(f"regression_drop1_{file_part(r.scope)}_{r.response}", r.drop1)
            csv(f"regression_path_{file_part(r.scope)}_{r.response}", r.path)
            csv(
                f"regression_coefficients_{file_part(r.scope)}_{r.response}",
                r.coefficients,
            )
    if study.power.height:
        csv("power", study.power)
    for d, s in zip(study.dirs, directory_file_parts(study.dirs)):
        csv(f"bootstrap_{s}", d.ci)
        csv(f"bootstrap_task_{s}", d.ci_task)
        csv(f"sign_test_{s}", d.sign)
        if d.agreement is not None:
            csv(f"agreement_{s}", d.agreement)
            csv(f"fleiss_{s}", d.fleiss)
            csv(f"disagreement_{s}", d.disagreement)
            csv(f"majority_{s}", d.majority)

    figs, specs = _study_figures(study, choice, fdir, formats)
    bias = write_bias(
        study.dirs, mdir, fdir
    )  # CALM biases and self-enhancement (docs/bias-metrics.md)
    return {
        "tables": tables | bias["tables"],
        "figures": figs | bias["figures"],
        "charts": specs,
    }


#: the static file of each figure kind: ``figures/<stem>_<scope>.png`` (``.svg``)
_STEMS = {"radar": "pc_radar", "pf_bars": "pf_bars", "task_heatmaps": "task_heatmaps", "pc_pf": "pc_vs_pf",
          "accuracy_pc": "accuracy_vs_pc", "families": "families", "owr": "vs_win_rate", "rs": "rs",
          "agreement": "agreement", "disagreement": "disagreement"}  # fmt: skip


def _study_figures(
    study: Study, choice: Choice, fdir: Path, formats: Sequence[str]
) -> tuple[dict[str, Path], dict[str, dict[str, Any]]]:
    """The study's figures (:func:`~voirdire.analysis.report.study_charts.study_charts`):
    their static files under ``fdir`` (``formats``: ``png``, ``svg``) and their Vega-Lite
    specifications for the page; keys ``"kind:scope"``. An agreement figure's file is
    named by its directory (:func:`directory_file_parts`), and by its benchmark too where
    the directory has several."""
    from voirdire.analysis.report.study_charts import study_charts
    from voirdire.analysis.report.vega import spec_of, write_static

    figs: dict[str, Path] = {}
    specs: dict[str, dict[str, Any]] = {}
    parts = directory_file_parts(study.dirs)
    for key, chart in study_charts(study, choice).items():
        kind, _, scope = key.partition(":")
        stem = _STEMS.get(kind) or f"metric_{file_part(kind.removeprefix('metric_'))}"
        if kind in ("agreement", "disagreement"):  # scope "<i>:<benchmark>"
            i, _, bench = scope.partition(":")
            d = study.dirs[int(i)]
            many = d.agreement is not None and d.agreement["benchmark"].n_unique() > 1
            part = f"{parts[int(i)]}_{file_part(bench)}" if many else parts[int(i)]
        else:
            part = file_part(scope)
        specs[key] = spec = spec_of(chart)
        static = write_static(spec, fdir / f"{stem}_{part}", formats)
        if static:
            figs[key] = next(iter(static.values()))
    return figs, specs


def write_bias(dirs: list[Any], mdir: Path, fdir: Path) -> dict[str, dict[str, Path]]:
    """Write the bias tables and figures of each directory (computed before: nothing is
    computed here).

    Args:
        dirs: objects with ``name`` (str), ``bias_effects`` and ``self_enhancement`` (the
            study's :class:`~voirdire.analysis.outputs.Results`: the tables of
            :func:`~voirdire.analysis.outputs.compute_dir`, None where the directory has no
            perturbation or no own-model judge).
        mdir, fdir: the report's ``metrics/`` and ``figures/`` folders.

    Returns:
        ``{"tables": {name: csv path}, "figures": {"bias:<dir slug>:<benchmark>": png path}}``;
        empty dicts when no directory has perturbations or own-model judges.
    """
    tables: dict[str, Path] = {}
    figs: dict[str, Path] = {}
    for d in dirs:
        s = file_part(d.name)
        eff = d.bias_effects
        if eff is not None:
            tables[f"bias_effects_{s}"] = p = mdir / f"bias_effects_{s}.csv"
            write_csv(eff, p)
            for b in sorted(eff.get_column("benchmark").unique().to_list()):
                from voirdire.analysis.report.bias import bias_figure

                bs = file_part(b)
                figs[f"bias:{s}:{b}"] = bias_figure(
                    eff.filter(pl.col("benchmark") == b),
                    fdir / f"bias_{s}_{bs}.png",
                    f"{d.name} · {b}: RR (dashed: CR) and Δ ± 95% CI",
                )
        se = d.self_enhancement
        if se is not None:
            if se.height:
                tables[f"self_enhancement_{s}"] = p = mdir / f"self_enhancement_{s}.csv"
                write_csv(se, p)
    return {"tables": tables, "figures": figs}


def write_mitigation(
    table: pl.DataFrame,
    annotation: pl.DataFrame | None,
    out: str | os.PathLike,
    notes: Sequence[str] = (),
    into: FileSet | None = None,
) -> dict[str, Path]:
    """Write ``mitigation.csv`` (the table), ``mitigation.md`` (markdown, with ``notes``
    below the table: :func:`~voirdire.analysis.report.mitigation.mitigation_markdown`),
    ``figures/mitigation_cost_agreement.png`` and ``bpde_annotation.csv`` (the pairs for
    people, with an empty ``winner`` column) under ``out``, as one set
    (:mod:`voirdire.file_set`): into the set ``into`` (a report's) or, without it, its own,
    ``mitigation_manifest.json`` written last (``manifest`` among the paths). Returns the
    paths by name."""
    from voirdire.analysis.report.mitigation import cost_agreement_figure

    d = Path(out)
    if into is None:
        with FileSet(d, MITIGATION_MANIFEST, "voirdire mitigate") as s:
            paths = write_mitigation(table, annotation, d, notes, into=s)
        return paths | {"manifest": s.written}
    s = into
    paths = {
        "table": s.add(write_csv(table, d / "mitigation.csv")),
        "markdown": s.add(
            write_text(
                d / "mitigation.md",
                "# Removing position bias\n\n" + mitigation_markdown(table, notes),
            )
        ),
    }
    figure = d / "figures" / "mitigation_cost_agreement.png"
    cost_agreement_figure(table, s.staged(figure), "cost versus agreement")
    paths["figure"] = s.add(figure)
    if annotation is not None:
        paths["annotation"] = s.add(write_csv(annotation, d / "bpde_annotation.csv"))
    return paths
