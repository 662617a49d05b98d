"""The ranking methods by name (``"bt"``, ``"davidson"``, a user's ``"module:NAME"``).

A ranking method is a :class:`~voirdire.analysis.ranking.bt.Method`: a batched fit
``(wins, ties) -> strengths`` on (R, K, K) arrays. Built-in methods live in
:mod:`voirdire.analysis.ranking.bt`, one decorator each; a new one is one module and one
``@RANKINGS.register`` (``docs/ranking.md``).
"""

from __future__ import annotations

from typing import Any

from voirdire.import_paths import describe
from voirdire.registry import Registry

__all__ = ["RANKINGS", "ranking_method"]


def _check(obj: Any) -> None:
    if not callable(getattr(obj, "fit", None)) or not isinstance(
        getattr(obj, "name", None), str
    ):
        raise TypeError(
            f"{describe(obj)} is not a ranking method (needs a name and a fit(wins, ties) method)"
        )


#: name -> ranking method; built-ins imported on first use
RANKINGS: Registry[Any] = Registry(
    "ranking method", check=_check, entry_points="voirdire.rankings"
)
RANKINGS.builtin("bt", "voirdire.analysis.ranking.bt:BT")
RANKINGS.builtin("davidson", "voirdire.analysis.ranking.bt:DAVIDSON")


def ranking_method(name: str) -> Any:
    """The registered ranking method ``name``.

    Raises:
        ConfigError: an unknown name (the known ones listed) or a bad import path.
    """
    return RANKINGS.get(name)
