"""Each log file, each pair and each verdict once (``docs/audit.md``): a file given twice, or
a copy with the same bytes, is read once with one warning (:func:`distinct_logs`); a pair
given by several records with the same content (two judges' files on the same pairs) is kept
once, with other content (another instruction, answer or gold label under one
``question_id``) refused in one line naming both places (:func:`one_pair_each`); a verdict
recorded twice, the same judge, pair and order shown at two places, is refused in one line
naming both (:func:`check_once`). See :mod:`voirdire.benchmarks.logs.base`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from voirdire.benchmarks.logs.reading import MAX_LOG_BYTES, file_hash, log_files
from voirdire.core import ConfigError


def distinct_logs(
    logs: Sequence[str | os.PathLike[str]],
    suffixes: Sequence[str],
    fmt: str,
    max_bytes: int = MAX_LOG_BYTES,
) -> tuple[list[Path], list[str]]:
    """The files of ``logs`` (:func:`~.reading.log_files`, each argument in turn) and their
    SHA-256, each content once: a file named twice (itself, or within a directory also
    given) or a copy with the same bytes under another path (AlpacaEval 1's
    ``falcon-7b-instruct/alpaca_eval_gpt4/annotations.json`` is ``falcon-40b-instruct``'s)
    is read once, the first path kept, with one warning naming every path left out and the
    one read instead (the copy's verdicts would otherwise be the same verdicts twice).

    Raises:
        ConfigError: as :func:`~.reading.log_files`.
    """
    named = [
        f for p in logs for f in log_files([p], suffixes, fmt, max_bytes)
    ] or log_files(logs, suffixes, fmt, max_bytes)  # no logs: log_files' own error
    kept: dict[str, Path] = {}
    again: list[tuple[Path, Path]] = []
    for f in named:
        h = file_hash(f)
        if h in kept:
            again.append((f, kept[h]))
        else:
            kept[h] = f
    if again:
        said = "; ".join(
            f"{f} (the same file)" if f == g else f"{f} (the same bytes as {g})"
            for f, g in again[:5]
        )
        more = f"; and {len(again) - 5} more" if len(again) > 5 else ""
        warnings.warn(
            f"{fmt}: {len(again)} log file(s) given twice, read once: {said}{more}",
            stacklevel=3,
        )
    return list(kept.values()), list(kept)


def check_once(verdicts: pl.DataFrame, fmt: str) -> None:
    """Refuse a verdict recorded twice: the same judge, pair and order shown at two places
    of the logs (:data:`~.reading.VERDICT_SCHEMA` rows with ``where``).

    Raises:
        ConfigError: one line naming the judge, the pair, the order and both places (and how
            many more verdicts are recorded twice).
    """
    key = ["question_id", "judge", "first"]
    dup = (
        verdicts.lazy()
        .filter(pl.struct(key).is_duplicated())
        .group_by(key, maintain_order=True)
        .agg(pl.col("where").head(2))
        .collect()
    )
    if not dup.height:
        return
    r = dup.row(0, named=True)
    more = f" ({dup.height - 1} more verdicts recorded twice)" if dup.height > 1 else ""
    raise ConfigError(
        f"{fmt} log: judge {r['judge']!r} judged {r['question_id']!r} with {r['first']!r} "
        f"shown first twice: at {r['where'][0]} and at {r['where'][1]}{more}"
    )


def one_pair_each(
    pairs: pl.DataFrame, where: list[str | None], fmt: str
) -> pl.DataFrame:
    """The pairs (:data:`~.reading.PAIR_SCHEMA` rows; ``where``: each one's place), each
    ``question_id`` once: records of one pair are one pair, a field one record leaves empty
    (null or ``""``: a label given with one order only) taking another's value, in the
    order read; two records giving one field other values are two pairs under one name
    (another instruction, answer or gold label), and which one a verdict judged cannot be
    told.

    Raises:
        ConfigError: one line naming the pair, the fields that differ and both places (and
            how many more pairs differ).
    """
    if pairs.get_column("question_id").n_unique() == pairs.height:
        return pairs
    content = [c for c in pairs.columns if c != "question_id"]
    given = {c: pl.col(c).is_not_null() & (pl.col(c) != "") for c in content}
    merged = pairs.group_by("question_id", maintain_order=True).agg(
        *[pl.col(c).filter(given[c]).first().fill_null(pl.col(c).first()) for c in content],
        _clash=pl.any_horizontal(pl.col(c).filter(given[c]).n_unique() > 1 for c in content),
    )  # fmt: skip
    clash = merged.filter("_clash").get_column("question_id")
    if not clash.len():
        return merged.drop("_clash")
    one = pairs.with_columns(where=pl.Series(where, dtype=pl.String)).filter(
        pl.col("question_id") == clash[0]
    )
    recs = one.rows(named=True)

    def differ(a: dict, b: dict) -> list[str]:
        return [c for c in content if a[c] and b[c] and a[c] != b[c]]

    a, b = next(
        (a, b) for i, a in enumerate(recs) for b in recs[i + 1 :] if differ(a, b)
    )
    fields = ", ".join(differ(a, b))
    more = (
        f" ({clash.len() - 1} more pairs given with other content)"
        if clash.len() > 1
        else ""
    )
    raise ConfigError(
        f"{fmt} log: pair {a['question_id']!r} is given twice with other content ({fields}): "
        f"at {a['where']} and at {b['where']}{more}"
    )  # fmt: skip


__all__ = ["check_once", "distinct_logs", "one_pair_each"]
