"""Every received input bounded, every refusal one line (issue 43): text handled in linear
time, numeric options checked as they are parsed, job files bounded before they are decoded,
spreadsheet files neutralised and read back, names drawn as data in figures."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from tests.people_simulate import study, truth
from voirdire import cli
from voirdire.analysis.mitigation.grading import load_grading
from voirdire.analysis.people.study import people_study
from voirdire.analysis.report.people import write_people
from voirdire.analysis.report.people_files import read_people
from voirdire.bounds import (
    MAX_FIELD_CHARS,
    MAX_JOB_BYTES,
    MAX_JUDGES,
    MAX_NAME_CHARS,
    MAX_TABLE_BYTES,
    check_table,
)
from voirdire.cli.common import fail
from voirdire.core import ConfigError
from voirdire.escape import FORMULA_START
from voirdire.layout import PEOPLE_MANIFEST
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


# --- items 8 and 3: spreadsheet files, people's labels ------------------------------------

_ODD = {"m0": "-1", "m1": "@cf/meta/llama"}  # names a spreadsheet would run


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A study whose models are named ``-1`` and ``@cf/...``, its people's files written
    with a labels file's columns that include a formula."""
    j = study(np.random.default_rng(5), k=4, questions=30)
    odd = lambda c: pl.col(c).replace(_ODD)  # noqa: E731
    j = j.with_columns(
        odd("candidate"),
        odd("reference"),
        odd("gold"),
        *(
            pl.col(c).list.eval(pl.element().replace(_ODD))
            for c in ("candidates", "shown")
        ),
    )
    s = people_study(j, truth(j), share=0.3)
    out = tmp_path_factory.mktemp("labelled") / "people"
    cols = [
        "question_id",
        "candidate",
        "reference",
        '=HYPERLINK("https://x.example")',
        "winner",
    ]
    write_people(s, out, cols)
    return j, out / "people_to_label.csv"


def test_the_pairs_for_people_neutralise_formulas_in_the_header_too(labelled):
    """At f28ccc8 the labels file's column names were copied into people_to_label.csv's
    header as they were: ``=HYPERLINK(...)`` ran when an annotator opened it."""
    _, to_label = labelled
    with to_label.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert '\'=HYPERLINK("https://x.example")' in rows[0], rows[0]
    assert not [c for row in rows for c in row if c.startswith(FORMULA_START)]
    assert any(c == "'-1" for row in rows[1:] for c in row)  # the cells as before


def test_a_filled_people_to_label_csv_reads_back_with_its_names(labelled, tmp_path):
    """The ``'`` the writer adds is undone on read-back: at f28ccc8 a filled
    people_to_label.csv given back with --labels refused the models named ``-1`` and
    ``@cf/...`` (``reference labels name unknown candidate(s): '-1``)."""
    j, to_label = labelled
    filled = tmp_path / "filled.csv"
    raw = pl.read_csv(to_label, infer_schema_length=0)
    raw.with_columns(winner=pl.lit("candidate")).write_csv(filled)
    before = filled.read_bytes()
    ref = load_grading(str(filled), j)
    names = set(ref["candidate"]) | set(ref["reference"])
    assert {"-1", "@cf/meta/llama"} & names and not any(
        n.startswith("'") for n in names
    )
    assert filled.read_bytes() == before


def _labels_refused(path: Path, judgments: pl.DataFrame, said: str) -> None:
    before = path.stat().st_size
    with pytest.raises(ConfigError) as got:
        load_grading(str(path), judgments)
    msg = str(got.value)
    assert "\n" not in msg and str(path) in msg and said in msg, msg[:2000]
    assert path.stat().st_size == before


