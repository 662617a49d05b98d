"""A received judgment log is data, bounded before it is decoded (issue 34, item 7; causes 1,
2 and 9 of its hostile-input pass): JSON nested thousands of levels deep, a file over the size
bound (a sparse 3 GB file of NULs) and a zipped Inspect log that expands past it are each one
line naming the file through ``voirdire audit`` (exit 2, no traceback), in every format that
decodes JSON; two audits of one log at once share the log cache without taking each other's
temporary files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.audit_logs import draws, write_arena_hard
from tests.repo import repo_pythonpath
from voirdire.benchmarks.logs.arena_hard import ArenaHard
from voirdire.benchmarks.logs.reading import MAX_LOG_BYTES, temp_name
from voirdire.bounds import MAX_DEPTH

DEEP = 100_000  # levels: Python's decoder gives up near 1,000 (a RecursionError)


def audit(tmp_path: Path, *args: str | Path) -> tuple[int, str]:
    """``voirdire audit ARGS`` in a fresh process (the console script's entry, a log cache
    of its own): the exit code and stderr with its lines joined (rich wraps at 140 columns;
    a second line would be a traceback's)."""
    env = {**os.environ, "PYTHONPATH": repo_pythonpath(),
           "VOIRDIRE_LOG_CACHE": str(tmp_path / "cache")}  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-c", "from voirdire.cli import main; main()", "audit",
         *map(str, args), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.stderr.startswith("error: "), r.stderr[-3000:]
    return r.returncode, " ".join(r.stderr.split())


def _nested(depth: int) -> object:
    """Text of ``depth`` nested arrays (``[[[...]]]``), for a field's value."""
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "fmt", ["arena-hard", "alpacaeval", "inspect-json", "inspect-eval"]
)
@pytest.mark.process
def test_deeply_nested_json_is_one_line_in_every_json_format(tmp_path, fmt):
    """Cause 1: a RecursionError traceback (exit 1) before; now one line naming the file (and
    the line or zip member), exit 2, the JSON never decoded."""
    deep = _nested(DEEP)
    if fmt == "arena-hard":
        log = tmp_path / "model-x.jsonl"
        write_arena_hard(log, draws(3, seed=1))
        lines = log.read_text().splitlines()
        lines[1] = lines[1][:-1] + f', "extra": {deep}}}'
        log.write_text("\n".join(lines) + "\n")
        want = f"{log}: line 2: JSON nested more than {MAX_DEPTH} levels deep"
    elif fmt == "alpacaeval":
        log = tmp_path / "annotations.json"
        log.write_text(f'[{{"instruction": "q", "raw_completion": {deep}}}]')
        want = f"{log}: JSON nested more than {MAX_DEPTH} levels deep"
    elif fmt == "inspect-json":
        log = tmp_path / "log.json"
        log.write_text(f'{{"version": 2, "eval": {deep}}}')
        want = f"{log}: JSON nested more than {MAX_DEPTH} levels deep"
    else:
        log = tmp_path / "log.eval"
        with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("header.json", json.dumps({"version": 2, "status": "success"}))
            z.writestr("samples/1_epoch_1.json", f'{{"id": 1, "metadata": {deep}}}')
        want = f"{log}: member 'samples/1_epoch_1.json': JSON nested more than {MAX_DEPTH} levels deep"
    code, err = audit(
        tmp_path, log, "--format", fmt.split("-")[0] if "inspect" in fmt else fmt
    )
    assert code == 2 and want in err, err


@pytest.mark.process
def test_a_log_over_the_size_bound_is_refused_before_it_is_read(tmp_path):
    """Cause 2: no bound before (a sparse 3 GB file of NULs was one line read whole, a
    MemoryError); now every format's files are bounded on disk by ``[benchmark.log]
    max_bytes`` (default 1 GiB), checked before the file is hashed or read, the setting
    named so that it can be raised."""
    log = tmp_path / "model-x.jsonl"
    write_arena_hard(log, draws(30, seed=2))
    size = log.stat().st_size
    code, err = audit(
        tmp_path, log, "--format", "arena-hard", "--option", f"max_bytes={size - 1}"
    )
    assert (
        code == 2
        and (
            f"ArenaHard log {log}: {size:,} bytes on disk, over the limit of {size - 1:,} "
            "([benchmark.log] max_bytes; --option max_bytes=N); refused"
        )
        in err
    ), err
    assert not (tmp_path / "cache").exists()  # nothing read, nothing copied
    sparse = tmp_path / "nul.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(3 * 1024**3)  # 3 GB of NULs, one line; sparse: no disk used
    for fmt in ("arena-hard", "alpacaeval", "prd"):
        code, err = audit(tmp_path, sparse, "--format", fmt)
        assert (
            code == 2
            and f"{sparse}: {3 * 1024**3:,} bytes on disk, over the limit of {MAX_LOG_BYTES:,}"
            in err
        ), err


