"""The report's section "Human boards from a few labels", built from what ``voirdire
people`` wrote (``docs/people.md``, "In the report"), on a real audit: five simulated judges
of :mod:`tests.study_simulate` (one named with rich markup, HTML and a Markdown pipe), audited
as a plain verdict log with its gold labels, ``voirdire people`` on half the labels, then
``voirdire report``.

The page and ``report.md`` show the three boards side by side (PPI++, labels alone, the
judge alone) and the selective-judging curve; in a real browser (:mod:`tests.browser`) the
figure draws with no console error, fits the window, its menu switches the judge and the
board, and hover names the model. A report of other judges, or with no ``people/`` folder,
has no section; a broken table is refused in one line before anything is written.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.browser import chromium, console_errors, open_page
from tests.study_simulate import simulated_study_log
from voirdire.core import ConfigError

pytestmark = pytest.mark.ray

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip
ODD = "sim[/]<b>|x"  # a judge name holding rich markup, HTML and a Markdown pipe


@pytest.fixture(scope="module")
def made(ray_local, tmp_path_factory) -> dict[str, Path]:
    """An audit of five judges, ``voirdire people`` beside it (``audit-people/``, the default)
    on half the labels, and its report (``report/``)."""
    tmp = tmp_path_factory.mktemp("people-report")
    log = simulated_study_log(5, questions=15)
    first = log["judge"].unique().sort()[0]
    log = log.with_columns(judge=pl.col("judge").replace({first: ODD}))
    log.write_parquet(tmp / "sim.parquet")
    done = voirdire.audit(
        [tmp / "sim.parquet"],
        "logtable",
        out=tmp / "audit",
        log={"columns": {c: c for c in COLUMNS}},
    )
    study, _ = voirdire.people([done.output_dir], share=0.5, alpha=0.2)
    page = voirdire.report([done.output_dir], out=tmp / "report", replicates=20)
    return {"audit": Path(done.output_dir), "page": page, "tmp": tmp, "study": study}


def test_the_report_shows_the_three_boards_and_the_curve(made):
    page, study = made["page"], made["study"]
    html = page.read_text()
    assert 'id="people"' in html and 'href="#people"' in html
    assert 'data-key="people:LogTable"' in html
    for words in ("PPI++ (labels + judge)", "labels alone", "judge alone", "Selective judging"):  # fmt: skip
        assert words in html, words
    # one row per judge in the section's table, the odd name escaped, never a tag
    section = html[html.index('id="people"') :]
    assert section.count('<tr data-judge="') >= 5
    assert "sim[/]&lt;b&gt;|x" in section and "<b>|x" not in html
    md = (page.parent / "report.md").read_text()
    body = md[md.index("## Human boards from a few labels") :]
    assert "![LogTable](figures/people_LogTable.png)" in body
    assert (page.parent / "figures" / "people_LogTable.png").is_file()
    assert "### LogTable / sim\\[/\\]&lt;b&gt;\\|x" in body and "<b>" not in body
    # every (judge, model) of the PPI++ board is shown, with labels alone and the judge beside
    ppi = study.boards.filter(
        (pl.col("kind") == "win_rate") & (pl.col("estimator") == "ppi")
    )
    assert body.count("| model | PPI++ | ranks | labels only | ranks | judge only |") == 2 * 5  # fmt: skip
    r = ppi.row(0, named=True)
    assert f"{r['estimate']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]" in body
    assert "### Selective judges" in body and "### Cascade" in body


def _sign(people: Path) -> None:
    """A people directory's manifest written again over the files it names (a table
    changed here stands for another run's set)."""
    from voirdire.file_set import write_manifest
    from voirdire.layout import PEOPLE_MANIFEST

    named = json.loads((people / PEOPLE_MANIFEST).read_text())["files"]
    write_manifest(people, PEOPLE_MANIFEST, [people / f for f in named])


def test_no_section_without_people_files_or_for_other_judges(made, tmp_path):
    audit, tmp = made["audit"], made["tmp"]
    copy = tmp_path / "elsewhere" / "audit"
    shutil.copytree(audit, copy)
    page = voirdire.report([copy], out=tmp_path / "r1", replicates=20)
    assert 'id="people"' not in page.read_text()
    assert "Human boards" not in (page.parent / "report.md").read_text()
    # voirdire people's files of other judges beside it: nothing shown
    other = tmp_path / "elsewhere" / "people"
    shutil.copytree(tmp / "audit-people", other)  # the older default name, read too
    boards = other / "metrics" / "people_selective.csv"
    boards.write_text(boards.read_text().replace("LogTable", "Other"))
    _sign(other)  # as the run of those judges would have named its set
    page = voirdire.report([copy], out=tmp_path / "r2", replicates=20)
    assert 'id="people"' not in page.read_text()
    # a table without one of its columns: one line naming it
    t = pl.read_csv(other / "metrics" / "people_curve.csv").drop("certified")
    t.write_csv(other / "metrics" / "people_curve.csv")
    _sign(other)
    with pytest.raises(ConfigError, match=r"people_curve\.csv is not voirdire people's table: no column 'certified'"):  # fmt: skip
        voirdire.report([copy], out=tmp_path / "r3", replicates=20)
    assert not (tmp_path / "r3" / "metrics").exists()
    assert not (tmp_path / "r3" / "report.html").exists()


def _texts(d, key: str) -> list[str]:
    return d.execute_script(
        f"return Array.prototype.map.call(document.querySelectorAll('div.vega[data-key=\"{key}\"] svg text'),"
        "function(t){return t.textContent})"
    )  # fmt: skip


@pytest.mark.slow
def test_the_section_in_a_browser(made, browser_ok):
    """The figure draws offline with no console error, fits 1400 px, the judge menu and the
    board radio redraw the boards, hover on a board's point names its model."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    key = "people:LogTable"
    judges = made["study"].selective["judge"].to_list()
    with chromium(1400, 900) as d:
        open_page(d, made["page"])
        assert console_errors(d) == []
        fig = d.find_element(By.CSS_SELECTOR, f'div.vega[data-key="{key}"]')
        assert fig.get_attribute("data-ready") == "1"
        right = d.execute_script(
            "return arguments[0].querySelector('svg.marks').getBoundingClientRect().right", fig
        )  # fmt: skip
        assert right <= d.execute_script("return document.documentElement.clientWidth")
        texts = _texts(d, key)
        for words in ("PPI++ (labels + judge)", "labels alone", "judge alone", "Selective judging (filled: certified)"):  # fmt: skip
            assert words in texts, texts
        assert f"Boards of {judges[0]}: win rates (ties half)" in texts
        # the menu picks another judge, the radio the Bradley–Terry board
        Select(fig.find_element(By.CSS_SELECTOR, ".vega-bindings select")).select_by_visible_text(judges[2])  # fmt: skip
        time.sleep(0.8)
        assert f"Boards of {judges[2]}: win rates (ties half)" in _texts(d, key)
        radio = fig.find_elements(By.CSS_SELECTOR, ".vega-bindings input[type=radio]")
        assert len(radio) == 2
        radio[1].click()
        time.sleep(0.8)
        assert f"Boards of {judges[2]}: Bradley–Terry ratings (Arena scale)" in _texts(
            d, key
        )
        # hover: a point of a board names its model and board
        point = fig.find_elements(By.CSS_SELECTOR, "g.mark-symbol path")[0]
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", point)
        ActionChains(d).move_to_element(point).perform()
        time.sleep(0.8)
        tip = d.find_element(By.ID, "vg-tooltip-element")
        assert tip.is_displayed() and "model" in tip.text and "board" in tip.text
        assert console_errors(d) == []
