"""The report in a real browser: Debian's Chromium (``chromium``, ``chromium-driver``)
driven by Selenium, the network off (:mod:`tests.browser`), on reports of 5 and 200
simulated judges over 4 tasks (:mod:`tests.study_simulate`, audited as a plain verdict log)
and of LLMBar's 65 recorded judges (the release copy beside the checkout, replayed).

Each page: no console error, no request leaves the file, every figure fits a 1400 px
viewport, no legend names more than 12 judges, searching a judge's name filters the
summary to it and writes its name in a figure, hovering a point shows its judge; a click
on an agreement cell opens its two judges' flipped pairs in the viewer, on a radar point its
judge's (at 5 judges; at 200 a cell of the one kappa heatmap).
Skipped without Chromium or Selenium, except in CI (``CI=true``), which installs them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.browser import chromium, console_errors, open_page, requests_made
from tests.study_simulate import simulated_study_log

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
LLMBAR_COPY = ROOT.parent / "shared" / "data" / "llmbar-release"
COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip


def _simulated(tmp: Path, n: int) -> Path:
    import voirdire

    log = tmp / f"sim{n}.parquet"
    simulated_study_log(n, questions=15).write_parquet(log)
    done = voirdire.audit(
        [log],
        "logtable",
        out=tmp / f"audit{n}",
        log={"columns": {c: c for c in COLUMNS}},
    )
    return voirdire.report([done.output_dir], out=tmp / f"report{n}", replicates=50)


@pytest.fixture(scope="module")
def pages(browser_ok, ray_local, tmp_path_factory) -> dict[int, Path]:
    """report.html of 5 and 200 simulated judges and, with the release copy, of LLMBar's 65."""
    import voirdire

    tmp = tmp_path_factory.mktemp("browser")
    out = {5: _simulated(tmp, 5), 200: _simulated(tmp, 200)}
    if (LLMBAR_COPY / "files").is_dir():
        res = voirdire.run(
            ROOT / "examples" / "llmbar_replay.toml", output_dir=str(tmp / "llmbar")
        )
        out[65] = voirdire.report([res.output_dir], out=tmp / "report65", replicates=50)
    elif os.environ.get("CI") == "true":
        raise AssertionError(f"the LLMBar release copy is missing: {LLMBAR_COPY}")
    return out


def _page(pages: dict[int, Path], n: int) -> Path:
    if n not in pages:
        pytest.skip(f"no LLMBar release copy at {LLMBAR_COPY}")
    return pages[n]


@pytest.mark.parametrize("n", [5, 65, 200])
def test_the_report_works_offline_fits_the_window_and_finds_a_judge(pages, n):
    check_page(_page(pages, n), n)


def check_page(page: Path, n: int) -> None:
    """The browser checks of one report of ``n`` judges (module docstring)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    with chromium(1400, 900) as d:
        requests_made(d)  # the browser's own start page
        open_page(d, page)
        # offline, from one file: every request is the file itself or inline data
        made = requests_made(d)
        assert made and all(
            u.split(":", 1)[0] in ("file", "data", "blob", "about") for u in made
        ), made
        assert console_errors(d) == []
        # the answer first: the summary opens the page, one row per judge
        rows = d.find_elements(By.CSS_SELECTOR, "table.summary tbody tr")
        assert len(rows) == n
        # every figure fits the window's width, and no legend names more than 12 entries
        fit = d.execute_script(
            "var W=document.documentElement.clientWidth,o=[];"
            "document.querySelectorAll('div.vega svg.marks').forEach(function(s){var b=s.getBoundingClientRect();o.push([s.parentNode.id,b.right,W])});"
            "return [o, document.documentElement.scrollWidth, W];"
        )  # fmt: skip
        figures, scroll_width, width = fit
        assert figures and all(right <= w for _, right, w in figures), figures
        assert scroll_width <= width
        legends = d.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('div.vega svg g.role-legend'),"
            "function(g){return g.querySelectorAll('g.role-legend-label text').length})"
        )
        assert all(k <= 12 for k in legends), legends
        # search: the summary keeps the judge's rows, a figure writes its name
        judge = rows[-1].get_attribute("data-judge")
        d.find_element(By.ID, "judge-search").send_keys(judge)
        time.sleep(1.0)
        shown = [r.get_attribute("data-judge") for r in d.find_elements(By.CSS_SELECTOR, "table.summary tbody tr") if r.is_displayed()]  # fmt: skip
        assert shown and all(judge.lower() in j.lower() for j in shown), shown
        written = d.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('div.vega[data-key^=\"pc_pf:\"] svg text'),function(t){return t.textContent})"
        )
        assert judge in written
        # hover: a point of the PC–PF figure shows its judge
        point = d.find_elements(By.CSS_SELECTOR, 'div.vega[data-key^="pc_pf:"] g.role-mark.marks path, div.vega[data-key^="pc_pf:"] g.mark-symbol path')[-1]  # fmt: skip
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", point)
        ActionChains(d).move_to_element(point).perform()
        time.sleep(0.8)
        tip = d.find_element(By.ID, "vg-tooltip-element")
        assert tip.is_displayed() and "judge" in tip.text
        assert console_errors(d) == []


def test_page_sizes_stay_within_budget(pages):
    """≤ 5 MB at 65 judges, ≤ 12 MB at 200 (the figures' data inline, Vega once)."""
    assert pages[200].stat().st_size <= 12e6
    if 65 in pages:
        assert pages[65].stat().st_size <= 5e6


def _shown(d) -> list[str]:
    """The judges of the viewer's pairs on screen."""
    return d.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('article.pair'),"
        "function(a){return a.offsetParent!==null}).map(function(a){return a.getAttribute('data-judge')})"
    )


