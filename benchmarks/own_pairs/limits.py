"""Bounds on a user's pairs data, checked before the data is decoded (issue 26, item 4).

A pairs source is untrusted: a 4.5 KB Parquet file can decode to gigabytes (one long
string, dictionary-encoded, repeated on every row), a CSV can hold millions of rows (each
rendered at plan time), and a saved Hugging Face dataset's ``state.json`` names the files
to map, which may lie outside its folder. Limits (``[benchmark.pairs]`` settings, defaults
here):

- ``max_rows`` (:data:`MAX_ROWS`): rows per source, counted before the table is built
  (Parquet and Arrow metadata; CSV and JSON Lines read at most one row past it);
- ``max_bytes`` (:data:`MAX_BYTES`): the file's size on disk and the table's decoded size
  (Parquet's strings are read dictionary-encoded and their decoded length summed before
  they are expanded).

JSON and JSON Lines are checked for nesting before they are decoded (at most
:data:`~voirdire.bounds.MAX_DEPTH` levels), as judgment logs are: one mechanism,
:mod:`voirdire.bounds`.

Every refusal is a one-line :class:`~voirdire.core.ConfigError` naming the source, the
figure and the setting that raises it.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from voirdire.bounds import check_json_depth, check_size
from voirdire.core import ConfigError

#: default most rows a pairs source may have (``max_rows``)
MAX_ROWS = 200_000
#: default most bytes a pairs file may have on disk, and its table decoded (``max_bytes``)
MAX_BYTES = 2 * 1024**3


def check_rows(n: int, where: str, max_rows: int) -> None:
    """Raises ConfigError when ``n`` rows are over ``max_rows``."""
    if n > max_rows:
        raise ConfigError(
            f"pairs data {where}: {n:,} rows or more, over the limit of {max_rows:,} "
            "([benchmark.pairs] max_rows); refused"
        )


def check_bytes(n: int, where: str, max_bytes: int, what: str) -> None:
    """Raises ConfigError when ``n`` bytes (``what``: on disk, decoded) are over ``max_bytes``
    (:func:`voirdire.bounds.check_size`)."""
    check_size(n, f"pairs data {where}", max_bytes, what, "[benchmark.pairs] max_bytes")


def check_depth(data: bytes, where: str, lines: bool) -> None:
    """Raises ConfigError when JSON text ``data`` (``lines``: JSON Lines, the line named)
    nests deeper than :data:`~voirdire.bounds.MAX_DEPTH` (:func:`voirdire.bounds.check_json_depth`)."""
    try:
        check_json_depth(data, f"pairs data {where}")
    except ConfigError:
        if not lines:
            raise
        # each line is decoded alone (lines left open add up over the file): name the line
        for n, line in enumerate(data.split(b"\n"), 1):
            check_json_depth(line, f"pairs data {where}: line {n}")


def _dense(t: pa.DataType) -> pa.DataType:
    """``t`` with every dictionary type replaced by its value type (field names kept)."""
    if pa.types.is_dictionary(t):
        return _dense(t.value_type)
    if pa.types.is_map(t):
        return pa.map_(_dense_field(t.key_field), _dense_field(t.item_field))
    if pa.types.is_list(t):
        return pa.list_(_dense_field(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(_dense_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_dense_field(t.value_field), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([_dense_field(t.field(i)) for i in range(t.num_fields)])
    return t


def _dense_field(f: pa.Field) -> pa.Field:
    return f.with_type(_dense(f.type))


def decoded_bytes(arr: Any) -> int:
    """The bytes an Arrow array (or chunked array) takes with its dictionaries expanded,
    computed without expanding them (string lengths of the dictionary, taken by index)."""
    if isinstance(arr, pa.ChunkedArray):
        return sum(decoded_bytes(c) for c in arr.chunks)
    t = arr.type
    if pa.types.is_dictionary(t):
        idx = arr.indices
        if pa.types.is_string(t.value_type) or pa.types.is_binary(t.value_type):
            lengths = pc.binary_length(arr.dictionary)
            total = pc.sum(pc.take(lengths, idx)).as_py() or 0
            return int(total) + 4 * len(arr)
        return decoded_bytes(arr.dictionary_decode())
    if pa.types.is_map(t) or isinstance(arr, (pa.ListArray, pa.LargeListArray)):
        return 8 * len(arr) + decoded_bytes(arr.flatten())
    if pa.types.is_fixed_size_list(t):
        return decoded_bytes(arr.flatten())
    if pa.types.is_struct(t):
        return sum(decoded_bytes(arr.field(i)) for i in range(t.num_fields))
    return arr.nbytes


def read_parquet(
    path: pathlib.Path, where: str, max_rows: int, max_bytes: int
) -> pa.Table:
    """A Parquet file as an Arrow table, bounded: its row count (metadata) against
    ``max_rows``, its column chunks' uncompressed sizes (metadata) and its decoded size
    (strings read dictionary-encoded, their expanded length summed first) against
    ``max_bytes``.

    Raises:
        ConfigError: a bound passed (naming the figure and the setting).
    """
    pf = pq.ParquetFile(path)
    md = pf.metadata
    check_rows(md.num_rows, where, max_rows)
    packed = sum(
        md.row_group(r).column(c).total_uncompressed_size
        for r in range(md.num_row_groups)
        for c in range(md.num_columns)
    )
    check_bytes(packed, where, max_bytes, "uncompressed")
    strings = [
        pf.schema.column(i).path
        for i in range(len(pf.schema))
        if pf.schema.column(i).physical_type == "BYTE_ARRAY"
    ]
    table = pq.ParquetFile(path, read_dictionary=strings).read()
    check_bytes(
        sum(decoded_bytes(c) for c in table.columns), where, max_bytes, "decoded"
    )
    return table.cast(pa.schema([_dense_field(f) for f in table.schema]))


def _inside(top: pathlib.Path, name: object, what: str, where: str) -> None:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ConfigError(f"pairs data {where}: {what} is not a file name; refused")
    if pathlib.PurePath(name).is_absolute() or not (
        (top / name).resolve().is_relative_to(top.resolve())
    ):
        raise ConfigError(
            f"pairs data {where}: {what} {name[:120]!r} lies outside the dataset folder; refused"
        )


def check_links(p: pathlib.Path, where: str) -> None:
    """Raises ConfigError naming the first symbolic link inside the dataset directory ``p``
    that resolves outside it (a folder of data files or a saved dataset)."""
    top = p.resolve()
    for root, dirs, files in os.walk(p):
        for name in dirs + files:
            q = pathlib.Path(root) / name
            if q.is_symlink() and not q.resolve().is_relative_to(top):
                rel = q.relative_to(p)
                raise ConfigError(
                    f"pairs data {where}: {str(rel)!r} is a link to outside the dataset folder; refused"
                )


def check_saved_dataset(p: pathlib.Path, where: str) -> None:
    """Check a directory saved by ``datasets``' ``save_to_disk`` before loading it: no
    symbolic link inside resolves outside it (:func:`check_links`), every split named in
    ``dataset_dict.json`` and every file named in a ``state.json`` (``_data_files``) lies
    inside its folder.

    Raises:
        ConfigError: naming the link, split or file (never read).
    """
    check_links(p, where)
    folders = [p]
    if (p / "dataset_dict.json").is_file():
        splits = _json(p / "dataset_dict.json", where).get("splits")
        if not isinstance(splits, list):
            raise ConfigError(
                f"pairs data {where}: dataset_dict.json has no list of splits"
            )
        for s in splits:
            _inside(p, s, "the split", where)
        folders = [p / s for s in splits]
    for folder in folders:
        state = folder / "state.json"
        if not state.is_file():
            continue
        files = _json(state, where).get("_data_files")
        if not isinstance(files, list):
            raise ConfigError(
                f"pairs data {where}: state.json has no list of _data_files"
            )
        for f in files:
            name = f.get("filename") if isinstance(f, dict) else None
            _inside(folder, name, "the data file", where)


def _json(path: pathlib.Path, where: str) -> dict:
    try:
        data = path.read_bytes()
        check_depth(data, where, lines=False)
        doc = json.loads(data.decode("utf-8"))
    except ConfigError:
        raise
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"pairs data {where}: {path.name} is not readable JSON ({type(exc).__name__})"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"pairs data {where}: {path.name} is not a JSON object")
    return doc
