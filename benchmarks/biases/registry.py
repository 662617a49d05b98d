"""The bias kinds by name: the bias-kind kind on the generic registry (:data:`KINDS`).

The built-in kinds are a lazy table (name -> the module that defines them, imported on first
use); a kind of your own is one module with one decorator, :func:`bias_kind` on the function
that writes its text (or a :class:`~voirdire.benchmarks.biases.kind.BiasKind` record passed
to :func:`register_kind`), imported by your program before it reads the job, or named in a
job file by an import path, ``kind = "mypackage.kinds:FLATTERY"`` (the module is imported and
the record registered under its name). See ``docs/contributing.md``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

from voirdire.benchmarks.biases.kind import INSTRUCTION, BiasKind
from voirdire.core import ConfigError
from voirdire.registry import Registry, describe


def _check(obj: Any) -> None:
    if not isinstance(obj, BiasKind):
        raise TypeError(f"{describe(obj)} is not a BiasKind")


#: Bias kinds by name.
KINDS: Registry[BiasKind] = Registry(
    "perturbation kind", check=_check, entry_points="voirdire.bias_kinds"
)

#: the built-in kinds, in the order the docs and messages list them -> their module under
#: voirdire.benchmarks.biases (each record is the module's attribute of the upper-case name)
_BUILTIN = {
    "bandwagon": "instruction",
    "distraction": "instruction",
    "diversity": "instruction",
    "cot": "instruction",
    "refinement_aware": "instruction",
    "compassion_fade": "names",
    "authority": "answer",
    "verbosity": "answer",
    "sentiment": "answer",
    "fallacy": "answer",
}
for _name, _module in _BUILTIN.items():
    KINDS.builtin(_name, f"voirdire.benchmarks.biases.{_module}:{_name.upper()}")


def register_kind(kind: BiasKind, *, replace: bool = False) -> BiasKind:
    """Make ``kind`` available under ``kind.name``; returns it.

    Raises:
        ValueError: the name is taken (a built-in kind or another registered one) and
            ``replace`` is False.
    """
    module = (
        f"voirdire.benchmarks.biases.{_BUILTIN[kind.name]}"
        if kind.name in _BUILTIN
        else None
    )
    if (
        module is not None and module not in sys.modules
    ):  # its module registers the built-in record first
        importlib.import_module(module)
    return KINDS.register(kind, replace=replace)


def bias_kind(
    name: str, family: str = INSTRUCTION, **fields: Any
) -> Callable[[Callable[..., str]], BiasKind]:
    """Decorator: the decorated function is the text of a new kind, which is built and
    registered (:func:`register_kind`); the module's name for it is then the
    :class:`~voirdire.benchmarks.biases.kind.BiasKind` record.

    The function is the ``instruction`` (instruction and names families: ``(value, slots)
    -> sentence``) or the ``rewrite`` (answer family: ``(value) -> instruction``);
    ``fields`` are the record's other fields (``param``, ``default_targets``, ``metric``...).

    Raises:
        ValueError: an invalid record (see ``BiasKind``) or a name already taken.
    """

    def deco(text: Callable[..., str]) -> BiasKind:
        key = "rewrite" if family == "answer" else "instruction"
        return register_kind(
            BiasKind(name=name, family=family, **{key: text}, **fields)
        )  # type: ignore[arg-type]

    return deco


def unregister_kind(name: str) -> None:
    """Forget a kind registered with :func:`register_kind` (tests, plugins reloaded)."""
    KINDS.unregister(name)


def known_kinds() -> tuple[str, ...]:
    """The kinds a job may name: the built-in ones in their order, then the registered."""
    return KINDS.names()


def find_kind(name: str | None) -> BiasKind | None:
    """The kind of that name, or None when none is known (no import path is followed)."""
    return KINDS.find(name) if name else None


def get_kind(name: str) -> BiasKind:
    """The kind for a registered name or a ``"module:ATTRIBUTE"`` import path.

    Raises:
        ConfigError: an unknown name, or a path that does not name a BiasKind.
    """
    if ":" in name or name in KINDS:
        return KINDS.get(name)
    raise ConfigError(
        f"unknown perturbation kind {name!r}; known kinds: {', '.join(known_kinds())}"
    )


__all__ = [
    "KINDS",
    "bias_kind",
    "find_kind",
    "get_kind",
    "known_kinds",
    "register_kind",
    "unregister_kind",
]