def test_an_agreement_cell_and_a_radar_series_open_their_judges_pairs(
    pages, browser_ok
):
    """On the 5-judge report: a click on a cell of the agreement heatmaps opens the flipped
    pairs of its two judges, a click on a point of the radar that judge's (issue 40 item
    11), the viewer saying which."""
    from urllib.parse import unquote

    from selenium.webdriver.common.by import By

    from tests.test_verdict_viewer import _wait, hover_and_click
    from voirdire.analysis.report.verdicts import PAGE_SIZE, flipped_pairs
    from voirdire.analysis.results_dir import load_judgments

    page = pages[5]
    flips = flipped_pairs(load_judgments(page.parent.parent / "audit5"))
    shown = dict(flips.counts.select("judge", "shown").iter_rows())

    def opened(d) -> list[str]:
        _wait(d, "return location.href.indexOf('verdicts.html#judge=')>=0")
        _wait(d, "return document.body.getAttribute('data-viewer-ready')")
        frag = d.current_url.split("#", 1)[1]
        return [unquote(kv.split("=", 1)[1]) for kv in frag.split("&")]

    with chromium(1400, 900) as d:
        open_page(d, page)
        kappa = d.find_elements(
            By.CSS_SELECTOR, 'div.vega[data-key^="agreement:"] g.mark-rect.role-mark'
        )
        assert len(kappa) == 3  # agreement, without ties, Cohen's kappa
        cells = kappa[2].find_elements(By.CSS_SELECTOR, "path")
        assert len(cells) == 5 * 4  # every ordered pair of two judges
        tip = hover_and_click(d, cells[len(cells) // 2])
        pair = [tip["judge_a"], tip["judge_b"]]
        assert opened(d) == pair and pair[0] != pair[1]
        want = min(shown[pair[0]] + shown[pair[1]], PAGE_SIZE)
        got = _shown(d)
        assert len(got) == want > 0 and set(got) <= set(pair)
        said = d.find_element(By.ID, "judge-filter").text
        assert said == f"judges: {pair[0]}, {pair[1]}"
        count = d.find_element(By.ID, "pair-count").text
        assert count == f"{shown[pair[0]] + shown[pair[1]]} pairs"
        # the radar: a point of one judge's polygon
        open_page(d, page)
        points = d.find_elements(
            By.CSS_SELECTOR, 'div.vega[data-key^="radar:"] g.mark-symbol.role-mark path'
        )
        assert points
        tip = hover_and_click(d, points[len(points) // 2])
        assert opened(d) == [tip["judge"]]
        assert _shown(d) == [tip["judge"]] * min(shown[tip["judge"]], PAGE_SIZE)
        assert d.find_element(By.ID, "judge-filter").text == f"judge: {tip['judge']}"
        assert console_errors(d) == []
        # 200 judges: one heatmap of Cohen's kappa, each pair once, names looked up
        open_page(d, pages[200])
        cell = d.execute_script(
            "var c=document.querySelectorAll('div.vega[data-key^=\"agreement:\"] g.mark-rect.role-mark path');"
            "return c.length==200*199/2?c[Math.floor(c.length/3)]:null"
        )
        assert cell is not None
        tip = hover_and_click(d, cell)
        pair = [tip["judge_a"], tip["judge_b"]]
        assert opened(d) == pair and pair[0] != pair[1]
        assert set(_shown(d)) <= set(pair) and _shown(d)
        assert console_errors(d) == []
