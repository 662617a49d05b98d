"""Bias types by name, registered as "perturbation kind" on the generic registry (:data:`BIASES`).

The built-in biases are a lazy table (name -> the module that defines them, imported on first
use); a bias of your own is one module with one decorator, :func:`bias_type` on the function
that writes its text (or a :class:`~voirdire.benchmarks.biases.bias.BiasType` record passed
to :func:`register_bias`), imported by your program before it reads the job, or named in a
job file by an import path, ``kind = "mypackage.biases:FLATTERY"`` (the module is imported and
the record registered under its name). See ``docs/contributing.md``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

from voirdire.benchmarks.biases.bias import INSTRUCTION, BiasType
from voirdire.core import ConfigError
from voirdire.import_paths import describe
from voirdire.registry import Registry


def _check(obj: Any) -> None:
    if not isinstance(obj, BiasType):
        raise TypeError(f"{describe(obj)} is not a BiasType")


#: Bias types by name.
BIASES: Registry[BiasType] = Registry(
    "perturbation kind", check=_check, entry_points="voirdire.bias_kinds"
)

#: the built-in biases, in the order the docs and messages list them -> their module under
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
    BIASES.builtin(_name, f"voirdire.benchmarks.biases.{_module}:{_name.upper()}")


def register_bias(bias: BiasType, *, replace: bool = False) -> BiasType:
    """Make ``kind`` available under ``kind.name``; returns it.

    Raises:
        ValueError: the name is taken (a built-in bias or another registered one) and
            ``replace`` is False.
    """
    module = (
        f"voirdire.benchmarks.biases.{_BUILTIN[bias.name]}"
        if bias.name in _BUILTIN
        else None
    )
    if (
        module is not None and module not in sys.modules
    ):  # its module registers the built-in record first
        importlib.import_module(module)
    return BIASES.register(bias, replace=replace)


def bias_type(
    name: str, family: str = INSTRUCTION, **fields: Any
) -> Callable[[Callable[..., str]], BiasType]:
    """Decorator: the decorated function is the text of a new bias, which is built and
    registered (:func:`register_bias`); the module's name for it is then the
    :class:`~voirdire.benchmarks.biases.bias.BiasType` record.

    The function is the ``instruction`` (instruction and names families: ``(value, slots)
    -> sentence``) or the ``rewrite`` (answer family: ``(value) -> instruction``);
    ``fields`` are the record's other fields (``param``, ``default_targets``, ``metric``...).

    Raises:
        ValueError: an invalid record (see ``BiasType``) or a name already taken.
    """

    def deco(text: Callable[..., str]) -> BiasType:
        key = "rewrite" if family == "answer" else "instruction"
        return register_bias(
            BiasType(name=name, family=family, **{key: text}, **fields)
        )  # type: ignore[arg-type]

    return deco


def unregister_bias(name: str) -> None:
    """Forget a bias registered with :func:`register_bias` (tests, plugins reloaded)."""
    BIASES.unregister(name)


def known_biases() -> tuple[str, ...]:
    """The biases a job may name: the built-in ones in their order, then the registered."""
    return BIASES.names()


def find_bias(name: str | None) -> BiasType | None:
    """The bias of that name, or None when none is known (no import path is followed)."""
    return BIASES.find(name) if name else None


def get_bias(name: str) -> BiasType:
    """The bias for a registered name or a ``"module:ATTRIBUTE"`` import path.

    Raises:
        ConfigError: an unknown name, or a path that does not name a BiasType.
    """
    if ":" in name or name in BIASES:
        return BIASES.get(name)
    raise ConfigError(
        f"unknown perturbation kind {name!r}; known kinds: {', '.join(known_biases())}"
    )


__all__ = [
    "BIASES",
    "bias_type",
    "find_bias",
    "get_bias",
    "known_biases",
    "register_bias",
    "unregister_bias",
]
