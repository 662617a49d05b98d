"""The leaderboard read first (#40 item 4): ``voirdire rank`` opens on one answer line per
judge and order view, then each judge's sorted board, then the flips; ``ranking.md`` and
``ranking.html`` likewise; a long board is collapsed on the terminal; hostile model names
stay data in every output; ``report --leaderboards`` gives rank's boards for the same
settings. On a small real replay directory (two release judges on MT-Bench, recorded
verdicts joined in the driver: no Ray) and on simulated judgments where a test needs many
or hostile models."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console
from typer.testing import CliRunner

import voirdire
from tests.ranking_sim import judgments, order_judgments
from voirdire.analysis.ranking.rank import rank_judgments
from voirdire.analysis.report.leaderboard import BOARD_ROWS
from voirdire.analysis.report.ranking import print_boards, write_ranking
from voirdire.cli import app
from voirdire.escape import markdown

MODELS = ["gpt-4", "alpaca-13b", "llama-13b", "claude-v1", "vicuna-13b-v1.3"]
REPLICATES = 50


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory, data_dir) -> Path:
    """Two release judges' recorded MT-Bench verdicts on five models, both orders."""
    out = tmp_path_factory.mktemp("board") / "mt-board"
    job = {
        "name": "mt-board",
        "output_dir": str(out),
        "benchmark": {"name": "mtbench", "data_dir": str(data_dir), "candidates": MODELS,
                      "tasks": ["writing", "coding"]},
        "judges": [{"name": "gpt4", "backend": "replay", "recorded": "gpt-4-0613"},
                   {"name": "gemini", "backend": "replay", "recorded": "gemini-pro"}],
    }  # fmt: skip
    voirdire.run(job)
    return out


