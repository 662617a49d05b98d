"""Reading judgment logs: the normalised rows a format yields (:class:`Rows`), JSON Lines
with errors that name the file, the line and the field (:func:`iter_jsonl`, :func:`need`),
the log files a job names (:func:`log_files`) and where normalised copies go
(:func:`default_root`, :func:`temp_name`). See :mod:`voirdire.benchmarks.logs.base`.

A log is untrusted input, bounded before it is decoded (:mod:`voirdire.bounds`,
``docs/security.md``): every file at most ``[benchmark.log] max_bytes`` bytes on disk
(:class:`LogLimits`, default :data:`MAX_LOG_BYTES`; checked by :func:`log_files`), and JSON
nested at most :data:`~voirdire.bounds.MAX_DEPTH` levels (:func:`read_json`, :func:`iter_jsonl`
per line).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import platformdirs
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from voirdire.benchmarks.releases.steps import MARKER
from voirdire.bounds import MAX_DEPTH, check_json_depth, check_size
from voirdire.core import ConfigError, content_hash

#: files of the normalised copy
INSTANCES, RECORDED, SOURCE = "instances.parquet", "recorded.parquet", "source.json"
#: version of the normalised copy's layout (enters its hash). 2: AlpacaEval skips a model
#: against itself; 3: its model is model_a; 4: a pair given with other content is refused (a
#: copy from before kept the first silently)
COPY_VERSION = "4"
PAIR_SCHEMA = {
    "question_id": pl.String, "cluster": pl.String, "task": pl.String,
    "instruction": pl.String, "model_a": pl.String, "model_b": pl.String,
    "output_a": pl.String, "output_b": pl.String, "gold": pl.String,
}  # fmt: skip
VERDICT_SCHEMA = {
    "question_id": pl.String, "judge": pl.String, "first": pl.String,
    "second": pl.String, "output": pl.String, "choice": pl.String, "where": pl.String,
}  # fmt: skip
#: the reason a recorded null judgment is a failure
FAILED_CALL = "the log records no judgment for this order (a failed call)"
#: the default most bytes a log file may have (``[benchmark.log] max_bytes``): on disk, and
#: uncompressed for a zipped log (Inspect's ``.eval``); the public logs are under 5 MB each
MAX_LOG_BYTES = 1024**3
#: the setting that raises it, as a refusal names it
MAX_BYTES_SETTING = "[benchmark.log] max_bytes; --option max_bytes=N"


class LogLimits(BaseModel):
    """The bounds every format's ``[benchmark.log]`` takes (its options subclass this):
    ``max_bytes``, the most bytes a log file may have on disk (and uncompressed, for a
    zipped log), default :data:`MAX_LOG_BYTES`. A bound changes nothing a log reads to: it
    does not enter the normalised copy's hash (:data:`LIMIT_KEYS`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bytes: int = Field(default=MAX_LOG_BYTES, gt=0)


#: the settings of :class:`LogLimits` (left out of the normalised copy's hash)
LIMIT_KEYS = frozenset(LogLimits.model_fields)


class NoOptions(LogLimits):
    """``[benchmark.log]`` of a format that takes no settings but the bounds."""


def log_settings(options: type[BaseModel], log: dict[str, Any] | None, fmt: str) -> Any:
    """A format's ``[benchmark.log]`` settings ``log`` validated as its ``options`` model.

    Raises:
        ConfigError: one line naming the format and the key (``benchmark.log.KEY``) and what
            is wrong with it.
    """
    try:
        return options.model_validate(log or {})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            from voirdire.core import did_you_mean, model_keys

            *above, key = err["loc"] or ("",)
            msg = "unknown key" + did_you_mean(key, model_keys(options, above))
        else:
            msg = err["msg"]
        raise ConfigError(f"{fmt}: benchmark.log.{where}: {msg}") from None


#: the verdicts :class:`Rows` holds as Python lists before it moves them into a frame
CHUNK_ROWS = 1 << 17


