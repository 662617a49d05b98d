"""Text from received files stays data wherever it is shown (issue 34, causes 5 and 6): a
log whose judge and model names hold rich markup, escape sequences (an OSC that sets the
window title, a CSI that clears the screen, a C1 control), Markdown table pipes, raw HTML
and a spreadsheet formula, audited and then ranked, mitigated and reported through the
commands themselves (``voirdire audit|rank|mitigate|report``, subprocesses): every command
ends normally, prints each name as written (control characters as visible escapes, no
markup applied, no control byte on the terminal), and every Markdown table keeps its
cells, the names escaped (``voirdire.escape``); the HTML and the CSVs are checked too."""

from __future__ import annotations

import csv
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli import voirdire as voirdire_cli
from tests.repo import REPO
from voirdire.escape import markdown, markdown_code, terminal, visible

#: judge names a received log may hold
JUDGES = [
    "jx[/]y",  # a closing tag with nothing to close: rich's MarkupError
    "[link=https://evil.example/]gpt-4[/link]",  # printed as "gpt-4", linked elsewhere
    "evil | 1.000 | 0.000 | FORGED",  # forges Markdown cells
    "t\x1b]0;PWNED\x07x\x1b[2Jy",  # OSC: the window's title; CSI: clear the screen
    "<script>alert(1)</script>",
    "c1\x9b31mred",  # a C1 CSI
]
#: model names: markup, HTML, a pipe, a formula
MODELS = ["m[/]a", "<b>mb</b>", "mc|x", '=HYPERLINK("http://e.example","x")']
#: bytes that must never reach a terminal: ESC, BEL, C1 CSI (UTF-8 and raw)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _log(path: Path) -> Path:
    """A ``logtable`` CSV: every judge on every pair of every question, both orders."""
    rng = random.Random(0)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["instance", "model_a", "model_b", "first", "verdict", "judge"])
        for j in JUDGES:
            for q in range(6):
                for a in range(len(MODELS)):
                    for b in range(a + 1, len(MODELS)):
                        for first in "ab":
                            w.writerow([f"q{q}", MODELS[a], MODELS[b], first, rng.choice("ABC"), j])  # fmt: skip
    return path


COLUMNS = [
    f"columns.{c}={c}"
    for c in ("instance", "model_a", "model_b", "first", "verdict", "judge")
]


def _cli(tmp: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "VOIRDIRE_LOG_CACHE": str(tmp / "cache")}
    return voirdire_cli(*map(str, args), env=env, cwd=REPO)  # fmt: skip


def _clean(r: subprocess.CompletedProcess) -> str:
    """The command's output, checked: it ended normally, no traceback, no control byte."""
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "MarkupError" not in out
    assert not CONTROL.findall(out.replace("\n", "").replace("\t", "")), [
        m for m in CONTROL.findall(out)
    ]
    return out


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("shown")
    args = ["--format", "logtable", "--out", tmp / "audit", "--progress"]
    for o in COLUMNS:
        args += ["--option", o]
    r = _cli(tmp, "audit", _log(tmp / "log.csv"), *args)
    return tmp, r


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row: split at every ``|`` not escaped by a
    backslash (an odd run of backslashes before it)."""
    cells, cur, i = [], "", 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            cur += line[i : i + 2]
            i += 2
            continue
        if c == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    return [*cells, cur][1:-1]


def _tables_hold(md: str) -> None:
    """Every Markdown table keeps its header's number of cells in every row; no raw HTML
    tag and no control byte anywhere; each judge shows as one escaped cell."""
    width = None
    for line in md.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        n = len(_cells(line))
        width = width or n
        assert n == width, line
    assert "<script>" not in md and "<b>" not in md
    assert not CONTROL.search(md.replace("\n", ""))


def test_escaping_shows_each_text_as_written():
    """The functions themselves: control characters visible, markup escaped, Markdown's and
    HTML's active characters escaped (a word's ``_`` kept), a code span holds backticks."""
    assert visible("t\x1b]0;x\x07\x9b\u202e\n") == "t\\x1b]0;x\\x07\\x9b\\u202e\\n"
    assert terminal("jx[/]y") == "jx\\[/]y"
    assert markdown("a | b") == "a \\| b" and markdown("<i>&") == "&lt;i&gt;&amp;"
    assert markdown("[x](http://e)") == "\\[x\\](http://e)"
    assert markdown("gpt4_1106_preview") == "gpt4_1106_preview"
    assert markdown("_x_ *y*") == "\\_x\\_ \\*y\\*"
    assert markdown_code("a`b") == "``a`b``" and markdown_code("both") == "`both`"


@pytest.mark.ray
def test_audit_prints_every_name_as_written(audited):
    """``voirdire audit`` (with progress bars) ends normally and prints the per-judge table
    with each name as written: markup shown, not applied or failing; escape sequences as
    visible escapes. Before, ``jx[/]y`` ended it in rich's MarkupError after writing."""
    tmp, r = audited
    out = _clean(r)
    for name in JUDGES:
        assert visible(name) in out, name
    assert "audited" in out and (tmp / "audit" / "report.md").is_file()


