"""The bias kinds by name, registered like judge backends.

The built-in kinds live in the modules of :data:`_BUILTIN` (imported on first use); a kind
of your own is a :class:`~voirdire.benchmarks.biases.kind.BiasKind` passed to
:func:`register_kind` (in a module your program imports before it reads the job), or named
in a job file by an import path, ``kind = "mypackage.kinds:FLATTERY"`` (the module is
imported and the record registered under its name). See ``docs/contributing.md``.
"""

from __future__ import annotations

import importlib

from voirdire.benchmarks.biases.kind import BiasKind

from voirdire.core import ConfigError, import_object

_REGISTRY: dict[str, BiasKind] = {}

#: the built-in kinds, in the order the docs and messages list them -> their module under
#: voirdire.benchmarks.biases
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


def register_kind(kind: BiasKind, *, replace: bool = False) -> BiasKind:
    """Make ``kind`` available under ``kind.name``; returns it.

    Raises:
        ValueError: the name is taken (a built-in kind or another registered one) and
            ``replace`` is False.
    """
    if kind.name in _BUILTIN:  # its module registers the built-in record first
        importlib.import_module(f"voirdire.benchmarks.biases.{_BUILTIN[kind.name]}")
    old = _REGISTRY.get(kind.name)
    if old is not None and old is not kind and not replace:
        raise ValueError(f"bias kind {kind.name!r} is already registered")
    _REGISTRY[kind.name] = kind
    return kind


def unregister_kind(name: str) -> None:
    """Forget a kind registered with :func:`register_kind` (tests, plugins reloaded)."""
    _REGISTRY.pop(name, None)


def known_kinds() -> tuple[str, ...]:
    """The kinds a job may name: the built-in ones in their order, then the registered."""
    return tuple(_BUILTIN) + tuple(k for k in _REGISTRY if k not in _BUILTIN)


def find_kind(name: str | None) -> BiasKind | None:
    """The kind of that name, or None when none is known (no import path is followed)."""
    if not name:
        return None
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(f"voirdire.benchmarks.biases.{_BUILTIN[name]}")
    return _REGISTRY.get(name)


def get_kind(name: str) -> BiasKind:
    """The kind for a registered name or a ``"module:ATTRIBUTE"`` import path.

    Raises:
        ConfigError: an unknown name, or a path that does not name a BiasKind.
    """
    kind = find_kind(name)
    if kind is not None:
        return kind
    if ":" in name:
        obj = import_object(name, "perturbation kind")
        if not isinstance(obj, BiasKind):
            raise ConfigError(f"perturbation kind {name!r} is not a BiasKind")
        return _REGISTRY.setdefault(obj.name, obj)
    raise ConfigError(f"unknown perturbation kind {name!r}; known kinds: {', '.join(known_kinds())}")
