"""The verdict viewer (issue #40 item 11): ``verdicts.html`` beside ``report.html`` opens the
pairs whose verdict changed with the order. On a real replay of the bundled MT-Bench
verdicts (3 judges, 2 tasks, 3 candidates, both orders; no Ray): the pairs shown really
flip (recomputed here from the judgments' letters), the bounds hold and say what they
left out, the prompts rebuilt are as long as the prompts sent, received text and names
are escaped, the report links each judge to its pairs, and in Chromium the page filters
to one judge from a table's link and from a figure's point, pages, searches and makes no
request."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import unquote

import polars as pl
import pytest

import voirdire
from voirdire.analysis.report.verdicts import (
    PAGE_SIZE,
    flipped_pairs,
    verdicts_page,
    with_prompts,
)

HOSTILE = '</script><script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, data_dir) -> Path:
    from voirdire.engine.spec import parse_job

    out = tmp_path_factory.mktemp("viewer") / "run"
    spec = parse_job(
        {
            "name": "viewer", "output_dir": str(out),
            "benchmark": {"name": "mtbench", "data_dir": str(data_dir), "sample": "full",
                          "tasks": ["writing", "math"], "candidates": ["gpt-4", "alpaca-13b", "llama-13b"]},
            "comparison": {"mode": "pairwise", "option_mode": 3, "permutations": "both", "repetitions": 1},
            "judges": [{"name": "*", "backend": "replay", "recorded": "*", "study": "position_bias"}],
        },
        "viewer",
    )  # fmt: skip
    voirdire.run(spec)
    return out


@pytest.fixture(scope="module")
def judgments(replayed) -> pl.DataFrame:
    from voirdire.analysis.results_dir import load_judgments

    return load_judgments(replayed)


def _verdict(letter: str | None, candidate_first: bool) -> str | None:
    """The candidate's verdict from a letter, written out here (not the analysis')."""
    mine, theirs = ("A", "B") if candidate_first else ("B", "A")
    return {mine: "win", theirs: "loss", "C": "tie"}.get(letter)


def _orders(judgments: pl.DataFrame) -> dict[tuple, dict[bool, str | None]]:
    """(judge, question, candidate, repetition) -> {candidate shown first: verdict}."""
    out: dict[tuple, dict[bool, str | None]] = {}
    for r in judgments.iter_rows(named=True):
        first = r["shown"][0] == r["candidate"]
        key = (r["judge"], r["question_id"], r["candidate"], r["repetition"])
        out.setdefault(key, {})[first] = _verdict(r["extracted"], first)
    return out


def test_the_pairs_shown_really_flip_and_every_flip_is_counted(judgments):
    flips = flipped_pairs(judgments)
    orders = _orders(judgments)
    assert flips.pairs.height > PAGE_SIZE  # enough to page
    for r in flips.pairs.iter_rows(named=True):
        o = orders[(r["judge"], r["question_id"], r["candidate"], r["repetition"])]
        assert (o[True], o[False]) == (r["v1"], r["v2"])
        assert None not in (o[True], o[False]) and o[True] != o[False]
        assert r["shown1"][0] == r["candidate"] and r["shown2"][1] == r["candidate"]
        assert r["output1"] and r["output2"]  # the replies, as recorded
    expected: dict[str, int] = {}
    for (judge, *_), o in orders.items():
        if None not in (o.get(True), o.get(False)):
            expected[judge] = expected.get(judge, 0) + (o[True] != o[False])
    counts = dict(flips.counts.select("judge", "flipped").iter_rows())
    assert counts == expected and len(counts) == 3
    # each judge's flips, up to the bound, every one on the page
    assert all(n > 0 for n in expected.values())
    shown = dict(flips.counts.select("judge", "shown").iter_rows())
    assert shown == {j: min(n, flips.per_judge) for j, n in expected.items()}


def test_the_bounds_hold_and_the_page_says_what_they_left_out(judgments):
    flips = flipped_pairs(judgments, per_judge=4, max_pairs=10)
    per = flips.pairs.group_by("judge").len()
    assert flips.per_judge == 3  # 10 // 3 judges
    assert per.get_column("len").max() <= 3 and flips.pairs.height <= 10
    total = int(flips.counts.get_column("flipped").sum())
    assert flips.left_out == total - flips.pairs.height > 0
    page = verdicts_page(flips)
    assert f"{flips.left_out:,} flipped pairs left out" in page
    assert page.count("<article") == flips.pairs.height
    # taken round the tasks: a judge's few pairs are not all from one task
    tasks = flips.pairs.group_by("judge").agg(pl.col("task").n_unique())
    assert (tasks.get_column("task") == 2).all()
    with pytest.raises(ValueError, match="at least 1"):
        flipped_pairs(judgments, per_judge=0)
    # nothing to pair (no rows, list-wise rows only): an empty page that says so
    for none in (judgments.head(0), judgments.with_columns(mode=pl.lit("listwise"))):
        empty = flipped_pairs(none)
        assert empty.pairs.height == empty.counts.height == empty.left_out == 0
        assert "No pair changed its verdict with the order." in verdicts_page(empty)


def test_two_directories_queries_never_pair(judgments):
    """One directory's candidate-first rows and another's candidate-second rows: no pair
    (together, without the directory, they would be the same pairs as one directory's)."""
    first = pl.col("shown").list.first() == pl.col("candidate")
    a = judgments.filter(first).with_columns(directory=pl.lit("0"))
    b = judgments.filter(~first).with_columns(directory=pl.lit("1"))
    apart = flipped_pairs(pl.concat([a, b]))
    assert apart.pairs.height == 0 and apart.counts.height == 0
    together = flipped_pairs(pl.concat([a, b]).drop("directory"))
    assert together.pairs.height == flipped_pairs(judgments).pairs.height > 0


def test_the_rebuilt_prompts_are_the_prompts_sent(judgments, replayed):
    from voirdire.analysis.results_dir import dir_benchmark
    from voirdire.layout import read_job_record

    flips = flipped_pairs(judgments)
    pairs = with_prompts(flips.pairs, dir_benchmark(read_job_record(replayed)))
    sent = {
        (r["judge"], r["question_id"], r["candidate"], tuple(r["shown"])): r["prompt_chars"]
        for r in judgments.iter_rows(named=True)
    }  # fmt: skip
    for r in pairs.iter_rows(named=True):
        assert r["instruction"] and r["instruction"] in r["prompt1"]
        for s in "12":
            key = (r["judge"], r["question_id"], r["candidate"], tuple(r[f"shown{s}"]))
            assert len(r[f"prompt{s}"]) == sent[key]
    page = verdicts_page(dataclass_replace(flips, pairs))
    assert "Prompt (rebuilt from the benchmark)" in page
    assert "The prompt was not recorded" not in page
    # without the benchmark (a recorded log): the verdicts and replies, and a sentence
    bare = verdicts_page(dataclass_replace(flips, with_prompts(flips.pairs, None)))
    assert "The prompt was not recorded" in bare and "Prompt (rebuilt" not in bare
    assert "The instruction is not in these results" in bare


def dataclass_replace(flips, pairs):
    import dataclasses

    return dataclasses.replace(flips, pairs=pairs)


def test_hostile_names_and_replies_are_escaped(judgments):
    first = judgments.get_column("judge").min()
    hostile = judgments.with_columns(
        judge=pl.when(pl.col("judge") == first)
        .then(pl.lit(HOSTILE))
        .otherwise("judge"),
        output=pl.lit(HOSTILE),
    )
    page = verdicts_page(flipped_pairs(hostile))
    assert HOSTILE not in page and "<script>alert" not in page
    assert "onerror=alert(1)&gt;" in page and "&lt;/script&gt;&lt;script&gt;" in page
    # the script's data: JSON in which no "</" can close the block
    block = re.search(
        r'<script type="application/json" id="viewer-config">(.*?)</script>', page, re.S
    ).group(1)
    assert "</" not in block and HOSTILE in json.loads(block)["judges"]
    assert page.count("<script") == 3  # the config, the sorter, the viewer


@pytest.fixture(scope="module")
def report(replayed, tmp_path_factory) -> Path:
    return voirdire.report(
        [replayed], out=tmp_path_factory.mktemp("viewer-report"), replicates=20
    )


@pytest.mark.slow
def test_the_report_links_each_judge_to_its_flipped_pairs(report, judgments):
    page = report.read_text(encoding="utf-8")
    viewer = report.parent / "verdicts.html"
    assert viewer.is_file()
    assert '<a href="verdicts.html" id="verdicts-link">Flipped verdicts</a>' in page
    for judge in judgments.get_column("judge").unique():
        # the summary and the judges' table
        assert page.count(f'href="verdicts.html#judge={judge}"') == 2, judge
    text = viewer.read_text(encoding="utf-8")
    assert (
        "Prompt (rebuilt from the benchmark)" in text and 'href="report.html"' in text
    )


def _visible(d) -> list[str]:
    return d.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('article.pair'),"
        "function(a){return a.offsetParent!==null}).map(function(a){return a.getAttribute('data-judge')})"
    )


