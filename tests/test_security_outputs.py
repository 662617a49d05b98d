"""Output directories that are ours (issue 21, items 2 and 3): a run, ``analyze``, ``report``
and ``mitigate`` write only into a directory that is new, empty or holds our ``job.json``
(a report's also into one holding only what reports write), never through a symbolic link
inside it, and bad judge names and output paths are one-line errors (exit 2), before
anything is written. One real run of the own-pairs example (simulated judge, local Ray)."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import voirdire
from tests.repo import REPO
from voirdire.cli import app
from voirdire.core import ConfigError
from voirdire.engine.spec import parse_job
from voirdire.engine.store import ResultStore

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EXAMPLE = REPO / "examples" / "own_pairs.toml"


def _job(out: Path, **changes) -> dict:
    """The own-pairs example (12 pairs, one simulated judge) as a dict, paths absolute."""
    job = tomllib.loads(EXAMPLE.read_text())
    pairs = job["benchmark"]["pairs"]
    pairs["path"], pairs["template"] = (
        str(REPO / pairs["path"]),
        str(REPO / pairs["template"]),
    )
    return {**job, "output_dir": str(out), **changes}


def _cli(args: list[str]):
    r = CliRunner().invoke(app, args)
    return r.exit_code, r.output


def _one_line_error(output: str) -> str:
    """The CLI's error message (one line, which the terminal may wrap), no traceback."""
    assert output.startswith("error:") and "Traceback" not in output, output
    return " ".join(line.strip() for line in output.splitlines())


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def done(ray_local, tmp_path_factory) -> Path:
    """A finished output directory of the example, analysed (report.md, metrics/)."""
    out = tmp_path_factory.mktemp("done") / "out"
    voirdire.run(_job(out))
    return out


def _foreign(root: Path) -> Path:
    d = root / "mine"
    (d / "raw" / "x").mkdir(parents=True)
    (d / "notes.txt").write_text("my notes")
    (d / "report.md").write_text("my report")
    (d / "raw" / "x" / "part-1.parquet").write_bytes(
        b"not a parquet file of voirdire's"
    )
    return d


def test_a_run_refuses_a_directory_that_is_not_ours(tmp_path):
    foreign = _foreign(tmp_path)
    before = _snapshot(foreign)
    job = tmp_path / "job.toml"
    job.write_text(EXAMPLE.read_text().replace('"examples/', f'"{REPO}/examples/'))
    for extra in ([], ["--dry-run"]):
        code, out = _cli(
            ["run", str(job), "--no-progress", "--output-dir", str(foreign), *extra]
        )
        msg = _one_line_error(out)
        assert (
            code == 2
            and str(foreign) in msg
            and "not a voirdire output directory" in msg
        )
        assert (
            _snapshot(foreign) == before
        )  # nothing written, nothing moved to quarantine/
    # a job.json that is not our record does not make it ours
    (foreign / "job.json").write_text(json.dumps({"name": "another tool's job"}))
    code, out = _cli(["run", str(job), "--no-progress", "--output-dir", str(foreign)])
    assert code == 2 and "not a voirdire job record" in _one_line_error(out)
    assert json.loads((foreign / "job.json").read_text()) == {
        "name": "another tool's job"
    }


def test_analyze_report_and_mitigate_refuse_a_directory_that_is_not_ours(
    done, tmp_path
):
    foreign = _foreign(tmp_path)
    (foreign / "job.json").write_text(json.dumps({"job": "not ours"}))
    before = _snapshot(foreign)
    code, out = _cli(["analyze", str(foreign)])
    assert code == 2 and "not a voirdire job record" in _one_line_error(out)
    (foreign / "job.json").unlink()
    before.pop("job.json")
    code, out = _cli(["report", str(done), "--out", str(foreign), "--replicates", "20"])
    assert code == 2 and "notes.txt" in _one_line_error(out)
    code, out = _cli(
        ["mitigate", str(done), "--out", str(foreign), "--replicates", "20"]
    )
    assert code == 2 and "notes.txt" in _one_line_error(out)
    assert _snapshot(foreign) == before
    # a report's own directory, written again: allowed
    rep = tmp_path / "rep"
    assert _cli(["report", str(done), "--out", str(rep), "--replicates", "20"])[0] == 0
    assert _cli(["report", str(done), "--out", str(rep), "--replicates", "20"])[0] == 0
    assert (
        _cli(["mitigate", str(done), "--out", str(rep), "--replicates", "20"])[0] == 0
    )


