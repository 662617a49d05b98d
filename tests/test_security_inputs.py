"""Every received input bounded, every refusal one line (issue 43): text handled in linear
time, numeric options checked as they are parsed, job files bounded before they are decoded,
spreadsheet files neutralised and read back, names drawn as data in figures."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from voirdire import cli
from voirdire.bounds import MAX_JOB_BYTES, MAX_JUDGES, MAX_NAME_CHARS
from voirdire.cli.common import fail
from voirdire.redaction import redact, redact_message


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setattr(cli.err_console, "width", 10_000)  # no wrapping of the one line


# --- item 7: linear-time text handling ----------------------------------------------------


def _cpu(f, text: str, at_least: float = 0.02) -> float:
    """CPU seconds of one ``f(text)``: the best of 3 rounds, each repeated until it took
    ``at_least`` seconds (so a fast call is not measured as the clock's noise)."""
    best = float("inf")
    for _ in range(3):
        reps, start = 0, time.process_time()
        while (spent := time.process_time() - start) < at_least:
            f(text)
            reps += 1
        best = min(best, spent / reps)
    return best


def _grows_linearly(f, make, n: int = 2000, factor: int = 8) -> None:
    """``f`` on ``factor`` times the text costs less than ``3 * factor`` times as much (a
    linear cost grows ``factor`` times, a quadratic one ``factor**2`` times). The large
    input is tried up to 3 times, stopping at the first under the bound, so quadratic code
    fails after one slow call and linear code is not failed by one unlucky pause."""
    small = _cpu(f, make(n))
    big = make(n * factor)
    for _ in range(3):
        start = time.process_time()
        f(big)
        took = time.process_time() - start
        if took < 3 * factor * small + 0.01:
            return
    pytest.fail(f"{n * factor} characters took {took:.3f} s, {n} took {small:.5f} s")


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "a" * n,
        lambda n: "a." * (n // 2),
        lambda n: "1" * n,
        lambda n: "/" * n,
    ],
    ids=["letters", "dots", "digits", "slashes"],
)
def test_redaction_takes_time_linear_in_the_text(make):
    """At f28ccc8 the unanchored masked-echo pattern was tried at every character of a run
    of key characters and scanned the rest of it each time: 8,000 letters took 0.24 s,
    300 KB (a batch's error message) over 600 s."""
    _grows_linearly(redact_message, make)


def test_redaction_still_removes_masked_echoes_and_keys():
    text = "Incorrect API key provided: abc1************wxyz. Also ****wxyz, sk-abcdefghijkl."
    assert redact(text) == (
        "Incorrect API key provided: [redacted] Also [redacted], [redacted]"
    )
    assert redact("x a*b***c y") == "x a*[redacted] y"
    assert redact("a" * 5000 + "***") == "[redacted]"


