"""A results directory is data, never code (issue 26, section 4, items 1 to 3).

- a name read from ``job.json`` (the benchmark ``report`` and ``rank --style`` load again)
  resolves only among registered kinds: an import path there imports nothing, neither an
  installed module nor a ``.py`` shipped inside the directory, and ``python -m voirdire``
  run inside the directory imports nothing from it (a ``polars.py`` there);
- registry errors name a type, never a value (``"os:environ"`` is the whole environment),
  and every error the command line prints passes the secret redaction;
- readers (``rank``, ``report``, ``mitigate``, ``voirdire.load``) skip a corrupt part
  with one warning and leave the directory byte for byte as it was, a linked ``raw/`` and
  the folder it points into included; only ``voirdire run`` moves parts aside.

The finished directory is the own-pairs example (12 pairs, a simulated judge), run with the
engine's own planning, batches, judge worker and store, in this process (no Ray: the
scheduler's transport is not what these tests are about).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import voirdire
from tests.repo import REPO
from voirdire.cli import app
from voirdire.core import ConfigError

EXAMPLE = REPO / "examples" / "own_pairs.toml"
#: a fake key in the environment: no message may carry it
FAKE_KEY = "zq-fake-key-0123456789abcdef"
#: an ordinary variable: a registry error must not print the environment at all
PLAIN = "plain-value-not-a-key-4242"


def _job(out: Path) -> dict:
    """The own-pairs example as a dict, paths absolute."""
    job = tomllib.loads(EXAMPLE.read_text())
    pairs = job["benchmark"]["pairs"]
    pairs["path"], pairs["template"] = (
        str(REPO / pairs["path"]),
        str(REPO / pairs["template"]),
    )
    return {**job, "output_dir": str(out)}


def _in_process_execute(runs, store, **_kw):
    """The scheduler's work without Ray: every batch of every judge through the engine's
    :class:`~voirdire.engine.worker.JudgeWorker`, recorded in the store."""
    from voirdire.engine.stats import RunStats
    from voirdire.engine.worker import JudgeWorker

    stats = RunStats()
    for run in runs:
        worker = JudgeWorker(run.backend_name, run.settings, run.context)
        for batch in run.batches:
            cols = asyncio.run(worker.judge(batch.queries))
            store.append(run.name, store.to_table(batch.columns, cols))
            stats.queries += len(batch)
        stats.per_judge[run.name] = {"queries": stats.queries}
    return stats


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished output directory of the example (raw parts, job.json, report)."""
    import voirdire.engine.job as job_mod

    out = tmp_path_factory.mktemp("finished") / "out"
    mp = pytest.MonkeyPatch()
    mp.setattr(job_mod, "init_ray", lambda address=None, background=False: None)
    mp.setattr(job_mod, "execute", _in_process_execute)
    try:
        voirdire.run(_job(out), show_progress=False)
    finally:
        mp.undo()
    assert any((out / "raw").rglob("part-*.parquet"))
    return out


@pytest.fixture
def results(finished, tmp_path) -> Path:
    """A copy of the finished directory, free to tamper with."""
    d = tmp_path / "results"
    shutil.copytree(finished, d)
    return d


def _set_benchmark(d: Path, name: str, tokenizer: str | None = None) -> None:
    """Write ``name`` as job.json's benchmark (and a tokenizer, so ``report`` loads it)."""
    meta = json.loads((d / "job.json").read_text())
    meta["job"]["benchmark"]["name"] = name
    meta["job"]["benchmark"].pop("pairs", None)
    if tokenizer is not None:
        meta["job"]["analysis"] = {
            **(meta["job"].get("analysis") or {}),
            "tokenizer": tokenizer,
        }
    (d / "job.json").write_text(json.dumps(meta))


