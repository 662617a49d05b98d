"""The per-judge metrics by name, on the one registry of every kind
(:class:`voirdire.registry.Registry`).

A *metric* is a :class:`Metric` record: two functions and how to show the figure.

- ``sums(judgments) -> DataFrame``: one row per (benchmark, judge, [cells], question_id)
  with numeric columns summed over that question's records (e.g.
  :func:`~voirdire.analysis.position.uncertainty.question_sums`);
- ``statistic({value: (R, U) array}) -> (R,) array``: the figure of one judge from the sums
  per cell, for R replicates at once (e.g.
  :func:`~voirdire.analysis.position.formulas.pc_statistic`); the point estimate is its
  one-replicate case;
- ``label`` (the column header), ``fmt`` (a ``str.format`` spec) and ``direction``
  (:data:`HIGHER`, :data:`LOWER` or :data:`ZERO`: which values are better).

One decorator, :func:`register_metric`, on the statistic makes the record (in its own
module; ``docs/contributing.md``, *A new metric*). Every registered metric reaches every
per-judge table through its record: :func:`~voirdire.analysis.position.uncertainty.bootstrap_ci`
computes them all with one shared draw of the questions (``bootstrap_*.csv``), the
directory's ``metrics/judge_metrics.csv`` and the terminal table get its point estimate
(:func:`~voirdire.analysis.position.uncertainty.with_metric_columns`), the report's panel its
interval and a figure. The built-in ones (pc, pf, rs: ``builtin_metrics.py``) are named in
the lazy table of :data:`METRICS`, imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from voirdire.import_paths import describe
from voirdire.registry import Registry

__all__ = [
    "HIGHER", "LOWER", "ZERO", "METRICS", "BUILTIN_METRICS", "Metric", "register_metric", "metric", "metrics",
    "added_metrics",
]  # fmt: skip

#: directions: higher values are better, lower values are better, values nearer zero are better
HIGHER, LOWER, ZERO = "higher", "lower", "zero"
_DIRECTIONS = {
    HIGHER: "higher is better",
    LOWER: "lower is better",
    ZERO: "nearer zero is better",
}

SumsFn = Callable[..., Any]
StatisticFn = Callable[..., Any]


@dataclass(frozen=True)
class Metric:
    """A registered metric (callable as its statistic).

    Attributes:
        name: the ``metric`` value of ``bootstrap_*.csv`` and the column of
            ``judge_metrics.csv`` and of the report's panel (``<name>_lo``/``_hi``: its interval).
        sums: judgments (JUDGMENT_SCHEMA) -> per-question sums (see the module docstring).
        statistic: ``{value: (R, U) float array} -> (R,)`` float array.
        values: the summed columns the statistic reads.
        cells: the columns it averages over (may be empty).
        label: the header of its column in the terminal, Markdown and HTML tables.
        fmt: the ``str.format`` spec of its values (``"{:.3f}"``, ``"{:+.3f}"``, ``"{:.2%}"``).
        direction: :data:`HIGHER`, :data:`LOWER` or :data:`ZERO` (nearer zero is better).
        doc: one line.
    """

    name: str
    sums: SumsFn = field(repr=False)
    statistic: StatisticFn = field(repr=False)
    values: tuple[str, ...]
    cells: tuple[str, ...] = ()
    label: str = ""
    fmt: str = "{:.3f}"
    direction: str = HIGHER
    doc: str = ""

    def __post_init__(self) -> None:
        if self.direction not in _DIRECTIONS:
            known = ", ".join(_DIRECTIONS)
            raise ValueError(
                f"metric {self.name!r}: direction {self.direction!r} is not one of {known}"
            )
        if not self.label:
            object.__setattr__(self, "label", self.name)

    def __call__(self, sums: Any) -> Any:
        return self.statistic(sums)

    @property
    def sums_fn(self) -> SumsFn:
        """The sums function (judgments -> per-question sums)."""
        return self.sums

    @property
    def statistic_fn(self) -> StatisticFn:
        """The statistic (``{value: (R, U)}`` -> (R,))."""
        return self.statistic

    @property
    def direction_text(self) -> str:
        """How to read it, for the reports: ``"higher is better"``, ``"nearer zero is better"``."""
        return _DIRECTIONS[self.direction]


def _check(obj: object) -> None:
    if not isinstance(obj, Metric):
        raise TypeError(
            f"{describe(obj)} is not a metric (decorate its statistic with register_metric)"
        )


#: The metrics: the built-in ones first, in the order of the tables.
METRICS: Registry[Metric] = Registry(
    "metric", check=_check, entry_points="voirdire.metrics"
)
for _name in ("pc", "pf", "rs"):
    METRICS.builtin(_name, f"voirdire.analysis.position.builtin_metrics:{_name}")

#: the built-in metrics, whose columns the per-judge tables place themselves
BUILTIN_METRICS = ("pc", "pf", "rs")


def register_metric(
    name: str,
    *,
    sums: SumsFn,
    values: Sequence[str],
    cells: Sequence[str] = (),
    label: str = "",
    fmt: str = "{:.3f}",
    direction: str = HIGHER,
    doc: str = "",
    replace: bool = False,
) -> Callable[[StatisticFn], Metric]:
    """Decorator: the statistic it decorates becomes the :class:`Metric` record ``name``
    (registered and returned; see :class:`Metric` for the fields).

    Raises:
        ValueError: an unknown ``direction``, or ``name`` taken by another metric and
            ``replace`` False.
    """

    def deco(statistic: StatisticFn) -> Metric:
        m = Metric(
            name,
            sums,
            statistic,
            tuple(values),
            tuple(cells),
            label,
            fmt,
            direction,
            doc,
        )
        return METRICS.register(m, replace=replace)

    return deco


def metric(name: str) -> Metric:
    """The metric ``name`` (registered, built-in or an import path ``"package.module:NAME"``).

    Raises:
        ConfigError: unknown name (the known ones listed).
    """
    return METRICS.get(name)


def metrics() -> dict[str, Metric]:
    """Every metric by name, built-in first, then the registered ones; one that does not
    load (an installed plugin's module that fails to import) is left out with a warning
    (:meth:`~voirdire.registry.Registry.available`)."""
    return METRICS.available(warn=True)


def added_metrics() -> dict[str, Metric]:
    """The metrics other than the built-in pc, pf and rs (their columns are appended to
    the per-judge tables)."""
    return {n: m for n, m in metrics().items() if n not in BUILTIN_METRICS}
