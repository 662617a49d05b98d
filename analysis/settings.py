"""The analysis' defaults, declared once: one :class:`AnalysisSettings` record.

Every command (``analyze``, ``report``, ``mitigate``, ``rank``, the Python API) starts from
:data:`DEFAULTS` and changes only what its options set (``dataclasses.replace``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AnalysisSettings", "DEFAULTS"]


@dataclass(frozen=True)
class AnalysisSettings:
    """The analysis' settings.

    Attributes:
        replicates: cluster-bootstrap replicates of every interval of one directory (inter-pass
            kappa, accuracy against gold labels, the study's PC/PF/RS intervals).
        seed: the bootstrap's seed.
        kappa_gate: the inter-pass kappa at which a judge passes
            (:data:`voirdire.analysis.mitigation.pass_kappa.KAPPA_GATE`; Cohen's κ, unitless).
        rs_min, max_error: the report's reading thresholds: a judge is readable at RS ≥
            ``rs_min`` and an error rate ≤ ``max_error`` (shares in [0, 1]).
        report_replicates: the most replicates the report's mitigation draws (a section of
            a report, not its main figures). The report's leaderboards draw ``replicates``
            with ``seed``, as ``voirdire rank`` does: the same boards for the same settings.
        power_replicates: simulated tables per cell of the report's power table.
        choice_margin: how far below the most accurate judge passing every gate a cheaper
            judge may be and still be named beside it (:mod:`voirdire.analysis.choice`; in
            the rank key's unit: accuracy, or PC without gold labels).
        static_figures: the static files the report writes of each figure beside the page
            (``png``, ``svg``; the page's own menu exports any figure as drawn).

    The command line's and :mod:`voirdire.api`'s defaults are the same values, written
    out in their signatures (importing the API imports no analysis).
    """

    replicates: int = 1000
    seed: int = 0
    kappa_gate: float = 0.6
    rs_min: float = 0.90
    max_error: float = 0.05
    report_replicates: int = 200
    power_replicates: int = 300
    choice_margin: float = 0.02
    static_figures: tuple[str, ...] = ("png",)


#: the defaults every command starts from
DEFAULTS = AnalysisSettings()