@pytest.mark.ray
def test_rank_and_mitigate_print_names_as_written(audited):
    """``voirdire rank`` prints its table and ``voirdire mitigate`` prints
    ``mitigation.md``: every name as written or Markdown-escaped, no markup applied, no
    control byte; both end normally."""
    tmp, _ = audited
    out = _clean(_cli(tmp, "rank", tmp / "audit", "--out", tmp / "rank", "--replicates", 20))  # fmt: skip
    assert (
        "[link=https://evil.exampl" in out and "jx[/]y" in out
    )  # a narrow column cuts
    out = _clean(_cli(tmp, "mitigate", tmp / "audit", "--out", tmp / "mit", "--replicates", 20))  # fmt: skip
    assert "# Removing position bias" in out
    for name in JUDGES:
        assert markdown(name) in out, name


@pytest.mark.ray
def test_markdown_html_and_csv_keep_names_as_data(audited):
    """``report.md`` (the audit's and a study's), ``ranking.md`` and ``mitigation.md``:
    every table row keeps its cells (the forged row is one cell), no raw HTML; the HTML
    pages hold no unescaped tag; every CSV cell a spreadsheet would run as a formula starts
    with ``'``."""
    tmp, _ = audited
    if not (tmp / "rank").exists():
        _clean(_cli(tmp, "rank", tmp / "audit", "--out", tmp / "rank", "--replicates", 20))  # fmt: skip
    if not (tmp / "mit").exists():
        _clean(_cli(tmp, "mitigate", tmp / "audit", "--out", tmp / "mit", "--replicates", 20))  # fmt: skip
    _clean(_cli(tmp, "report", tmp / "audit", "--out", tmp / "rep", "--replicates", 20))
    forged = markdown("evil | 1.000 | 0.000 | FORGED")
    for md in (
        tmp / "audit" / "report.md",
        tmp / "rep" / "report.md",
        tmp / "rank" / "ranking.md",
        tmp / "mit" / "mitigation.md",
    ):
        text = md.read_text(encoding="utf-8")
        _tables_hold(text)
        assert any(
            c.strip() == forged for line in text.splitlines() for c in _cells(line)
        ), md
        assert "&lt;script&gt;" in text, md
    for page in (tmp / "rep" / "report.html", tmp / "rank" / "ranking.html"):
        html = page.read_text(encoding="utf-8")
        assert "<script>alert" not in html and "<b>mb" not in html, page
    board = (tmp / "rank" / "metrics" / "leaderboard.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in board and ",=HYPERLINK" not in board
    assert '"=HYPERLINK' not in board


def test_a_file_name_with_escape_sequences_is_shown_escaped(tmp_path):
    """A malformed log whose file name holds an OSC and a CSI: one line, exit 2, the name
    with its control characters as visible escapes, no control byte on the terminal."""
    bad = tmp_path / "x\x1b]0;PWNED\x07[red]\x1b[2J.jsonl"
    bad.write_text('{"custom_id": "x", "respo')
    r = _cli(tmp_path, "audit", bad, "--format", "openai-batch", "--option",
             "custom_id=(?P<instance>x)(?P<model_a>y)(?P<model_b>z)(?P<first>a)",
             "--out", tmp_path / "o")  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    line = " ".join(r.stderr.split())
    assert line.startswith("error: ") and "not valid JSON" in line
    assert "x\\x1b]0;PWNED\\x07[red]\\x1b[2J.jsonl" in line
    assert not CONTROL.search(r.stdout + r.stderr.replace("\n", ""))


def test_a_long_refusal_is_one_line(tmp_path):
    """A refusal is one line whatever its length: not wrapped at rich's console width (140
    columns when stderr is no terminal; at 8e88b73 a long one spanned two lines), still
    escaped (markup shown, control characters as escapes). ``run --dry-run`` starts no Ray."""
    deep = tmp_path / ("a-very-long-folder-name-" * 4) / ("[bold]another-long-one-" * 4)
    deep.mkdir(parents=True)
    job = deep / "job\x1b[2J.toml"
    job.write_text(
        'name = "x"\noutput_dir = "o"\n[benchmark]\nname = "no-such-benchmark"\n'
    )
    r = _cli(tmp_path, "run", job, "--dry-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert len(r.stderr) > 200 and str(deep) in r.stderr
    assert "job\\x1b[2J.toml" in r.stderr and not CONTROL.search(r.stderr[:-1])