def _evil_module(folder: Path, module: str, marker: Path) -> None:
    """A module that leaves ``marker`` behind when imported."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        "class Thing:\n    name = 'thing'\n"
    )


def _cli(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(app, args)
    return r.exit_code, r.output


def _python_m(args: list[str], cwd: Path, env: dict | None = None):
    """``python -m voirdire ARGS`` run inside ``cwd`` (the way a user reads a received directory)."""
    return subprocess.run(
        [sys.executable, "-m", "voirdire", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def _one_line(output: str) -> str:
    assert "Traceback" not in output, output
    return " ".join(line.strip() for line in output.splitlines())


def _tree(*roots: Path) -> dict[str, str]:
    """Every entry below ``roots`` (links not followed, but what they point to listed under
    its own root): path -> sha256 of a file, ``link:<target>`` or ``dir``."""
    seen = {}
    for root in roots:
        for here, dirs, files in os.walk(root):
            for name in dirs + files:
                p = Path(here) / name
                key = f"{root.name}/{p.relative_to(root)}"
                if p.is_symlink():
                    seen[key] = f"link:{os.readlink(p)}"
                elif p.is_dir():
                    seen[key] = "dir"
                else:
                    seen[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return seen


# ------------------------------------------------------------------ 1. names, never code


@pytest.mark.process
def test_report_run_inside_the_directory_imports_no_module_it_ships(results, tmp_path):
    marker = tmp_path / "imported.txt"
    _evil_module(results, "tests_evil_mod", marker)
    _set_benchmark(results, "tests_evil_mod:Thing", tokenizer="no-such-tokenizer")
    r = _python_m(
        ["report", ".", "--out", str(tmp_path / "rep"), "--replicates", "20"], results
    )
    assert not marker.exists(), "a module shipped in the results directory was imported"
    msg = _one_line(r.stderr)
    assert r.returncode == 2 and "not registered" in msg, r.stderr


def test_rank_style_follows_no_import_path_from_job_json(
    results, tmp_path, monkeypatch
):
    marker = tmp_path / "imported.txt"
    site = tmp_path / "site"
    _evil_module(site, "tests_evil_mod", marker)
    monkeypatch.syspath_prepend(str(site))  # an installed module, importable
    _set_benchmark(results, "tests_evil_mod:Thing")
    code, out = _cli(
        [
            "rank",
            str(results),
            "--style",
            "--out",
            str(tmp_path / "rk"),
            "--replicates",
            "20",
        ]
    )
    assert not marker.exists(), "rank --style imported the module job.json names"
    assert code == 2 and "not registered" in _one_line(out)
    assert "tests_evil_mod" not in sys.modules


@pytest.mark.process
def test_python_m_voirdire_imports_no_library_from_the_current_directory(
    results, tmp_path
):
    """A results directory holding ``polars.py``: ``python -m voirdire`` run inside it
    imports the installed polars, as the console script does."""
    marker = tmp_path / "imported.txt"
    _evil_module(results, "polars", marker)
    r = _python_m(
        ["rank", ".", "--out", str(tmp_path / "rk"), "--replicates", "20"], results
    )
    assert not marker.exists(), (
        "python -m voirdire imported polars.py from the current directory"
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_a_registered_benchmark_named_in_job_json_still_loads(results, tmp_path):
    """The allow-list keeps what a directory legitimately names: a built-in benchmark by
    name, and an import path naming a class already registered in this process."""
    from voirdire.analysis.results_dir import dir_benchmark
    from voirdire.benchmarks.registry import BENCHMARKS

    meta = json.loads((results / "job.json").read_text())
    assert dir_benchmark(meta).name == "OwnPairs"  # "pairs": a built-in kind
    cls = BENCHMARKS.get("pairs")
    assert (
        BENCHMARKS.get(f"{cls.__module__}:{cls.__qualname__}", allow_import=False)
        is cls
    )
    with pytest.raises(ConfigError, match="not registered"):
        BENCHMARKS.get("json:JSONDecoder", allow_import=False)
    code, out = _cli(
        [
            "rank",
            str(results),
            "--style",
            "--out",
            str(tmp_path / "rk"),
            "--replicates",
            "20",
        ]
    )
    assert code == 0, out


# ------------------------------------------------------------- 2. no value, redacted


def _registries():
    from voirdire.analysis.mitigation.registry import STRATEGIES
    from voirdire.analysis.position.registry import METRICS
    from voirdire.analysis.ranking.registry import RANKINGS
    from voirdire.benchmarks.biases.registry import BIASES
    from voirdire.benchmarks.registry import BENCHMARKS
    from voirdire.judges.base import BACKENDS

    return [BACKENDS, BENCHMARKS, BIASES, STRATEGIES, METRICS, RANKINGS]


def test_a_registry_error_names_a_type_never_the_value(monkeypatch):
    monkeypatch.setenv("VOIRDIRE_TEST_API_KEY", FAKE_KEY)
    monkeypatch.setenv("VOIRDIRE_TEST_PLAIN", PLAIN)
    for reg in _registries():
        with pytest.raises(ConfigError) as err:
            reg.get("os:environ")
        msg = str(err.value)
        assert FAKE_KEY not in msg and PLAIN not in msg, (reg.kind, msg[:200])
        assert "_Environ" in msg and "\n" not in msg and len(msg) < 300


def test_rank_style_on_os_environ_prints_no_environment(results, tmp_path, monkeypatch):
    monkeypatch.setenv("VOIRDIRE_TEST_API_KEY", FAKE_KEY)
    monkeypatch.setenv("VOIRDIRE_TEST_PLAIN", PLAIN)
    _set_benchmark(results, "os:environ")
    code, out = _cli(
        [
            "rank",
            str(results),
            "--style",
            "--out",
            str(tmp_path / "rk"),
            "--replicates",
            "20",
        ]
    )
    assert code == 2 and FAKE_KEY not in out and PLAIN not in out, out[:300]


def test_a_dry_run_naming_os_environ_prints_no_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("VOIRDIRE_TEST_API_KEY", FAKE_KEY)
    monkeypatch.setenv("VOIRDIRE_TEST_PLAIN", PLAIN)
    job = tmp_path / "job.toml"
    text = EXAMPLE.read_text().replace('"examples/', f'"{REPO}/examples/')
    job.write_text(text.replace('name = "pairs"', 'name = "os:environ"', 1))
    code, out = _cli(
        ["run", str(job), "--dry-run", "--output-dir", str(tmp_path / "o")]
    )
    msg = _one_line(out)
    assert code == 2 and FAKE_KEY not in out and PLAIN not in out, out[:300]
    assert "_Environ" in msg


def test_every_error_the_cli_prints_is_redacted(tmp_path, monkeypatch):
    """An error that echoes a path holding a key's value prints ``[redacted]`` instead."""
    monkeypatch.setenv("VOIRDIRE_TEST_API_KEY", FAKE_KEY)
    where = tmp_path / FAKE_KEY
    where.mkdir()
    code, out = _cli(["report", str(where)])
    assert code == 2 and FAKE_KEY not in out and "[redacted]" in _one_line(out)


