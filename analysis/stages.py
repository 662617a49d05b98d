"""One directory's analysis as named stages, each declaring what it reads and writes
(:mod:`voirdire.stages`, the engine's planning machinery).

A command asks for the outputs it needs (:func:`analyse`); only the stages producing them
run (:func:`voirdire.stages.stages_for`): ``rank`` and ``mitigate`` ask for ``judgments``
and ``clusters`` and draw no kappa bootstrap. The state starts with ``dir`` (the
:class:`~voirdire.analysis.results_dir.FinishedDir`, read through the one door) and
``settings`` (:class:`~voirdire.analysis.settings.AnalysisSettings`):

================  ==========================================  ================================
stage             reads                                       writes
================  ==========================================  ================================
judgments         dir                                         job, judgments
control           judgments                                   position
metrics           position                                    pair_metrics, pair_cells
clusters          judgments, job                              clusters
pass_kappa        position, clusters, settings                pass_kappa
gold              position, clusters, settings                gold_judges, gold_cells
judge_metrics     pair_metrics, pair_cells, pass_kappa,       judge_metrics, cell_metrics
                  gold_judges, gold_cells, position
slot_shares       position                                    slot_shares
bias_effects      judgments                                   bias_effects
self_enhancement  judgments                                   self_enhancement
================  ==========================================  ================================

(:data:`ANALYSIS_STAGES` is the source; ``tests/test_analysis_stages.py`` checks it.)
Several directories together (the report, ranking, mitigation) are
:mod:`voirdire.analysis.report.build`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.analysis.results_dir import FinishedDir, read_dir
from voirdire.analysis.settings import DEFAULTS, AnalysisSettings
from voirdire.stages import Stage, run_stages, stages_for

__all__ = [
    "ANALYSIS_INPUTS",
    "ANALYSIS_STAGES",
    "DIR_OUTPUTS",
    "DirAnalysis",
    "analyse",
    "analyse_dirs",
]


def _judgments(dir: FinishedDir) -> dict[str, Any]:
    return {"job": dir.job, "judgments": dir.judgments}


def _control(judgments: pl.DataFrame) -> dict[str, Any]:
    """Position-bias figures are computed on the unperturbed (control) queries."""
    from voirdire.analysis.biases.perturbed import control_rows

    return {"position": control_rows(judgments)}


def _metrics(position: pl.DataFrame) -> dict[str, Any]:
    from voirdire.analysis.position.metrics import summarize

    jm, cm = summarize(position)
    return {"pair_metrics": jm, "pair_cells": cm}


def _pass_kappa(
    position: pl.DataFrame, clusters: pl.DataFrame | None, settings: AnalysisSettings
) -> dict[str, Any]:
    """The inter-pass kappa, its interval drawing the benchmark's clusters (questions)."""
    from voirdire.analysis.mitigation.pass_kappa import pass_kappa

    return {
        "pass_kappa": pass_kappa(
            position,
            replicates=settings.replicates,
            seed=settings.seed,
            clusters=clusters,
        )
    }


def _clusters(judgments: pl.DataFrame, job: dict[str, Any]) -> dict[str, Any]:
    """What every bootstrap of the directory draws where its benchmark declares it."""
    from voirdire.analysis.position.clusters import job_clusters

    return {"clusters": job_clusters(judgments, job)}


def _gold(
    position: pl.DataFrame, clusters: pl.DataFrame | None, settings: AnalysisSettings
) -> dict[str, Any]:
    """Accuracy against gold labels where the benchmark has them, else None."""
    from voirdire.analysis.position.gold import gold_cells, gold_judges, has_gold

    if not has_gold(position):
        return {"gold_judges": None, "gold_cells": None}
    return {
        "gold_judges": gold_judges(
            position,
            replicates=settings.replicates,
            seed=settings.seed,
            clusters=clusters,
        ),
        "gold_cells": gold_cells(position),
    }


def _judge_metrics(
    pair_metrics: pl.DataFrame,
    pair_cells: pl.DataFrame,
    pass_kappa: pl.DataFrame,
    gold_judges: pl.DataFrame | None,
    gold_cells: pl.DataFrame | None,
    position: pl.DataFrame,
) -> dict[str, Any]:
    """The judge table: PC/PF/RS, the inter-pass kappa (left join: null for a judge without
    a pair in both orders), the gold columns, a column per registered metric other than pc,
    pf and rs; the cell table with its gold columns."""
    from voirdire.analysis.position.formulas import CELL_KEYS, JUDGE_KEYS
    from voirdire.analysis.position.uncertainty import with_metric_columns

    jm = pair_metrics.join(pass_kappa, on=["benchmark", "judge"], how="left")
    cm = pair_cells
    if gold_judges is not None and gold_cells is not None:
        jm = jm.join(gold_judges, on=JUDGE_KEYS, how="left")
        cm = cm.join(gold_cells, on=CELL_KEYS, how="left")
    return {"judge_metrics": with_metric_columns(jm, position), "cell_metrics": cm}


