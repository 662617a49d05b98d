"""Numeric options checked as they are parsed: a finite number in its stated range, an
integer of bounded size, refused in one line (exit 2) before Ray starts or a file is read.

Typer parses ``nan``, ``inf``, ``5e-324`` and a 60-digit integer as numbers; each option
here names its range in its help text and is refused, with that range, by its callback
(``docs/security.md``, "Stated limits"). The ranges are :data:`RANGES`' entries.
"""

from __future__ import annotations

import math
from typing import Any

import typer

__all__ = [
    "MAX_REPLICATES",
    "MAX_SEED",
    "RANGES",
    "bounded",
    "check_number",
    "read_table",
]

#: the most bootstrap replicates any command draws (``report``, ``mitigate``, ``rank``):
#: the time and memory of a bootstrap grow with them, and 1,000 is the default
MAX_REPLICATES = 100_000
#: the largest seed (numpy's and polars' generators take 64-bit seeds)
MAX_SEED = 2**63 - 1

#: per option kind: (lowest, highest, lowest allowed?, highest allowed?, integer?)
RANGES: dict[str, tuple[float, float, bool, bool, bool]] = {
    "share": (0.0, 1.0, False, True, False),
    "rows": (1, 10**9, True, True, True),
    "probability": (0.0, 1.0, False, False, False),  # a level of coverage
    "alpha": (1e-6, 1.0, True, False, False),  # an error rate guaranteed: 1e-6 at least
    "rating": (-1e6, 1e6, True, True, False),
    "seed": (0, MAX_SEED, True, True, True),
    "replicates": (1, MAX_REPLICATES, True, True, True),
    "rate": (0.0, 1.0, True, True, False),  # a share or an accuracy, 0 and 1 included
    "prior": (0.0, 1e6, True, True, False),
    "deadline": (1.0, 86_400.0, True, True, False),
}


def _range_text(kind: str) -> str:
    lo, hi, lo_in, hi_in, integer = RANGES[kind]
    fmt = (lambda v: f"{int(v):,}") if integer else (lambda v: f"{v:g}")
    return f"{fmt(lo)} {'<=' if lo_in else '<'} x {'<=' if hi_in else '<'} {fmt(hi)}"


def check_number(value: Any, kind: str, name: str) -> str | None:
    """Why ``value`` (an option's parsed value, or ``None``: not given) is refused as
    ``name`` (``"--alpha"``) of ``kind`` (:data:`RANGES`), or ``None`` where it is in
    range: a NaN or infinity, an integer's size, a number out of range."""
    if value is None:
        return None
    lo, hi, lo_in, hi_in, integer = RANGES[kind]
    if not integer and not math.isfinite(value):
        return f"{name} {value}: not a finite number (allowed: {_range_text(kind)})"
    shown = f"{value:,}" if integer and abs(value) < 10**30 else f"{value:.6g}"
    if integer and abs(value) >= 10**30:
        shown = f"a {len(str(abs(value)))}-digit integer"
    below = value < lo if lo_in else value <= lo
    above = value > hi if hi_in else value >= hi
    if below or above:
        return f"{name} {shown}: out of range (allowed: {_range_text(kind)})"
    return None


def bounded(kind: str, help: str, **option: Any) -> Any:
    """A ``typer.Option`` of ``kind`` (:data:`RANGES`) whose help text ends with its range
    and whose value is checked as it is parsed (:func:`check_number`): a value out of
    range is one line, exit 2 (:func:`voirdire.cli.common.fail`)."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        from voirdire.cli.common import fail

        if ctx.resilient_parsing:  # completion
            return value
        name = max(param.opts, key=len) if param.opts else f"--{param.name}"
        why = check_number(value, kind, name)
        if why is not None:
            fail(why)
        return value

    return typer.Option(
        help=f"{help} ({_range_text(kind)})", callback=callback, **option
    )


def read_table(path: Any) -> Any:
    """A small CSV a user gives an option (``report --judge-attributes``) as a polars
    frame, bounded before it is parsed (:func:`voirdire.bounds.check_text_table`) and
    every parse error one line.

    Raises:
        ConfigError: the bound's refusal, or the reader's error (its first line).
    """
    import polars as pl

    from voirdire.bounds import check_text_table
    from voirdire.core import ConfigError

    check_text_table(path, str(path))
    try:
        return pl.read_csv(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, ValueError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{path}: not a readable CSV ({first[:300]})") from None
