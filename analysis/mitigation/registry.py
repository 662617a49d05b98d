"""The mitigation strategies by name, on the one registry of every kind
(:class:`voirdire.registry.Registry`).

A strategy is a function ``judgments -> verdict table``
(:data:`~voirdire.analysis.mitigation.verdicts.VERDICT_COLUMNS`) made into a
:class:`Strategy` record by one decorator, :func:`register_strategy`, in its own module::

    @register_strategy("swap-loss", doc="both orders; disagreement -> loss")
    def swap_loss(judgments): ...

The record says which judgment columns the strategy needs, whether it runs when none are
named (``default``), whether it reads scores (``score``: score mode, Wang et al. 2023;
a default score strategy runs only on judgments with scores), whether it needs each pair
in both orders (``both_orders``: a judge that judged each pair in one order has none of
its verdicts, :mod:`~voirdire.analysis.mitigation.orders`) and whether it is a panel of
judges (``panel``: by default only where a benchmark has two judges or more). The record is callable like
the function it wraps. The built-in strategies live one module each next to this one and
are named in the lazy table of :data:`STRATEGIES` (imported the first time a strategy is
asked for); a strategy from elsewhere is its own module with the same decorator, found by
name once imported, or by its import path ``"package.module:NAME"``.
``docs/contributing.md`` shows a new strategy as one module and one decorator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from voirdire.analysis.mitigation.verdicts import VERDICT_SCHEMA, conform
from voirdire.analysis.mitigation.verdicts import Strategy as StrategyFn
from voirdire.core import ConfigError
from voirdire.import_paths import describe
from voirdire.registry import Registry

__all__ = [
    "STRATEGIES",
    "Strategy",
    "register_strategy",
    "strategies",
    "strategy",
    "check_needs",
    "apply_strategies",
    "both_orders_names",
    "default_strategies",
]

_PKG = "voirdire.analysis.mitigation"


@dataclass(frozen=True)
class Strategy:
    """A named strategy (callable: ``judgments -> verdict table``, the function it wraps).

    Attributes:
        name: the name users write (``--strategies``), the ``strategy`` column.
        fn: the function ``judgments (JUDGMENT_SCHEMA) -> verdict table``.
        needs: judgment columns that must hold values (e.g. ``option_probs``, ``slot_scores``),
            checked by :func:`check_needs` before anything runs.
        doc: one line.
        default: run when no strategy is named (``voirdire mitigate`` without ``--strategies``).
        score: a score-mode strategy (reads ``slot_scores``); a default one runs only on
            judgments with scores.
        paired: it pairs the two orders of one comparison, so it needs judgments that are
            not all list-wise (``mode``), checked by :func:`check_needs` (every built-in
            strategy; False for one that reads list-wise judgments).
        both_orders: its verdicts combine a pair's two orders (swap-and-tie, the gate, BPC)
            or need a judge's figures that do (the PC-weighted jury): it is not computed for
            a judge that judged each pair in one order (:func:`apply_strategies`).
        panel: it votes across the judges of a benchmark (the juries): a default run
            (:func:`default_strategies`) leaves it out where every benchmark has one judge,
            whose panel would repeat that judge's own verdicts. With a reference judge,
            the panel votes without it (:func:`~voirdire.analysis.mitigation.evaluation.
            evaluate_strategies`).
        human_override: with human labels for the pairs BPDE chose (``mitigate
            --labels``), a ``<name>+labels`` variant also runs, its verdicts of those pairs
            replaced by the human labels (the human-in-the-loop step after the gate and
            swap-and-tie, whose disagreements are what BPDE picks).
    """

    name: str
    fn: StrategyFn = field(repr=False)
    needs: tuple[str, ...] = ()
    doc: str = ""
    default: bool = False
    score: bool = False
    paired: bool = True
    both_orders: bool = False
    panel: bool = False
    human_override: bool = False

    def __call__(self, judgments: pl.DataFrame) -> pl.DataFrame:
        return self.fn(judgments)


def _check(obj: object) -> None:
    if not isinstance(obj, Strategy):
        raise TypeError(
            f"{describe(obj)} is not a strategy (decorate the function with register_strategy)"
        )


#: The strategies: built-in names in the order messages and the default run list them.
STRATEGIES: Registry[Strategy] = Registry(
    "strategy", check=_check, entry_points="voirdire.strategies"
)
for _name, _target in {
    "single": "single:single",
    "swap-tie": "swap_tie:swap_tie",
    "gate": "gate:gate",
    "jury": "jury:jury",
    "jury-pc": "jury_pc:jury_pc",
    "jury+swap-tie": "jury_swap_tie:jury_swap_tie",
    "score-single": "scores:score_single",
    "bpc": "scores:bpc",
    "mec": "scores:mec",
    "mec+bpc": "scores:mec_bpc",
    "logprob-raw": "calibration:logprob_raw",
    "logprob-debiased": "calibration:logprob_debiased",
    "logprob-calibrated": "calibration:logprob_calibrated",
}.items():
    STRATEGIES.builtin(_name, f"{_PKG}.{_target}")


def register_strategy(
    name: str,
    fn: StrategyFn | None = None,
    *,
    needs: Sequence[str] = (),
    doc: str = "",
    default: bool = False,
    score: bool = False,
    paired: bool = True,
    both_orders: bool = False,
    panel: bool = False,
    human_override: bool = False,
    replace: bool = False,
) -> Callable[[StrategyFn], Strategy] | Strategy:
    """Register the strategy ``name`` (see :class:`Strategy` for the fields).

    As a decorator (``@register_strategy("swap-loss", doc=...)``) it turns the function into
    its :class:`Strategy` record, registered and returned; called with ``fn`` it registers
    that function and returns the record.

    Raises:
        ValueError: ``name`` is taken by another strategy and ``replace`` is False.
    """

    def deco(f: StrategyFn) -> Strategy:
        return STRATEGIES.register(
            Strategy(
                name,
                f,
                tuple(needs),
                doc,
                default,
                score,
                paired,
                both_orders,
                panel,
                human_override,
            ),
            replace=replace,
        )

    return deco if fn is None else deco(fn)


def strategies() -> dict[str, Strategy]:
    """Every strategy by name, built-in first, then the registered ones (imports every
    built-in strategy's module); one that does not load (an installed plugin's module that
    fails to import) is left out with a warning
    (:meth:`~voirdire.registry.Registry.available`)."""
    return STRATEGIES.available(warn=True)


def strategy(name: str) -> Strategy:
    """The strategy ``name``: a registered or built-in name, or an import path
    ``"package.module:NAME"`` of a :class:`Strategy` record.

    Raises:
        ConfigError: unknown name (the known ones listed), or a path that does not import.
    """
    return STRATEGIES.get(name)


def check_needs(reg: Strategy, judgments: pl.DataFrame) -> None:
    """Raise ConfigError when ``reg`` is :attr:`~Strategy.paired` and every judgment is
    list-wise (``mode``), or ``judgments`` lack a column ``reg`` needs, or it is all null."""
    if (
        reg.paired
        and "mode" in judgments.columns
        and not judgments.filter(pl.col("mode") != "listwise").height
    ):
        raise ConfigError(
            "no pairwise or score judgments to mitigate (the strategies pair the two orders "
            "of one comparison; list-wise judgments have no such pairs)"
        )
    for col in reg.needs:
        if (
            col not in judgments.columns
            or judgments.get_column(col).null_count() == judgments.height
        ):
            raise ConfigError(
                f"strategy {reg.name!r} needs {col!r} in the judgments, and this job has none "
                f"(e.g. run the judge in logprob mode for option_probs, or score mode for scores)"
            )


def apply_strategies(
    judgments: pl.DataFrame, names: Sequence[str] | Mapping[str, StrategyFn]
) -> pl.DataFrame:
    """Run strategies on ``judgments``: registered names (their needs checked first, all
    before any runs) or a mapping name -> function (no needs declared: the caller checked
    them, and kept a :attr:`~Strategy.both_orders` strategy from one-order judges, as
    :func:`~voirdire.analysis.mitigation.evaluation.run_mitigation` does). A registered
    :attr:`~Strategy.both_orders` strategy runs on the judges that judged some pair in both
    orders only (:func:`~voirdire.analysis.mitigation.orders.both_orders_only`). Returns
    the verdict tables stacked with a leading ``strategy`` column (str).

    Raises:
        ConfigError: an unknown name or a missing need, naming the strategy.
    """
    from voirdire.analysis.mitigation.orders import one_order_judges
    from voirdire.analysis.mitigation.shared_pairs import shared_pairs

    if isinstance(names, Mapping):
        regs = [Strategy(n, f, paired=False) for n, f in names.items()]
    else:
        regs = [strategy(n) for n in names]
    for reg in regs:
        check_needs(reg, judgments)
    one = one_order_judges(judgments) if any(r.both_orders for r in regs) else None
    # the judges of both orders, filtered once (both_orders_only's rows): one object, so
    # swap-tie and gate share its pairing (shared_pairs)
    kept = judgments
    if one is not None and one.height:
        kept = judgments.join(one, on=["benchmark", "judge"], how="anti")

    def run(reg: Strategy) -> pl.DataFrame:
        if not reg.both_orders:
            return reg.fn(judgments)
        return reg.fn(kept) if kept.height else pl.DataFrame(schema=VERDICT_SCHEMA)

    with shared_pairs():
        frames = [
            conform(run(reg)).select(pl.lit(reg.name).alias("strategy"), pl.all())
            for reg in regs
        ]
    return (
        pl.concat(frames)
        if frames
        else pl.DataFrame(schema={"strategy": pl.String, **VERDICT_SCHEMA})
    )


def both_orders_names(names: Sequence[str]) -> list[str]:
    """The strategies of ``names`` that are :attr:`~Strategy.both_orders`, in order.

    Raises:
        ConfigError: an unknown name."""
    return [n for n in names if strategy(n).both_orders]


def default_strategies(judgments: pl.DataFrame) -> list[str]:
    """The strategies run when none are named: the ``default`` ones that read letters, then
    the ``default`` score-mode ones when the judgments hold scores (score mode); a
    :attr:`~Strategy.panel` not where every benchmark has one judge."""
    scored = (
        "slot_scores" in judgments.columns
        and judgments.get_column("slot_scores").null_count() < judgments.height
    )
    one_judge = (
        judgments.height > 0
        and {"benchmark", "judge"} <= set(judgments.columns)
        and judgments.group_by("benchmark").agg(pl.col("judge").n_unique()).get_column("judge").max() == 1
    )  # fmt: skip
    regs = [r for r in strategies().values() if not (one_judge and r.panel)]
    letters = [r.name for r in regs if r.default and not r.score]
    return letters + ([r.name for r in regs if r.default and r.score] if scored else [])
