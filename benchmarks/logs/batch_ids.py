"""What the judge saw in a provider batch (``docs/audit.md``): each request's ``custom_id``
mapped to its pair and order, the verdict read from the judge's text by a pattern the user
names, and the shared reader of a batch's requests and results (:class:`BatchLog`).

A batch file records the judge's text per ``custom_id`` and nothing of the pair, so the user
says, in ``[benchmark.log]`` (:class:`BatchOptions`), either

- ``mapping``: a table (CSV, JSONL, JSON or Parquet) with the columns ``custom_id``,
  ``instance``, ``model_a``, ``model_b``, ``first`` (which was shown first: the model's name,
  or ``a``/``b``/``1``/``2`` for the row's ``model_a``/``model_b``) and optionally ``label``
  (the better model: its name, ``a``/``b``/``1``/``2`` or ``tie``); or
- ``custom_id``: a regular expression with named groups ``instance``, ``model_a``,
  ``model_b``, ``first`` and optionally ``label`` (the same values), matched against the
  whole ``custom_id`` (Python's ``re``, a pattern and never code).

**Reading**: the judge's text is kept as is and its letter left unread (null), so the engine
reads it like a live judge's (:func:`voirdire.judges.extract.extract_verdicts`) by
``verdict`` (a regex whose group 1 is the label; default ``\\[\\[([ABC])\\]\\]``, MT-Bench's
``[[A]]``) and ``labels`` (what group 1 reads for the answer shown first, second and,
optionally, a tie; default ``A``, ``B``, ``C``). The pattern and labels are kept in the
normalised copy (:data:`VERDICT`), so ``report`` and ``rank`` read the copy alone. A failed
request (an error, a status other than 200, no text, canceled, expired, or a request with
no result) is a recorded failure with its reason, kept in :data:`FAILURES`; a reason is
redacted as it is read (:class:`Result`), so no copy holds a key a provider echoed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ConfigDict, computed_field, field_validator

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import (
    RECORDED,
    LogLimits,
    Rows,
    file_hash,
    iter_jsonl,
    need,
    temp_name,
)
from voirdire.benchmarks.logs.table import _side
from voirdire.benchmarks.own_pairs.data import as_text, read_source
from voirdire.benchmarks.recorded import Recorded, RecordKey
from voirdire.core import ConfigError
from voirdire.redaction import redact_message

#: the normalised copy's verdict pattern and labels, and its failures' reasons
VERDICT, FAILURES = "verdict.json", "failures.parquet"
#: the mapping's columns (the regex's groups), required then optional
NEEDED, OPTIONAL = ("instance", "model_a", "model_b", "first"), ("label",)
FAILURE_SCHEMA = {
    "question_id": pl.String, "judge": pl.String, "first": pl.String,
    "second": pl.String, "why": pl.String,
}  # fmt: skip


class BatchOptions(LogLimits):
    """``[benchmark.log]`` of a batch format (module docstring): ``mapping`` (a table's
    path) or ``custom_id`` (a regex with named groups), ``verdict`` (regex, group 1 the
    label), ``labels`` (2 or 3: shown first, second, tie; a string: comma-separated), ``judge`` (the judge's name; else
    the requests' model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mapping: str | None = None
    custom_id: str | None = None
    verdict: str = r"\[\[([ABC])\]\]"
    labels: tuple[str, ...] = ("A", "B", "C")
    judge: str | None = None

    @field_validator("mapping")
    @classmethod
    def _mapping_file(cls, v: str | None) -> str | None:
        if v is not None and not Path(v).is_file():
            raise ValueError(f"no such mapping table {v!r}")
        return None if v is None else str(Path(v).absolute())

    @field_validator("custom_id")
    @classmethod
    def _id_pattern(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            groups = set(re.compile(v).groupindex)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        if missing := [g for g in NEEDED if g not in groups]:
            raise ValueError(f"the pattern has no named group {', '.join(missing)}")
        return v

    @field_validator("verdict")
    @classmethod
    def _verdict(cls, v: str) -> str:
        try:
            if re.compile(v).groups < 1:
                raise ValueError("the pattern has no group (group 1 = the label)")
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return v

    @field_validator("labels", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return tuple(x.strip() for x in v.split(",")) if isinstance(v, str) else v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(v) not in (2, 3) or len(set(v)) != len(v):
            raise ValueError("2 or 3 distinct labels: shown first, second[, tie]")
        return v

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mapping_sha256(self) -> str:
        """The mapping table's hash (enters the normalised copy's, so an edit reads again)."""
        return file_hash(Path(self.mapping)) if self.mapping else ""


@dataclass
class Result:
    """One request's outcome: ``text`` (None: failed, ``why`` says why), the judge model
    the file names (``""``: none), and where it was read. ``why`` is a provider's words
    about a failed call, which may echo a key: it is redacted here, as the log is read, like
    a live judge's failure message (the environment's secret values, key shapes, masked
    echoes: :func:`voirdire.redaction.redact_message`)."""

    text: str | None
    why: str
    model: str
    where: str

    def __post_init__(self) -> None:
        if self.why:
            self.why = redact_message(self.why)


class Mapper:
    """``custom_id`` -> the pair and order (module docstring) from the options.

    ``optional``: neither may be given (:attr:`given` false; a format that reads the pair
    elsewhere, Inspect's sample metadata).

    Raises:
        ConfigError: both of ``mapping`` and ``custom_id``, or neither unless ``optional``; a mapping table
            without a column, with an empty cell or a ``custom_id`` twice.
    """

    def __init__(self, options: BatchOptions, fmt: str, optional: bool = False) -> None:
        self.fmt, self.options, self.key = fmt, options, "custom_id"
        self.given = options.mapping is not None or options.custom_id is not None
        if (
            options.mapping is not None
            and options.custom_id is not None
            or not (self.given or optional)
        ):
            raise ConfigError(
                f"{fmt}: give [benchmark.log] mapping (a table of custom_id, instance, model_a, "
                "model_b, first[, label]) or custom_id (a regex with those named groups), one of them"
            )
        self.table: dict[str, dict[str, str]] = {}
        self.rx = re.compile(options.custom_id) if options.custom_id else None
        if options.mapping:
            self._read_table(Path(options.mapping))

    def _read_table(self, path: Path) -> None:
        df, _ = read_source(str(path), None)
        where = f"{self.fmt} mapping table {path}"
        for c in ("custom_id", *NEEDED):
            if c not in df.columns:
                raise ConfigError(
                    f"{where}: no column {c!r} (columns: {', '.join(df.columns)})"
                )
        cols = [c for c in ("custom_id", *NEEDED, *OPTIONAL) if c in df.columns]
        vals = [as_text(df, c, repr(str(path))).to_list() for c in cols]
        for i, row in enumerate(zip(*vals)):
            r = {c: (v or "").strip() for c, v in zip(cols, row)}
            if empty := [c for c in ("custom_id", *NEEDED) if not r[c]]:
                raise ConfigError(f"{where}: row {i + 1}: empty {empty[0]!r}")
            if r["custom_id"] in self.table:
                raise ConfigError(
                    f"{where}: row {i + 1}: custom_id {r['custom_id']!r} given twice"
                )
            self.table[r["custom_id"]] = r

    def __call__(self, cid: str, where: str) -> dict[str, str]:
        """The pair of one ``custom_id``: ``instance``, ``model_a``, ``model_b``, ``first``,
        ``label`` (``""``: none).

        Raises:
            ConfigError: naming ``where``: an id not in the table or not matching the pattern."""
        if self.rx is not None:
            m = self.rx.fullmatch(cid)
            if m is None:
                raise ConfigError(
                    f"{self.fmt} log {where}: {self.key} {cid!r} does not match the pattern "
                    f"benchmark.log.custom_id {self.rx.pattern!r}"
                )
            return {k: (v or "") for k, v in m.groupdict().items()}
        if cid not in self.table:
            raise ConfigError(
                f"{self.fmt} log {where}: {self.key} {cid!r} is not in the mapping table {self.options.mapping}"
            )
        return self.table[cid]


def add_verdict(
    rows: Rows, fmt: str, cid: str, pair: dict[str, str], judge: str, res: Result,
    canon: dict[tuple[str, frozenset[str]], tuple[str, str]], key: str = "custom_id",
) -> None:  # fmt: skip
    """One request's pair and verdict into ``rows`` (the letter null: read by the pattern;
    ``key``: what messages call ``cid``, ``""``: ``res.where`` names it).

    Raises:
        ConfigError: one model twice, a ``first`` or ``label`` naming neither model."""
    inst, ma, mb = pair["instance"], pair["model_a"], pair["model_b"]
    where = f"{res.where} ({key} {cid!r})" if key else res.where
    if ma == mb:
        raise ConfigError(
            f"{fmt} log {where}: model {ma!r} is both model_a and model_b"
        )
    first = _side(pair["first"], ma, mb)
    if first is None:
        raise ConfigError(
            f"{fmt} log {where}: first {pair['first']!r} names neither {ma!r} nor {mb!r}"
        )
    lab = pair.get("label") or ""
    gold = None
    if lab:
        gold = "tie" if lab.lower() == "tie" else _side(lab, ma, mb)
        if gold is None:
            raise ConfigError(
                f"{fmt} log {where}: label {lab!r} names neither {ma!r} nor {mb!r} nor tie"
            )
    a, b = canon.setdefault((inst, frozenset((ma, mb))), (ma, mb))
    qid = f"{inst}|{a}|{b}"
    rows.pair(qid, inst, a, b, gold=gold)
    shown = (first, b if first == a else a)
    rows.verdict(qid, judge, shown, res.text, None, where)  # type: ignore[arg-type]


class BatchLog(LogBenchmark):
    """A provider batch's requests and results, joined on ``custom_id`` (module
    docstring). A format implements :meth:`parse` (one file into requests and results)."""

    Options = BatchOptions
    suffixes = (".jsonl",)

    @classmethod
    def request_model(cls, obj: dict[str, Any], where: str) -> str | None:
        """The judge model a request line names (``""`` when it names none), its fields
        checked; ``None`` for a result line, whose fields are checked here too.

        Raises:
            ConfigError: naming the line and the field."""
        raise NotImplementedError

    @classmethod
    def result_of(cls, obj: dict[str, Any], where: str) -> Result:
        """The :class:`Result` of one result line."""
        raise NotImplementedError

    @classmethod
    def parse(
        cls,
        path: Path,
        requests: dict[str, tuple[str, str]],
        results: dict[str, Result],
    ) -> None:
        """Add one file's requests (``custom_id -> (judge model, where)``) and results,
        a line each (:meth:`request_model` tells which a line is).

        Raises:
            ConfigError: naming the file, the line and the field; a ``custom_id`` twice."""
        f = cls.name
        for n, obj in iter_jsonl(path, f):
            where = f"{path}: line {n}"
            cid = need(obj, "custom_id", where, f, str)
            model = cls.request_model(obj, where)
            if model is not None:
                once(requests, cid, where, f, "request")
                requests[cid] = (model, where)
            else:
                once(results, cid, where, f, "result")
                results[cid] = cls.result_of(obj, where)

    def read_logs(self, files: list[Path], rows: Rows) -> None:
        """Requests and results of all files, joined on ``custom_id`` (module docstring)."""
        self._read = True
        mapper = Mapper(self.settings, self.name)
        requests: dict[str, tuple[str, str]] = {}
        results: dict[str, Result] = {}
        for f in files:
            self.parse(f, requests, results)
        models = [r.model for r in results.values() if r.model]
        fallback = models[0] if models else "judge"
        canon: dict[tuple[str, frozenset[str]], tuple[str, str]] = {}
        self._failed: list[tuple[str, str]] = []
        for cid in dict.fromkeys([*requests, *results]):
            model, rwhere = requests.get(cid, ("", ""))
            res = results.get(cid) or Result(
                None, "the batch output holds no result for this request", model, rwhere
            )
            judge = self.settings.judge or model or res.model or fallback
            pair = mapper(cid, res.where)
            add_verdict(rows, self.name, cid, pair, judge, res, canon)
            if res.text is None:
                self._failed.append((str(rows.n_verdicts - 1), res.why))

    def _copy(self, files: list[Path], digest: str):
        """The shared normalised copy, with :data:`FAILURES` (the failed requests'
        reasons) and :data:`VERDICT` next to it."""
        self._failed, self._read = [], False
        pairs, keys = super()._copy(files, digest)
        d = self.data_dir
        if self._read or not (d / FAILURES).is_file():
            rec = pl.read_parquet(d / RECORDED).with_row_index("_i")
            idx = [int(i) for i, _ in self._failed]
            why = pl.DataFrame({"_i": idx, "why": [w for _, w in self._failed]},
                               schema={"_i": pl.UInt32, "why": pl.String})  # fmt: skip
            out = rec.join(why, on="_i").select(*FAILURE_SCHEMA)
            out.write_parquet(tmp := temp_name(d / FAILURES))
            os.replace(tmp, d / FAILURES)
        v = {"pattern": self.settings.verdict, "labels": list(self.settings.labels)}
        (tmp := temp_name(d / VERDICT)).write_text(json.dumps(v), "utf-8")
        os.replace(tmp, d / VERDICT)
        return pairs, keys

    def _setup(self, pairs: pl.DataFrame, keys: dict[str, str]) -> None:
        """The shared tables, and the verdict pattern and labels from :data:`VERDICT`."""
        super()._setup(pairs, keys)
        path = self.data_dir / VERDICT
        v = json.loads(path.read_text("utf-8")) if path.is_file() else {}
        self.verdict_pattern = v.get("pattern", self.settings.verdict)
        labels = v.get("labels", list(self.settings.labels))
        self.verdict_labels = (
            None if labels == ["A", "B", "C"] else dict(zip(labels, "ABC"))
        )

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """The shared records, each failed request with its reason (:data:`FAILURES`)."""
        out = super().read_recorded(path, recorded)
        fpath = Path(path).parent / FAILURES
        if fpath.is_file():
            df = pl.read_parquet(fpath).filter(pl.col("judge") == recorded)
            for q, a, b, why in df.select(
                "question_id", "first", "second", "why"
            ).iter_rows():
                # redacted again: a copy written before the environment held the key
                out[(f"{q};{a};{b}", 1)] = Recorded(None, None, redact_message(why))
        return out


def need_at(
    obj: Any, path: str, where: str, fmt: str, kind: type | tuple = object
) -> Any:
    """``obj`` followed along a dotted ``path`` (``"response.body"``; an integer is a list
    index), the last of type ``kind``.

    Raises:
        ConfigError: ``"<where>: no field 'response.body'"`` or a field of another type."""
    cur, keys = obj, path.split(".")
    for i, key in enumerate(keys):
        if isinstance(cur, dict) and key in cur:
            cur = cur[key]
        elif isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        else:
            here = ".".join(keys[: i + 1])
            raise ConfigError(
                f"{fmt} log {where}: no field {here!r} (is this a {fmt} log?)"
            )
    if not isinstance(cur, kind):
        want = (
            kind.__name__
            if isinstance(kind, type)
            else " or ".join(k.__name__ for k in kind)
        )
        raise ConfigError(
            f"{fmt} log {where}: field {path!r} is a {type(cur).__name__}, not a {want}"
        )
    return cur


def once(have: dict[str, Any], cid: str, where: str, fmt: str, what: str) -> None:
    """Raises ConfigError when ``cid`` already has a ``what`` (naming both lines)."""
    if cid in have:
        was = have[cid]
        was = was.where if isinstance(was, Result) else was[1]
        raise ConfigError(
            f"{fmt} log {where}: custom_id {cid!r} has a second {what} (the first at {was})"
        )


__all__ = [
    "FAILURES", "VERDICT", "BatchLog", "BatchOptions", "Mapper", "Result",
    "add_verdict", "need_at", "once",
]  # fmt: skip