def _wait(d, script: str, timeout: float = 20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if got := d.execute_script(script):
            return got
        time.sleep(0.1)
    raise TimeoutError(script)


def test_the_viewer_opens_from_a_row_and_a_point_pages_and_searches_offline(
    report, judgments, browser_ok
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from tests.browser import chromium, console_errors, open_page, requests_made

    flips = flipped_pairs(judgments)
    n = flips.pairs.height
    judge = flips.counts.get_column("judge")[-1]
    mine = int(flips.counts.filter(pl.col("judge") == judge).get_column("shown")[0])
    with chromium(1400, 900) as d:
        requests_made(d)
        open_page(d, report)
        link = d.find_element(
            By.CSS_SELECTOR,
            f'table:not(.summary) a[href="verdicts.html#judge={judge}"]',
        )
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", link)
        link.click()
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        assert d.current_url.endswith(f"verdicts.html#judge={judge}")
        assert _visible(d) == [judge] * min(mine, PAGE_SIZE)
        # every judge: pages of PAGE_SIZE
        d.find_element(By.ID, "all-judges").click()
        _wait(
            d, f"return document.getElementById('pair-count').textContent=='{n} pairs'"
        )
        assert len(_visible(d)) == PAGE_SIZE
        d.find_element(By.ID, "next").click()
        assert len(_visible(d)) == min(PAGE_SIZE, n - PAGE_SIZE)
        assert "page 2 of" in d.find_element(By.ID, "page-of").text
        # search: a question's words
        row = flips.pairs.row(0, named=True)
        qid = row["question_id"]
        box = d.find_element(By.ID, "pair-search")
        box.send_keys(f"{qid} ")  # the id, then a space: not a prefix of another id
        want = flips.pairs.filter(pl.col("question_id") == qid).height
        _wait(
            d,
            f"return document.querySelectorAll('article.pair:not(.hidden)').length=={want}",
        )
        heads = [
            h.text
            for h in d.find_elements(By.CSS_SELECTOR, "article.pair:not(.hidden) h3")
        ]
        assert heads and all(f"question {qid} " in h for h in heads), heads
        # a figure's point: the PC–PF figure's last judge
        open_page(d, report)
        point = d.find_elements(
            By.CSS_SELECTOR, 'div.vega[data-key^="pc_pf:"] g.mark-symbol path'
        )[-1]
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", point)
        ActionChains(d).move_to_element(point).click().perform()
        _wait(d, "return location.href.indexOf('verdicts.html#judge=')>=0")
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        clicked = unquote(d.current_url.split("#judge=", 1)[1])
        assert clicked in set(flips.counts.get_column("judge"))
        assert set(_visible(d)) == {clicked}
        made = requests_made(d)
        assert made and all(
            u.split(":", 1)[0] in ("file", "data", "blob", "about") for u in made
        ), made
        assert console_errors(d) == []


def hover_and_click(d, el) -> dict[str, str]:
    """Hover ``el`` (a figure's mark), read its tooltip (key → value), click it; the
    tooltip says which judge and task the mark is of (test machinery)."""
    from selenium.webdriver.common.action_chains import ActionChains

    d.execute_script("arguments[0].scrollIntoView({block:'center'})", el)
    ActionChains(d).move_to_element(el).perform()
    tip = _wait(
        d,
        "var t=document.getElementById('vg-tooltip-element');"
        "if(!t||!t.classList.contains('visible'))return null;var o={};"
        "t.querySelectorAll('tr').forEach(function(r){var c=r.querySelectorAll('td');"
        "if(c.length==2)o[c[0].textContent]=c[1].textContent});"
        "return Object.keys(o).length?o:null",
    )
    ActionChains(d).move_to_element(el).click().perform()
    return tip


def tallest(d, css: str):
    """The mark matching ``css`` drawn tallest (a bar of non-zero height to click)."""
    from selenium.webdriver.common.by import By

    marks = d.find_elements(By.CSS_SELECTOR, css)
    assert marks, css
    heights = [m.rect["height"] * m.rect["width"] for m in marks]
    return marks[heights.index(max(heights))]


def check_viewer_of(d, flips, judge: str, task: str) -> None:
    """The viewer, opened from a figure's mark of (``judge``, ``task``), shows exactly
    that judge's flipped pairs on that task (the first page of them)."""
    _wait(d, "return location.href.indexOf('verdicts.html#judge=')>=0")
    _wait(d, "return document.body.getAttribute('data-viewer-ready')")
    frag = d.current_url.split("#", 1)[1]
    got = dict(kv.split("=", 1) for kv in frag.split("&"))
    assert {k: unquote(v) for k, v in got.items()} == {"judge": judge, "task": task}
    want = flips.pairs.filter((pl.col("judge") == judge) & (pl.col("task") == task))
    shown = d.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('article.pair'),"
        "function(a){return a.offsetParent!==null}).map(function(a){"
        "return [a.getAttribute('data-judge'),a.getAttribute('data-task')]})"
    )
    assert want.height > 0
    assert shown == [[judge, task]] * min(want.height, PAGE_SIZE)
    said = d.execute_script(
        "return document.getElementById('judge-filter').textContent"
    )
    assert said.startswith(f"judge: {judge}") and f"task: {task}" in said


def test_a_click_on_a_bar_opens_the_pairs_behind_it(report, judgments, browser_ok):
    """The grouped bars of PF by task: a bar is one judge on one task; a click opens that
    judge's flipped pairs on that task, no other."""
    from tests.browser import chromium, console_errors, open_page

    flips = flipped_pairs(judgments)
    with chromium(1400, 900) as d:
        open_page(d, report)
        bar = tallest(d, 'div.vega[data-key^="pf_bars:"] g.mark-rect path')
        tip = hover_and_click(d, bar)
        check_viewer_of(d, flips, tip["judge"], tip["task"])
        assert console_errors(d) == []
