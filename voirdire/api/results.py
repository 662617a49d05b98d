"""Finished directories through the public API: load one, analyse it in place, report,
mitigate and rank several together (no judge is called). The analysis (scipy, statsmodels,
matplotlib: seconds to import) is imported by the functions that use it, when they use it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.core import ConfigError
from voirdire.ownership import claim_output_dir

if TYPE_CHECKING:
    from voirdire.analysis.outputs import Results
    from voirdire.engine.plan import JobPlan

__all__ = ["load", "analyze", "report", "mitigate", "rank"]


def load(output_dir: str | os.PathLike) -> Results:
    """A finished (or partly finished) output directory as
    :class:`~voirdire.analysis.outputs.Results` (``voirdire.Results``), recomputed from
    its raw outputs (no judge is called). Read-only: nothing in the directory is written
    (it may sit on a read-only filesystem); :func:`analyze` also refreshes its files.

    Raises:
        FileNotFoundError: not a voirdire output directory.
    """
    from voirdire.analysis.outputs import compute_dir

    out = Path(output_dir)
    return compute_dir(out)


def prepare_analysis(plan: JobPlan) -> None:
    """What :func:`analyze` can do before the verdicts exist, done while Ray starts (the
    engine's ``meanwhile``): import the modules it uses (the analysis' stages and the
    report's writers, pandas through pyarrow), and start drawing the inter-pass kappa's
    bootstrap counts for the plan's questions in a thread
    (:func:`~voirdire.analysis.mitigation.pass_kappa.prepare_pass_kappa`, with the
    settings :func:`analyze` uses) while the judges answer."""
    import voirdire.analysis.build  # noqa: F401
    import voirdire.analysis.outputs  # noqa: F401
    from voirdire.analysis.mitigation.pass_kappa import prepare_pass_kappa
    from voirdire.analysis.settings import DEFAULTS

    if plan.list_size == 2 and plan.instances.height:
        prepare_pass_kappa(
            _bootstrap_units(plan),
            replicates=DEFAULTS.replicates,
            seed=DEFAULTS.seed,
        )


def _bootstrap_units(plan: JobPlan) -> int:
    """How many units the inter-pass kappa's bootstrap will draw for ``plan``: its questions,
    or the clusters its benchmark declares for them (PandaLM's instructions: what
    :func:`~voirdire.analysis.mitigation.pass_kappa.pass_kappa` draws); the questions when the
    clusters cannot be read now (the bootstrap then draws for itself)."""
    from voirdire.analysis.position.clusters import benchmark_clusters
    from voirdire.analysis.stats.bootstrap import in_clusters

    name = plan.bench.name
    qs = plan.instances.select(pl.lit(name).alias("benchmark"), "question_id").unique()
    try:
        clusters = benchmark_clusters([name], {name: str(plan.data_dir)})
    except (ConfigError, OSError):
        clusters = None
    return in_clusters(qs, clusters).get_column("question_id").n_unique()


def analyze(output_dir: str | os.PathLike) -> Results:
    """:func:`load`, then rewrite the directory's ``judgments.parquet``, ``metrics/*.csv`` and
    ``report.md`` from what it computed (what ``voirdire analyze DIR`` does).

    Raises:
        FileNotFoundError: not a voirdire output directory.
        ConfigError: a directory that is not ours or holds a symbolic link
            (:func:`voirdire.ownership.claim_output_dir`); nothing is written.
    """
    from voirdire.analysis.build import write_analysis
    from voirdire.analysis.outputs import compute_dir

    out = claim_output_dir(output_dir)
    res = compute_dir(out)
    write_analysis(res, out)
    return res


def report(
    output_dirs: list[str | os.PathLike],
    *,
    out: str | os.PathLike | None = None,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = 1000,
    rs_min: float = 0.90,
    max_error: float = 0.05,
    tokenizer: str | None = None,
    leaderboards: bool = False,
    margin: float = 0.02,
    figures: tuple[str, ...] = ("png",),
) -> Path:
    """Analyse finished directories together and write ``report.html`` (self-contained),
    ``report.md``, ``metrics/*.csv`` and ``figures/*.png`` under ``out``; returns the path of
    ``report.html``. With ``out`` given, nothing is written outside it (the input
    directories are only read). With ``leaderboards``, also the "Leaderboards" section
    (``docs/ranking.md``). ``margin``: the summary names the cheapest judge within this much
    accuracy (PC without gold labels) of the best; ``figures``: the static files of each
    figure (``"png"``, ``"svg"``). See :func:`voirdire.analysis.build.build_report`.

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice, an invalid judge-attributes table, or a directory to write that is not
            ours (:mod:`voirdire.ownership`; nothing is written).
    """
    from voirdire.analysis.build import build_report
    from voirdire.analysis.together import report_dirs

    if judge_attributes is not None and "judge" not in judge_attributes.columns:
        raise ConfigError("judge attributes need a 'judge' column")
    return build_report(
        report_dirs(output_dirs, out), out, judge_attributes=judge_attributes, replicates=replicates,
        rs_min=rs_min, max_error=max_error, tokenizer=tokenizer, leaderboards=leaderboards,
        margin=margin, figures=figures,
    )  # fmt: skip


def mitigate(
    output_dirs: list[str | os.PathLike],
    *,
    reference: str | None = None,
    out: str | os.PathLike | None = None,
    strategies: list[str] | None = None,
    replicates: int = 1000,
    beta: float = 0.2,
    labels: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Apply the mitigation strategies that need no new query to finished directories
    (analysed together) and evaluate them (``docs/mitigation.md``); no judge is called.

    Args:
        output_dirs: finished output directories.
        reference: ``"gold"`` (the benchmark's gold labels, carried by the judgments:
            accuracy), ``"judge:NAME"`` (that judge's consistent verdicts: agreement with a
            judge, not with people) or a CSV of human labels (question_id, candidate,
            reference, winner); None: no accuracy or kappa.
        out: where to write (default: ``<dir>-mitigation`` next to the first directory, named after the inputs: :func:`~voirdire.analysis.together.default_out`).
        strategies: registered strategy names (default: every no-query strategy).
        replicates: cluster-bootstrap replicates; beta: share of pairs chosen by BPDE for
            people.
        labels: the filled ``bpde_annotation.csv`` (human verdicts): adds
            ``gate+labels`` and ``swap-tie+labels``, whose labelled pairs take human verdict.

    Returns:
        Paths by name: ``table`` (mitigation.csv), ``markdown`` (mitigation.md), ``figure``
        (cost versus agreement, PNG), ``annotation`` (bpde_annotation.csv).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice; a judge named ``gold`` (or ``people``) or
            ``panel-N``; a directory to write that is not ours (:mod:`voirdire.ownership`),
            an unknown strategy, a strategy's missing need (e.g. option_probs), a reference
            that matches no judge or pair, labels with unknown candidates.
    """
    from voirdire.analysis.mitigation.evaluation import run_mitigation
    from voirdire.analysis.mitigation.orders import one_order_lines
    from voirdire.analysis.mitigation.registry import (
        both_orders_names,
        default_strategies,
    )
    from voirdire.analysis.report.files import write_mitigation
    from voirdire.analysis.together import destination, read_together

    found = read_together(output_dirs, ["judgments", "clusters"])  # inputs untouched
    table, annotation, _ = run_mitigation(
        found.judgments, reference=reference, strategies=strategies, replicates=replicates,
        beta=beta, labels=labels, clusters=found.clusters,
    )  # fmt: skip
    names = strategies or default_strategies(found.judgments)
    notes = one_order_lines(found.judgments, both_orders_names(names))
    return write_mitigation(
        table, annotation, destination(output_dirs, out, "mitigation"), notes
    )


def rank(
    output_dirs: list[str | os.PathLike],
    *,
    out: str | os.PathLike | None = None,
    method: str = "bt",
    strategies: list[str] | None = None,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    prior: float = 0.0,
    replicates: int = 1000,
    seed: int = 0,
    style: bool = False,
    lc_formula: str = "auto",
    lc_difficulty: str = "auto",
) -> tuple[Any, dict[str, Path]]:
    """Leaderboards of finished directories (analysed together; ``docs/ranking.md``): per
    judge, strategy and order view Bradley–Terry (or Davidson) ratings with cluster-bootstrap
    intervals over questions, the human leaderboard where judgments carry gold labels,
    and the rank flips between views; no judge is called.

    Args:
        output_dirs: finished output directories.
        out: where to write (default: ``<dir>-ranking`` next to the first directory, named after the inputs: :func:`~voirdire.analysis.together.default_out`).
        method: ``"bt"``, ``"davidson"`` or a registered method / import path.
        strategies: mitigation strategies ranked besides each order's own verdicts
            (default: every no-query strategy the judgments allow).
        anchor, anchor_rating: the model shown at ``anchor_rating`` on Arena's 400/ln 10
            scale (default: the model in the most comparisons); the ranks do not depend on it.
        prior: pseudo-ties added between every two models that met (0: the plain maximum
            likelihood; 1 keeps undefeated or winless models at a finite rating).
        replicates, seed: the cluster bootstrap's.
        style: also style-controlled ratings (Chatbot Arena) and length-controlled win rates
            (AlpacaEval 2) from the answers' lengths and markdown, read from each job's
            benchmark (``metrics/leaderboard_style.csv``, ``metrics/lc_win_rate.csv``).
        lc_formula: the LC win rate's formula: ``"v1"`` (AlpacaEval's published one, from
            the weights the benchmark's data carries: an AlpacaEval audit of fetched logs),
            ``"minimal"``, or ``"auto"`` (v1 where weights exist, else minimal).
        lc_difficulty: where v1's instruction difficulty comes from: ``"release"`` (fitted
            once on every model of the release the audited logs belong to, cached: a model's
            LC does not depend on the others audited), ``"audited"`` (fitted on the audited
            models), or ``"auto"`` (the release where the benchmark's data holds it).

    Returns:
        ``(ranking, paths)``: the :class:`~voirdire.analysis.ranking.rank.Ranking`
        (``leaderboard``, ``flips``, ``summary()``) and the written files by name
        (``leaderboard``, ``rank_flips``, ``markdown``, ``html``, ``figure:...``).

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: a directory given twice; a judge named ``gold`` (or ``people``) or
            ``panel-N`` (the analysis's own names); ``out`` holds something no voirdire report writes (or a link); no
            pairwise judgments, a board with one model, an anchor that is not a candidate, an unknown method or strategy.
    """
    from voirdire.analysis.ranking.rank import rank_judgments
    from voirdire.analysis.report.ranking import write_ranking
    from voirdire.analysis.together import destination, read_together

    dest = destination(output_dirs, out, "ranking")  # before any work
    # the judgments and the bootstrap's clusters only: no metric, no kappa bootstrap
    found = read_together(
        output_dirs, ["job", "judgments", "clusters"], own_names=False
    )
    ranking = rank_judgments(
        found.judgments, method=method, strategies=strategies, anchor=anchor, anchor_rating=anchor_rating,
        prior=prior, replicates=replicates, seed=seed, features=found.features() if style else None,
        clusters=found.clusters, lc_weights=found.length_control_weights() if style else {}, lc_formula=lc_formula,
        lc_release=found.length_control_release() if style else {}, lc_difficulty=lc_difficulty,
    )  # fmt: skip
    return ranking, write_ranking(ranking, dest)
