"""The verdict viewer opened from the report's figures in a real browser (issue #40 item
11; :mod:`tests.browser`, the network off): on a report of 13 simulated judges over 4 tasks
(:mod:`tests.study_simulate`, audited as a plain verdict log, so past the 12-judge legend
its by-task figure is the judge × task heatmaps), a click on a heatmap's cell opens that
judge's flipped pairs on that task."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest

from tests.study_simulate import simulated_study_log
from tests.test_verdict_viewer import check_viewer_of, hover_and_click

pytestmark = pytest.mark.slow

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    import voirdire

    tmp = tmp_path_factory.mktemp("viewer13")
    log = tmp / "sim13.parquet"
    simulated_study_log(13, questions=15).write_parquet(log)
    return voirdire.audit(
        [log], "logtable", out=tmp / "audit13", log={"columns": {c: c for c in COLUMNS}}
    ).output_dir


@pytest.fixture(scope="module")
def report13(audited, tmp_path_factory) -> Path:
    import voirdire

    return voirdire.report(
        [audited], out=tmp_path_factory.mktemp("report13"), replicates=20
    )


def test_a_click_on_a_heatmap_cell_opens_the_pairs_behind_it(
    audited, report13, browser_ok
):
    from tests.browser import chromium, console_errors, open_page
    from voirdire.analysis.report.verdicts import flipped_pairs
    from voirdire.analysis.results_dir import load_judgments

    flips = flipped_pairs(load_judgments(audited))
    with chromium(1400, 900) as d:
        open_page(d, report13)
        marks = d.find_elements(
            "css selector", 'div.vega[data-key^="task_heatmaps:"] g.mark-rect.role-mark'
        )
        assert len(marks) == 3  # PC, PF, accuracy
        cells = marks[1].find_elements("css selector", "path")  # the PF heatmap's
        assert len(cells) == 13 * 4  # judge × task
        tip = hover_and_click(d, cells[len(cells) // 2])
        assert "PF" in tip  # the PF heatmap's cell
        check_viewer_of(d, flips, tip["judge"], tip["task"])
        assert console_errors(d) == []


@pytest.fixture(scope="module")
def list_report(tmp_path_factory, data_dir) -> tuple[Path, Path]:
    """A list-wise job's directory and its report (:func:`tests.test_list_verdicts.listwise_run`)."""
    import voirdire
    from tests.test_list_verdicts import listwise_run

    run = listwise_run(tmp_path_factory.mktemp("lists") / "run", data_dir)
    return run, voirdire.report(
        [run], out=tmp_path_factory.mktemp("list-report"), replicates=20
    )


def _shown(d) -> list[list[str]]:
    return d.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('article.pair'),"
        "function(a){return a.offsetParent!==null}).map(function(a){"
        "return [a.getAttribute('data-judge'),a.className]})"
    )


def test_a_listwise_report_opens_its_viewer(list_report, browser_ok):
    """From the judges' table of a list-wise report, a judge's link opens its series: each
    with its permutations' orders and the candidate each chose; paged, searchable, offline."""
    from selenium.webdriver.common.by import By

    from tests.browser import chromium, console_errors, open_page, requests_made
    from tests.test_verdict_viewer import _wait
    from voirdire.analysis.report.list_verdicts import flipped_lists
    from voirdire.analysis.report.verdicts import PAGE_SIZE
    from voirdire.analysis.results_dir import load_judgments

    run, report = list_report
    lists = flipped_lists(load_judgments(run))
    counts = dict(lists.counts.select("judge", "shown").iter_rows())
    judge = max(counts, key=lambda j: counts[j])
    with chromium(1400, 900) as d:
        requests_made(d)
        open_page(d, report)
        link = d.find_element(By.CSS_SELECTOR, f'table:not(.summary) a[href="verdicts.html#judge={judge}"]')  # fmt: skip
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", link)
        link.click()
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        shown = _shown(d)
        assert len(shown) == min(counts[judge], PAGE_SIZE) > 0
        assert all(j == judge and "list" in c.split() for j, c in shown)
        # a series is one instance in each of its orders: counted as series, not pairs
        assert d.find_element(By.ID, "pair-count").text == f"{counts[judge]} series"
        first = d.find_elements(By.CSS_SELECTOR, "article.pair.list:not(.hidden)")[0]
        orders = first.find_elements(By.CSS_SELECTOR, "div.order")
        assert len(orders) == 3  # the 3 cyclic orders, each slot by slot
        slots = [o.find_element(By.CSS_SELECTOR, "span.slots").text for o in orders]
        assert len(set(slots)) == 3 and all(s.startswith("A ") for s in slots)
        read = [o.find_element(By.CSS_SELECTOR, "b.verdict").text for o in orders]
        assert len(set(read)) > 1  # the choice changed with the order
        assert "permutation" in first.find_element(By.CSS_SELECTOR, ".flip").text
        # every judge: pages; search a question's id
        d.find_element(By.ID, "all-judges").click()
        total = lists.series.height
        _wait(
            d,
            f"return document.getElementById('pair-count').textContent=='{total} series'",
        )
        assert len(_shown(d)) == PAGE_SIZE
        qid = lists.series.get_column("question_id")[0]
        d.find_element(By.ID, "pair-search").send_keys(f"{qid} ")
        want = lists.series.filter(pl.col("question_id") == qid).height
        _wait(
            d,
            f"return document.querySelectorAll('article.pair:not(.hidden)').length=={want}",
        )
        made = requests_made(d)
        assert made and all(u.split(":", 1)[0] in ("file", "data", "blob", "about") for u in made), made  # fmt: skip
        assert console_errors(d) == []


