"""What one directory's report shows beyond its tables, as one record the analysis' stages
fill (:mod:`voirdire.analysis.build`) and the report modules render."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["SERIES_CLASSES", "DirShown"]

#: the list-wise series classes counted per (benchmark, judge), in the report's order
SERIES_CLASSES = ("consistent", "primacy", "recency", "balanced", "error", "other")


@dataclass(frozen=True)
class DirShown:
    """What one directory's ``report.md``, its extra CSVs and the HTML report's "One order
    per pair, and calibration" section show beyond its
    :class:`~voirdire.analysis.outputs.Results`: computed by
    :data:`voirdire.analysis.build.DIR_STAGES` (:func:`~voirdire.analysis.build.dir_shown`),
    rendered by :mod:`voirdire.analysis.report`.

    Attributes:
        name: the directory's name.
        position: its control (unperturbed) judgments (``JUDGMENT_SCHEMA`` rows).
        series: list-wise series per (benchmark, judge), sorted: ``n`` (series) and a count
            per class of :data:`SERIES_CLASSES` (ints; ``primacy``/``recency``:
            primacy-/recency-leaning; :func:`~voirdire.analysis.position.listwise.listwise_series`);
            None without list-wise control rows.
        order_design, one_order: :meth:`~voirdire.analysis.outputs.Results.order_design`
            and :meth:`~voirdire.analysis.outputs.Results.one_order` where some judge
            judged each pair in one order, else None.
        calibration, reliability: :meth:`~voirdire.analysis.outputs.Results.calibration`
            and :meth:`~voirdire.analysis.outputs.Results.reliability` where a judge states
            probabilities and gold labels exist, else None.
    """

    name: str
    position: pl.DataFrame
    series: pl.DataFrame | None = None
    order_design: pl.DataFrame | None = None
    one_order: pl.DataFrame | None = None
    calibration: pl.DataFrame | None = None
    reliability: pl.DataFrame | None = None