@pytest.mark.parametrize(
    "make", [lambda n: "1" * n, lambda n: "<" * n, lambda n: "a." * (n // 2)]
)
def test_a_refusal_quoting_received_text_prints_in_linear_time(make, capsys):
    """rich's default highlighter ran patterns quadratic in a line's length on every
    printed line (8,000 digits: 1.9 s; at f28ccc8 a 300 KB message in an error ran past
    600 s): the command line's consoles print without it."""

    def refuse(text: str) -> None:
        with pytest.raises(typer.Exit):
            fail(text)
        assert capsys.readouterr().err.count("\n") == 1

    _grows_linearly(refuse, make)


# --- shared: the CLI's one line -----------------------------------------------------------


def _cli(*args) -> tuple[int, str]:
    res = CliRunner().invoke(cli.app, [str(a) for a in args])
    assert "Traceback" not in res.output, res.output[-2000:]
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output.strip()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"/"
        for p in sorted(root.rglob("*"))
    }


def _refused(out: str, *parts: str) -> None:
    assert out.startswith("error: ") and "\n" not in out, out[:2000]
    for part in parts:
        assert part in out, out[:2000]


# --- item 2: numeric options checked as they are parsed -----------------------------------


@pytest.mark.parametrize(
    "args, said",
    [
        (
            ["people", "--alpha", "5e-324"],
            "--alpha 4.94066e-324: out of range (allowed: 1e-06 <= x < 1)",
        ),
        (["people", "--seed", str(2**200)], "--seed a 61-digit integer: out of range"),
        (["people", "--rows", "0"], "--rows 0: out of range"),
        (["people", "--level", "nan"], "--level nan: not a finite number"),
        (
            ["people", "--anchor-rating", "inf"],
            "--anchor-rating inf: not a finite number",
        ),
        (
            ["rank", "--replicates", "0"],
            "--replicates 0: out of range (allowed: 1 <= x <= 100,000)",
        ),
        (["report", "--replicates", "0"], "--replicates 0: out of range"),
        (
            ["report", "--replicates", "1000000000000"],
            "--replicates 1,000,000,000,000: out of range",
        ),
        (
            ["mitigate", "--replicates", "1000000000000"],
            "--replicates 1,000,000,000,000: out of range",
        ),
        (
            ["rank", "--anchor-rating", "nan"],
            "--anchor-rating nan: not a finite number",
        ),
        (["report", "--rs-min", "nan"], "--rs-min nan: not a finite number"),
        (["report", "--margin", "nan"], "--margin nan: not a finite number"),
        (["report", "--max-error", "inf"], "--max-error inf: not a finite number"),
        (
            ["rank", "--prior", "-1"],
            "--prior -1: out of range (allowed: 0 <= x <= 1e+06)",
        ),
        (["mitigate", "--beta", "nan"], "--beta nan"),
        (["data", "fetch", "--deadline", "nan"], "--deadline nan: not a finite number"),
    ],
)
def test_numeric_options_are_refused_in_one_line_as_they_are_parsed(
    tmp_path, args, said
):
    """At f28ccc8: tracebacks (``--alpha 5e-324``, ``--seed 2**200``, ``rank --replicates
    0``), a Vega error (``report --replicates 0``), 300 s of work (``report --replicates
    1e12``) or the value accepted (NaN, infinity, a negative prior). The directory given
    is never read: the option is refused as it is parsed."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "job.json").write_text("{}")
    before = _tree(tmp_path)
    where = [] if args[0] == "data" else [d]
    code, out = _cli(*args[:1], *where, *args[1:])
    assert code == 2, out
    _refused(out, said)
    assert _tree(tmp_path) == before


def test_the_help_text_states_each_range():
    code, out = _cli("people", "--help")
    flat = " ".join(re.sub("[│╭╮╰╯─]", " ", out).split())  # the panel's borders dropped
    assert code == 0 and "(1e-06 <= x < 1)" in flat and "(0 < x <= 1)" in flat, flat


def test_judge_attributes_that_are_no_csv_are_one_line(tmp_path):
    """A judge-attributes CSV with an unclosed quote was read outside the error handling:
    a traceback at f28ccc8."""
    d = tmp_path / "d"
    d.mkdir()
    bad = tmp_path / "attrs.csv"
    bad.write_text('judge,size\n"a,1\nb,2\n')
    code, out = _cli("report", d, "--judge-attributes", bad)
    assert code == 2
    _refused(out, f"{bad}: not a readable CSV")


# --- item 1: job files bounded before they are decoded ------------------------------------

_JOB = 'name = "{name}"\noutput_dir = "{out}"\n[benchmark]\nname = "mt_bench_human"\n'
_JUDGE = '[[judges]]\nname = "j{i}"\nbackend = "simulated"\n'


def _job_file(tmp_path: Path, body: str = "", name: str = "x", judges: int = 1) -> Path:
    job = tmp_path / "job.toml"
    text = _JOB.format(name=name, out=tmp_path / "out") + body
    job.write_text(text + "".join(_JUDGE.format(i=i) for i in range(judges)))
    return job


def _dry_run_refused(tmp_path: Path, job: Path, *parts: str) -> None:
    before = _tree(tmp_path)
    code, out = _cli("run", job, "--dry-run")
    assert code == 2, out[:2000]
    _refused(out, str(job), *parts)
    assert _tree(tmp_path) == before  # nothing written, the job file as it was


@pytest.mark.parametrize(
    "body",
    [
        "deep = " + "[" * 1000 + "]" * 1000 + "\n",
        "deep = " + "[" * 100_000 + "\n",
        "deep = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n",
        "[analysis]\n" + ".".join(["x"] * 3000) + " = 1\n",
    ],
    ids=["array-1000", "array-100000-unclosed", "inline-table-50000", "dotted-3000"],
)
def test_a_deeply_nested_job_file_is_one_line(tmp_path, body):
    """At f28ccc8 Python's TOML decoder recursed once per level: a RecursionError's
    traceback."""
    job = _job_file(tmp_path, body)
    _dry_run_refused(tmp_path, job, "TOML nested more than 100 levels deep")


def test_a_nested_judge_setting_is_one_line(tmp_path):
    job = _job_file(tmp_path)
    job.write_text(
        job.read_text() + "sampling = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"
    )
    _dry_run_refused(tmp_path, job, "TOML nested more than 100 levels deep")


def test_brackets_in_strings_and_comments_do_not_count_as_nesting(tmp_path):
    job = _job_file(tmp_path, f'# {"[" * 300}\nnote = "{"[" * 300}"\n')
    code, out = _cli("run", job, "--dry-run")
    assert "nested" not in out, out[:2000]


def test_a_job_file_not_in_utf8_is_one_line(tmp_path):
    job = _job_file(tmp_path, name="caf\xe9")
    job.write_bytes(job.read_text().encode("latin-1"))
    _dry_run_refused(
        tmp_path, job, "not UTF-8 text (byte", "save the job file as UTF-8"
    )


def test_a_job_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    """A 200 MB job name ran past 10 minutes at f28ccc8; the file is sparse here."""
    job = _job_file(tmp_path)
    with job.open("r+b") as fh:
        fh.truncate(MAX_JOB_BYTES + 1)
    _dry_run_refused(
        tmp_path, job, f"{MAX_JOB_BYTES + 1:,} bytes on disk, over the limit of"
    )


def test_a_long_name_in_a_job_file_is_refused_naming_the_limit(tmp_path):
    job = _job_file(tmp_path, name="n" * (MAX_NAME_CHARS + 1))
    _dry_run_refused(tmp_path, job, "name: String should have at most 200 characters")


def test_a_job_of_too_many_judges_is_refused_before_they_are_validated(tmp_path):
    """200,000 judges ran past 15 minutes in a dry run at f28ccc8 (their uniqueness was
    checked in quadratic time)."""
    job = _job_file(tmp_path, judges=MAX_JUDGES + 1)
    _dry_run_refused(
        tmp_path, job, f"{MAX_JUDGES + 1:,} judges, over the limit of {MAX_JUDGES:,}"
    )
