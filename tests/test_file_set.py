"""Outputs of several files written and read as one set (issue 43, item 6;
:mod:`voirdire.file_set`): a whole set passes :func:`check_set`; a set without its manifest,
with a byte changed, a file missing or a temporary file left beside it is refused in one
line naming the file; the old manifest goes before any new file is written; a writer
killed by SIGKILL in the middle of a large table leaves a set that ``voirdire report``
refuses with exit 2."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.cli import voirdire
from tests.people_simulate import study, truth
from tests.processes import marked_env
from tests.study_simulate import simulated_study_log
from voirdire.analysis.people.study import people_study
from voirdire.analysis.report.files import write_csv
from voirdire.analysis.report.people import write_people
from voirdire.core import ConfigError
from voirdire.file_set import FileSet, check_set, is_staged, staged_name
from voirdire.layout import PEOPLE_MANIFEST

MANIFEST = "set_manifest.json"
WRITER = "the writer"
LOG_COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip


def _tables(seed: int) -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    return {
        f"t{i}": pl.DataFrame({"x": rng.normal(size=50), "name": [f"n{i}"] * 50})
        for i in range(3)
    }


def _write_set(where: Path, seed: int = 0) -> Path:
    """Three CSV tables and a Parquet file as one set in ``where``; returns the manifest."""
    with FileSet(where, MANIFEST, WRITER, {"seed": seed}) as s:
        for name, t in _tables(seed).items():
            s.add(write_csv(t, where / "metrics" / f"{name}.csv"))
        _tables(seed)["t0"].write_parquet(s.staged(where / "rows.parquet"))
        s.add(where / "rows.parquet")
    assert s.written == where / MANIFEST
    return s.written


def _refused(where: Path, said: str) -> str:
    with pytest.raises(ConfigError) as got:
        check_set(where, MANIFEST, WRITER, ("metrics/t0.csv",))
    msg = str(got.value)
    assert "\n" not in msg and said in msg, msg
    assert f"run {WRITER} again" in msg or "not a manifest" in msg, msg
    return msg


def test_a_whole_set_passes_and_its_manifest_names_each_file_by_its_digest(tmp_path):
    m = _write_set(tmp_path / "out")
    assert check_set(tmp_path / "out", MANIFEST, WRITER, ("metrics/t0.csv",)) == {
        "seed": 0
    }
    files = json.loads(m.read_text())["files"]
    want = ["metrics/t0.csv", "metrics/t1.csv", "metrics/t2.csv", "rows.parquet"]
    assert sorted(files) == want
    for name, d in files.items():  # sizes and SHA-256 computed here, independently
        data = (tmp_path / "out" / name).read_bytes()
        assert d == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    # nothing staged is left behind, nothing written outside the set's folder
    assert not [p for p in tmp_path.rglob("*") if is_staged(p.name)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_set_without_its_manifest_is_refused_naming_the_folder(tmp_path):
    out = tmp_path / "out"
    _write_set(out)
    with pytest.raises(RuntimeError), FileSet(out, MANIFEST, WRITER) as s:  # cut short
        s.add(write_csv(_tables(1)["t0"], out / "metrics" / "t0.csv"))
        s.staged(out / "metrics" / "t1.csv").write_text("x\nhalf")
        raise RuntimeError("killed")
    assert not (out / MANIFEST).exists()
    assert not [p for p in out.rglob("*") if is_staged(p.name)]  # its staged file gone
    _refused(out, f"{out} has no {MANIFEST}: the outputs of {WRITER} are incomplete")


def test_a_changed_byte_is_refused_naming_the_file(tmp_path):
    out = tmp_path / "out"
    _write_set(out)
    f = out / "metrics" / "t1.csv"
    data = bytearray(f.read_bytes())
    data[-3] = (
        ord("7") if data[-3] != ord("7") else ord("8")
    )  # same size, one byte other
    f.write_bytes(bytes(data))
    _refused(out, f"{f} is not the table {MANIFEST} names (another run's, or changed)")
    # a table of another run of the same writer, whole: refused the same way
    _write_set(tmp_path / "other", seed=5)
    f.write_bytes((tmp_path / "other" / "metrics" / "t1.csv").read_bytes())
    _refused(out, f"{f} is not the table {MANIFEST} names")


def test_a_missing_file_is_refused_naming_it(tmp_path):
    out = tmp_path / "out"
    _write_set(out)
    (out / "rows.parquet").unlink()
    _refused(out, f"{out / 'rows.parquet'} is missing, though {MANIFEST} names it")


def test_a_temporary_file_left_beside_a_whole_set_is_refused_naming_it(tmp_path):
    out = tmp_path / "out"
    _write_set(out)
    left = staged_name(out / "metrics" / "t2.csv")  # a writer killed, or still writing
    left.write_text("x\n1")
    _refused(out, f"{left}: a temporary file of a writer killed or still writing here")
    left.unlink()
    assert check_set(out, MANIFEST, WRITER)["seed"] == 0


def test_a_manifest_that_is_not_ours_is_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    m = _write_set(out)
    body = json.loads(m.read_text())
    m.write_text("{not json")
    _refused(out, f"{m}: not a manifest {WRITER} writes")
    outside = {**body["files"], "../x.csv": body["files"]["rows.parquet"]}
    m.write_text(json.dumps({**body, "files": outside}))
    _refused(out, "names '../x.csv', outside")
    m.write_text(json.dumps({**body, "files": {"rows.parquet": body["files"]["rows.parquet"]}}))  # fmt: skip
    _refused(out, f"{m} does not name metrics/t0.csv")


def test_the_old_manifest_goes_before_any_new_file_is_written(tmp_path):
    out = tmp_path / "out"
    _write_set(out)
    killed = staged_name(out / "metrics" / "t0.csv").with_name(".t0.csv.1.tmp.csv")
    killed.write_text("a killed writer's half table")
    old = (out / "metrics" / "t0.csv").read_bytes()
    with FileSet(out, MANIFEST, WRITER) as s:
        # entered: the old manifest and the killed writer's file are gone, the old tables
        # are still there, and no reader takes them as a set
        assert not (out / MANIFEST).exists() and not killed.exists()
        assert (out / "metrics" / "t0.csv").read_bytes() == old
        _refused(out, f"has no {MANIFEST}")
        for name, t in _tables(2).items():
            s.add(write_csv(t, out / "metrics" / f"{name}.csv"))
        s.add(write_csv(_tables(2)["t0"], out / "rows.csv"))
    assert check_set(out, MANIFEST, WRITER) == {}
    assert "rows.parquet" not in json.loads((out / MANIFEST).read_text())["files"]


# --- a real writer killed midway ------------------------------------------------------------

#: a FileSet writing one large table into a people folder, as ``voirdire people`` does
_KILLED_WRITER = """
import sys
from pathlib import Path
import polars as pl
from voirdire.analysis.report.files import write_csv
from voirdire.file_set import FileSet
where = Path(sys.argv[1])
big = pl.DataFrame({"x": pl.int_range(0, 12_000_000, eager=True)})
with FileSet(where, "people_manifest.json", "voirdire people") as s:
    print("entered", flush=True)
    s.add(write_csv(big, where / "metrics" / "people_boards.csv"))
    print("not killed", flush=True)
