"""The mitigation strategies by name: a built-in table read lazily, plus strategies added at
run time.

A strategy is a function ``judgments -> verdict table``
(:data:`~voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS`). The built-in ones live one
per module next to this one; :data:`BUILTIN` names each as ``"module:function"`` with the
judgment columns it needs and a one-line description, and the module is imported the first
time the strategy is asked for (:func:`strategy`): importing the registry imports no
strategy, and no strategy registers itself as a side effect of being imported. A strategy
from elsewhere is added with :func:`register_strategy` (a function or a ``"module:function"``
path). ``docs/contributing.md`` shows a new strategy as one module plus one registration.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import polars as pl
from voirdire.analysis.mitigation.verdicts import VERDICT_SCHEMA, Strategy, conform

from voirdire.core import ConfigError

__all__ = [
    "BUILTIN",
    "DEFAULT_STRATEGIES",
    "SCORE_STRATEGIES",
    "Registered",
    "register_strategy",
    "strategies",
    "strategy",
    "check_needs",
    "apply_strategies",
    "default_strategies",
]

_PKG = "voirdire.analysis.mitigation"

#: name -> (``"module:function"``, judgment columns it needs, one-line description)
BUILTIN: dict[str, tuple[str, tuple[str, ...], str]] = {
    "single": (f"{_PKG}.single:single", (), "each order's verdict on its own (1 query per verdict; the baseline)"),
    "swap-tie": (f"{_PKG}.swap_tie:swap_tie", (), "both orders; disagreement -> tie (MT-Bench)"),
    "gate": (f"{_PKG}.gate:gate", (), "both orders; disagreement -> undecided (escalate)"),
    "jury": (f"{_PKG}.jury:jury", (), "majority vote over the judges, per order"),
    "jury-pc": (f"{_PKG}.jury_pc:jury_pc", (), "vote weighted by each judge's PC, per order"),
    "jury+swap-tie": (f"{_PKG}.jury_swap_tie:jury_swap_tie", (), "jury per order, then swap-and-tie"),
    "score-single": (f"{_PKG}.scores:score_single", ("slot_scores",), "score mode, one sample per order, a verdict per order (no calibration; 1 query per verdict)"),
    "bpc": (f"{_PKG}.scores:bpc", ("slot_scores",), "score mode, both orders: each answer's mean score over its positions (Wang et al.; 2 queries)"),
    "mec": (f"{_PKG}.scores:mec", ("slot_scores",), "score mode, k evidence samples averaged within each order, a verdict per order (Wang et al.; k queries)"),
    "mec+bpc": (f"{_PKG}.scores:mec_bpc", ("slot_scores",), "score mode, k samples per order averaged, then the two positions' means (Wang et al.; 2k queries)"),
    "logprob-raw": (f"{_PKG}.calibration:logprob_raw", ("option_probs",), "per-order argmax of the option probabilities"),
    "logprob-debiased": (f"{_PKG}.calibration:logprob_debiased", ("option_probs",), "per-order argmax after dividing out the slot prior"),
    "logprob-calibrated": (f"{_PKG}.calibration:logprob_calibrated", ("option_probs",), "debiased probabilities averaged over positions"),
}  # fmt: skip

#: The strategies that need no new query and only pairwise letters (the CLI's default).
DEFAULT_STRATEGIES = ["single", "swap-tie", "gate", "jury", "jury-pc", "jury+swap-tie"]
#: Score-mode strategies (Wang et al. 2023), run by default on judgments with scores.
SCORE_STRATEGIES = ["score-single", "bpc", "mec", "mec+bpc"]


@dataclass(frozen=True)
class Registered:
    """A named strategy: ``target`` (the function, or its ``"module:function"`` path,
    imported on first use of :attr:`fn`), ``needs`` (judgment columns that must hold values,
    e.g. ``option_probs``), ``doc`` (one line)."""

    name: str
    target: Strategy | str
    needs: tuple[str, ...] = ()
    doc: str = ""

    @cached_property
    def fn(self) -> Strategy:
        """The strategy function (judgments -> verdict table).

        Raises:
            ConfigError: a ``"module:function"`` path that does not import.
        """
        if callable(self.target):
            return self.target
        module, _, attr = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"strategy {self.name!r}: cannot load {self.target!r} ({exc})") from exc


_ADDED: dict[str, Registered] = {}
_LOADED: dict[str, Registered] = {}


def register_strategy(name: str, fn: Strategy | str, *, needs: Sequence[str] = (), doc: str = "") -> None:
    """Add (or replace) the strategy ``name``: ``fn`` is the function or its
    ``"module:function"`` path (imported on first use); ``needs`` names the judgment columns
    it requires (checked by :func:`check_needs` before anything runs)."""
    _ADDED[name] = Registered(name, fn, tuple(needs), doc)
    _LOADED.pop(name, None)


def strategies() -> dict[str, Registered]:
    """Every strategy by name, built-in and added (nothing is imported)."""
    return {n: strategy(n) for n in [*BUILTIN, *_ADDED]}


def strategy(name: str) -> Registered:
    """The strategy ``name`` (its function is imported when first called through ``.fn``).

    Raises:
        ConfigError: unknown name (the known ones listed).
    """
    if name not in _LOADED:
        if name in _ADDED:
            _LOADED[name] = _ADDED[name]
        elif name in BUILTIN:
            target, needs, doc = BUILTIN[name]
            _LOADED[name] = Registered(name, target, needs, doc)
        else:
            raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(sorted({*BUILTIN, *_ADDED}))}")
    return _LOADED[name]


def check_needs(reg: Registered, judgments: pl.DataFrame) -> None:
    """Raise ConfigError when ``judgments`` lack a column ``reg`` needs, or it is all null."""
    for col in reg.needs:
        if col not in judgments.columns or judgments.get_column(col).null_count() == judgments.height:
            raise ConfigError(
                f"strategy {reg.name!r} needs {col!r} in the judgments, and this job has none "
                f"(e.g. run the judge in logprob mode for option_probs, or score mode for scores)"
            )


def apply_strategies(judgments: pl.DataFrame, names: Sequence[str] | Mapping[str, Strategy]) -> pl.DataFrame:
    """Run strategies on ``judgments``: registered names (their needs checked first, all
    before any runs) or a mapping name -> function. Returns the verdict tables stacked with
    a leading ``strategy`` column (str).

    Raises:
        ConfigError: an unknown name or a missing need, naming the strategy.
    """
    if isinstance(names, Mapping):
        regs = [Registered(n, f) for n, f in names.items()]
    else:
        regs = [strategy(n) for n in names]
    for reg in regs:
        check_needs(reg, judgments)
    frames = [conform(reg.fn(judgments)).select(pl.lit(reg.name).alias("strategy"), pl.all()) for reg in regs]
    return pl.concat(frames) if frames else pl.DataFrame(schema={"strategy": pl.String, **VERDICT_SCHEMA})


def default_strategies(judgments: pl.DataFrame) -> list[str]:
    """The strategies run when none are named: :data:`DEFAULT_STRATEGIES`, plus the score
    strategies (:data:`SCORE_STRATEGIES`) when the judgments hold scores (score mode)."""
    scored = "slot_scores" in judgments.columns and judgments.get_column("slot_scores").null_count() < judgments.height
    return DEFAULT_STRATEGIES + (SCORE_STRATEGIES if scored else [])

