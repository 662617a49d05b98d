"""A report past its bounds degrades, never hangs (issue 43, item 7;
``analysis/report/scale.py``): past :data:`JUDGES_DRAWN` judges its per-judge figures
draw the most judged and say so, PC against PF draws the distribution over every judge,
the agreement heatmap draws the most judged with κ's distribution over every pair; a
task named with a million characters is shown cut, escaped, in every output (a judge's
name is refused past 200 characters before).

The bounds are lowered (the module's constants) so the study stays small: 8 judges, of
which figures draw 3. That the default bounds hold 10,000 judges within minutes is
measured by ``perf/bench_report.py --judges 10000``, not here.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest

from tests.study_simulate import simulated_study_log
from voirdire.analysis.report import scale
from voirdire.analysis.report.coverage import drawn_judges

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip
#: a task named with a million characters, markup at its start
LONG = "<b>task</b>" + "x" * (1_000_000 - 11)
CUT = f"{LONG[: scale.NAME_CHARS]}… (1,000,000 characters)"
_FIGURE = re.compile(
    r'<div class="vega" id="(fig\d+)" data-key="([^"]*)"></div>'
    r'<script type="application/json" id="fig\d+-spec">(.*?)</script>'
    r'(?:<figcaption class="note left-out" title="([^"]*)">([^<]*)</figcaption>)?',
    re.S,
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The report (``--figures png``) of 8 judges with the bounds at 3 judges."""
    import voirdire

    tmp = tmp_path_factory.mktemp("scale")
    log = simulated_study_log(8, tasks=2, questions=6)
    log = log.with_columns(pl.col("task").replace({"task-1": LONG}))
    log.write_parquet(tmp / "log.parquet")
    done = voirdire.audit(
        [tmp / "log.parquet"], "logtable", out=tmp / "audit",
        log={"columns": {c: c for c in COLUMNS}},
    )  # fmt: skip
    mp = pytest.MonkeyPatch()
    mp.setattr(scale, "JUDGES_DRAWN", 3)
    mp.setattr(scale, "AGREEMENT_JUDGES", 3)
    try:
        page = voirdire.report([done.output_dir], out=tmp / "report", replicates=50)
    finally:
        mp.undo()
    return page


def _figures(page: Path) -> dict[str, tuple[dict, str | None]]:
    """key -> (its specification, its caption's text), unescaped."""
    out = {}
    for _, key, spec, _title, text in _FIGURE.findall(page.read_text()):
        data = json.loads(spec.replace("<\\/", "</"))
        out[key] = (data, html.unescape(text) if text else None)
    return out


def test_per_judge_figures_draw_the_bound_and_say_what_they_left_out(report):
    figs = _figures(report)
    per_judge = {k: v for k, v in figs.items() if k.split(":")[0] in ("radar", "pf_bars", "accuracy_pc", "rs", "task_heatmaps")}  # fmt: skip
    assert per_judge, sorted(figs)
    for key, (spec, text) in per_judge.items():
        assert len(drawn_judges(spec)) <= 3, key
        assert text is not None and "past the report's bound of 3 judges" in text, key
        assert "metrics/" in text and "with the most verdicts of 8" in text, key


def test_pc_against_pf_draws_the_distribution_over_every_judge(report):
    figs = _figures(report)
    (key,) = [k for k in figs if k.startswith("pc_pf:")]
    spec, text = figs[key]
    assert drawn_judges(spec) == set()  # counts, no judge's mark
    rows = [r for v in spec["datasets"].values() for r in v]
    assert sum(r["judges"] for r in rows) == 8
    assert text is not None and "distribution over all 8 judges" in text


def test_agreement_draws_the_most_judged_and_kappa_over_every_pair(report):
    figs = _figures(report)
    (key,) = [k for k in figs if k.startswith("agreement:")]
    spec, text = figs[key]
    assert len(drawn_judges(spec)) == 3
    pairs = [r["pairs"] for v in spec["datasets"].values() for r in v if "pairs" in r]
    assert sum(pairs) == 8 * 7 // 2  # κ of every pair
    assert text is not None and "past the report's bound of 3 judges" in text


def test_a_million_character_task_is_cut_in_every_output(report):
    out = report.parent
    page = report.read_text(encoding="utf-8")
    assert LONG not in page and html.escape(LONG) not in page
    for spec, _ in _figures(report).values():
        text = json.dumps(spec, ensure_ascii=False)
        assert LONG[:1000] not in text
    assert html.escape(CUT) in page or json.dumps(CUT)[1:-1] in page
    md = (out / "report.md").read_text(encoding="utf-8")
    assert LONG[:1000] not in md
    assert "<b>task</b>" not in md  # escaped where shown
    assert all(p.stat().st_size > 0 for p in (out / "figures").glob("*.png"))
    # every number stays whole in the CSVs
    assert LONG in (out / "metrics" / "judge_task.csv").read_text(encoding="utf-8")