class Rows:
    """The normalised rows of the logs read so far (see the module docstring): column lists
    ``pairs`` (:data:`PAIR_SCHEMA`) and ``verdicts`` (:data:`VERDICT_SCHEMA`; ``where`` is
    ``"<file>: line <n>"``, for messages); ``pair_where``: each pair's place, the ``where``
    given or that of the verdict recorded next (the record holding the pair)."""

    def __init__(self) -> None:
        self.pairs: dict[str, list[Any]] = {c: [] for c in PAIR_SCHEMA}
        self.verdicts: dict[str, list[Any]] = {c: [] for c in VERDICT_SCHEMA}
        self.pair_where: list[str | None] = []
        self._unplaced = False  # the last pair waits for its record's place
        # the column lists in schema order (appended to per row)
        self._pair_cols = list(self.pairs.values())
        self._verdict_cols = list(self.verdicts.values())
        # the rows read before the lists' last CHUNK_ROWS, as polars frames
        self._pair_chunks: list[pl.DataFrame] = []
        self._verdict_chunks: list[pl.DataFrame] = []
        self._verdicts_before = 0

    @property
    def n_verdicts(self) -> int:
        """The verdicts read so far (the next one's row in :meth:`frames`' verdicts)."""
        return self._verdicts_before + len(self._verdict_cols[0])

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The pairs (:data:`PAIR_SCHEMA`) and the verdicts (:data:`VERDICT_SCHEMA`) read,
        in the order read; the column lists are emptied."""
        self._spill()
        return (
            pl.concat(self._pair_chunks, rechunk=True),
            pl.concat(self._verdict_chunks, rechunk=True),
        )

    def _spill(self) -> None:
        """Move the column lists' rows into frames: a log's 2 × 10⁶ verdicts are held as
        Arrow strings, not as Python ones (twice or thrice the memory)."""
        for chunks, cols, schema in (
            (self._pair_chunks, self.pairs, PAIR_SCHEMA),
            (self._verdict_chunks, self.verdicts, VERDICT_SCHEMA),
        ):
            if not chunks or cols["question_id"]:
                chunks.append(pl.DataFrame(cols, schema=schema))
            for col in cols.values():
                col.clear()
        self._verdicts_before = sum(c.height for c in self._verdict_chunks)

    def pair(
        self, question_id: str, cluster: str, model_a: str, model_b: str, *,
        task: str = "all", instruction: str = "", output_a: str = "",
        output_b: str = "", gold: str | None = None, where: str | None = None,
    ) -> None:  # fmt: skip
        """One pair (an instance; a pair given again by another judge's log with the same
        content is kept once, with other content refused: :func:`~.once.one_pair_each`)."""
        for col, v in zip(
            self._pair_cols,
            (question_id, cluster, task, instruction, model_a, model_b, output_a, output_b, gold),
        ):  # fmt: skip
            col.append(v)
        self.pair_where.append(where)
        self._unplaced = where is None

    def verdict(
        self, question_id: str, judge: str, shown: tuple[str, str],
        output: str | None, choice: str, where: str,
    ) -> None:  # fmt: skip
        """One recorded verdict: ``judge``'s ``output`` for the order ``shown`` and the letter
        the owning tool read (``A``/``B``/``C``, ``""``: none)."""
        for col, v in zip(
            self._verdict_cols,
            (question_id, judge, shown[0], shown[1], output, choice, where),
        ):
            col.append(v)
        if len(self._verdict_cols[0]) >= CHUNK_ROWS:
            self._spill()
        if self._unplaced:
            self.pair_where[-1], self._unplaced = where, False


def read_json(path: str | os.PathLike, fmt: str) -> Any:
    """The JSON value of a whole file, its nesting bounded before it is decoded.

    Raises:
        ConfigError: ``"<fmt> log <file>: ..."`` for text that is not UTF-8 (the byte named),
            nested too deep (:func:`~voirdire.bounds.check_json_depth`) or not JSON (the line
            and column named: a truncated file?).
    """
    data = Path(path).read_bytes()
    check_json_depth(data, f"{fmt} log {path}")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{fmt} log {path}: not UTF-8 text (byte {exc.start})"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{fmt} log {path}: line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}; a truncated file?)"
        ) from None


def iter_jsonl(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of a JSON Lines file (blank lines skipped), each line's
    nesting bounded before it is decoded.

    Raises:
        ConfigError: ``"<file>: line <n>: ..."`` for a line that is not JSON (a truncated
            file), not an object or nested too deep, or text that is not UTF-8.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if (
                    line.count("[") + line.count("{") > MAX_DEPTH
                ):  # else it cannot nest deeper
                    check_json_depth(line, f"{fmt} log {path}: line {n}")
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConfigError(
                        f"{fmt} log {path}: line {n}: not valid JSON ({exc.msg} at column {exc.colno}; a truncated file?)"
                    ) from None
                if not isinstance(obj, dict):
                    raise ConfigError(
                        f"{fmt} log {path}: line {n}: not a JSON object (a {type(obj).__name__})"
                    )
                yield n, obj
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{fmt} log {path}: not UTF-8 text (byte {exc.start})"
        ) from None


def need(
    obj: dict[str, Any], key: str, where: str, fmt: str, kind: type | tuple = object
) -> Any:
    """``obj[key]``, which must be there and of type ``kind``.

    Raises:
        ConfigError: ``"<where>: no field 'key'"`` (naming the format: the wrong format named
            reads as a missing field) or a field of another type.
    """
    if key not in obj:
        raise ConfigError(f"{fmt} log {where}: no field {key!r} (is this a {fmt} log?)")
    value = obj[key]
    if not isinstance(value, kind):
        want = (
            kind.__name__
            if isinstance(kind, type)
            else " or ".join(k.__name__ for k in kind)
        )
        raise ConfigError(
            f"{fmt} log {where}: field {key!r} is a {type(value).__name__}, not a {want}"
        )
    return value


def default_root() -> Path:
    """Where normalised copies go when the job names no ``data_dir``:
    ``$VOIRDIRE_LOG_CACHE``, else ``<user cache dir>/voirdire/logs``."""
    env = os.environ.get("VOIRDIRE_LOG_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("voirdire")) / "logs"


def temp_name(path: Path) -> Path:
    """A temporary name beside ``path`` that no other process uses (``.<name>.<pid>-<random>.tmp``):
    a file of the shared log cache is written there, then moved onto ``path`` (``os.replace``),
    so that two audits of one log at once never take each other's temporary file."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")


