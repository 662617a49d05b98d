"""Bounds on untrusted input files, checked before they are decoded (``docs/security.md``).

A received file (a judgment log, a user's pairs data, a results directory's ``job.json``)
may be built to exhaust the reader: JSON nested thousands of levels deep ends Python's
decoder in a ``RecursionError`` (and polars' in an error that sends the reader to Python's),
a sparse file of gigabytes has no line break, and a 1 MB zip archive (an Inspect ``.eval``
log) can expand to gigabytes. The readers check, before decoding:

- the **nesting** of JSON text (:func:`check_json_depth`): at most :data:`MAX_DEPTH` levels of
  arrays and objects, found by a scan of the bytes (string contents and escapes skipped)
  that holds no more than one block of the file at a time;
- the **size** of a file (:func:`check_size`, against a setting of its reader: ``[benchmark.log]
  max_bytes`` for logs, ``[benchmark.pairs] max_bytes`` for pairs data);
- a **zip archive** by its uncompressed size (:func:`check_zip`): the sizes its members
  declare, then the bytes they really decompress to (streamed, never held), and the
  nesting of its JSON members.

Job files (:func:`read_job_text`, :func:`check_toml_depth`, :func:`check_value_depth`):
their size (:data:`MAX_JOB_BYTES`) on disk and their encoding (UTF-8) before they are read
as text, their nesting before the TOML is decoded and again once it is (dotted keys nest
too), then the length of the names in them (:data:`MAX_NAME_CHARS`) and the number of
judges (:data:`MAX_JUDGES`). Small text tables a user gives (human labels, judge
attributes: :func:`check_text_table`): their size on disk, their encoding, and the
longest field between separators, scanned in blocks before a CSV reader is given them.

Every refusal is a one-line :class:`~voirdire.core.ConfigError` naming the file, the figure
and the setting that raises it. This module imports nothing of voirdire's but the error.
"""

from __future__ import annotations

import re
import zipfile
import zlib

import numpy as np

from voirdire.core import ConfigError

__all__ = [
    "MAX_DEPTH",
    "MAX_JOB_BYTES",
    "MAX_JUDGES",
    "MAX_NAME_CHARS",
    "MAX_TABLE_BYTES",
    "MAX_FIELD_CHARS",
    "check_cells",
    "check_ends_whole",
    "check_table",
    "MAX_TABLE_ROWS",
    "check_json_depth",
    "check_size",
    "check_text_table",
    "check_toml_depth",
    "check_value_depth",
    "check_zip",
    "json_depth",
    "read_job_text",
]

#: the deepest nesting of arrays and objects a JSON input may have (real logs nest fewer
#: than 20 levels; Python's decoder fails near 1,000, and code that walks the decoded
#: value recursively before that)
MAX_DEPTH = 100
#: the block a scan or a zip member is read in (bytes)
BLOCK = 1 << 24
_BACKSLASH = 0x5C
#: every byte but the quote and the four brackets (deleted before the brackets are counted)
_OTHER = bytes(c for c in range(256) if c not in b'"[]{}')
#: per byte, the change of nesting depth it makes outside a string
_STEP = np.zeros(256, np.int8)
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


class _DepthScan:
    """The deepest nesting of JSON text fed in blocks (:meth:`feed`), outside strings.

    Escapes are removed first (``\\\\`` then ``\\"``, left to right, as JSON pairs them),
    every byte but quotes and brackets is deleted, and the text between an odd and an even
    quote (a string) is dropped; the depth is the largest running sum of ``+1`` per opening
    and ``-1`` per closing bracket. A block never ends inside a run of backslashes (its
    tail is carried to the next), and whether a block begins inside a string is carried
    too, so the result does not depend on where the blocks end. Malformed text (unbalanced
    brackets, a bare backslash) gets a depth that bounds how deep a decoder would go
    before it fails."""

    def __init__(self) -> None:
        self.depth = 0  # the running depth at the end of what was fed
        self.deepest = 0
        self._inside = False  # the next byte is inside a string
        self._carry = b""  # a run of backslashes that ended the last block

    def feed(self, data: bytes, final: bool = False) -> int:
        """Scan ``data`` (the next bytes); ``final``: no more follow. Returns the deepest
        nesting so far."""
        data = self._carry + data
        cut = len(data)
        if not final:
            while cut and data[cut - 1] == _BACKSLASH:
                cut -= 1
        data, self._carry = data[:cut], data[cut:]
        parts = (
            data.replace(b"\\\\", b"")
            .replace(b'\\"', b"")
            .translate(None, _OTHER)
            .split(b'"')
        )
        outside = b"".join(parts[1::2] if self._inside else parts[::2])
        if len(parts) % 2 == 0:  # an odd number of quotes
            self._inside = not self._inside
        if outside:
            run = np.cumsum(_STEP[np.frombuffer(outside, np.uint8)], dtype=np.int64)
            self.deepest = max(self.deepest, self.depth + int(run.max()))
            self.depth += int(run[-1])
        return self.deepest