def _eval_log(path: Path, member: bytes) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"version": 2, "status": "success"}))
        z.writestr("samples/1_epoch_1.json", member)
    return path


def _declare(path: Path, name: bytes, size: int) -> None:
    """Rewrite the uncompressed size that ``path``'s central directory declares for member
    ``name`` (a zip's own bytes: what a crafted archive can say)."""
    data = bytearray(path.read_bytes())
    rec = data.find(
        b"PK\x01\x02"
    )  # the central directory's records: 46 bytes, the name
    while data[rec + 46 : rec + 46 + len(name)] != name:
        rec = data.find(b"PK\x01\x02", rec + 46)
    data[rec + 24 : rec + 28] = size.to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(data))


@pytest.mark.process
def test_a_zipped_log_is_bounded_by_its_uncompressed_size(tmp_path):
    """Cause 2 for Inspect's ``.eval`` (a zip archive): a 1 MB log took 2.3 GB once
    ``inspect_ai`` opened it. Now the members' declared sizes are summed first (nothing
    decompressed), then the bytes they really decompress to are counted as they stream,
    before the reader opens the archive."""
    bomb = _eval_log(tmp_path / "bomb.eval", b'{"id": "' + b"0" * 4_000_000 + b'"}')
    assert bomb.stat().st_size < 50_000
    code, err = audit(
        tmp_path, bomb, "--format", "inspect", "--option", "max_bytes=1000000"
    )
    assert (
        code == 2
        and f"Inspect log {bomb}: 4,000," in err
        and (
            "bytes uncompressed (declared), over the limit of 1,000,000 ([benchmark.log] max_bytes"
        )
        in err
    ), err
    # a member declaring 3 GB: refused by the default bound, before anything is decompressed
    big = _eval_log(tmp_path / "big.eval", b'{"id": 1}')
    _declare(big, b"samples/1_epoch_1.json", 3 * 1024**3)
    code, err = audit(tmp_path, big, "--format", "inspect")
    assert (
        code == 2
        and f"over the limit of {MAX_LOG_BYTES:,} ([benchmark.log] max_bytes" in err
    ), err
    # a member holding more than it declares: its bytes are counted as they come (Python's
    # zipfile stops at the declared size and then finds the checksum wrong): one line
    liar = _eval_log(tmp_path / "liar.eval", b'{"id": "' + b"0" * 100_000 + b'"}')
    _declare(liar, b"samples/1_epoch_1.json", 1000)
    code, err = audit(tmp_path, liar, "--format", "inspect")
    assert (
        code == 2
        and f"Inspect log {liar}: member 'samples/1_epoch_1.json' cannot be decompressed"
        in err
    ), err


def test_two_audits_of_one_log_share_the_cache_without_taking_each_others_files(
    tmp_path, monkeypatch
):
    """Cause 9: two audits of one log at once (into different ``--out``) write one
    normalised copy in the shared cache; with one fixed temporary name
    (``.instances.parquet.tmp``), the one that renamed second found its file gone
    (``FileNotFoundError``, one round in seven). Here the second audit's whole copy is
    written while the first is between writing its temporary file and renaming it."""
    import polars as pl

    log = tmp_path / "model-x.jsonl"
    write_arena_hard(log, draws(6, seed=3))
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    write = pl.DataFrame.write_parquet
    others: list[ArenaHard] = []
    calls = []

    def interleaved(df, file, *a, **kw):
        out = write(df, file, *a, **kw)
        calls.append(file)
        if len(calls) == 1:  # the first audit's first write: the second runs whole now
            others.append(ArenaHard([log]))
        return out

    monkeypatch.setattr(pl.DataFrame, "write_parquet", interleaved)
    first = ArenaHard([log])
    assert first.data_dir == others[0].data_dir
    assert first.pairs.equals(others[0].pairs)
    assert not [p.name for p in first.data_dir.iterdir() if p.name.endswith(".tmp")]
    assert temp_name(first.data_dir / "x") != temp_name(first.data_dir / "x")
