"""One registry for every kind voirdire can be extended with.

Judge backends, benchmarks, bias types, mitigation strategies, metrics and rankings are each
a :class:`Registry` instance owned by the room that uses them (``judges/base.py``,
``benchmarks/registry.py``, ...). Every registry works the same way (after Inspect AI's
``registry_add``/``registry_lookup``):

- **built-in entries** are a lazy table, name -> ``"module:NAME"``
  (:meth:`Registry.builtin`): nothing is imported until the name is asked for; then the
  module is imported (its decorators register what it defines) and, if the name is still
  unknown, ``module.NAME`` is taken;
- **a decorator** (:meth:`Registry.register`) makes a class, function or record available
  under its name: ``@BACKENDS.register`` or ``@METRICS.register(name="pc")``;
- **an import path** ``"package.module:NAME"`` names an object in an installed module
  (a user's own kind, from a job file or the Python API). Such a path imports code: see
  ``docs/security.md`` for what that trusts. A name read from a results directory is
  looked up with ``get(name, allow_import=False)``: registered kinds only, nothing imported;
- **an entry-point group** (``entry_points=``, e.g. ``"voirdire.benchmarks"``): every entry
  point an installed distribution declares in that group is a built-in entry, read the first
  time a name is not found or the names are listed. voirdire declares some of its own this
  way (``pyproject.toml``); a separate package adds its kinds the same way, with no import
  path in the job file.

A registry may check what is registered (``check``: raises ``TypeError`` or ``ValueError``
for an object of the wrong kind) and normalise names (``normalise``: e.g. case and
punctuation ignored for benchmarks). Lookups of unknown names raise
:class:`~voirdire.exceptions.ConfigError` naming the kind and listing the known names.

Part of the core room: imports only the standard library and :mod:`voirdire.exceptions`.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from voirdire.core import did_you_mean
from voirdire.exceptions import ConfigError
from voirdire.import_paths import describe, import_path
from voirdire.import_paths import shown as _shown

__all__ = [
    "SHIPPED_ENTRY_POINTS",
    "Builtin",
    "Registry",
    "shipped_entry_points",
]

T = TypeVar("T")

#: where a staged copy of the package keeps its distribution's entry points
#: (``entry_points.txt`` format), for a Ray cluster that has the copy but not the metadata
SHIPPED_ENTRY_POINTS = "_entry_points.txt"


def shipped_entry_points(group: str, path: str | None = None) -> dict[str, str]:
    """Name -> ``"module:NAME"`` of ``group`` in a shipped entry-points file (default: the
    one beside this module, :data:`SHIPPED_ENTRY_POINTS`); empty when there is none."""
    import configparser
    import os

    path = path or os.path.join(os.path.dirname(__file__), SHIPPED_ENTRY_POINTS)
    if not os.path.isfile(path):
        return {}
    cp = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    cp.optionxform = str  # type: ignore[assignment,method-assign]  # names keep their case
    cp.read(path, encoding="utf-8")
    return dict(cp[group]) if cp.has_section(group) else {}


@dataclass(frozen=True)
class Builtin:
    """A built-in entry: where it lives (``"module:NAME"``, imported on first use) and the
    optional dependency group (``pip install 'voirdire[<extra>]'``) its module needs."""

    target: str
    extra: str | None = None


class Registry(Generic[T]):
    """Named objects of one kind: a lazy built-in table, a decorator and import paths.

    Args:
        kind: what the registry holds, for messages (``"judge backend"``).
        check: called on every object registered or imported by path; raises ``TypeError``
            or ``ValueError`` when it is not of this kind (turned into ``ConfigError`` for
            import paths). ``None``: anything goes.
        name_of: the name an object registers under when the decorator gives none
            (default: its ``name`` attribute, else its ``__name__``).
        normalise: maps a name as written to its key (default: unchanged).
        entry_points: an entry-point group whose entry points (``name = "module:NAME"``)
            are built-in entries (read once, lazily); None: none.
    """

    def __init__(
        self,
        kind: str,
        *,
        check: Callable[[Any], None] | None = None,
        name_of: Callable[[Any], str] | None = None,
        normalise: Callable[[str], str] | None = None,
        entry_points: str | None = None,
    ) -> None:
        self.kind = kind
        self._group = entry_points
        self._check = check
        self._name_of = name_of
        self._normalise = normalise or (lambda s: s)
        self._builtin: dict[str, Builtin] = {}
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        #: name -> why its entry could not be loaded, filled by :meth:`available`
        self.unavailable: dict[str, str] = {}

    # -- filling ---------------------------------------------------------------------
    def builtin(self, name: str, target: str, *, extra: str | None = None) -> None:
        """Declare a built-in entry ``name`` living at ``target`` (``"module:NAME"``),
        imported the first time it is asked for; ``extra`` names the optional dependency
        group its module needs."""
        self._builtin[self.key(name)] = Builtin(target, extra)

    @overload
    def register(self, obj: T, /) -> T: ...
    @overload
    def register(
        self,
        obj: None = None,
        /,
        *,
        name: str | None = None,
        aliases: tuple[str, ...] = (),
        replace: bool = False,
    ) -> Callable[[T], T]: ...
    def register(
        self,
        obj: T | None = None,
        /,
        *,
        name: str | None = None,
        aliases: tuple[str, ...] = (),
        replace: bool = False,
    ) -> T | Callable[[T], T]:
        """Register ``obj`` under ``name`` (default: its own name) and ``aliases``.

        Usable as ``@reg.register``, ``@reg.register(name=..., aliases=...)`` or a plain
        call ``reg.register(obj)``. Returns the object, so decorated classes and functions
        stay what they were.

        Raises:
            TypeError, ValueError: ``check`` refused the object.
            ValueError: the name is taken by another object and ``replace`` is False (the
                same object registered again is no error; a built-in name is taken only
                once its module has registered it).
        """

        def deco(o: T) -> T:
            if self._check is not None:
                self._check(o)
            names = (name or self.name_of(o), *aliases)
            for n in names:
                k = self.key(n)
                old = self._entries.get(k)
                if old is not None and old is not o and not replace:
                    raise ValueError(f"{self.kind} {n!r} is already registered")
            first = self.key(names[0])
            for n in names:
                self._entries[self.key(n)] = o
                if self.key(n) != first:
                    self._aliases[self.key(n)] = first
            return o

        return deco if obj is None else deco(obj)

    def unregister(self, name: str) -> None:
        """Forget an entry registered at run time (tests, plugins reloaded); a built-in
        entry is imported again when next asked for."""
        k = self.key(name)
        self._entries.pop(k, None)
        for alias in [a for a, first in self._aliases.items() if first == k or a == k]:
            self._entries.pop(alias, None)
            self._aliases.pop(alias, None)

    def _load_entry_points(self) -> None:
        """Declare the group's entry points as built-in entries (once; those already
        declared in code keep their target)."""
        group, self._group = self._group, None
        if group is None:
            return
        from importlib.metadata import distributions

        # every distribution found, not only the first of each name: a stale copy of a
        # package's metadata earlier on sys.path (an old ``*.egg-info`` in the working
        # directory) must not hide the installed one's entry points
        for dist in distributions():
            for ep in dist.entry_points:
                if ep.group == group:
                    self._builtin.setdefault(self.key(ep.name), Builtin(ep.value))
        # a copy of the package shipped without its metadata (``voirdire submit`` stages one
        # for Ray's py_modules) carries its entry points in this file
        for name, value in shipped_entry_points(group).items():
            self._builtin.setdefault(self.key(name), Builtin(value))

    # -- lookups ---------------------------------------------------------------------
    def name_of(self, obj: Any) -> str:
        """The name ``obj`` registers under when none is given."""
        if self._name_of is not None:
            return self._name_of(obj)
        name = getattr(obj, "name", None)
        return name if isinstance(name, str) and name else obj.__name__

    def key(self, name: str) -> str:
        """The key of a name as written (``normalise`` applied)."""
        return self._normalise(str(name))

    def names(self) -> tuple[str, ...]:
        """The names a user may write: built-in entries in their declared order, then the
        registered ones (aliases left out). Nothing is imported."""
        self._load_entry_points()
        added = [
            k
            for k in self._entries
            if k not in self._builtin and k not in self._aliases
        ]
        return (*self._builtin, *added)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.known(name)

    def known(self, name: str) -> bool:
        """Whether ``name`` is registered or built in (nothing is imported)."""
        k = self.key(name)
        if k not in self._entries and k not in self._builtin:
            self._load_entry_points()
        return k in self._entries or k in self._builtin

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def find(self, name: str) -> T | None:
        """The entry of a registered or built-in name (importing a built-in's module), or
        None when no such name is known; import paths are not followed.

        Raises:
            ConfigError: a built-in whose module cannot be imported (naming the extra to
                install where one is declared).
        """
        k = self.key(name)
        if k in self._entries:
            return self._entries[k]
        if k not in self._builtin:
            self._load_entry_points()
        b = self._builtin.get(k)
        if b is None:
            return None
        module, _, attr = b.target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            how = (
                f"; install it with: pip install 'voirdire[{b.extra}]'"
                if b.extra
                else ""
            )
            raise ConfigError(
                f"{self.kind} {name!r} needs an optional dependency that is not installed ({exc}){how}"
            ) from exc
        except Exception as exc:  # an installed plugin's module that fails as it loads
            raise ConfigError(
                f"{self.kind} {name!r}: its module {module!r} fails to import "
                f"({type(exc).__name__}: {_shown(str(exc), 200)})"
            ) from exc
        if k not in self._entries:  # its module did not register it under this name
            try:
                obj = getattr(mod, attr)
            except AttributeError as exc:
                raise ConfigError(
                    f"{self.kind} {name!r}: {b.target!r} does not exist"
                ) from exc
            if self._check is not None:
                self._check(obj)
            self._entries[k] = obj
        return self._entries[k]

    def get(self, name: str, *, allow_import: bool = True) -> T:
        """The entry for a registered name, a built-in name, or an import path
        ``"package.module:NAME"`` (the object is checked, then registered under its own
        name so later lookups by that name find it).

        Args:
            name: the name as written.
            allow_import: whether an import path may import its module. ``False`` for
                names read from a results directory (``job.json``), which is data, never
                code: only registered kinds resolve (built-ins, entry points, objects
                registered in this process; an import path only where it names an object
                already registered, so nothing is imported on its account).

        Raises:
            ConfigError: an unknown name (the known ones listed), a built-in whose optional
                dependency is missing, a path that does not import or does not name an
                object of this kind (the message names its type, never its value), or,
                with ``allow_import=False``, a path to anything not registered.
        """
        found = self.find(name)
        if found is not None:
            return found
        if ":" in str(name) and not allow_import:
            known = self._registered_at(str(name))
            if known is not None:
                return known
            raise ConfigError(
                f"{self.kind} {_shown(name)} is not registered; a name read from a results "
                f"directory resolves only among registered {self.kind}s (built-in or an "
                "installed package's entry point) and imports no module"
            )
        if ":" in str(name):
            obj = import_path(name, self.kind)
            if self._check is not None:
                try:
                    self._check(obj)
                except (TypeError, ValueError) as exc:
                    raise ConfigError(
                        f"{self.kind} {_shown(name)} names {describe(obj)}, not a {self.kind} ({exc})"
                    ) from None
            k = (
                self.key(self.name_of(obj))
                if self._name_of or hasattr(obj, "name") or hasattr(obj, "__name__")
                else None
            )
            if k is not None and k not in self._entries and k not in self._builtin:
                self._entries[k] = obj
            return obj
        raise ConfigError(
            f"unknown {self.kind} {_shown(name)}{did_you_mean(name, self.names())}; "
            f"known: {', '.join(self.names())}"
        )

    def _registered_at(self, ref: str) -> T | None:
        """The registered object whose module and name are the import path ``ref``
        (``"package.module:NAME"``), or None; imports nothing."""
        module, _, attr = ref.partition(":")
        for obj in self._entries.values():
            if getattr(obj, "__module__", None) == module and attr in (
                getattr(obj, "__qualname__", None),
                getattr(obj, "__name__", None),
            ):
                return obj
        return None

    def items(self) -> dict[str, T]:
        """Every entry by name, built-in ones first (imports every built-in module).

        Raises:
            ConfigError, TypeError, ValueError: an entry that cannot be loaded (as
                :meth:`get`); :meth:`available` leaves such entries out instead.
        """
        return {n: self.get(n) for n in self.names()}

    def available(self, *, warn: bool = False) -> dict[str, T]:
        """Every entry that loads, by name, built-in ones first (imports every built-in
        module), for the lookups that go through all of them (a format's list, a
        benchmark that reads a recorded judge's outputs, every metric).

        An entry that cannot be loaded (its optional dependency missing, an installed
        plugin whose module fails to import or is not of this kind) is left out and its
        reason kept in :attr:`unavailable` (name -> one line): one broken plugin must not
        stop every other name. Asking for that name itself (:meth:`get`) still raises.
        ``warn``: also a ``UserWarning`` per entry left out (for sets that would otherwise
        lose a user's entry without a word: every metric, every strategy).
        """
        out: dict[str, T] = {}
        for n in self.names():
            try:
                out[n] = self.get(n)
            except (ConfigError, TypeError, ValueError) as exc:
                self.unavailable[n] = " ".join(str(exc).split())
                if warn:
                    warnings.warn(
                        f"{self.kind} {_shown(n)} left out: {self.unavailable[n]}",
                        stacklevel=2,
                    )
        return out