def test_an_instruction_with_a_script_shows_as_text(list_report, tmp_path, browser_ok):
    """A list-wise series whose instruction, reply and judge's name hold ``</pre><script>``:
    the page shows them as text, runs no script of theirs, opens no dialog."""
    from selenium.webdriver.common.by import By

    from tests.browser import chromium, console_errors
    from tests.test_list_verdicts import HOSTILE, _page_of, hostile_lists
    from tests.test_verdict_viewer import _wait
    from voirdire.analysis.report.verdicts import verdicts_page
    from voirdire.analysis.results_dir import load_judgments

    run, _ = list_report
    page = tmp_path / "verdicts.html"
    page.write_text(
        verdicts_page(_page_of(hostile_lists(load_judgments(run)))), encoding="utf-8"
    )
    with chromium(1400, 900) as d:
        d.get(page.as_uri())
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        first = d.find_elements(By.CSS_SELECTOR, "article.pair.list:not(.hidden)")[0]
        assert (
            first.find_element(By.CSS_SELECTOR, "pre.instruction").get_attribute(
                "textContent"
            )
            == HOSTILE
        )
        assert d.execute_script("return document.scripts.length") == 3
        assert d.execute_script("return document.querySelectorAll('img').length") == 0
        assert HOSTILE in d.execute_script("return document.body.textContent")
        d.get(page.as_uri() + "#judge=" + quote(HOSTILE, safe=""))
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        assert d.find_element(By.ID, "judge-filter").text.startswith(
            "judge: " + HOSTILE
        )
        assert all(j == HOSTILE for j, _ in _shown(d)) and _shown(d)
        assert console_errors(d) == []


def test_the_pager_counts_pairs_and_series_apart(list_report, tmp_path, browser_ok):
    """A viewer holding a pairwise judge's flipped pairs and list-wise series: the count
    says how many of each (a series is one instance with its orders, not pairs), for
    every judge, one list-wise judge and the pairwise one, and after a search."""
    import dataclasses

    from selenium.webdriver.common.by import By

    from tests.browser import chromium, console_errors
    from tests.test_verdict_viewer import _wait
    from voirdire.analysis.report.list_verdicts import flipped_lists
    from voirdire.analysis.report.verdicts import flipped_pairs, verdicts_page
    from voirdire.analysis.results_dir import load_judgments

    run, _ = list_report
    lists = flipped_lists(load_judgments(run))
    log = simulated_study_log(2, questions=10).with_columns(
        judge=pl.lit("pairwise judge")
    )
    log = log.unique(["judge", "instance", "first"], keep="first", maintain_order=True)
    log.write_parquet(tmp_path / "pairs.parquet")
    import voirdire

    done = voirdire.audit(
        [tmp_path / "pairs.parquet"], "logtable", out=tmp_path / "audit",
        log={"columns": {c: c for c in COLUMNS}},
    )  # fmt: skip
    pairs = flipped_pairs(load_judgments(done.output_dir))
    n_pairs, n_series = pairs.pairs.height, lists.series.height
    assert n_pairs > 0 and n_series > 0
    page = tmp_path / "verdicts.html"
    page.write_text(
        verdicts_page(dataclasses.replace(pairs, lists=lists)), encoding="utf-8"
    )
    mine = dict(lists.counts.select("judge", "shown").iter_rows())
    judge = max(mine, key=lambda j: mine[j])

    def count(hash_: str) -> str:
        d.get(page.resolve().as_uri() + hash_)
        d.refresh()
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        return d.find_element(By.ID, "pair-count").text

    with chromium(1400, 900) as d:
        assert count("") == f"{n_pairs} pairs, {n_series} series"
        assert count(f"#judge={quote(judge, safe='')}") == f"{mine[judge]} series"
        assert count("#judge=pairwise%20judge") == f"{n_pairs} pairs"
        d.find_element(By.ID, "all-judges").click()
        d.find_element(By.ID, "pair-search").send_keys("no such words at all")
        _wait(d, "return document.getElementById('pair-count').textContent=='0 pairs'")
        assert console_errors(d) == []
