"""A plain table of verdicts (CSV, JSONL, JSON or Parquet), one row per verdict, read with a
column mapping like a user's own pairs (``[benchmark.log.columns]``).

Columns (values are the table's column names): ``instance`` (the item; with the two models
it makes the instance), ``model_a`` and ``model_b`` (the two answers' models), ``first``
(which was shown first: the model's name, or ``a``/``b``/``1``/``2`` for the row's
``model_a``/``model_b``), ``verdict`` (see below); optional: ``judge`` (else every row is
the judge ``[benchmark.log] judge``, default ``"judge"``), ``output`` (the judge's raw text;
else the verdict as written), ``label`` (the better model: its name, ``a``/``b``/``1``/``2``
or ``tie``), ``instruction``, ``output_a``, ``output_b``, ``task`` and ``cluster`` (the
bootstrap's cluster; default the ``instance``).

**Order shown**: the ``first`` column. **Reading** (``[benchmark.log] verdicts``):
``"position"`` (default): ``A``/``1`` the answer shown first, ``B``/``2`` the second,
``C``/``tie``/``0`` a tie (case ignored); ``"model"``: the winner's name or ``tie``. An empty
verdict is no verdict; any other value is an error naming the row.

Instances: ``question_id`` = ``"<instance>|<model_a>|<model_b>"``, the models in the order
of the pair's first row (``model_a`` shown first in permutation 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import LogLimits, Rows
from voirdire.benchmarks.own_pairs.data import as_text, read_source
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

POSITION = {"a": "A", "1": "A", "b": "B", "2": "B", "c": "C", "tie": "C", "0": "C"}
SIDE = {"a": 0, "1": 0, "b": 1, "2": 1}


class TableColumns(BaseModel):
    """``[benchmark.log.columns]``: which columns hold what (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance: str
    model_a: str
    model_b: str
    first: str
    verdict: str
    judge: str | None = None
    output: str | None = None
    label: str | None = None
    instruction: str | None = None
    output_a: str | None = None
    output_b: str | None = None
    task: str | None = None
    cluster: str | None = None


class TableOptions(LogLimits):
    """``[benchmark.log]``: ``columns`` (:class:`TableColumns`), ``judge`` (the judge's name
    when no column names it), ``verdicts`` (``"position"`` or ``"model"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: TableColumns
    judge: str = "judge"
    verdicts: Literal["position", "model"] = "position"


def _side(value: str, ma: str, mb: str) -> str | None:
    """The model a ``first`` or ``label`` value names (its name, or a/b/1/2), or None."""
    if value in (ma, mb):
        return value
    i = SIDE.get(value.strip().lower())
    return None if i is None else (ma, mb)[i]


def _letter(value: str | None, shown: tuple[str, str], by: str) -> str | None:
    """The letter of a verdict cell (``""``: empty), or None: not a verdict."""
    if value is None or not value.strip():
        return ""
    v = value.strip()
    if by == "model":
        return (
            "A"
            if v == shown[0]
            else "B"
            if v == shown[1]
            else "C"
            if v.lower() == "tie"
            else None
        )
    return POSITION.get(v.lower())


@BENCHMARKS.register
class LogTable(LogBenchmark):
    """A plain table of verdicts (module docstring); ``[benchmark.log]``: :class:`TableOptions`."""

    name = "LogTable"
    Options = TableOptions
    suffixes = (".csv", ".jsonl", ".json", ".parquet")

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs and verdicts of one table, a verdict per row."""
        df, _ = read_source(str(path), None)
        c: TableColumns = options.columns
        roles = {r: n for r, n in c.model_dump().items() if n is not None}
        cols = [as_text(df, n, repr(str(path))).to_list() for n in roles.values()]
        canon: dict[tuple[str, frozenset[str]], tuple[str, str]] = {}
        for i, vals in enumerate(zip(*cols)):
            r = {k: v for k, v in zip(roles, vals) if v is not None}
            cls._row(r, f"{path}: row {i + 1}", options, canon, rows)

    @classmethod
    def _row(
        cls, r: dict[str, str], line: str, options: Any, canon: dict, rows: Rows
    ) -> None:
        """One table row (``r``: role -> cell, nulls left out) into ``rows``.

        Raises:
            ConfigError: an empty instance or model, one model twice, a ``first``, verdict or
                label cell that names nothing known.
        """
        c, f = options.columns, cls.name
        for role in ("instance", "model_a", "model_b"):
            if not r.get(role, "").strip():
                raise ConfigError(
                    f"{f} log {line}: empty {role} column {getattr(c, role)!r}"
                )
        inst, ma, mb = r["instance"], r["model_a"], r["model_b"]
        if ma == mb:
            raise ConfigError(
                f"{f} log {line}: model {ma!r} in both model_a and model_b"
            )
        a, b = canon.setdefault((inst, frozenset((ma, mb))), (ma, mb))
        first = _side(r.get("first", ""), ma, mb)
        if first is None:
            raise ConfigError(
                f"{f} log {line}: column {c.first!r} ({r.get('first')!r}) names neither {ma!r} nor {mb!r}"
            )
        shown = (first, mb if first == ma else ma)
        letter = _letter(r.get("verdict"), shown, options.verdicts)
        if letter is None:
            want = (
                "A/B/C, 1/2, tie"
                if options.verdicts == "position"
                else f"{ma!r}, {mb!r} or tie"
            )
            raise ConfigError(
                f"{f} log {line}: column {c.verdict!r} holds {r['verdict']!r}, not a verdict ({want})"
            )
        gold, lab = None, r.get("label", "")
        if lab.strip():
            gold = "tie" if lab.strip().lower() == "tie" else _side(lab, ma, mb)
            if gold is None:
                raise ConfigError(
                    f"{f} log {line}: column {c.label!r} ({lab!r}) names neither {ma!r} nor {mb!r} nor tie"
                )
        outs = {ma: r.get("output_a", ""), mb: r.get("output_b", "")}
        qid = f"{inst}|{a}|{b}"
        rows.pair(
            qid, r.get("cluster", inst), a, b, task=r.get("task", "all"),
            instruction=r.get("instruction", ""), output_a=outs[a], output_b=outs[b], gold=gold,
        )  # fmt: skip
        text = r.get("output", r.get("verdict", ""))
        rows.verdict(qid, r.get("judge", options.judge), shown, text, letter, line)


__all__ = ["LogTable", "TableColumns", "TableOptions"]