@pytest.fixture(scope="module")
def ranked(replay_dir, tmp_path_factory) -> tuple[str, Path]:
    """``voirdire rank`` of the replay directory: its output and where it wrote."""
    out = tmp_path_factory.mktemp("ranked") / "rank"
    res = CliRunner().invoke(
        app, ["rank", str(replay_dir), "--out", str(out), "--replicates", str(REPLICATES),
              "--no-progress"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return res.output, out


def _board(lb: pl.DataFrame, judge: str, view: str) -> pl.DataFrame:
    """One board of the CSV by rating, best first (NaN last), ties by name."""
    return (
        lb.filter(
            (pl.col("judge") == judge)
            & (pl.col("strategy") == "single")
            & (pl.col("view") == view)
        )
        .with_columns(_r=pl.col("rating").fill_nan(None))
        .sort(["_r", "model"], descending=[True, False], nulls_last=True)
    )


def _rating(x: float) -> str:
    return "+∞" if x == np.inf else "−∞" if x == -np.inf else f"{x:.0f}"


def test_the_first_line_names_the_best_rated_model_of_the_csv(ranked):
    output, out = ranked
    lb = pl.read_csv(out / "metrics" / "leaderboard.csv")
    first = output.splitlines()[0]
    # judges by name (gemini before gpt4), views first, swapped, pooled
    assert first.startswith("MTBench · gemini · first: top "), first
    best = _board(lb, "gemini", "first").row(0, named=True)
    assert f"top {best['model']}, rating {_rating(best['rating'])} " in first
    tied = [
        m
        for m, r in _board(lb, "gemini", "first").select("model", "rank_lo").rows()
        if r == 1 and m != best["model"]
    ]
    assert ("tied with it (rank set holds 1): " + ", ".join(tied)) in first if tied else (
        "no other model's rank set holds 1" in first
    )  # fmt: skip
    answers = [line for line in output.splitlines() if ": top " in line]
    assert len(answers) == 2 * 3 + 3  # 2 judges x 3 views, the panel's jury x 3
    # the flips come after the boards
    assert output.index("the board by rating") < output.index("rank flips between")


def _terminal_rows(output: str, title: str) -> list[list[str]]:
    """The body rows of the rich table titled ``title``."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    rows = []
    for line in lines[start + 4 :]:
        if not line.startswith("│"):
            break
        rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def test_the_board_table_is_the_csv_by_rating(ranked):
    output, out = ranked
    lb = pl.read_csv(out / "metrics" / "leaderboard.csv")
    md = (out / "ranking.md").read_text(encoding="utf-8")
    for judge in ("gemini", "gpt4"):
        want = [
            [m, _rating(r), f"{lo}–{hi}" if lo != hi else str(lo), f"{n:,}"]
            for m, r, lo, hi, n in _board(lb, judge, "pooled")
            .select("model", "rating", "rank_lo", "rank_hi", "n")
            .rows()
        ]
        got = _terminal_rows(output, f"MTBench · {judge} · pooled: the board by rating")
        assert [[r[0], r[1], r[3], r[-1]] for r in got] == want
        section = md.split(f"### MTBench · {judge} · pooled")[1].split("###")[0]
        rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
        assert [[c.strip() for c in r.strip("|").split(" | ")][:2] for r in rows] == [
            w[:2] for w in want
        ]
    assert md.index("- MTBench · gemini · first: top") < md.index("### Rank flips")
    html = (out / "ranking.html").read_text(encoding="utf-8")
    assert (
        "report.css" not in html and "<style>" in html and 'id="model-search"' in html
    )
    assert html.count('class="vega"') == 3  # a figure per judge (the panel too)
    assert not re.search(r"""(src|href)=["']https?:""", html)  # no network


def test_a_long_board_is_collapsed_to_its_top_rows():
    rng = np.random.default_rng(3)
    k = BOARD_ROWS + 4
    j = order_judgments(np.linspace(0, 3, k), 6, rng)
    r = rank_judgments(j, replicates=20, strategies=[])
    buf = io.StringIO()
    print_boards(r, Console(file=buf, width=200), "out/metrics/leaderboard.csv")
    out = buf.getvalue()
    rows = _terminal_rows(out, "sim · sim · pooled: the board by rating")
    assert len(rows) == BOARD_ROWS
    assert "… 4 more in out/metrics/leaderboard.csv" in out
    top = _board(r.leaderboard, "sim", "pooled").get_column("model").to_list()
    assert [row[0] for row in rows] == top[:BOARD_ROWS]


HOSTILE = [
    "[red]x[/]",
    "evil | 1 | FORGED",
    "<script>alert(1)</script>",
    "t\x1b]0;PWN\x07",
]


def test_hostile_model_names_stay_data_everywhere(tmp_path):
    s = {m: i for i, m in enumerate(HOSTILE)}
    pairs = [(a, b) for i, a in enumerate(HOSTILE) for b in HOSTILE[i + 1 :]]
    j = judgments(pairs, 6, lambda sh: "A" if s[sh[0]] > s[sh[1]] else "B")
    r = rank_judgments(j, replicates=20, strategies=[])
    buf = io.StringIO()
    print_boards(r, Console(file=buf, width=250, force_terminal=True), "x.csv")
    out = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())  # rich's own styling
    assert "[red]x[/]" in out and "t\\x1b]0;PWN\\x07" in out and "\x07" not in out
    paths = write_ranking(r, tmp_path)
    md = paths["markdown"].read_text(encoding="utf-8")
    cells = [
        c.strip() for line in md.splitlines() for c in re.split(r"(?<!\\)\|", line)
    ]
    assert markdown("evil | 1 | FORGED") in cells and "FORGED" not in cells
    assert "<script>" not in md and "&lt;script&gt;" in md
    html = paths["html"].read_text(encoding="utf-8")
    assert (
        "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    )
    assert "\x1b" not in html
    # the figure's data: the names as data (keyed by index), its JSON closed to HTML
    specs = re.findall(
        r'<script type="application/json" id="lb\d+-spec">(.*?)</script>', html, re.S
    )
    assert specs and all("<" not in s for s in specs)
    names = json.loads(specs[0])["params"][-1]["value"]
    assert "<script>alert(1)</script>" in names


def test_report_leaderboards_are_rank_s_boards(replay_dir, tmp_path):
    """The same settings, the same boards and flips: both read the replicates and the seed
    of the analysis' settings (before, the report drew 200 replicates and rank 1,000)."""
    import inspect

    from voirdire.analysis.settings import DEFAULTS

    assert (
        inspect.signature(voirdire.api.rank).parameters["replicates"].default
        == DEFAULTS.replicates
    )
    voirdire.report([replay_dir], out=tmp_path / "rep", leaderboards=True, replicates=REPLICATES,
                    figures=())  # fmt: skip
    _, paths = voirdire.rank([replay_dir], out=tmp_path / "rank", replicates=REPLICATES)
    for name in ("leaderboard.csv", "rank_flips.csv"):
        a = pl.read_csv(tmp_path / "rep" / "metrics" / name)
        b = pl.read_csv(paths["leaderboard"].parent / name)
        assert a.equals(b, null_equal=True), name
    answer = re.compile(r"<li><b>[^<]*</b>: top [^<]*</li>")
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    alone = paths["html"].read_text(encoding="utf-8")
    assert answer.findall(page) == answer.findall(alone) != []


def test_rank_runs_as_named_stages(replay_dir, tmp_path):
    from voirdire.stages import watching

    seen = []
    with watching(lambda name, i, n, depth: seen.append(name)):
        voirdire.rank([replay_dir], out=tmp_path / "r", replicates=10)
    assert [s for s in seen if s in ("views", "boards", "flips", "style")] == [
        "views", "boards", "flips", "style",
    ]  # fmt: skip


def test_the_page_draws_offline_and_finds_a_model(ranked, browser_ok):
    """``ranking.html`` in headless Chromium: offline from one file, no console error, a
    figure per judge drawn with legends of at most 12 entries; typing a model's name
    marks its board rows and redraws the figures (the model drawn larger, the rest faint)."""
    import time

    from selenium.webdriver.common.by import By

    from tests.browser import chromium, console_errors, open_page, requests_made

    _, out = ranked
    with chromium(1400, 900) as d:
        requests_made(d)
        open_page(d, out / "ranking.html")
        made = requests_made(d)
        assert made and all(u.split(":", 1)[0] in ("file", "data", "blob", "about") for u in made), made  # fmt: skip
        assert console_errors(d) == []
        drawn = "return Array.prototype.map.call(document.querySelectorAll('div.vega'),function(e){return e.innerHTML})"
        before = d.execute_script(drawn)
        assert len(before) == 3 and all("role-mark" in h for h in before)
        legends = d.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('div.vega svg g.role-legend'),"
            "function(g){return g.querySelectorAll('g.role-legend-label text').length})"
        )
        assert legends and all(k <= 12 for k in legends), legends
        d.find_element(By.ID, "model-search").send_keys("claude")
        time.sleep(1.0)
        found = [r.get_attribute("data-model") for r in d.find_elements(By.CSS_SELECTOR, "tr.found")]  # fmt: skip
        assert found and all("claude" in m for m in found), found
        assert len(found) == 3  # claude-v1 on each judge's board
        assert "1 model found" in d.find_element(By.ID, "model-count").text
        after = d.execute_script(drawn)
        assert all(a != b for a, b in zip(after, before))
        assert console_errors(d) == []


def test_with_style_the_board_adds_the_style_rating_and_the_lc_win_rate(
    replay_dir, tmp_path
):
    ranking, paths = voirdire.rank(
        [replay_dir], out=tmp_path / "s", replicates=10, style=True
    )
    buf = io.StringIO()
    print_boards(ranking, Console(file=buf, width=250), "x.csv")
    rows = _terminal_rows(
        buf.getvalue(), "MTBench · gpt4 · pooled: the board by rating"
    )
    lc = pl.read_csv(paths["lc_win_rate"]).filter(
        (pl.col("judge") == "gpt4") & (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    )  # fmt: skip
    want = dict(lc.select("model", "lc_win_rate").rows())
    assert {r[0]: r[-2] for r in rows} == {
        m: "–" if m not in want else f"{want[m]:.3f}" for m in (r[0] for r in rows)
    }
    assert "style-controlled" in buf.getvalue() and "LC win rate" in buf.getvalue()
