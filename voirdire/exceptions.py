"""voirdire's exceptions (and its one warning), in one place.

Every exception voirdire raises on purpose derives from :class:`VoirdireError` and from the
built-in class it has always been (``ConfigError`` is a ``ValueError``, ...), so
``except ValueError`` in callers keeps working. Part of the core room: it imports nothing.
The rooms raise them where they arise (the modules named below re-export them).
"""

from __future__ import annotations


class VoirdireError(Exception):
    """Base of voirdire's exceptions."""


class ConfigError(VoirdireError, ValueError):
    """A job, judge, benchmark or data setting is invalid; raised before any query is sent."""


class DataError(VoirdireError, RuntimeError):
    """Benchmark data could not be obtained or failed verification (download, checksum,
    unsafe or malformed file). The message names the file and the way out."""


class JobInterrupted(VoirdireError, RuntimeError):
    """The run was stopped (Ctrl-C); finished results are saved and a rerun resumes
    (raised by :mod:`voirdire.engine.scheduler`)."""


class RewriteFailed(VoirdireError, RuntimeError):
    """Some rewrites failed (recorded in ``rewrites/``); rerun the job to retry them
    (raised by :mod:`voirdire.engine.rewrite`)."""


class MalformedResponse(VoirdireError, ValueError):
    """A 2xx API response whose body does not have the protocol's shape (API judges record
    it as the failure class ``malformed_response``)."""


class ContextTooLong(VoirdireError, ValueError):
    """A prompt plus what the mode generates exceeds a vLLM engine's context window (the
    vLLM judge records it as the failure class ``context_too_long``)."""


class CorruptPartWarning(RuntimeWarning):
    """A part file in ``raw/`` could not be read and was moved aside (its units will be
    asked again; issued by :mod:`voirdire.engine.store`)."""


class StaleReportWarning(RuntimeWarning):
    """A directory's analysis was written again and the report beside it, built from the
    earlier one, was removed (``report.html`` never sits beside metrics newer than it)."""


__all__ = [
    "ConfigError",
    "ContextTooLong",
    "CorruptPartWarning",
    "DataError",
    "JobInterrupted",
    "MalformedResponse",
    "RewriteFailed",
    "StaleReportWarning",
    "VoirdireError",
]