def json_depth(data: bytes | str) -> int:
    """The deepest nesting of arrays and objects in JSON text ``data`` (``0``: a scalar;
    strings' contents do not count)."""
    return _deepest(data, None)


def _deepest(data: bytes | str, stop_above: int | None) -> int:
    """:func:`json_depth`, the scan stopped once the depth passes ``stop_above``."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    scan = _DepthScan()
    for start in range(0, len(data), BLOCK):
        deepest = scan.feed(data[start : start + BLOCK])
        if stop_above is not None and deepest > stop_above:
            return deepest
    return scan.feed(b"", final=True)


def check_json_depth(data: bytes | str, where: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse JSON text nested deeper than ``max_depth`` before it is decoded (``where``:
    the file, and line, for the message). Text with at most ``max_depth`` opening brackets
    is not scanned (it cannot nest deeper); a scan stops at the first level too deep.

    Raises:
        ConfigError: ``"<where>: JSON nested more than <max_depth> levels deep ..."``.
    """
    if isinstance(data, str):
        openers = data.count("[") + data.count("{")
    else:
        openers = data.count(b"[") + data.count(b"{")
    if openers > max_depth and _deepest(data, max_depth) > max_depth:
        raise ConfigError(_too_deep(where, max_depth))


def _too_deep(where: str, max_depth: int) -> str:
    return (
        f"{where}: JSON nested more than {max_depth} levels deep (arrays and objects); "
        "refused as a hostile or broken file"
    )


def check_size(n: int, where: str, limit: int, what: str, setting: str) -> None:
    """Refuse an input of ``n`` bytes (``what``: on disk, uncompressed, decoded...) over
    ``limit``, the value of ``setting`` (named in the message, so the user can raise it).

    Raises:
        ConfigError: ``"<where>: <n> bytes <what>, over the limit of <limit> (<setting>); refused"``.
    """
    if n > limit:
        raise ConfigError(
            f"{where}: {n:,} bytes {what}, over the limit of {limit:,} ({setting}); refused"
        )