"""


def audited(tmp: Path, judges: int = 2) -> Path:
    """A finished output directory ``tmp/audit``: ``voirdire audit`` of a simulated verdict
    log of ``judges`` judges (:mod:`tests.study_simulate`; no Ray, about 2 s)."""
    log = simulated_study_log(judges, questions=10)
    log.write_parquet(tmp / "sim.parquet")
    ran = voirdire(
        "audit", tmp / "sim.parquet", "--format", "logtable", "--out", tmp / "audit",
        *(a for c in LOG_COLUMNS for a in ("--option", f"columns.{c}={c}")),
    )  # fmt: skip
    assert ran.returncode == 0, ran.output
    return tmp / "audit"


@pytest.mark.process
def test_a_writer_killed_mid_table_leaves_a_set_the_report_refuses(tmp_path):
    audit = audited(tmp_path)
    people = tmp_path / "audit-people"  # where voirdire report of audit/ looks for it
    j = study(np.random.default_rng(3), k=4, questions=40, judges={"cheap": (0.5, 0.8)})
    write_people(people_study(j, truth(j), share=0.3), people)
    boards = people / "metrics" / "people_boards.csv"
    old = boards.read_bytes()

    _, env = marked_env()
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(people)],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "entered"
        staged = staged_name(boards).with_name(f".people_boards.csv.{proc.pid}.tmp.csv")
        deadline = time.monotonic() + 60
        while not (staged.is_file() and staged.stat().st_size > 0):
            assert time.monotonic() < deadline and proc.poll() is None, "never wrote"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)  # in the middle of the table
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert staged.is_file()  # the half table, under its temporary name only
    assert boards.read_bytes() == old  # the final name never held half a table
    assert not (people / PEOPLE_MANIFEST).exists()

    before = {p: p.read_bytes() for p in people.rglob("*") if p.is_file()}
    ran = voirdire("report", audit, "--out", tmp_path / "report", "--figures", "none",
                   "--replicates", "20")  # fmt: skip
    assert ran.returncode == 2, ran.output
    line = ran.stderr.strip()
    assert "\n" not in line and "Traceback" not in ran.output, ran.output
    assert line.startswith("error: ") and f"has no {PEOPLE_MANIFEST}" in line, line
    assert str(people) in " ".join(line.split())
    assert not (tmp_path / "report" / "report.html").exists()
    assert before == {p: p.read_bytes() for p in people.rglob("*") if p.is_file()}