def test_a_labels_file_over_the_size_limit_is_refused_before_it_is_read(
    labelled, tmp_path
):
    """A sparse 2 GiB file of NULs ended in a polars panic at f28ccc8, 6 GiB in "Cannot
    allocate memory"; sparse here, never read."""
    j, _ = labelled
    big = tmp_path / "labels.csv"
    big.write_text("question_id,candidate,reference,winner\n")
    with big.open("r+b") as fh:
        fh.truncate(MAX_TABLE_BYTES + 1)
    _labels_refused(big, j, f"{MAX_TABLE_BYTES + 1:,} bytes on disk, over the limit")


def test_a_labels_file_of_nul_bytes_is_refused(labelled, tmp_path):
    j, _ = labelled
    nul = tmp_path / "labels.csv"
    nul.write_bytes(b"question_id,candidate,reference,winner\n" + b"\0" * 4096)
    _labels_refused(nul, j, "a NUL byte at byte 39")


@pytest.mark.parametrize("quoted", [False, True])
def test_a_long_cell_in_a_labels_file_is_refused(labelled, tmp_path, quoted):
    """A 50 MB question_id cell ran past 10 minutes at f28ccc8. A field is bounded before
    polars reads it; a quoted one holding separators, once read."""
    j, _ = labelled
    cell = (
        ("a," * (MAX_FIELD_CHARS // 2 + 1)) if quoted else "a" * (MAX_FIELD_CHARS + 1)
    )
    f = tmp_path / "labels.csv"
    f.write_text(f'question_id,candidate,reference,winner\n"{cell}",m2,m3,tie\n')
    said = (
        "in column 'question_id', over the limit" if quoted else "a field of more than"
    )
    _labels_refused(f, j, said)


def test_a_labels_file_not_in_utf8_is_refused(labelled, tmp_path):
    j, _ = labelled
    f = tmp_path / "labels.csv"
    f.write_bytes(
        "question_id,candidate,reference,winner\nq,caf\xe9,m3,tie\n".encode("latin-1")
    )
    _labels_refused(f, j, "not UTF-8 text (near byte")


# --- item 5: names drawn as data in figures -----------------------------------------------

MATH = "judge $\\foo$ x\x1b[2J\x07"  # mathtext that does not parse, and control bytes


def test_people_figures_draw_names_with_dollars_and_control_bytes(tmp_path):
    """At f28ccc8 a judge named ``judge $\\foo$ x`` made ``people`` fail with matplotlib's
    mathtext parse error, and control bytes reached its labels (missing-glyph warnings)."""
    j = study(np.random.default_rng(7), k=3, questions=30, judges={MATH: (0.8, 0.7)})
    j = j.with_columns(
        *(pl.col(c).replace({"m0": "$m_0$\x01"}) for c in ("candidate", "reference", "gold")),
        *(pl.col(c).list.eval(pl.element().replace({"m0": "$m_0$\x01"})) for c in ("candidates", "shown")),
    )  # fmt: skip
    s = people_study(j, truth(j), share=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a warning: an error here
        paths = write_people(s, tmp_path / "people")
    figures = [p for k, p in paths.items() if k.startswith("figure:")]
    assert figures and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in figures)


def test_every_text_of_a_figure_is_drawn_as_written(tmp_path):
    """The shared saver: tick labels, legend entries and titles keep their ``$`` (no
    mathtext) and lose their control characters."""
    from voirdire.analysis.report.plotting import _save, plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label=MATH)
    ax.set_xticks([0, 1], [MATH, "$x^$"])
    ax.legend()
    ax.set_title(MATH)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _save(fig, tmp_path / "f.png")
    assert ax.get_title() == "judge $\\foo$ x[2J"
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "judge $\\foo$ x[2J",
        "$x^$",
    ]


PROTO = ["__proto__", "constructor", "toString", "hasOwnProperty"]  # JavaScript's keys


