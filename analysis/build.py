"""A report of several directories as named stages: everything is computed here, then the
report modules write and render what they are given (:mod:`voirdire.analysis.report`).

The stages (:mod:`voirdire.stages`), over a state that starts with ``dirs`` (paths),
``settings`` (:class:`~voirdire.analysis.settings.AnalysisSettings`), ``judge_attributes``,
``tokenizer`` and ``leaderboards`` (bool):

===========  ===========================================  =================================
stage        reads                                        writes
===========  ===========================================  =================================
study        dirs, settings, judge_attributes, tokenizer  study (each directory's stages of
                                                          :mod:`voirdire.analysis.stages`)
choice       study, settings                              choice (the summary read first)
pairwise     study                                        pairwise, gold
mitigation   pairwise, gold, settings                     mitigation, mitigation_notes
ranking      study, pairwise, settings, leaderboards      ranking
shown        study                                        shown (each directory's
                                                          :class:`DirShown`)
verdicts     study                                        verdicts (the flipped pairs of
                                                          ``verdicts.html``)
===========  ===========================================  =================================

(:data:`REPORT_STAGES` is the source.) One directory's :class:`DirShown` (what its
``report.md`` shows beyond its tables: control rows, list-wise series counts, one-order and
calibration tables) is :data:`DIR_STAGES`' (:func:`dir_shown`). The mitigation draws
``min(replicates, report_replicates)`` bootstrap replicates; the leaderboards ``replicates``
with ``seed``, as ``voirdire rank`` (the same boards for the same settings).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.analysis.report.shown import SERIES_CLASSES, DirShown
from voirdire.analysis.settings import DEFAULTS, AnalysisSettings
from voirdire.stages import Stage, run_stages

__all__ = [
    "DIR_STAGES",
    "REPORT_INPUTS",
    "REPORT_STAGES",
    "build_report",
    "dir_shown",
    "write_analysis",
]


def _study(
    dirs: list[Path],
    settings: AnalysisSettings,
    judge_attributes: pl.DataFrame | None,
    tokenizer: str | None,
) -> dict[str, Any]:
    from voirdire.analysis.study import analyze_study

    return {
        "study": analyze_study(
            dirs,
            judge_attributes=judge_attributes,
            replicates=settings.replicates,
            tokenizer=tokenizer,
            rs_min=settings.rs_min,
            max_error=settings.max_error,
        )  # fmt: skip
    }


def _pairwise(study: Any) -> dict[str, Any]:
    """The directories' pairwise judgments together (None without any), and whether they
    carry gold labels."""
    from voirdire.analysis.position.gold import has_gold
    from voirdire.analysis.position.pairing import PAIRWISE_MODES

    frames = [
        d.judgments
        for d in study.dirs
        if d.judgments.height
        and d.judgments.get_column("mode").is_in(PAIRWISE_MODES).any()
    ]
    j = pl.concat(frames, how="diagonal_relaxed") if frames else None
    return {"pairwise": j, "gold": j is not None and has_gold(j)}


def _choice(study: Any, settings: AnalysisSettings) -> dict[str, Any]:
    """The summary read first: the judges ranked per benchmark, their gates, cost and
    throughput (:func:`~voirdire.analysis.choice.choose_judges`)."""
    from voirdire.analysis.choice import choose_judges, judge_costs

    costs = [judge_costs(d.judgments) for d in study.dirs if d.judgments.height]
    cost = (
        pl.concat(costs).unique(["benchmark", "judge"], keep="first") if costs else None
    )
    frames = [d.judgments for d in study.dirs if d.judgments.height]
    effects = [e for d in study.dirs if (e := d.one_order()).height]
    one = pl.concat(effects, how="diagonal_relaxed") if effects else None
    return {
        "choice": choose_judges(
            study.panel, cost, settings, judgments=frames or None, one_order=one
        )
    }


def _section_replicates(settings: AnalysisSettings) -> int:
    return min(settings.replicates, settings.report_replicates)


def _mitigation(
    study: Any, pairwise: pl.DataFrame | None, gold: bool, settings: AnalysisSettings
) -> dict[str, Any]:
    """The "Removing position bias" section: the strategies that need no new query,
    graded against the gold labels where the benchmark has them."""
    from voirdire.analysis.mitigation.evaluation import run_mitigation
    from voirdire.analysis.mitigation.orders import one_order_lines
    from voirdire.analysis.mitigation.registry import (
        both_orders_names,
        default_strategies,
    )

    if pairwise is None:
        return {"mitigation": None, "mitigation_notes": []}
    from voirdire.analysis.ranking.rank import dir_clusters

    table = run_mitigation(
        pairwise,
        reference="gold" if gold else None,
        replicates=_section_replicates(settings),
        clusters=dir_clusters(study.dirs),
    )[0]
    notes = one_order_lines(pairwise, both_orders_names(default_strategies(pairwise)))
    return {"mitigation": table, "mitigation_notes": notes}


def _ranking(
    study: Any,
    pairwise: pl.DataFrame | None,
    settings: AnalysisSettings,
    leaderboards: bool,
) -> dict[str, Any]:
    from voirdire.analysis.ranking.rank import dir_clusters, rank_judgments

    if not leaderboards or pairwise is None:
        return {"ranking": None}
    ranking = rank_judgments(  # rank's defaults: the same boards as `voirdire rank`
        pairwise,
        replicates=settings.replicates,
        seed=settings.seed,
        clusters=dir_clusters(study.dirs),
    )
    return {"ranking": ranking}


def _position(results: Any) -> dict[str, Any]:
    from voirdire.analysis.biases.perturbed import control_rows

    return {"position": control_rows(results.judgments)}


def _series(position: pl.DataFrame) -> dict[str, Any]:
    """The list-wise series counted by class per (benchmark, judge)."""
    from voirdire.analysis.position.listwise import listwise_series

    if not (
        "mode" in position.columns
        and position.filter(pl.col("mode") == "listwise").height
    ):
        return {"series": None}
    k = pl.col("klass")
    counts = (
        listwise_series(position)
        .group_by("benchmark", "judge")
        .agg(n=pl.len(), **{c: (k == c).sum() for c in SERIES_CLASSES})
        .sort("benchmark", "judge")
    )
    return {"series": counts}


def _one_order(results: Any) -> dict[str, Any]:
    """The one-order tables (``docs/one-order-and-calibration.md``) where they apply."""
    from voirdire.analysis.position.one_order import has_one_order

    if not has_one_order(results.judgments):
        return {"order_design": None, "one_order": None}
    return {"order_design": results.order_design(), "one_order": results.one_order()}


def _calibration(results: Any) -> dict[str, Any]:
    """The calibration tables where a judge states probabilities and labels exist."""
    from voirdire.analysis.position.calibration_error import has_forecasts

    j = results.judgments
    if not ("gold" in j.columns and has_forecasts(j)):
        return {"calibration": None, "reliability": None}
    return {"calibration": results.calibration(), "reliability": results.reliability()}


#: what one directory's report shows beyond its tables, from its ``results``
DIR_STAGES: tuple[Stage, ...] = (
    Stage("position", ("results",), ("position",), _position),
    Stage("series", ("position",), ("series",), _series),
    Stage("one_order", ("results",), ("order_design", "one_order"), _one_order),
    Stage("calibration", ("results",), ("calibration", "reliability"), _calibration),
)


def dir_shown(results: Any) -> DirShown:
    """:data:`DIR_STAGES` on one directory's :class:`~voirdire.analysis.outputs.Results`
    (the one-order and calibration tables are its methods' defaults, kept on it)."""
    state = run_stages(DIR_STAGES, {"results": results})
    fields = [f.name for f in dataclasses.fields(DirShown) if f.name != "name"]
    return DirShown(results.name, **{k: state[k] for k in fields})


def write_analysis(results: Any, out: str | os.PathLike) -> None:
    """One directory's files (:func:`~voirdire.analysis.report.files.write_dir`) from
    ``results`` and what :func:`dir_shown` computes of it (``voirdire analyze``)."""
    from voirdire.analysis.report.files import write_dir

    write_dir(results, dir_shown(results), out)


def _shown(study: Any) -> dict[str, Any]:
    return {"shown": [dir_shown(d) for d in study.dirs]}


def _verdicts(study: Any) -> dict[str, Any]:
    """The verdict viewer's pairs (:func:`~voirdire.analysis.report.verdicts.flipped_pairs`
    over every directory's judgments), with the instruction and prompts each directory's
    benchmark rebuilds (none where it cannot be read again: a recorded log)."""
    from voirdire.analysis.report.verdicts import (
        DIRECTORY,
        flipped_pairs,
        with_prompts,
    )

    frames = [  # keyed by position: two directories may share a name
        d.judgments.with_columns(pl.lit(str(i)).alias(DIRECTORY))
        for i, d in enumerate(study.dirs)
        if d.judgments.height
    ]
    if not frames:
        return {"verdicts": None}
    flips = flipped_pairs(pl.concat(frames, how="diagonal_relaxed"))
    at = pl.col(DIRECTORY)
    parts = [
        with_prompts(flips.pairs.filter(at == str(i)), _benchmark_or_none(d.job))
        for i, d in enumerate(study.dirs)
        if flips.pairs.filter(at == str(i)).height
    ]
    pairs = pl.concat(parts, how="diagonal_relaxed") if parts else flips.pairs
    return {"verdicts": dataclasses.replace(flips, pairs=pairs, lists=_lists(study))}


def _lists(study: Any) -> Any:
    """The viewer's list-wise series (:func:`~voirdire.analysis.report.list_verdicts.flipped_lists`
    over every directory's judgments) with the instruction and prompts each directory's
    benchmark rebuilds; None where no directory judged a list."""
    from voirdire.analysis.report.list_verdicts import flipped_lists, with_list_prompts

    frames = [
        d.judgments.with_columns(pl.lit(str(i)).alias("directory"))
        for i, d in enumerate(study.dirs)
        if "mode" in d.judgments.columns
        and d.judgments.filter(pl.col("mode") == "listwise").height
    ]
    if not frames:
        return None
    lists = flipped_lists(pl.concat(frames, how="diagonal_relaxed"))
    at = pl.col("directory")
    parts = [
        with_list_prompts(lists.series.filter(at == str(i)), _benchmark_or_none(d.job))
        for i, d in enumerate(study.dirs)
        if lists.series.height and lists.series.filter(at == str(i)).height
    ]
    series = pl.concat(parts, how="diagonal_relaxed") if parts else lists.series
    return dataclasses.replace(lists, series=series)


def _benchmark_or_none(job: dict[str, Any]) -> Any:
    """The directory's benchmark loaded again, or None where it cannot be (a recorded log
    whose data is not here, a name not registered)."""
    from voirdire.analysis.results_dir import dir_benchmark
    from voirdire.core import ConfigError

    try:
        return dir_benchmark(job)
    except (ConfigError, OSError, ValueError, KeyError):
        return None


#: the inputs of a report
REPORT_INPUTS = ("dirs", "settings", "judge_attributes", "tokenizer", "leaderboards")
#: a report of several directories, in the order of its data
REPORT_STAGES: tuple[Stage, ...] = (
    Stage("study", ("dirs", "settings", "judge_attributes", "tokenizer"), ("study",), _study),
    Stage("choice", ("study", "settings"), ("choice",), _choice),
    Stage("pairwise", ("study",), ("pairwise", "gold"), _pairwise),
    Stage("mitigation", ("study", "pairwise", "gold", "settings"), ("mitigation", "mitigation_notes"), _mitigation),
    Stage("ranking", ("study", "pairwise", "settings", "leaderboards"), ("ranking",), _ranking),
    Stage("shown", ("study",), ("shown",), _shown),
    Stage("verdicts", ("study",), ("verdicts",), _verdicts),
)  # fmt: skip


def build_report(
    dirs: list[str | os.PathLike],
    out: str | os.PathLike | None = None,
    *,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = DEFAULTS.replicates,
    rs_min: float | None = None,
    max_error: float | None = None,
    tokenizer: str | None = None,
    title: str | None = None,
    leaderboards: bool = False,
    margin: float = DEFAULTS.choice_margin,
    figures: tuple[str, ...] = DEFAULTS.static_figures,
) -> Path:
    """Analyse ``dirs`` together and write ``report.html``, ``verdicts.html`` (the flipped
    pairs, :mod:`~voirdire.analysis.report.verdicts`), ``report.md``, ``metrics/*.csv``
    and ``figures/*.png`` under ``out`` (default: the directory itself when there is one,
    else ``report/`` next to the first). With ``out`` given, nothing is written outside it
    (the inputs may be read-only); without it, each directory's own ``judgments.parquet``,
    ``metrics/*.csv`` and ``report.md`` are refreshed too. Returns the path of
    ``report.html``. With ``leaderboards``, also the "Leaderboards" section and the files of
    :func:`~voirdire.analysis.report.ranking.write_ranking` (``replicates``
    replicates, as ``voirdire rank``; ``docs/ranking.md``). ``margin`` and ``figures``:
    :class:`~voirdire.analysis.settings.AnalysisSettings`' ``choice_margin`` and
    ``static_figures``.

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ValueError: no directory, or a tokenizer that cannot be loaded.
        ConfigError: ``leaderboards`` on judgments that cannot be ranked (one model).
    """
    if not dirs:
        raise ValueError("no output directory given")
    paths = [Path(d) for d in dirs]
    out_dir = (
        Path(out)
        if out is not None
        else (paths[0] if len(paths) == 1 else paths[0].parent / "report")
    )
    settings = dataclasses.replace(
        DEFAULTS,
        replicates=replicates,
        rs_min=DEFAULTS.rs_min if rs_min is None else rs_min,
        max_error=DEFAULTS.max_error if max_error is None else max_error,
        choice_margin=margin,
        static_figures=tuple(figures),
    )
    state = run_stages(
        REPORT_STAGES,
        {"dirs": paths, "settings": settings, "judge_attributes": judge_attributes,
         "tokenizer": tokenizer, "leaderboards": leaderboards},
    )  # fmt: skip
    name = title or ("voirdire report: " + ", ".join(p.name for p in paths))
    return _write(state, out_dir, name, own_dirs=out is None, several=len(paths) > 1)


def _people(state: dict[str, Any], out_dir: Path) -> tuple[Any, dict[str, Any]]:
    """``voirdire people``'s tables of the study's judges, found beside the report
    (:func:`~voirdire.analysis.report.people_section.report_people`; a broken table is
    refused before anything is written), and their figures' specifications by key; their
    static files written under ``figures/`` (the tables' ``figures``: caption -> path for
    ``report.md``). ``(None, {})`` when there are none."""
    from voirdire.analysis.report.people_section import (
        people_specs,
        report_people,
        write_people_figures,
    )

    panel = state["study"].panel.select("benchmark", "judge")
    people = report_people(out_dir, state["dirs"], set(panel.iter_rows()))
    if people is None:
        return None, {}
    specs = people_specs(people)
    static = write_people_figures(
        specs, out_dir / "figures", state["settings"].static_figures
    )
    figures = {k.partition(":")[2]: f"figures/{p.name}" for k, p in static.items()}
    return dataclasses.replace(people, figures=figures), specs


def _write(
    state: dict[str, Any], out_dir: Path, name: str, *, own_dirs: bool, several: bool
) -> Path:
    """Write what the stages computed, then render the page (nothing computed here)."""
    from voirdire.analysis.report.audit_sections import audit_view
    from voirdire.analysis.report.files import (
        report_inputs,
        write_dir,
        write_html,
        write_mitigation,
        write_study,
        write_text,
    )
    from voirdire.analysis.report.html import render_html
    from voirdire.analysis.report.markdown import study_markdown
    from voirdire.analysis.report.people import people_markdown
    from voirdire.analysis.report.ranking import ranking_html, write_ranking
    from voirdire.analysis.report.verdicts import verdicts_page
    from voirdire.exceptions import StaleReportWarning
    from voirdire.file_set import FileSet
    from voirdire.layout import REPORT_MANIFEST, VERDICTS_HTML

    study, mitigation, ranking = state["study"], state["mitigation"], state["ranking"]
    # voirdire people's files read first: a broken one is refused before anything is written
    people, people_charts = _people(state, out_dir)
    # report.md of the directory itself is its analysis' (one set): people's section in it
    own_md = not several and own_dirs
    appendix = people_markdown(people) if own_md and people is not None else ""
    if own_dirs:
        with warnings.catch_warnings():  # the report retired is the one written next
            warnings.simplefilter("ignore", StaleReportWarning)
            for d, shown in zip(study.dirs, state["shown"], strict=True):
                write_dir(d, shown, d.output_dir, appendix)
    # one set (voirdire.file_set): the old report_manifest.json removed first, each file
    # whole or absent, the manifest last, recording the analyses and people's files it read
    from voirdire.analysis.report.people_files import find_people

    formats = state["settings"].static_figures
    found = find_people(out_dir, state["dirs"]) if people is not None else None
    inputs = report_inputs(out_dir, state["dirs"], found)
    with FileSet(out_dir, REPORT_MANIFEST, "voirdire report", inputs) as s:
        figures = [*(people.figures.values() if people is not None else ())]
        written = write_study(study, out_dir, state["choice"], formats)
        figures += written["figures"].values()
        for (
            f
        ) in figures:  # each figure's static files: the one shown, the other formats
            s.add(out_dir / f)
            for other in {(out_dir / f).with_suffix(f".{x}") for x in formats}:
                if other.is_file():
                    s.add(other)
        for p in written["tables"].values():
            s.add(p)
        written["charts"] = written.get("charts", {}) | people_charts
        if mitigation is not None:
            write_mitigation(
                mitigation, None, out_dir, state["mitigation_notes"], into=s
            )
        if not own_md:
            md = study_markdown(study, name)
            if people is not None:
                md = md.rstrip("\n") + "\n\n" + people_markdown(people)
            s.add(write_text(out_dir / "report.md", md))
        section = None
        if ranking is not None:
            write_ranking(ranking, out_dir, into=s)
            section = ranking_html(ranking)  # the section of ranking.html
        audit = audit_view(
            state["shown"], out_dir / "figures"
        )  # one-order logs, probabilities
        for k, d in enumerate(state["shown"]):  # the reliability figures it drew
            if d.calibration is not None:
                s.add(out_dir / "figures" / f"reliability_{k}.png")
        viewer = state["verdicts"] is not None
        if viewer:
            s.add(
                write_html(
                    out_dir / VERDICTS_HTML,
                    verdicts_page(state["verdicts"], f"{name}: flipped verdicts"),
                )
            )
        page = render_html(
            study, written, name, mitigation, gold=state["gold"], leaderboards=section,
            audit=audit, choice=state["choice"], mitigation_notes=state["mitigation_notes"], people=people,
            verdicts=viewer,
        )  # fmt: skip
        return s.add(write_html(out_dir / "report.html", page))
