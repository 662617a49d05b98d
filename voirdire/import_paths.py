"""Import paths ``"package.module:NAME"``: recognising one, importing what it names, and
describing an object for messages without its value (:mod:`voirdire.registry` uses them for
names that are not registered).

Its own idea apart from the registry: judges, benchmarks, biases, strategies, metrics and
rankings all describe an object by it, and a path is recognised before any registry is
asked. Part of the core room: imports only the standard library and
:mod:`voirdire.exceptions`.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from voirdire.exceptions import ConfigError

__all__ = ["describe", "import_path", "is_import_path", "shown"]

_PATH = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
)


def is_import_path(ref: str) -> bool:
    """Whether ``ref`` has the form ``"package.module:NAME"`` (dotted identifiers, one
    colon, an identifier)."""
    return bool(_PATH.match(ref))


def describe(obj: Any) -> str:
    """What ``obj`` is, for messages, without its value: ``"class Foo"``, ``"function
    foo"`` or ``"a dict object"`` (never its ``repr``: an import path such as ``"os:environ"``
    names an object whose repr is the whole environment, keys included)."""
    if isinstance(obj, type):
        return f"class {obj.__qualname__}"
    if callable(obj) and hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
        return f"function {obj.__qualname__}"
    return f"a {type(obj).__name__} object"


def shown(name: str, limit: int = 80) -> str:
    """``name`` quoted for a message, cut at ``limit`` characters (a name read from a file
    may be of any length)."""
    text = str(name)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def import_path(ref: str, what: str) -> Any:
    """The object an import path ``"package.module:NAME"`` names.

    Args:
        ref: the path.
        what: the kind asked for, for messages (``"judge backend"``, ``"metric"``).

    Raises:
        ConfigError: ``ref`` is not of that form, or its module or attribute cannot be
            imported (the message names ``what`` and ``ref``).
    """
    if not is_import_path(ref):
        raise ConfigError(
            f"{what} {shown(ref)} is not an import path of the form 'package.module:NAME'"
        )
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"{what} {shown(ref)} cannot be imported ({type(exc).__name__}: {exc})"
        ) from exc
