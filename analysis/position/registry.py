"""The per-judge figures that get a cluster-bootstrap interval, by name: a built-in table
read lazily, plus metrics added at run time.

A *metric* is two functions (``docs/contributing.md``, *A new metric*):

- ``sums(judgments) -> DataFrame``: one row per (benchmark, judge, [cells], question_id)
  with numeric columns summed over that question's records (e.g.
  :func:`~voirdire.analysis.position.uncertainty.question_sums`);
- ``statistic({value: (R, U) array}) -> (R,) array``: the figure of one judge from the sums
  per cell, for R replicates at once (e.g.
  :func:`~voirdire.analysis.position.formulas.pc_statistic`); the point estimate is its
  one-replicate case.

:func:`~voirdire.analysis.position.uncertainty.bootstrap_ci` computes every registered
metric with one shared draw of the questions, so a new metric appears in every
``bootstrap_*.csv`` of the report. :data:`BUILTIN` names each function as
``"module:function"``, imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from voirdire.core import ConfigError

__all__ = ["BUILTIN", "Metric", "register_metric", "metric", "metrics"]

_PKG = "voirdire.analysis.position"

#: name -> (sums ``"module:function"``, statistic ``"module:function"``, summed values, cell columns, one-line doc)
BUILTIN: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...], str]] = {
    "pc": (f"{_PKG}.uncertainty:question_sums", f"{_PKG}.formulas:pc_statistic", ("ccn", "v"), ("candidate", "task"),
           "position consistency, pooled Σccn/Σv over the cells"),
    "pf": (f"{_PKG}.uncertainty:question_sums", f"{_PKG}.formulas:pf_statistic", ("n", "d"), ("candidate", "task"),
           "preference fairness, the mean over cells of (rcn − pcn)/n"),
    "rs": (f"{_PKG}.uncertainty:stability_sums", f"{_PKG}.formulas:rs_statistic", ("s", "c"), (),
           "repetition stability, the mean of RS_j over queries asked at least twice"),
}  # fmt: skip


def _load(target: Callable[..., Any] | str, name: str) -> Callable[..., Any]:
    if callable(target):
        return target
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"metric {name!r}: cannot load {target!r} ({exc})") from exc


@dataclass(frozen=True)
class Metric:
    """A registered metric: ``sums`` and ``statistic`` (functions or ``"module:function"``
    paths, imported on first use), the summed ``values`` the statistic reads, the ``cells``
    columns it averages over (may be empty) and a one-line ``doc``."""

    name: str
    sums: Callable[..., Any] | str
    statistic: Callable[..., Any] | str
    values: tuple[str, ...]
    cells: tuple[str, ...] = ()
    doc: str = ""

    @cached_property
    def sums_fn(self) -> Callable[..., Any]:
        """The sums function (judgments -> per-question sums)."""
        return _load(self.sums, self.name)

    @cached_property
    def statistic_fn(self) -> Callable[..., Any]:
        """The statistic (``{value: (R, U)}`` -> (R,))."""
        return _load(self.statistic, self.name)


_ADDED: dict[str, Metric] = {}


def register_metric(
    name: str,
    sums: Callable[..., Any] | str,
    statistic: Callable[..., Any] | str,
    *,
    values: Sequence[str],
    cells: Sequence[str] = (),
    doc: str = "",
) -> None:
    """Add (or replace) the metric ``name`` (see the module docstring for the two functions)."""
    _ADDED[name] = Metric(name, sums, statistic, tuple(values), tuple(cells), doc)


def metric(name: str) -> Metric:
    """The metric ``name``.

    Raises:
        ConfigError: unknown name (the known ones listed).
    """
    if name in _ADDED:
        return _ADDED[name]
    if name in BUILTIN:
        return _builtin(name)
    raise ConfigError(f"unknown metric {name!r}; known: {', '.join(sorted({*BUILTIN, *_ADDED}))}")


_BUILT: dict[str, Metric] = {}


def _builtin(name: str) -> Metric:
    if name not in _BUILT:
        sums, stat, values, cells, doc = BUILTIN[name]
        _BUILT[name] = Metric(name, sums, stat, values, cells, doc)
    return _BUILT[name]


def metrics() -> dict[str, Metric]:
    """Every metric by name, built-in first, then the added ones (nothing is imported)."""
    return {n: metric(n) for n in dict.fromkeys([*BUILTIN, *_ADDED])}


def unregister_metric(name: str) -> None:
    """Remove a metric added with :func:`register_metric` (built-in ones stay)."""
    _ADDED.pop(name, None)
