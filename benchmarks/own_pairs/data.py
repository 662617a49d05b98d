"""Reading a user's own pairs: a file through polars or a Hugging Face dataset, then checks.

Sources (:func:`read_source`):

- a file: ``.jsonl``/``.ndjson`` (JSON Lines), ``.json`` (an array of objects), ``.csv``,
  ``.tsv``, ``.parquet``, read with polars (CSV/TSV every column as text, so ids such as
  ``007`` keep their zeros);
- a directory: a dataset saved with ``datasets``' ``save_to_disk`` (read with
  ``datasets.load_from_disk``), else a folder of data files (``datasets.load_dataset`` on
  the local path);
- a Hugging Face dataset by name (``datasets.load_dataset(name, config, split=...)``;
  the only source that may reach the network, the hub's).

``datasets`` is an optional extra (``pip install 'voirdire[hf]'``). A dataset with several
splits needs ``split``.

Text files (JSON, JSON Lines, CSV, TSV) are UTF-8; a byte-order mark is read as the
encoding's mark (``utf-8-sig``; a UTF-16 mark decodes the file as UTF-16). Invalid UTF-8 is
an error naming the line and column; so is a JSON syntax error (Python's ``json`` finds the
line when polars cannot read the file), and a JSON Lines line that is not an object. A
JSON file whose columns mix types polars cannot reconcile (a ``true`` among numbers) is
read with every value as text, so the checks name the cell.

Checks of the columns, ids and gold labels once read:
:mod:`voirdire.benchmarks.own_pairs.checks`; :func:`as_text` reads a column as text for them.

Bounds (:mod:`voirdire.benchmarks.own_pairs.limits`): ``max_rows`` rows and ``max_bytes`` bytes
(on disk and decoded) per source, checked before the table is built; JSON nested at most
:data:`~voirdire.bounds.MAX_DEPTH` levels, checked before it is decoded; a saved dataset's
files and links must lie inside its folder.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import pathlib

import polars as pl

from voirdire.benchmarks.own_pairs import limits as lim
from voirdire.core import ConfigError

#: the file suffixes read as a table (the message of an unknown one lists them)
FILE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")


def _read_file(path: pathlib.Path, max_rows: int, max_bytes: int) -> pl.DataFrame:
    suffix, where = path.suffix.lower(), repr(str(path))
    lim.check_bytes(path.stat().st_size, where, max_bytes, "on disk")
    if suffix in (".jsonl", ".ndjson", ".json"):
        data = _utf8(path)
        lim.check_depth(data, where, lines=suffix != ".json")
        if suffix != ".json" and data.count(b"\n") + 1 > max_rows:
            lines = sum(1 for line in data.split(b"\n") if line.strip())
            lim.check_rows(lines, where, max_rows)
        try:
            if suffix == ".json":
                return pl.read_json(io.BytesIO(data), infer_schema_length=None)
            return pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
        except Exception:  # noqa: BLE001 - find the line with Python's json, else read as text
            return _json_as_text(path, data.decode("utf-8"), lines=suffix != ".json")
    if suffix in (".csv", ".tsv"):
        df = pl.read_csv(
            io.BytesIO(_utf8(path)),
            separator="\t" if suffix == ".tsv" else ",",
            infer_schema_length=0,
            n_rows=max_rows + 1,
        )
        lim.check_rows(df.height, where, max_rows)
        return df
    if suffix == ".parquet":
        return pl.from_arrow(lim.read_parquet(path, where, max_rows, max_bytes))  # type: ignore[return-value]
    raise ConfigError(
        f"pairs data {str(path)!r}: unknown file type {suffix!r} (known: {', '.join(FILE_SUFFIXES)}, or a dataset directory)"
    )


def _utf8(path: pathlib.Path) -> bytes:
    """The file's bytes as UTF-8 without a byte-order mark (a UTF-16 file, known by its
    mark, re-encoded).

    Raises:
        ConfigError: invalid UTF-8, naming the line and column (1-based) and the bytes.
    """
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"not valid UTF-16 after its byte-order mark ({exc.reason})"
            raise ConfigError(f"pairs data {str(path)!r}: {msg}") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        col = len(data[start : exc.start].decode("utf-8", errors="replace")) + 1
        raise ConfigError(
            f"pairs data {str(path)!r}: line {line}, column {col}: not valid UTF-8 "
            f"({data[exc.start : exc.end]!r}: {exc.reason}); save the file as UTF-8"
        ) from None
    return data


def _json_as_text(path: pathlib.Path, text: str, lines: bool) -> pl.DataFrame:
    """JSON (an array of objects) or JSON Lines that polars could not read: a syntax error or
    an item that is not an object named by line and column; else every value as text
    (``true``, ``1.5``; nested values as JSON), for the checks to name a bad cell.

    Raises:
        ConfigError: the first syntax error (line, column) or non-object item.
    """
    where = repr(str(path))
    items: list[tuple[str, object]] = []
    try:
        if lines:
            for n, line in enumerate(text.split("\n"), 1):
                if line.strip():
                    items.append((f"line {n}", json.loads(line)))
        else:
            doc = json.loads(text)
            if not isinstance(doc, list):
                kind = type(doc).__name__
                raise ConfigError(
                    f"pairs data {where}: the JSON file is not an array of objects (a {kind})"
                )
            items = [(f"item {i}", x) for i, x in enumerate(doc, 1)]
    except json.JSONDecodeError as exc:
        at = (
            f"line {n}, column {exc.colno}"
            if lines
            else f"line {exc.lineno}, column {exc.colno}"
        )
        raise ConfigError(
            f"pairs data {where}: {at}: not valid JSON ({exc.msg})"
        ) from None
    for at, obj in items:
        if not isinstance(obj, dict):
            raise ConfigError(
                f"pairs data {where}: {at} is not a JSON object (a {type(obj).__name__})"
            )
    columns = list(dict.fromkeys(k for _, obj in items for k in obj))  # type: ignore[union-attr]
    return pl.DataFrame(
        {c: [_cell(obj.get(c)) for _, obj in items] for c in columns},  # type: ignore[union-attr]
        schema={c: pl.String for c in columns},
    )


def _cell(value: object) -> str | None:
    """A JSON value as text: strings and nulls as they are, others as JSON (``true``, ``1.5``)."""
    return (
        value
        if value is None or isinstance(value, str)
        else json.dumps(value, ensure_ascii=False)
    )


def _datasets():
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "reading a Hugging Face dataset needs the optional `datasets` package: pip install 'voirdire[hf]'"
        ) from None
    return datasets


def _from_hf(
    obj, where: str, split: str | None, max_rows: int, max_bytes: int
) -> pl.DataFrame:
    """A ``datasets.Dataset`` (or a ``DatasetDict`` with ``split``) as a polars frame, its
    rows and (memory-mapped) bytes checked before the frame is built."""
    if hasattr(obj, "keys") and not hasattr(obj, "features"):  # a DatasetDict
        splits = sorted(obj.keys())
        if split is None:
            if len(splits) != 1:
                raise ConfigError(
                    f"pairs data {where}: the dataset has splits {', '.join(splits)}; choose one with split"
                )
            split = splits[0]
        if split not in obj:
            raise ConfigError(
                f"pairs data {where}: no split {split!r} (splits: {', '.join(splits)})"
            )
        obj = obj[split]
    lim.check_rows(obj.num_rows, where, max_rows)
    lim.check_bytes(obj.data.nbytes, where, max_bytes, "in Arrow")
    return pl.from_arrow(obj.with_format("arrow")[:])  # type: ignore[return-value]


def read_source(
    path: str | None,
    dataset: str | None,
    *,
    split: str | None = None,
    config: str | None = None,
    base: str | os.PathLike[str] | None = None,
    max_rows: int = lim.MAX_ROWS,
    max_bytes: int = lim.MAX_BYTES,
) -> tuple[pl.DataFrame, str]:
    """The pairs table and a short description of where it came from.

    Args:
        path: a file or a directory (relative paths from ``base``, else the working
            directory).
        dataset: a Hugging Face dataset name (exclusive with ``path``).
        split, config: the dataset's split and configuration.
        max_rows, max_bytes: the bounds (:mod:`~voirdire.benchmarks.own_pairs.limits`).

    Raises:
        ConfigError: neither or both sources, a missing file, an unreadable file, a
            dataset that cannot be loaded, ``datasets`` not installed where needed, a
            bound passed, a saved dataset naming a file or holding a link outside its
            folder.
    """
    if (path is None) == (dataset is None):
        raise ConfigError(
            "benchmark.pairs: give exactly one of path (a file or a dataset directory) and dataset (a Hugging Face name)"
        )
    if dataset is not None:
        ds = _datasets()
        try:
            obj = ds.load_dataset(dataset, config, split=split)
        except Exception as exc:  # noqa: BLE001 - the hub and the builders raise many kinds
            raise ConfigError(
                f"pairs data: Hugging Face dataset {dataset!r} cannot be loaded ({type(exc).__name__}: {exc})"
            ) from None
        return _from_hf(
            obj, repr(dataset), split, max_rows, max_bytes
        ), f"dataset {dataset}"
    p = pathlib.Path(path)  # type: ignore[arg-type]
    if not p.is_absolute() and base is not None:
        p = pathlib.Path(base) / p
    if p.is_dir():
        ds = _datasets()
        saved = (
            (p / "dataset_dict.json").is_file()
            or (p / "dataset_info.json").is_file()
            or (p / "state.json").is_file()
        )
        if saved:
            lim.check_saved_dataset(p, repr(str(p)))
        else:
            lim.check_links(p, repr(str(p)))
        try:
            obj = (
                ds.load_from_disk(str(p))
                if saved
                else ds.load_dataset(str(p), config, split=split)
            )
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(
                f"pairs data {str(p)!r}: not a readable dataset directory ({type(exc).__name__}: {exc})"
            ) from None
        return _from_hf(obj, repr(str(p)), split, max_rows, max_bytes), str(p)
    if not p.is_file():
        raise ConfigError(f"pairs data {str(p)!r}: no such file or directory")
    try:
        df = _read_file(p, max_rows, max_bytes)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds
        raise ConfigError(
            f"pairs data {str(p)!r}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None
    lim.check_rows(df.height, repr(str(p)), max_rows)  # a JSON array: counted once read
    lim.check_bytes(df.estimated_size(), repr(str(p)), max_bytes, "decoded")
    return df, str(p)


def as_text(df: pl.DataFrame, column: str, where: str, each: bool = False) -> pl.Series:
    """A column as text (integral floats lose ``.0``: all of them, or with ``each`` each
    integral value on its own, so ``2.0, 1.5`` reads ``2, 1.5``).

    Raises:
        ConfigError: the column is missing, or cannot be read as text (a nested type).
    """
    if column not in df.columns:
        raise ConfigError(
            f"pairs data {where}: no column {column!r} (columns: {', '.join(df.columns)})"
        )
    s = df.get_column(column)
    if s.dtype.is_float():
        integral = s.is_null() | (s == s.round(0))
        if bool(integral.all()):
            s = s.cast(pl.Int64)
        elif each:
            whole = s.is_finite() & (s == s.round(0)) & (s.abs() < 2.0**53)
            ints = s.cast(pl.Int64, strict=False).cast(pl.String)
            return (
                pl.select(pl.when(whole).then(ints).otherwise(s.cast(pl.String)))
                .to_series()
                .alias(column)
            )
    try:
        return s.cast(pl.String)
    except Exception:  # noqa: BLE001
        raise ConfigError(
            f"pairs data {where}: column {column!r} holds {s.dtype}, not text"
        ) from None