def _slot_shares(position: pl.DataFrame) -> dict[str, Any]:
    from voirdire.analysis.position.listwise import slot_shares

    listwise = position.filter(pl.col("mode") == "listwise").height
    return {"slot_shares": slot_shares(position) if listwise else None}


def _bias_effects(judgments: pl.DataFrame) -> dict[str, Any]:
    from voirdire.analysis.biases.effects import bias_effects
    from voirdire.analysis.biases.perturbed import has_perturbations

    return {
        "bias_effects": bias_effects(judgments)
        if has_perturbations(judgments)
        else None
    }


def _self_enhancement(judgments: pl.DataFrame) -> dict[str, Any]:
    from voirdire.analysis.biases.self_enhancement import (
        has_own_models,
        self_enhancement,
    )

    own = self_enhancement(judgments) if has_own_models(judgments) else None
    return {"self_enhancement": own}


#: the inputs of one directory's analysis
ANALYSIS_INPUTS = ("dir", "settings")
#: one directory's analysis, in the order of its data
ANALYSIS_STAGES: tuple[Stage, ...] = (
    Stage("judgments", ("dir",), ("job", "judgments"), _judgments),
    Stage("control", ("judgments",), ("position",), _control),
    Stage("metrics", ("position",), ("pair_metrics", "pair_cells"), _metrics),
    Stage("clusters", ("judgments", "job"), ("clusters",), _clusters),
    Stage(
        "pass_kappa", ("position", "clusters", "settings"), ("pass_kappa",), _pass_kappa
    ),
    Stage(
        "gold",
        ("position", "clusters", "settings"),
        ("gold_judges", "gold_cells"),
        _gold,
    ),
    Stage(
        "judge_metrics",
        (
            "pair_metrics",
            "pair_cells",
            "pass_kappa",
            "gold_judges",
            "gold_cells",
            "position",
        ),
        ("judge_metrics", "cell_metrics"),
        _judge_metrics,
    ),  # fmt: skip
    Stage("slot_shares", ("position",), ("slot_shares",), _slot_shares),
    Stage("bias_effects", ("judgments",), ("bias_effects",), _bias_effects),
    Stage("self_enhancement", ("judgments",), ("self_enhancement",), _self_enhancement),
)
#: what :class:`~voirdire.analysis.outputs.Results` holds of one directory
DIR_OUTPUTS = (
    "job",
    "judgments",
    "judge_metrics",
    "cell_metrics",
    "slot_shares",
    "bias_effects",
    "self_enhancement",
    "clusters",
)


def analyse(
    dir: FinishedDir,
    outputs: Sequence[str] = DIR_OUTPUTS,
    settings: AnalysisSettings = DEFAULTS,
    *,
    on_stage: Any = None,
) -> dict[str, Any]:
    """Run the stages of :data:`ANALYSIS_STAGES` that produce ``outputs`` (and only those)
    on a directory read through :func:`~voirdire.analysis.results_dir.read_dir`; returns
    the state by key (``outputs`` among it). ``on_stage`` is called with each stage after
    it ran.

    Raises:
        ValueError: an output no stage writes.
    """
    stages = stages_for(ANALYSIS_STAGES, outputs)
    return run_stages(
        stages,
        {"dir": dir, "settings": settings},
        [k for k in outputs if k not in ANALYSIS_INPUTS],
        on_stage=on_stage,
    )


@dataclass(frozen=True)
class DirAnalysis:
    """What :func:`analyse_dirs` computed of one directory: ``path`` and the stages' state,
    its keys read as attributes (``.judgments``, ``.clusters``, ``.job``: the names of
    :data:`ANALYSIS_STAGES`' writes)."""

    path: Path
    state: Mapping[str, Any]

    def __getattr__(self, key: str) -> Any:
        if key == "state":  # not set yet (copying, unpickling)
            raise AttributeError(key)
        try:
            return self.state[key]
        except KeyError:
            raise AttributeError(key) from None


def analyse_dirs(
    dirs: Sequence[str | os.PathLike],
    outputs: Sequence[str],
    settings: AnalysisSettings = DEFAULTS,
) -> list[DirAnalysis]:
    """:func:`analyse` of each directory (read through
    :func:`~voirdire.analysis.results_dir.read_dir`), in order; only the stages producing
    ``outputs`` run.

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ConfigError: its ``job.json`` is a link or not our record.
    """
    found = []
    for d in dirs:
        read = read_dir(d)
        found.append(DirAnalysis(read.path, analyse(read, outputs, settings)))
    return found
