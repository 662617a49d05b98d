"""The small core every room may import: failure classes, option letters, list-size
bounds, the one content-hash helper and slugs; it re-exports the errors every room raises
(:class:`ConfigError`, :class:`DataError`, defined with the others in
:mod:`voirdire.exceptions`).

Import direction (checked by ``tests/test_imports.py``, which ``make test`` runs)::

    voirdire.core -> benchmarks -> judges -> engine -> analysis -> voirdire.api / voirdire.cli

A module may import from its own room and from the rooms to its left, never to its right.
This module imports only :mod:`voirdire.exceptions` (the core room too) and no
third-party package.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import Enum
from typing import Any

from voirdire.exceptions import ConfigError, DataError

__all__ = [
    "LETTERS",
    "MAX_LIST",
    "MIN_LIST",
    "ConfigError",
    "DataError",
    "FailureClass",
    "canonical_json",
    "content_hash",
    "did_you_mean",
    "letters",
    "model_keys",
    "slug",
    "stable_int",
]

#: Position letters: ``A`` = first slot shown, ``B`` = second, ... The tie option is the
#: letter after the last slot (``C`` in pairwise three-option mode).
LETTERS = "ABCDEFGHIJ"

#: Bounds on the list size p of list-wise comparisons (pairwise is p = 2).
MIN_LIST, MAX_LIST = 3, 8


class FailureClass(str, Enum):
    """Why a query has no output. Stored as the ``failure`` column of raw outputs."""

    MISSING = "missing"  # replay: the release has no recorded output for this query
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    REFUSED = "refused"  # authentication/permission/bad request refused by the provider
    CONTEXT_TOO_LONG = "context_too_long"
    CONTENT_FILTERED = "content_filtered"
    MALFORMED_RESPONSE = "malformed_response"
    ACTOR_CRASHED = "actor_crashed"  # the judge's worker died on every attempt
    ERROR = "error"  # anything else


def letters(n: int) -> str:
    """The first ``n`` position letters: ``letters(3) == "ABC"``.

    Raises:
        ValueError: ``n`` outside ``0..len(LETTERS)``.
    """
    if not 0 <= n <= len(LETTERS):
        raise ValueError(
            f"no position letters for {n} options (at most {len(LETTERS)})"
        )
    return LETTERS[:n]


#: one encoder for every call (``json.dumps`` with options builds a new one each time,
#: which costs more than encoding a short list of strings)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


#: JSON's string literal, ASCII only (what :data:`_CANONICAL` writes for a string)
_STR = json.encoder.encode_basestring_ascii


def canonical_json(obj: Any) -> str:
    """``obj`` as compact JSON with sorted keys: equal values give equal strings (those of
    ``json.dumps(obj, sort_keys=True, separators=(",", ":"))``).

    A list of strings, None and such lists (a rerun key's 100,000 answers, a unit's
    candidates) is written here directly: the encoder's ``encode`` builds a C encoder for
    every list, which costs more than the list; other values go through the encoder.

    Raises:
        TypeError: a value JSON cannot encode.
    """
    if type(obj) is list:
        return _list_json(obj)
    return _CANONICAL.encode(obj)


def _list_json(items: list[Any]) -> str:
    return (
        "["
        + ",".join(
            _STR(x)
            if type(x) is str
            else "null"
            if x is None
            else _list_json(x)
            if type(x) is list
            else _CANONICAL.encode(x)
            for x in items
        )
        + "]"
    )


def content_hash(*parts: Any, size: int = 16) -> str:
    """The one content hash of voirdire: BLAKE2b over the parts joined by ``\\x1f``.

    A part that is not a string is first written as :func:`canonical_json`. Returns
    ``2 * size`` hex characters (32 by default). Used for unit ids, judge identity hashes,
    prompt keys and response-cache keys, so equal content always gives one id.
    """
    try:  # all strings (unit and query ids, one per query): no per-part test
        text = "\x1f".join(parts)
    except TypeError:
        text = "\x1f".join(
            p if isinstance(p, str) else canonical_json(p) for p in parts
        )
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).hexdigest()


def stable_int(*parts: Any) -> int:
    """A 64-bit integer derived from the parts (seeded draws that do not depend on the
    process, the order of evaluation or ``PYTHONHASHSEED``)."""
    return int(content_hash(*parts, size=8), 16)


def slug(
    label: str,
    *,
    sep: str = "_",
    keep: str = "._-",
    max_len: int | None = None,
    default: str | None = None,
) -> str:
    """A name safe for files and ids made from a label (judge, benchmark, job): runs of
    characters outside ``[A-Za-z0-9]`` and ``keep`` become ``sep``.

    With ``max_len`` the result is also stripped of ``sep`` at both ends and cut to that
    many characters; ``default`` (else ``sep``) stands for an empty result. The defaults
    give directory names (``"gpt-4/x y"`` -> ``"gpt-4_x_y"``); a Ray submission id uses
    ``slug(name, sep="-", keep="_-", max_len=40, default="job")``.
    """
    out = re.sub(f"[^A-Za-z0-9{re.escape(keep)}]+", sep, label)
    if max_len is not None:
        out = out.strip(sep)[:max_len]
    return out or (default if default is not None else sep)


def did_you_mean(name: Any, known: Any) -> str:
    """The hint for an unknown ``name`` among ``known`` names: ``" (did you mean 'x'?)"``
    naming the one closest (:func:`difflib.get_close_matches`, cutoff 0.6, compared without
    case, ``-`` and ``_`` told apart from nothing else), or ``""`` when none is close.
    Text names only; the hint shows the known spelling."""
    import difflib

    def norm(v: str) -> str:
        return v.lower().replace("-", "_")

    names = [str(k) for k in known if isinstance(k, str)]
    if not isinstance(name, str) or not names or len(name) > 200:
        return ""
    by = {}
    for k in names:
        by.setdefault(norm(k), k)
    close = difflib.get_close_matches(norm(name), list(by), n=1, cutoff=0.6)
    return f" (did you mean {by[close[0]]!r}?)" if close else ""


def model_keys(model: Any, path: Any) -> list[str]:
    """The keys a settings model (a pydantic model class: ``model_fields``) accepts at
    ``path`` (the keys and list indices above an unknown key, as a validation error's
    ``loc`` gives them), their aliases included; ``[]`` where the path leads to no model.
    Unions and lists are followed; a union whose members all accept the next key is
    followed through each of them. Read duck-typed: no third-party import here."""
    import typing

    def models_of(tp: Any) -> list[Any]:
        if hasattr(tp, "model_fields"):
            return [tp]
        out = []
        for a in typing.get_args(tp):
            out += models_of(a)
        return out

    current = models_of(model)
    for part in path:
        if isinstance(part, int):
            continue
        nxt = []
        for m in current:
            f = m.model_fields.get(part)
            if f is None:
                f = next((v for v in m.model_fields.values() if v.alias == part), None)
            if f is not None:
                nxt += models_of(f.annotation)
        if not nxt and current:
            continue  # a union's tag in the path (e.g. the backend's name): stay
        current = nxt
    keys: list[str] = []
    for m in current:
        for k, v in m.model_fields.items():
            keys.append(v.alias or k)
    return list(dict.fromkeys(keys))