def _report_charts() -> dict:
    """The report's figures that group rows by judge (bars, grouped bars, heatmaps, fitted
    curves) and the people's figure, every judge and model named after a key of
    JavaScript's objects."""
    from voirdire.analysis.report.agreement import agreement_heatmap
    from voirdire.analysis.report.curve_charts import win_rate_curves
    from voirdire.analysis.report.judge_charts import judge_bars
    from voirdire.analysis.report.people_charts import people_chart
    from voirdire.analysis.report.task_charts import pf_bars

    rng = np.random.default_rng(0)
    jt = pl.DataFrame(
        [(j, t, *rng.random(2)) for j in PROTO for t in ("t1", "t2")],
        schema=["judge", "task", "pc", "pf"],
        orient="row",
    )
    panel = jt.group_by("judge", maintain_order=True).agg(rs=pl.col("pc").mean())
    cells = pl.DataFrame(
        [(j, rng.random(), *rng.random(2), 10) for j in PROTO for _ in range(6)],
        schema=["judge", "owr", "pc", "pf", "n"],
        orient="row",
    )
    agree = pl.DataFrame(
        [(a, b, *rng.random(3)) for a in PROTO for b in PROTO],
        schema=["judge_a", "judge_b", "agreement", "agreement_no_tie", "kappa"],
        orient="row",
    )
    rename = dict(zip(("m0", "m1", "m2"), PROTO[:3], strict=True))
    j = study(
        np.random.default_rng(1), k=3, questions=30, judges={PROTO[0]: (0.8, 0.7)}
    )
    j = j.with_columns(
        *(pl.col(c).replace(rename) for c in ("candidate", "reference", "gold")),
        *(pl.col(c).list.eval(pl.element().replace(rename)) for c in ("candidates", "shown")),
    )  # fmt: skip
    s = people_study(j, truth(j), share=0.5)
    return {
        "rs": judge_bars(panel, "rs", PROTO, PROTO, "t", axis_title="RS"),
        "pf_bars": pf_bars(jt, PROTO, "t"),
        "agreement": agreement_heatmap(agree, PROTO, "t"),
        "owr": win_rate_curves(cells, PROTO, "t"),
        "people": people_chart(s.boards, s.curve, "t", target=0.9),
    }


def test_judges_and_models_named_like_javascript_keys_draw(tmp_path, capfd):
    """At f28ccc8 a judge or model named ``__proto__`` or ``constructor`` broke ``--figures
    png`` ("Vega-Lite to PNG conversion failed: Operator not defined"): Vega groups rows in
    plain objects. Names enter the specifications keyed by index; they are still what the
    axes, legends and tooltips show."""
    from voirdire.analysis.report.vega import spec_of, write_static

    for kind, chart in _report_charts().items():
        spec = spec_of(chart)
        paths = write_static(spec, tmp_path / kind, ("png",))
        assert paths["png"].read_bytes()[:4] == b"\x89PNG", kind
        rows = [r for rows in spec["datasets"].values() for r in rows]
        fields = ("judge", "judge_a", "judge_b", "model")
        shown = {r[f"{f}_name"] for r in rows for f in fields if f"{f}_name" in r}
        assert shown & set(PROTO), kind  # the names are data, beside their keys
        assert not {r[f] for r in rows for f in fields if f in r} & set(PROTO), kind
        tips = [t for t in re.findall(r'"tooltip": \[[^]]*\]', json.dumps(spec))]
        assert all('"title": "judge"' in t for t in tips if "judge_name" in t), tips
    assert "ERROR" not in capfd.readouterr().err  # vl-convert logs a failed transform


# --- item 4: tables read back from a results directory ------------------------------------


@pytest.fixture(scope="module")
def people_dir(tmp_path_factory):
    j = study(np.random.default_rng(3), k=4, questions=40, judges={"cheap": (0.5, 0.8)})
    out = tmp_path_factory.mktemp("people-back") / "people"
    write_people(people_study(j, truth(j), share=0.3), out)
    return out


def _copy_with(src: Path, dst: Path, table: str, edit) -> Path:
    shutil.copytree(src, dst)
    f = dst / "metrics" / f"people_{table}.csv"
    f.write_bytes(edit(f.read_bytes()))
    return f