def check_zip(
    path: str, where: str, limit: int, setting: str, max_depth: int = MAX_DEPTH
) -> None:
    """Bound a zip archive by its uncompressed size before a reader opens it: the sizes its
    members declare (summed, checked first, nothing decompressed), then the bytes they
    really decompress to (streamed in blocks, counted, never held: a member may declare less
    than it holds), each ``.json`` member's nesting on the way (:func:`check_json_depth`'s
    scan). A file that is no zip archive is left to its reader to name.

    Raises:
        ConfigError: over ``limit`` bytes uncompressed (declared or real), a JSON member nested
            deeper than ``max_depth``, or a member that cannot be decompressed (its reason).
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    with archive:
        members = archive.infolist()
        check_size(
            sum(m.file_size for m in members), where, limit, "uncompressed (declared)", setting
        )  # fmt: skip
        total = 0
        for m in members:
            name = f"{where}: member {m.filename[:200]!r}"
            scan = _DepthScan() if m.filename.endswith(".json") else None
            with _member(archive, m, name) as fh:
                while block := _read(fh, name):
                    total += len(block)
                    check_size(total, where, limit, "uncompressed or more", setting)
                    if scan is not None and scan.feed(block) > max_depth:
                        raise ConfigError(_too_deep(name, max_depth))
            if scan is not None and scan.feed(b"", final=True) > max_depth:
                raise ConfigError(_too_deep(name, max_depth))


#: what Python's zipfile raises for a member it cannot decompress (a bad CRC, a corrupt
#: stream, an encrypted member, an unknown method)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
               NotImplementedError, ValueError)  # fmt: skip


def _member(archive: zipfile.ZipFile, m: zipfile.ZipInfo, name: str):
    try:
        return archive.open(m)
    except _ZIP_ERRORS as exc:
        raise ConfigError(_undecompressable(name, exc)) from None


def _read(fh, name: str) -> bytes:
    try:
        return fh.read(BLOCK)
    except _ZIP_ERRORS as exc:
        raise ConfigError(_undecompressable(name, exc)) from None


def _undecompressable(name: str, exc: BaseException) -> str:
    return f"{name} cannot be decompressed ({type(exc).__name__}: {str(exc)[:200]})"


# --- job files -----------------------------------------------------------------------------

#: the largest job file read (bytes; the examples are under 4 KB)
MAX_JOB_BYTES = 1 << 20
#: the most characters of a name in a job file: the job's, a judge's, a backend's, a
#: benchmark's (a judge's name becomes a folder: ``engine.judge_names.MAX_NAME``, the same)
MAX_NAME_CHARS = 200
#: the most judges (and rewriters) one job file may list
MAX_JUDGES = 1_000


def read_job_text(path, where: str, limit: int = MAX_JOB_BYTES) -> str:
    """The text of a job file at ``path``: its size on disk checked before it is read,
    then decoded as UTF-8 (a BOM dropped).

    Raises:
        ConfigError: over ``limit`` bytes (:data:`MAX_JOB_BYTES`), or not UTF-8 (the offset
            of the first byte that is not).
    """
    import os

    check_size(
        os.stat(path).st_size, where, limit, "on disk", "voirdire.bounds.MAX_JOB_BYTES"
    )
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    check_size(len(data), where, limit, "read", "voirdire.bounds.MAX_JOB_BYTES")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: not UTF-8 text (byte {exc.start:,}: {data[exc.start : exc.start + 1]!r}); "
            "save the job file as UTF-8"
        ) from None


#: TOML's strings and comments (skipped) and its brackets (counted): one pass, each
#: character looked at a bounded number of times (multi-line strings first)
_TOML_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\']|\'(?!\'\'))*\'\'\''
    r'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)


def check_toml_depth(text: str, where: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse TOML text whose arrays and inline tables nest deeper than ``max_depth``
    before it is decoded (Python's decoder recurses once per level: 1,000 levels end in a
    ``RecursionError``). Strings and comments are skipped; text with at most ``max_depth``
    opening brackets is not scanned.

    Raises:
        ConfigError: ``"<where>: TOML nested more than <max_depth> levels deep ..."``.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for m in _TOML_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                raise ConfigError(_too_deep_toml(where, max_depth))
        elif c in "]}":
            depth = max(depth - 1, 0)


def check_value_depth(value, where: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a decoded value (dicts and lists) nested deeper than ``max_depth`` (TOML's
    dotted keys and table headers nest without brackets), walked without recursion.

    Raises:
        ConfigError: as :func:`check_toml_depth`.
    """
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        elif not isinstance(v, list):
            continue
        if d >= max_depth:
            raise ConfigError(_too_deep_toml(where, max_depth))
        stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))


def _too_deep_toml(where: str, max_depth: int) -> str:
    return (
        f"{where}: TOML nested more than {max_depth} levels deep (arrays and tables; "
        "voirdire.bounds.MAX_DEPTH); refused as a hostile or broken file"
    )


# --- small text tables a user gives ------------------------------------------------------

#: the largest labels or attributes table read (bytes on disk): 64 MiB holds about a
#: million labels of typical ids
MAX_TABLE_BYTES = 64 << 20
#: the longest field of such a table (characters between separators, bytes before decoding)
MAX_FIELD_CHARS = 10_000


def check_text_table(
    path,
    where: str,
    limit: int = MAX_TABLE_BYTES,
    max_field: int = MAX_FIELD_CHARS,
    setting: str = "voirdire.bounds.MAX_TABLE_BYTES",
) -> None:
    """Bound a CSV (or TSV) table before a reader decodes it: its size on disk, then in
    blocks its bytes (UTF-8, no NUL) and its longest run between separators (``,``, tab,
    line ends), so a field of megabytes is refused before it is parsed. A quoted field is
    counted between the separators inside it: the caller checks decoded cells too.

    Raises:
        ConfigError: over ``limit`` bytes, a NUL byte, text that is not UTF-8 (the offset),
            or a run of more than ``max_field`` bytes without a separator (its offset).
    """
    import codecs
    import os

    check_size(os.stat(path).st_size, where, limit, "on disk", setting)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, start = 0, 0  # the bytes before the block; where the open field starts
    with open(path, "rb") as fh:
        while block := fh.read(BLOCK):
            if (nul := block.find(b"\x00")) >= 0:
                raise ConfigError(
                    f"{where}: a NUL byte at byte {offset + nul:,}; not a text table"
                )
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                raise ConfigError(
                    f"{where}: not UTF-8 text (near byte {offset + exc.start:,}); save it as UTF-8"
                ) from None
            # the separators (absolute offsets) after the one before the open field
            seps = np.flatnonzero(_SEPARATOR[np.frombuffer(block, np.uint8)]) + offset
            edges = np.concatenate(([start - 1], seps))
            lengths = np.diff(edges) - 1  # of the fields each separator ends
            if seps.size:
                start = int(seps[-1]) + 1
            if lengths.size and int(lengths.max()) > max_field:
                begins = int(edges[int(lengths.argmax())]) + 1
            elif offset + len(block) - start > max_field:
                begins = start
            else:
                begins = -1
            if begins >= 0:
                raise ConfigError(
                    f"{where}: a field of more than {max_field:,} characters (from byte "
                    f"{begins:,}), over the limit (voirdire.bounds.MAX_FIELD_CHARS); refused"
                )
            offset += len(block)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise ConfigError(
                f"{where}: not UTF-8 text (it ends inside a character)"
            ) from None