def test_links_inside_an_output_directory_are_never_written_through(done, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.md").write_text("precious")
    # report.md as a link to a file outside: analyze and a rerun refuse, naming the link
    d = tmp_path / "linked"
    shutil.copytree(done, d)
    (d / "report.md").unlink()
    (d / "report.md").symlink_to(outside / "precious.md")
    code, out = _cli(["analyze", str(d)])
    assert code == 2 and str(d / "report.md") in _one_line_error(out)
    code, out = _cli(["report", str(d), "--replicates", "20"])
    assert code == 2 and "symbolic link" in _one_line_error(out)
    assert (outside / "precious.md").read_text() == "precious"
    # a judge's raw folder as a link to a folder outside: a rerun refuses before writing
    judge_dir = next((d / "raw").iterdir())
    shutil.rmtree(judge_dir)
    judge_dir.symlink_to(outside, target_is_directory=True)
    job = _job(d)
    with pytest.raises(ConfigError, match="symbolic link"):
        voirdire.run(job)
    assert sorted(p.name for p in outside.iterdir()) == ["precious.md"]


def test_a_store_never_moves_a_part_through_a_quarantine_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    store_dir = tmp_path / "out"
    judge = store_dir / "raw" / "j"
    judge.mkdir(parents=True)
    (judge / "part-1.parquet").write_bytes(b"damaged")
    (judge / "quarantine").symlink_to(outside, target_is_directory=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ResultStore(store_dir).read_raw().height == 0
    assert any("could not be moved aside" in str(w.message) for w in caught)
    assert list(outside.iterdir()) == [] and (judge / "part-1.parquet").is_file()


def test_our_directory_is_resumed(done):
    before = pq.read_table(next((done / "raw").rglob("part-*.parquet"))).num_rows
    res = voirdire.run(_job(done))
    assert res.stats.queries == 0 and res.judgments.height == before


@pytest.mark.parametrize("name", ["..", ".", "", "   ", "/", "x" * 201, "a\x00b"])
def test_a_judge_name_that_names_no_folder_is_a_one_line_error(name, tmp_path):
    job = _job(tmp_path / "o")
    job["judges"] = [{**job["judges"][0], "name": name}]
    with pytest.raises(ConfigError, match="judge name") as err:
        voirdire.plan(job)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200
    assert not (tmp_path / "o").exists()


def test_a_judge_named_dotdot_exits_2_before_anything_is_written(tmp_path):
    job = tmp_path / "job.toml"
    text = EXAMPLE.read_text().replace('"examples/', f'"{REPO}/examples/')
    job.write_text(text.replace('name = "sim-primacy"', 'name = ".."'))
    code, out = _cli(
        ["run", str(job), "--no-progress", "--output-dir", str(tmp_path / "o")]
    )
    assert code == 2 and "judge name '..' has no letter or digit" in _one_line_error(
        out
    )
    assert not (tmp_path / "o").exists()


def test_an_output_dir_that_cannot_be_one_is_a_one_line_error(tmp_path):
    a_file = tmp_path / "results"
    a_file.write_text("a file")
    job = tmp_path / "job.toml"
    job.write_text(EXAMPLE.read_text().replace('"examples/', f'"{REPO}/examples/'))
    code, out = _cli(["run", str(job), "--no-progress", "--output-dir", str(a_file)])
    assert (
        code == 2
        and "is not a directory" in _one_line_error(out)
        and a_file.read_text() == "a file"
    )
    for bad, why in (
        (str(tmp_path / "a\x00b"), "NUL"),
        (str(tmp_path / ("x" * 300)), "component of 300 bytes"),
        ("/" + "/".join(["d" * 200] * 25), "4096"),
    ):
        with pytest.raises(ConfigError, match=why) as err:
            parse_job(_job(Path("unused"), output_dir=bad), "job.toml")
        assert "\n" not in str(err.value) and len(str(err.value)) < 300
    assert sorted(os.listdir(tmp_path)) == ["job.toml", "results"]


def test_a_store_part_is_not_written_through_a_linked_judge_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out" / "raw").mkdir(parents=True)
    (tmp_path / "out" / "raw" / "j").symlink_to(outside, target_is_directory=True)
    store = ResultStore(tmp_path / "out", flush_rows=1)
    with pytest.raises(ConfigError, match="symbolic link"):
        store.append("j", pa.table({"unit_id": ["u"]}))  # one row: flushed at once
    assert list(outside.iterdir()) == []


def test_a_directory_with_nothing_but_empty_folders_is_empty(tmp_path):
    from voirdire.ownership import claim_output_dir

    (tmp_path / "out" / "rewrites" / "x").mkdir(
        parents=True
    )  # e.g. a store opened before the run
    assert claim_output_dir(tmp_path / "out") == tmp_path / "out"
    (tmp_path / "out" / "rewrites" / "x" / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError, match="not a voirdire output directory"):
        claim_output_dir(tmp_path / "out")
