"""What ``voirdire audit`` is given besides the logs is checked before Ray starts and before a
log is read (issue 34, item 7; causes 3, 4 and 11 of its hostile-input pass): malformed
``--option`` values, an ``--out`` that is a symbolic link to nothing, judge names the analysis
owns (compared after trimming: ``"people "`` is ``people``) or shaped like API keys are each
one line, exit 2, and no Ray process is started; an unreachable ``--address`` is one line
instead of a minute of Ray's retries."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.audit_logs import draws, write_arena_hard
from tests.processes import no_process_marked
from tests.repo import repo_pythonpath
from voirdire.core import ConfigError
from voirdire.engine.judge_names import check_judge_name, check_reserved, name_key
from voirdire.engine.ray_start import check_address
from voirdire.ownership import claim_output_dir, claim_report_dir

KEY = "sk-ant-api03-" + "x7" * 20  # an Anthropic key's shape


def audit(tmp_path: Path, *args: str | Path, env: dict | None = None):
    """``voirdire audit ARGS`` in a fresh process through the console script's entry, which
    begins Ray's start early (``_start_ray_early``, wrapped here to leave a file when it is
    called). Returns the exit code, stderr with its lines joined (rich wraps at 140 columns;
    a second line would be a traceback's) and whether Ray's start was begun; every process
    of the command is gone before it returns."""
    began = tmp_path / "ray-start-begun"
    began.unlink(missing_ok=True)
    mark = f"VOIRDIRE_TEST_MARK={os.urandom(8).hex()}"
    code = (
        "import pathlib, voirdire.cli.jobs as j\n"
        "start = j._start_ray_early\n"
        f"j._start_ray_early = lambda a: (pathlib.Path({str(began)!r}).touch(), start(a))\n"
        "from voirdire.cli import main\nmain()\n"
    )
    full = {**os.environ, "PYTHONPATH": repo_pythonpath(),
            "VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), **(env or {}),
            mark.split("=")[0]: mark.split("=")[1]}  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-c", code, "audit", *map(str, args)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=full,
    )  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.stderr.startswith("error: "), r.stderr[-3000:]
    assert no_process_marked(mark)
    return r.returncode, " ".join(r.stderr.split()), began.exists()


@pytest.fixture
def log(tmp_path) -> Path:
    p = tmp_path / "model-x.jsonl"
    write_arena_hard(p, draws(4, seed=5))
    return p


# --- --option (cause 3) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        (["columns=x", "columns.instance=item"],
         "--option 'columns.instance=item' and --option 'columns=x': a setting is given once"),
        (["columns.instance=item", "columns=x"],
         "--option 'columns=x' and --option 'columns.instance=item': a setting is given once"),
        (["epoch=²"], "Inspect: benchmark.log.epoch: Input should be a valid integer"),
        (["epoch=" + "9" * 5000], "--option epoch: a number of 5,000 digits; at most 18"),
        (["seed=" + "9" * 5000], "--option seed: a number of 5,000 digits; at most 18"),
        (["a..b=1"], "'a..b' is not a setting name"),
        (["nonsense=1"], "Inspect: benchmark.log.nonsense: unknown key"),
    ],
)  # fmt: skip
@pytest.mark.process
def test_malformed_options_are_one_line_before_ray_starts(
    tmp_path, log, options, message
):
    """A TypeError (a key given a value and keys below it) or a ValueError (``²`` is a digit
    to ``str.isdigit``; Python's ``int`` refuses 5,000 digits) raised after Ray had started;
    now one line naming the option, and Ray's start never begun."""
    args = [x for o in options for x in ("--option", o)]
    code, err, began = audit(tmp_path, log, "--format", "inspect", *args)
    assert code == 2 and message in err and not began, err


def test_option_values_nest_and_numbers_stay_numbers():
    from voirdire.cli.jobs import log_options

    assert log_options(["columns.instance=item", "columns.first=f", "epoch=2", "x=²"]) == {
        "columns": {"instance": "item", "first": "f"}, "epoch": 2, "x": "²",
    }  # fmt: skip
    with pytest.raises(ConfigError, match="given once"):
        log_options(["epoch=1", "epoch=2"])


# --- --out (cause 4) ----------------------------------------------------------------------


@pytest.mark.process
def test_a_dangling_out_link_is_one_line_before_the_logs_are_read(tmp_path, log):
    """A FileExistsError traceback after the log was read, before; now one line naming the
    link, before Ray starts; a link to a directory is followed as before."""
    link = tmp_path / "out-link"
    link.symlink_to(tmp_path / "nowhere")
    code, err, began = audit(tmp_path, log, "--format", "arena-hard", "--out", link)
    assert code == 2 and not began, err
    assert f"output_dir {link}: {link} is a symbolic link to nothing" in err, err
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "cache").exists()


def test_links_to_nothing_on_the_way_to_an_output_directory_are_refused(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    for claim in (claim_output_dir, claim_report_dir):
        for bad, what in (
            (tmp_path / "loop", "symbolic link to nothing"),
            (tmp_path / "dangling" / "sub", "symbolic link to nothing"),
            (tmp_path / "file" / "sub", "exists and is not a directory"),
        ):
            with pytest.raises(ConfigError, match=what) as exc:
                claim(bad)
            assert "\n" not in str(exc.value)
    (tmp_path / "real").mkdir()
    (tmp_path / "to-real").symlink_to(tmp_path / "real")
    assert claim_output_dir(tmp_path / "to-real") == tmp_path / "to-real"
    assert (
        claim_output_dir(tmp_path / "to-real" / "new") == tmp_path / "to-real" / "new"
    )


# --- judge names (cause 11; item 7's names shaped like keys) ------------------------------


@pytest.mark.parametrize(
    "name",
    ["gold ", " gold", "gold\u200b", "people ", "people\u00a0", "\tpanel-2\n"],
)
def test_the_analysis_names_are_compared_after_trimming(name):
    assert name_key(name) in ("gold", "people", "panel-2")
    with pytest.raises(ConfigError, match="voirdire's own"):
        check_judge_name(name)
    with pytest.raises(ConfigError, match="voirdire's own"):
        check_reserved(["gpt-4", name])
    with pytest.raises(ConfigError, match="voirdire's own"):
        check_reserved(["ｇｏｌｄ"])  # full-width letters (NFKC)


@pytest.mark.process
def test_a_judge_named_people_with_a_space_is_refused_before_ray_and_from_a_log(
    tmp_path, log
):
    """``--judge 'people '`` was accepted and shown as ``people``; now refused before Ray
    starts. A log whose judge is named so is refused too (after it is read)."""
    from voirdire import api

    api.check_audit("arena-hard", out=tmp_path / "o", judge="*")  # every judge: no name
    code, err, began = audit(
        tmp_path, log, "--format", "arena-hard", "--judge", "people "
    )
    assert (
        code == 2 and not began and "judge name 'people ' is voirdire's own" in err
    ), err
    named = tmp_path / "people.jsonl"
    write_arena_hard(named, draws(4, seed=6), judge="people ")
    code, err, _ = audit(
        tmp_path, named, "--format", "arena-hard", "--out", tmp_path / "o2"
    )
    assert code == 2 and "judge name 'people ' is voirdire's own" in err, err


def test_judge_names_with_only_whitespace_between_them_are_one_name(tmp_path):
    from voirdire.engine.spec import parse_job

    with pytest.raises(
        ConfigError, match="judge names must be unique; repeated: gpt-4"
    ):
        parse_job(
            {"name": "x", "output_dir": str(tmp_path / "o"), "benchmark": {"name": "mtbench"},
             "judges": [{"name": "gpt-4", "backend": "simulated"},
                        {"name": "gpt-4 ", "backend": "simulated"}]},
            "job",
        )  # fmt: skip


@pytest.mark.parametrize(
    "name",
    [
        KEY,
        "sk-proj-" + "a1" * 12,
        "AIza" + "b2" * 12,
        "abcd****wxyz",
        "my-s3cret-value-42",
    ],
)
def test_judge_names_shaped_like_keys_are_refused(monkeypatch, name):
    monkeypatch.setenv("SERVICE_TOKEN", "my-s3cret-value-42")
    with pytest.raises(ConfigError, match="looks like an API key") as exc:
        check_judge_name(name)
    assert name not in str(exc.value) and "\n" not in str(exc.value)
    check_judge_name("gpt-4o-mini")  # a model's name is a name
    check_judge_name("task-judge")


@pytest.mark.process
def test_a_key_pasted_as_a_judge_is_refused_before_ray_and_never_shown(tmp_path, log):
    """A key pasted into ``--option judge=`` landed in the folder name, ``job.json``, the
    tables and stdout; now one line, the key not in it, before Ray starts."""
    table = tmp_path / "v.csv"
    table.write_text("i,a,b,f,v\n1,x,y,a,A\n1,x,y,b,B\n")
    cols = ["--option", "columns.instance=i", "--option", "columns.model_a=a",
            "--option", "columns.model_b=b", "--option", "columns.first=f",
            "--option", "columns.verdict=v"]  # fmt: skip
    code, err, began = audit(
        tmp_path, table, "--format", "logtable", *cols, "--option", f"judge={KEY}"
    )
    assert code == 2 and not began and "looks like an API key" in err, err
    assert KEY not in err and "x7x7" not in err
    code, err, began = audit(
        tmp_path, log, "--format", "arena-hard", "--judge", "zq-98765-service",
        env={"MY_API_KEY": "zq-98765-service"},
    )  # fmt: skip
    assert code == 2 and not began and "looks like an API key" in err, err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("runs"))


# --- --address (cause 11) -----------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed once the socket is: nothing listens there


@pytest.mark.process
def test_an_address_nothing_answers_is_one_line(tmp_path, log):
    """``--address 127.0.0.1:1`` waited in Ray's retries (over 5 minutes: stopped then);
    now a TCP connection is tried first (5 s at most), before Ray starts and anything is
    written, and a refusal is one line naming the address."""
    port = _closed_port()
    with pytest.raises(
        ConfigError, match=rf"'127.0.0.1:{port}': nothing accepts a connection"
    ):
        check_address(f"127.0.0.1:{port}")
    with pytest.raises(ConfigError, match="nothing accepts a connection"):
        check_address(f"ray://127.0.0.1:{port}")
    for left_to_ray in (None, "auto", "local", "headnode"):
        check_address(left_to_ray)
    code, err, began = audit(
        tmp_path, log, "--format", "arena-hard", "--address", "127.0.0.1:1"
    )
    assert code == 2 and not began, err
    assert "Ray cluster address '127.0.0.1:1': nothing accepts a connection" in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


@pytest.mark.process
def test_run_refuses_an_address_nothing_answers_before_writing(tmp_path, log):
    """``voirdire run --address`` as ``audit``: the address is tried before Ray starts and
    before the output directory gets its ``job.json`` (at 8e88b73 the refusal came after the
    run had written it); the Python API likewise."""
    import voirdire

    out = tmp_path / "run-out"
    job = tmp_path / "audit.toml"
    job.write_text(
        f'name = "a"\noutput_dir = "{out}"\n[benchmark]\nname = "arena-hard"\n'
        f'logs = ["{log}"]\n[comparison]\noption_mode = 3\n'
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\n'
    )
    port = _closed_port()
    began = tmp_path / "ray-start-begun"
    code = (
        "import pathlib, voirdire.cli.jobs as j\n"
        "start = j._start_ray_early\n"
        f"j._start_ray_early = lambda a: (pathlib.Path({str(began)!r}).touch(), start(a))\n"
        "from voirdire.cli import main\nmain()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": repo_pythonpath(),
        "VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"),
    }
    r = subprocess.run(
        [sys.executable, "-c", code, "run", str(job), "--address", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and r.stderr.startswith("error: ")
    err = " ".join(r.stderr.split())
    assert (
        f"Ray cluster address '127.0.0.1:{port}': nothing accepts a connection" in err
    )
    assert not began.exists() and not out.exists()
    with pytest.raises(ConfigError, match="nothing accepts a connection"):
        voirdire.run(job, address=f"127.0.0.1:{port}")
    assert not out.exists()