_SEPARATOR = np.zeros(256, bool)
_SEPARATOR[list(b",\t\n\r")] = True


def check_cells(df, where: str, max_chars: int = MAX_FIELD_CHARS) -> None:
    """Refuse a table read from a received file (a polars frame) whose column names or
    text cells pass ``max_chars`` characters (a quoted field is one cell however many
    separators it holds).

    Raises:
        ConfigError: naming the column and the limit.
    """
    import polars as pl

    for c in df.columns:
        if len(c) > max_chars:
            raise ConfigError(
                f"{where}: a column name of {len(c):,} characters, over the limit of "
                f"{max_chars:,} (voirdire.bounds.MAX_FIELD_CHARS); refused"
            )
    texts = [c for c, t in df.schema.items() if t == pl.String]
    if not texts or df.height == 0:
        return
    longest = df.select(pl.col(texts).str.len_chars().max()).row(0)
    for c, n in zip(texts, longest, strict=True):
        if n is not None and n > max_chars:
            raise ConfigError(
                f"{where}: a cell of {n:,} characters in column {c[:80]!r}, over the limit "
                f"of {max_chars:,} (voirdire.bounds.MAX_FIELD_CHARS); refused"
            )


# --- tables read back from a results directory ---------------------------------------------

#: the most rows a table read back from a results directory may have (``voirdire people``'s
#: tables: a 2,000,000-row curve exhausted the figure converter's JavaScript heap)
MAX_TABLE_ROWS = 500_000


def check_ends_whole(path, where: str) -> None:
    """Refuse a CSV that voirdire wrote but that does not end with a line break: cut short
    mid-row, as a killed writer leaves it.

    Raises:
        ConfigError: ``"<where>: cut short (it ends mid-row ...)"``.
    """
    import os

    size = os.stat(path).st_size
    if size == 0:
        raise ConfigError(
            f"{where}: empty (cut short, as a killed writer leaves it); run the command again"
        )
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) != b"\n":
            raise ConfigError(
                f"{where}: cut short (it ends mid-row, as a killed writer leaves it); run the command again"
            )


def check_table(
    df,
    where: str,
    schema: dict,
    *,
    finite: bool = True,
    nan: tuple[str, ...] = (),
    max_rows: int = MAX_TABLE_ROWS,
) -> None:
    """Refuse a table read back from a received directory (a polars frame) that does not
    match ``schema`` (column → polars type; other columns allowed), has more than
    ``max_rows`` rows, or (``finite``) holds an infinite float, or a NaN outside the
    columns ``nan`` (where the writer leaves NaN for a value not estimated).

    Raises:
        ConfigError: naming the table, the column and what it holds.
    """
    import polars as pl

    for c, t in schema.items():
        if c not in df.columns:
            raise ConfigError(
                f"{where}: no column {c!r} (not the table voirdire writes)"
            )
        if df.schema[c] != t and not (t == pl.Float64 and df.schema[c].is_numeric()):
            raise ConfigError(f"{where}: column {c!r} holds {df.schema[c]}, not {t}")
    if df.height > max_rows:
        raise ConfigError(
            f"{where}: {df.height:,} rows, over the limit of {max_rows:,} "
            "(voirdire.bounds.MAX_TABLE_ROWS); refused"
        )
    if not finite:
        return
    floats = [c for c in schema if df.schema[c].is_float()]
    if not floats:
        return
    bad = df.select(
        *(pl.col(c).is_infinite().any().alias(f"inf:{c}") for c in floats),
        *(pl.col(c).is_nan().any().alias(f"nan:{c}") for c in floats if c not in nan),
    ).row(0, named=True)
    for k, hit in bad.items():
        if hit:
            what, c = k.split(":", 1)
            shown = "an infinite number" if what == "inf" else "NaN"
            raise ConfigError(
                f"{where}: column {c!r} holds {shown}; not a table voirdire writes"
            )
