"""Secrets kept out of text: the values of the environment's secret variables, API-key
shapes and a provider's masked echo of a key, replaced by ``[redacted]``.

The core's, so that every room redacts alike: a live judge's failure message before it is
written (:mod:`voirdire.engine.secrets`, with the values of the judges' key variables), a
failure message read from a judgment log as it is read (the log formats of
:mod:`voirdire.benchmarks.logs`), and every error and warning the command line prints.
``docs/security.md``, "API keys".
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["KEY_PATTERN", "MASKED", "redact", "environment_secrets", "redact_message"]

#: strings shaped like an API key (OpenAI's ``sk-...``, Google's ``AIza...``)
KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}|\bAIza[A-Za-z0-9_\-]{20,}")
#: a masked credential as providers echo it in 401 messages, whatever the key's shape:
#: characters around a run of three or more ``*`` (``abc1************wxyz``, ``****wxyz``).
#: Anchored: a match starts only where a run of key characters starts (the lookbehind),
#: and the run before the stars is taken possessively, so a long run without stars is
#: tried once, not once per character (linear time; unanchored, 300 KB of letters took
#: over 600 s). It matches what the unanchored pattern matched (the leftmost match began
#: at a run's start anyway).
MASKED = re.compile(
    r"(?<![A-Za-z0-9_\-.~+/=])[A-Za-z0-9_\-.~+/=]*+\*{3,}[A-Za-z0-9_\-.~+/=*]*"
)
#: environment variable names whose values are treated as secrets in messages (an API key,
#: token, password...), whatever judge names them
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def redact(text: str | None, *secrets: str | None) -> str | None:
    """``text`` with the given secrets (the values of the key variables; the longest
    first), their masked echoes (any run of three or more ``*`` with the characters around
    it) and anything shaped like an API key (``sk-...``, ``AIza...``) replaced by
    ``[redacted]``; ``None`` stays ``None``."""
    if text is None:
        return None
    for s in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(s, "[redacted]")
    return MASKED.sub("[redacted]", KEY_PATTERN.sub("[redacted]", text))


def environment_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values (stripped, 8 characters or more) of the environment variables whose
    names look like secrets (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...),
    longest first: what :func:`redact_message` removes from a message."""
    env = os.environ if environ is None else environ
    values = {
        v.strip()
        for k, v in env.items()
        if _SECRET_NAME.search(k) and len(v.strip()) >= 8
    }
    return tuple(sorted(values, key=len, reverse=True))


def redact_message(text: str, environ: Mapping[str, str] | None = None) -> str:
    """A message (an error, a warning, a failure message read from a log) with the values
    of the environment's secret-looking variables (:func:`environment_secrets`), masked
    echoes and key-shaped strings replaced by ``[redacted]`` (:func:`redact`)."""
    return redact(text, *environment_secrets(environ)) or ""
