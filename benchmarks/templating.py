"""Prompt templating shared by the benchmarks: the list-wise templates (package data), a
``str.format`` template compiled once and filled by joining, and the English enumeration of
verdict options."""

from __future__ import annotations

import string
from collections.abc import Sequence

from voirdire.benchmarks.data import package_templates
from voirdire.core import ConfigError


def load_listwise_templates() -> dict:
    """voirdire's list-wise prompt templates (package data ``templates/listwise.json``).

    Keys: ``number_words`` ({"3": "three", ...}), ``mtbench`` (``general_head``,
    ``math_head``, ``label``, ``verdict_item``, ``verdict_tie``, ``reference_block``,
    ``conversation_block``, ``verdict_pattern``), ``devbench`` (``prefix``, ``label``,
    ``options_head``, ``option_item``, ``option_tie``, ``suffix``, ``response_block``,
    ``verdict_pattern``). Adapted from the release's pairwise templates (see NOTICE.txt).

    Raises:
        ConfigError: the package data is missing (a broken install).
    """
    return package_templates("listwise.json")


def compile_fields(
    template: str, fields: Sequence[str]
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Parse a ``str.format`` template once into literal pieces and field indices (into
    ``fields``; ``-1`` after the last piece), for filling by ``"".join`` (:func:`fill_fields`).

    Raises:
        ConfigError: a field not in ``fields``, or a format spec/conversion.
    """
    literals: list[str] = []
    idx: list[int] = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        literals.append(literal)
        if field is None:
            idx.append(-1)
            continue
        if field not in fields or spec or conversion:
            raise ConfigError(f"template has an unsupported field {{{field}}}")
        idx.append(list(fields).index(field))
    return tuple(literals), tuple(idx)


def fill_fields(
    compiled: tuple[tuple[str, ...], tuple[int, ...]], values: Sequence[str]
) -> str:
    """Fill a template compiled by :func:`compile_fields` (equal to ``str.format``)."""
    literals, idx = compiled
    parts: list[str] = []
    for lit, f in zip(literals, idx):
        parts.append(lit)
        if f >= 0:
            parts.append(values[f])
    return "".join(parts)


def join_options(items: Sequence[str], tie: str | None) -> str:
    """English enumeration of verdict options: ``"a, b, and t"`` with a tie option ``t``,
    else ``"a, b, or c"``."""
    if tie is not None:
        return ", ".join(items) + ", and " + tie
    return ", ".join(items[:-1]) + ", or " + items[-1]