def _read_back_refused(where: Path, said: str) -> None:
    with pytest.raises(ConfigError) as got:
        read_people(where)
    assert "\n" not in str(got.value) and said in str(got.value), str(got.value)


@pytest.mark.parametrize("value", ["NaN", "inf", "-inf"])
def test_a_received_people_table_holding_no_finite_number_is_refused(
    people_dir, tmp_path, value
):
    """At f28ccc8 a people_boards.csv holding NaN or an infinity reached the figures:
    "Failed to parse vl_spec string as JSON" (NaN is no JSON)."""

    def edit(data: bytes) -> bytes:
        t = pl.read_csv(io.BytesIO(data), infer_schema_length=0)
        first = pl.int_range(pl.len()) == 0
        t = t.with_columns(
            pl.when(first).then(pl.lit(value)).otherwise("estimate").alias("estimate")
        )
        return t.write_csv().encode()

    f = _copy_with(people_dir, tmp_path / "p", "boards", edit)
    _read_back_refused(tmp_path / "p", f"{f}: column 'estimate' holds")


def test_a_people_table_cut_mid_row_is_named_as_cut_short(people_dir, tmp_path):
    """A killed writer's half table was read as a shorter one at f28ccc8."""
    f = _copy_with(people_dir, tmp_path / "p", "boards", lambda b: b[: len(b) // 2])
    _read_back_refused(tmp_path / "p", f"{f}: cut short (it ends mid-row")


def test_the_rows_of_a_table_read_back_are_bounded():
    t = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    check_table(t, "t.csv", {"x": pl.Float64}, max_rows=3)
    with pytest.raises(ConfigError, match=r"t.csv: 4 rows, over the limit of 3"):
        check_table(pl.concat([t, t.head(1)]), "t.csv", {"x": pl.Float64}, max_rows=3)


def test_received_length_control_weights_without_a_column_are_one_line(tmp_path):
    """A crafted lc_weights.parquet missing a column ended in a traceback at f28ccc8."""
    from voirdire.benchmarks.logs.alpaca_eval import LC_WEIGHTS, AlpacaEval

    pl.DataFrame({"baseline": ["b"], "model": ["m"], "length": [0.1]}).write_parquet(
        tmp_path / LC_WEIGHTS
    )
    with pytest.raises(
        ConfigError, match=r"lc_weights.parquet: no column 'difficulty'"
    ):
        AlpacaEval.length_control_weights(tmp_path)
    (tmp_path / LC_WEIGHTS).write_bytes(b"PAR1 not parquet")
    with pytest.raises(ConfigError, match=r"not a readable Parquet file"):
        AlpacaEval.length_control_weights(tmp_path)


# --- item 9: people's files written as a set ----------------------------------------------


def test_people_files_are_read_only_as_the_set_one_run_wrote(people_dir, tmp_path):
    """At f28ccc8 a people rerun killed between two tables left new tables beside old
    settings, and ``report`` showed the mix as one section. The writer names its set in
    people_manifest.json, written last (the old one removed first); a reader refuses a
    set without it or with a table of another run."""
    assert read_people(people_dir).settings  # the set as written
    shutil.copytree(people_dir, tmp_path / "no-manifest")
    (
        tmp_path / "no-manifest" / PEOPLE_MANIFEST
    ).unlink()  # as a run cut short leaves it
    _read_back_refused(tmp_path / "no-manifest", f"has no {PEOPLE_MANIFEST}")

    j = study(np.random.default_rng(9), k=4, questions=40, judges={"cheap": (0.5, 0.8)})
    other = tmp_path / "other"
    write_people(people_study(j, truth(j), share=0.5), other)
    mixed = tmp_path / "mixed"
    shutil.copytree(people_dir, mixed)
    shutil.copy(other / "metrics" / "people_boards.csv", mixed / "metrics")
    _read_back_refused(
        mixed, f"people_boards.csv is not the table {PEOPLE_MANIFEST} names"
    )
