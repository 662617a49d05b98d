"""The verdict viewer opened from the report's figures in a real browser (issue #40 item
11; :mod:`tests.browser`, the network off): on a report of 13 simulated judges over 4 tasks
(:mod:`tests.study_simulate`, audited as a plain verdict log, so past the 12-judge legend
its by-task figure is the judge × task heatmaps), a click on a heatmap's cell opens that
judge's flipped pairs on that task."""

from __future__ import annotations

from pathlib import Path

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