def log_files(
    logs: Sequence[str | os.PathLike[str]],
    suffixes: Sequence[str],
    fmt: str,
    max_bytes: int = MAX_LOG_BYTES,
) -> list[Path]:
    """The files of ``logs`` (a directory stands for its files ending in one of
    ``suffixes``, sorted; a directory ``voirdire data fetch`` wrote, for the files its
    ``RELEASE.json`` lists: :func:`fetched_logs`), each once, each at most ``max_bytes`` bytes on disk (checked
    before anything reads it; ``[benchmark.log] max_bytes``).

    Raises:
        ConfigError: no logs, a path that does not exist, a directory without such files,
            a file over ``max_bytes`` (one line naming it).
    """
    if not logs:
        raise ConfigError(f"{fmt}: no log files given (benchmark.logs)")
    out: list[Path] = []
    for p in map(Path, logs):
        if p.is_dir():
            found = fetched_logs(p, suffixes) or sorted(
                f
                for f in p.iterdir()
                if f.is_file() and f.name.endswith(tuple(suffixes))
            )
            if not found:
                raise ConfigError(f"{fmt}: no {' or '.join(suffixes)} files in {p}")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise ConfigError(f"{fmt}: log {p}: no such file or directory")
    files = list(dict.fromkeys(p.resolve() for p in out))
    for f in files:
        check_size(
            f.stat().st_size, f"{fmt} log {f}", max_bytes, "on disk", MAX_BYTES_SETTING
        )
    return files


#: the most bytes of a fetched directory's ``RELEASE.json`` read (its list of files)
MAX_FETCH_RECORD_BYTES = 16 << 20


def fetched_logs(d: Path, suffixes: Sequence[str]) -> list[Path] | None:
    """The log files of a directory ``voirdire data fetch`` wrote (its ``RELEASE.json``,
    :data:`~voirdire.benchmarks.releases.steps.MARKER`, lists them at their repository
    paths): those ending in one of ``suffixes`` that are files inside ``d``, sorted;
    ``None`` when ``d`` holds no such record (or one that lists no such file). The record
    is data: a path that would leave ``d`` is passed over, and the record is bounded
    before it is decoded.

    Raises:
        ConfigError: the record is over :data:`MAX_FETCH_RECORD_BYTES` or nested too deep."""
    rec = d / MARKER
    if not rec.is_file():
        return None
    check_size(rec.stat().st_size, f"fetch record {rec}", MAX_FETCH_RECORD_BYTES,
               "on disk", "the fetch record's size")  # fmt: skip
    data = rec.read_bytes()
    check_json_depth(data, str(rec))
    try:
        files = json.loads(data).get("files")
    except (ValueError, AttributeError):
        return None
    if not isinstance(files, dict):
        return None
    root = d.resolve()
    found = []
    for rel in files:
        if not isinstance(rel, str) or not rel.endswith(tuple(suffixes)):
            continue
        f = (d / rel).resolve()
        if root in f.parents and f.is_file():
            found.append(f)
    return sorted(found) or None


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def prompt_keys(verdicts: pl.DataFrame) -> dict[str, str]:
    """Per question of a normalised copy's verdicts (:data:`VERDICT_SCHEMA`), the hash of its
    verdicts (judge, order, text, letter; sorted): a format's prompt key, which enters the
    query ids, so that an edited log is read again."""
    per = (
        verdicts.lazy()
        .select("question_id", "judge", "first", "second", "output", "choice")
        .sort("question_id", "judge", "first")
        .with_columns(
            _v=pl.concat_str(
                "judge",
                "first",
                "second",
                pl.col("output").fill_null("\x00"),
                pl.col("choice").fill_null("\x00"),
                separator="\x1f",
            )
        )  # fmt: skip
        .group_by("question_id", maintain_order=True)
        .agg(pl.col("_v").str.join("\x1e"))
        .collect()
    )  # lazy: the sorted copy and the joined texts are not all held at once
    return {q: content_hash(v) for q, v in per.iter_rows()}


__all__ = [
    "COPY_VERSION",
    "FAILED_CALL",
    "fetched_logs",
    "INSTANCES",
    "LIMIT_KEYS",
    "LogLimits",
    "MAX_BYTES_SETTING",
    "MAX_LOG_BYTES",
    "NoOptions",
    "PAIR_SCHEMA",
    "RECORDED",
    "Rows",
    "SOURCE",
    "VERDICT_SCHEMA",
    "default_root",
    "file_hash",
    "iter_jsonl",
    "log_settings",
    "log_files",
    "need",
    "prompt_keys",
    "temp_name",
]