# ------------------------------------------------------- 3. readers never write


def _corrupt(d: Path) -> Path:
    """A damaged part beside the judge's good one (a partial copy)."""
    judge = next(p for p in (d / "raw").iterdir() if p.is_dir())
    bad = judge / "part-00000000000000000001-deadbeef.parquet"
    bad.write_bytes(b"PAR1 this part was cut short")
    return bad


def _read_everything(d: Path, elsewhere: Path) -> list[str]:
    """rank, report, mitigate (outputs elsewhere) and voirdire.load on ``d``; the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cmd in ("rank", "report", "mitigate"):
            code, out = _cli(
                [cmd, str(d), "--out", str(elsewhere / cmd), "--replicates", "20"]
            )
            assert code == 0, out
        voirdire.load(d)
    return [str(w.message) for w in caught]


@pytest.mark.slow
def test_readers_leave_a_directory_with_a_corrupt_part_as_it_was(results, tmp_path):
    bad = _corrupt(results)
    before = _tree(results)
    said = _read_everything(results, tmp_path / "outputs")
    assert _tree(results) == before  # nothing moved, created or written
    assert any(bad.name in m and "skipped" in m for m in said), said


@pytest.mark.slow
def test_readers_move_nothing_through_a_linked_raw(results, tmp_path):
    """``raw/`` a link into an unrelated folder: that folder, too, stays as it was."""
    other = tmp_path / "unrelated"
    shutil.move(str(results / "raw"), str(other))
    (other / "notes.txt").write_text("someone else's folder")
    (results / "raw").symlink_to(other, target_is_directory=True)
    _corrupt(results)
    before = _tree(results, other)
    _read_everything(results, tmp_path / "outputs")
    assert _tree(results, other) == before


def test_the_writer_still_moves_a_corrupt_part_aside(results):
    """``voirdire run`` (its own output directory) quarantines, as before."""
    from voirdire.engine.store import ResultStore
    from voirdire.exceptions import CorruptPartWarning

    bad = _corrupt(results)
    with pytest.warns(CorruptPartWarning, match="moved to"):
        ResultStore(results).read_raw()
    assert (
        not bad.exists()
        and (bad.parent / "quarantine" / f"{bad.name}.corrupt").is_file()
    )
