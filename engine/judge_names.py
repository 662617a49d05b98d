"""Judge names that are safe to write and not the analysis's own.

Judge names become folder names (``raw/<slug(name)>/``): :func:`check_judge_name` refuses
names without a letter or digit (whose folder would be ``.``, ``..``, ``_``: empty), names
over :data:`MAX_NAME` characters, names holding NUL, names shaped like an API key (a key
pasted as a name would reach folder names, ``job.json``, the tables and the terminal) and
the analysis's own names; names are compared as shown (:func:`name_key`: trimmed, invisible
characters dropped), so ``"gold "`` is ``gold``. Every refusal is a
:class:`~voirdire.exceptions.ConfigError` of one line. The directories they are written in
are :mod:`voirdire.ownership`'s.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from voirdire.core import ConfigError

__all__ = [
    "RESERVED_NAMES",
    "MAX_NAME",
    "check_judge_name",
    "name_key",
    "check_not_key",
    "check_reserved",
]

#: judge names the analysis gives its own rows: the gold board (``gold``, ``voirdire
#: rank``; ``people``, its former name, still read in older results) and the jury panels
#: (``panel-N``, ``voirdire mitigate``); a judge may not take one
RESERVED_NAMES = re.compile(r"gold|people|panel-[0-9]+")
#: the longest judge name (characters)
MAX_NAME = 200


def check_judge_name(name: str) -> str:
    """``name`` when it is a safe judge (or rewriter) name; its folder is ``slug(name)``.
    Checked on the resolved judges, after entries standing for several (``name = "*"`` of
    a replay judge) were expanded.

    Raises:
        ConfigError: empty, over :data:`MAX_NAME` characters, holding NUL, without a
            letter or digit (its folder would be ``.``, ``..``, ``_``), shaped like an API
            key (:func:`check_not_key`), or one of the analysis's own names
            (:data:`RESERVED_NAMES`: ``gold``, ``people``, ``panel-N``, compared by
            :func:`name_key`).
    """
    if "\x00" in name:
        raise ConfigError(
            f"judge name {name.replace(chr(0), '<NUL>')[:60]!r} holds a NUL byte"
        )
    if len(name) > MAX_NAME:
        raise ConfigError(
            f"judge name {name[:40]!r}... has {len(name)} characters; at most {MAX_NAME} are allowed"
        )
    if not re.search(
        "[A-Za-z0-9]", name
    ):  # its folder, slug(name), would be ".", "..", "_" or such
        raise ConfigError(
            f"judge name {name!r} has no letter or digit: it names no folder of its own"
        )
    check_not_key(name)
    check_reserved([name])
    return name


def name_key(name: str) -> str:
    """A name as it is compared: as shown, so Unicode compatibility forms folded (NFKC),
    invisible format characters (zero-width spaces, direction marks) and control
    characters dropped, and whitespace trimmed: ``"gold "`` and ``"gold\u200b"`` are
    ``"gold"``."""
    text = unicodedata.normalize("NFKC", name)
    return "".join(
        c for c in text if unicodedata.category(c) not in ("Cf", "Cc")
    ).strip()


def check_not_key(name: str) -> None:
    """Refuse a name shaped like an API key: ``sk-...`` (OpenAI, ``sk-ant-...`` Anthropic),
    ``AIza...`` (Google), a masked echo (``abc1****wxyz``) or holding the value of a
    secret environment variable (:func:`voirdire.engine.secrets.redact_message`'s rule). A
    key pasted as a judge's name (``--option judge=sk-...``) would land in the folder name,
    ``job.json``, the tables and the terminal.

    Raises:
        ConfigError: one line, the name shown redacted.
    """
    from voirdire.engine.secrets import redact_message

    shown = redact_message(name)
    if shown != name:
        raise ConfigError(
            f"judge name {shown[:60]!r} looks like an API key (sk-..., AIza..., or the value of "
            "a secret environment variable); a key is never a name: name the judge by its model"
        )


def check_reserved(judges: Iterable[str]) -> None:
    """Refuse judge names the analysis uses for its own rows (:data:`RESERVED_NAMES`),
    compared as shown (:func:`name_key`): a judge named ``gold`` (or ``"gold "``, or
    ``people``, the gold board's former name) would be read as, or shown as, the gold board, ``panel-2`` as a jury.

    Raises:
        ConfigError: one line naming the first such judge.
    """
    for name in judges:
        if isinstance(name, str) and RESERVED_NAMES.fullmatch(name_key(name)):
            raise ConfigError(
                f"judge name {name!r} is voirdire's own (the gold board is 'gold', "
                "formerly 'people'; a jury panel 'panel-N'); rename the judge"
            )
