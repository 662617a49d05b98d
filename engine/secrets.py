"""The job's secrets: the values of the key variables its judges name, kept out of what is written.

A judge whose settings name an API key variable (``api_key_env``, or its backend's default
variable, e.g. ``OPENAI_API_KEY``) reads the key from the environment; the key is never a
setting. Its *value* may still reach text voirdire writes: a provider echoing it (whole or
masked) in an error, or a key pasted into another setting. Before ``job.json`` and every
part file are written, each such value is replaced by ``[redacted]``
(:func:`voirdire.judges.api.errors.redact`, which also removes masked echoes ``abc1****wxyz``
and ``sk-``/``AIza`` shapes); see ``docs/security.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from voirdire.judges.api.errors import redact
from voirdire.judges.capabilities import UsesKey

# the environment's secrets in a message: the core's, also used where a log's failure
# messages are read (:mod:`voirdire.redaction`)
from voirdire.redaction import environment_secrets, redact_message  # noqa: F401

#: the text columns of a part file that carry a provider's words about a call (failures echo
#: keys); the judges' outputs are left as they are
TEXT_COLUMNS = ("failure_message",)


def key_variables(judges: Iterable[Any]) -> list[str]:
    """The names of the environment variables holding the judges' keys (resolved judges
    of :mod:`voirdire.engine.spec` whose backend :class:`~voirdire.judges.capabilities.UsesKey`:
    ``api_key_env``, else the backend's default variable)."""
    names = []
    for rj in judges:
        env = (
            rj.backend.key_env(rj.settings) if issubclass(rj.backend, UsesKey) else None
        )
        if isinstance(env, str) and env not in names:
            names.append(env)
    return names


def configured_secrets(judges: Iterable[Any]) -> tuple[str, ...]:
    """The values (non-empty, stripped) of the judges' key variables in this process."""
    values = (os.environ.get(name, "").strip() for name in key_variables(judges))
    return tuple(sorted({v for v in values if v}, key=len, reverse=True))


def redact_record(obj: Any, secrets: tuple[str, ...]) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string redacted."""
    if isinstance(obj, str):
        return redact(obj, *secrets)
    if isinstance(obj, dict):
        return {k: redact_record(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_record(v, secrets) for v in obj]
    return obj


def redact_table(table: pa.Table, secrets: tuple[str, ...]) -> pa.Table:
    """``table`` with the :data:`TEXT_COLUMNS` it has redacted (a row unchanged when it
    holds no secret; only called when the job has secrets)."""
    for name in TEXT_COLUMNS:
        i = table.schema.get_field_index(name)
        if i < 0:
            continue
        col = table.column(i).to_pylist()
        new = [redact(v, *secrets) for v in col]
        if new != col:
            table = table.set_column(
                i, table.schema.field(i), pa.array(new, table.schema.field(i).type)
            )
    return table
