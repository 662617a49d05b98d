"""The built-in per-judge metrics: position consistency (PC), preference fairness (PF) and
repetition stability (RS), each a :class:`~voirdire.analysis.position.registry.Metric`
record made by one decorator (Shi et al. 2024; ``docs/metrics.md``, *Per judge*). The
formulas are in :mod:`voirdire.analysis.position.formulas`; this module names them, says
what they sum and how they are shown."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from voirdire.analysis.position.formulas import pc_statistic, pf_statistic, rs_statistic
from voirdire.analysis.position.registry import HIGHER, ZERO, register_metric
from voirdire.analysis.position.uncertainty import question_sums, stability_sums

__all__ = ["pc", "pf", "rs"]

_CELLS = ("candidate", "task")


@register_metric("pc", sums=question_sums, values=("ccn", "v"), cells=_CELLS, label="PC", fmt="{:.3f}",
                 direction=HIGHER, doc="position consistency, pooled Σccn/Σv over the cells")  # fmt: skip
def pc(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """PC per replicate (:data:`~voirdire.analysis.position.formulas.pc_statistic`)."""
    return pc_statistic(s)


@register_metric("pf", sums=question_sums, values=("n", "d", "v"), cells=_CELLS, label="PF", fmt="{:+.3f}", direction=ZERO,
                 doc="preference fairness, the mean over cells of (rcn − pcn)/n")  # fmt: skip
def pf(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """PF per replicate (:func:`~voirdire.analysis.position.formulas.pf_statistic`)."""
    return pf_statistic(s)


@register_metric("rs", sums=stability_sums, values=("s", "c"), label="RS", fmt="{:.3f}", direction=HIGHER,
                 doc="repetition stability, the mean of RS_j over queries asked at least twice")  # fmt: skip
def rs(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """RS per replicate (:data:`~voirdire.analysis.position.formulas.rs_statistic`)."""
    return rs_statistic(s)
