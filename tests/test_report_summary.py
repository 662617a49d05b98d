"""The report read at a glance, without a browser: the summary's ranking, gates, cost and
throughput (``analysis/choice.py``), judge families, tables without empty columns, and the
figures' forms at 5 and 200 judges (legends of at most 12 entries, heatmaps beyond,
hover and search in every figure, nothing fetched from the network)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from voirdire.analysis.choice import choice_from_table, choose_judges, judge_costs
from voirdire.analysis.families import judge_families
from voirdire.analysis.report.views import table_view
from voirdire.analysis.settings import DEFAULTS


def _panel(rows):
    cols = [
        "benchmark",
        "judge",
        "accuracy",
        "pc",
        "pf",
        "pass_kappa",
        "rs",
        "error_rate",
    ]
    return pl.DataFrame(rows, schema=cols, orient="row")


def test_judges_rank_by_accuracy_and_each_failed_gate_is_named():
    panel = _panel([
        ("B", "steady", 0.80, 0.90, 0.05, 0.75, 0.95, 0.00),
        ("B", "sharp-but-shaky", 0.86, 0.70, 0.20, 0.40, 0.85, 0.01),
        ("B", "broken", 0.60, 0.95, 0.01, 0.80, None, 0.20),
        ("B", "close", 0.79, 0.88, -0.10, 0.70, None, 0.00),
    ])  # fmt: skip
    costs = pl.DataFrame({"benchmark": ["B"] * 2, "judge": ["steady", "close"], "usd_per_1k": [2.5, 0.4], "judgments_per_s": [None, 12.0]})  # fmt: skip
    c = choose_judges(panel, costs)
    t = c.table
    assert t.get_column("judge").to_list() == [
        "sharp-but-shaky",
        "steady",
        "close",
        "broken",
    ]
    assert t.get_column("rank").to_list() == [1, 2, 3, 4]
    gates = dict(t.select("judge", "gates").iter_rows())
    assert gates["sharp-but-shaky"] == "κ 0.400 < 0.6; RS 0.850 < 0.90"
    assert gates["broken"] == "errors 20.0% > 5%"
    assert gates["steady"] == gates["close"] == ""
    # the most accurate passing judge, and the cheapest within 0.02 of it
    assert c.key == {"B": "accuracy"}
    assert c.lines["B"] == (
        "B: most accurate judge passing every gate: steady (accuracy 0.800); "
        "cheapest within 0.02 of it: close (accuracy 0.790, $0.40 per 1,000 judgments)."
    )
    # a narrower margin leaves only the best; read back from the written table, the same
    narrow = choose_judges(
        panel,
        costs,
        settings=__import__("dataclasses").replace(DEFAULTS, choice_margin=0.005),
    )
    assert "also the cheapest within 0.005 ($2.50" in narrow.lines["B"]
    assert choice_from_table(t, 0.02).lines == c.lines


def test_without_gold_labels_judges_rank_by_pc_and_no_cost_is_claimed():
    panel = _panel(
        [
            ("M", "a", None, 0.7, 0.1, 0.7, None, 0.0),
            ("M", "b", None, 0.8, 0.3, 0.5, None, 0.0),
        ]
    )
    c = choose_judges(panel)
    assert c.key == {"M": "pc"} and c.table.get_column("judge").to_list() == ["b", "a"]
    assert c.lines["M"] == "M: most consistent judge passing every gate: a (PC 0.700)."
    none = choose_judges(panel.with_columns(pass_kappa=pl.lit(0.1)))
    assert none.lines["M"] == "M: no judge passes every gate."


def test_a_judge_of_a_position_bias_and_a_repetition_job_is_one_row():
    """run's jobs: the same judge in two directories is ranked once, its PC from the
    position-bias job, its RS from the repetition job."""
    jm = _panel([("M", "a", None, 0.9, 0.0, 0.8, None, 0.0), ("M", "a", None, 0.6, 0.1, 0.8, 0.85, 0.0),
                 ("M", "b", None, 0.7, 0.0, 0.8, None, 0.0)])  # fmt: skip
    t = choose_judges(jm).table
    assert t.select("judge", "pc", "rs").rows() == [("a", 0.9, 0.85), ("b", 0.7, None)]
    assert t.get_column("gates").to_list() == ["RS 0.850 < 0.90", ""]


def test_cost_and_throughput_come_from_the_judgments_records():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(10):  # a live judge: 10 calls of 1 s, one every 0.5 s: 10 in 5.5 s
        rows.append(
            (
                "B",
                "live",
                0.002,
                1.0,
                t0 + timedelta(seconds=1 + 0.5 * i),
                False,
                "free",
            )
        )
    rows.append(
        ("B", "live", None, 1.0, t0 + timedelta(seconds=100), True, "free")
    )  # cached: not counted
    rows += [
        ("B", "replayed", None, 0.0001, t0 + timedelta(seconds=i), False, "replay")
        for i in range(5)
    ]
    j = pl.DataFrame(rows, schema=["benchmark", "judge", "cost_usd", "latency_s", "finished_at", "cached", "verdict_mode"], orient="row")  # fmt: skip
    c = {r["judge"]: r for r in judge_costs(j).iter_rows(named=True)}
    assert c["live"]["usd_per_1k"] == pytest.approx(2.0)
    assert c["live"]["judgments_per_s"] == pytest.approx(10 / 5.5)
    assert (
        c["replayed"]["usd_per_1k"] is None and c["replayed"]["judgments_per_s"] is None
    )


def test_families_from_the_job_or_the_recorded_name():
    jobs = [{"judges": {"api-judge": {"identity": {"backend": "openai", "model": "gpt-4o"}},
                        "GPT-4/Swap_CoT": {"identity": {"backend": "replay", "recorded": "GPT-4/Swap_CoT"}}}}]  # fmt: skip
    f = judge_families(["GPT-4/Swap_CoT", "api-judge", "atlas/cot-2", "plain"], jobs)
    assert f.rows() == [
        ("GPT-4/Swap_CoT", "GPT-4", "Swap_CoT"),
        ("api-judge", "gpt-4o", "api-judge"),
        ("atlas/cot-2", "atlas", "cot-2"),
        ("plain", "plain", ""),
    ]


def test_a_column_with_no_value_for_any_judge_is_not_shown():
    df = pl.DataFrame(
        {"judge": ["a", "b"], "rs": [None, None], "pc": [0.5, None], "fails": ["", ""]}
    )
    v = table_view(df)
    assert v["head"] == ["judge", "pc"]
    assert [r["judge"] for r in v["rows"]] == ["a", "b"]
    assert table_view(df, keep_empty=True)["head"] == ["judge", "rs", "pc", "fails"]


def _study_charts(n: int):
    """The charts of a small synthetic study of ``n`` judges (no directory: the panel,
    cells and per-task tables the figures read)."""
    import numpy as np

    from tests.study_simulate import judge_names
    from voirdire.analysis.report.agreement import agreement_heatmap
    from voirdire.analysis.report.curve_charts import win_rate_curves
    from voirdire.analysis.report.judge_charts import (
        family_multiples,
        judge_bars,
        judge_scatter,
    )
    from voirdire.analysis.report.task_charts import by_task_charts
    from voirdire.analysis.report.vega import spec_of

    rng = np.random.default_rng(0)
    judges = judge_names(n)
    tasks = [f"task-{t}" for t in range(4)]
    jt = pl.DataFrame([(j, t, *rng.random(2), rng.random(), 50) for j in judges for t in tasks],
                      schema=["judge", "task", "pc", "pf", "accuracy", "n"], orient="row")  # fmt: skip
    panel = (
        jt.group_by("judge", maintain_order=True)
        .agg(pl.col("pc", "pf", "accuracy").mean())
        .with_columns(rs=pl.col("pc"))
    )
    cells = pl.DataFrame([(j, rng.random(), *rng.random(2), 10) for j in judges for _ in range(6)],
                         schema=["judge", "owr", "pc", "pf", "n"], orient="row")  # fmt: skip
    agree = pl.DataFrame([(a, b, *rng.random(3)) for a in judges for b in judges],
                         schema=["judge_a", "judge_b", "agreement", "agreement_no_tie", "kappa"], orient="row")  # fmt: skip
    charts = by_task_charts(jt, judges, judges, "B")
    charts["pc_pf"] = judge_scatter(
        panel,
        "pf",
        "pc",
        judges,
        "t",
        x_title="PF",
        y_title="PC",
        x_domain=(-1, 1),
        cells=cells,
    )
    charts["accuracy_pc"] = judge_scatter(
        panel,
        "pc",
        "accuracy",
        judges,
        "t",
        x_title="PC",
        y_title="accuracy",
        x_domain=(0, 1),
    )
    charts["rs"] = judge_bars(
        panel, "rs", judges, judges, "t", axis_title="RS", threshold=0.9
    )
    charts["families"] = family_multiples(panel, judge_families(judges), "t")
    charts["owr"] = win_rate_curves(cells, judges[:5], "t")
    charts["agreement"] = agreement_heatmap(agree, judges, "t")
    return {k: spec_of(c, validate=True) for k, c in charts.items() if c is not None}


def _walk(spec):
    if isinstance(spec, dict):
        yield spec
        for v in spec.values():
            yield from _walk(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _walk(v)


@pytest.mark.parametrize("n", [5, 200])
def test_figures_name_at_most_12_judges_in_a_legend_and_every_one_searches(n):
    specs = _study_charts(n)
    assert ("radar" in specs and "pf_bars" in specs) == (n <= 12)
    assert ("task_heatmaps" in specs) == (n > 12)
    for kind, spec in specs.items():
        text = json.dumps(spec)
        assert '"name": "search"' in text, (
            kind
        )  # the page's search reaches every figure
        assert (
            "http://" not in text.replace("http://www.w3.org", "")
            and "https://vega.github.io/schema" in text
        )  # only the schema's id
        for node in _walk(spec):
            color = node.get("color") if isinstance(node.get("color"), dict) else None
            if (
                color
                and color.get("field") == "judge"
                and color.get("legend", {}) is not None
            ):
                domain = (color.get("scale") or {}).get("domain")
                # a judge legend: a fixed domain of at most 12, or the picked judges only
                assert (domain is not None and len(domain) <= 12) or kind == "owr", kind
        if kind in ("pc_pf", "accuracy_pc", "task_heatmaps", "families"):
            assert '"tooltip"' in text and "judge" in text


def test_a_report_directory_may_hold_svg_figures(tmp_path):
    from voirdire.ownership import claim_report_dir

    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "pc_vs_pf_B.svg").write_text("<svg/>")
    (tmp_path / "figures" / "pc_vs_pf_B.png").write_bytes(b"")
    assert claim_report_dir(tmp_path) == tmp_path


@pytest.mark.process
def test_names_with_control_bytes_are_drawn_as_data(tmp_path):
    """A judge named with an escape sequence (or a character XML cannot hold) is shown
    with the byte written as an escape, in the page and in the static figures: vl-convert
    stops the whole process on such a byte in SVG text, so it draws in a subprocess here."""
    import subprocess
    import sys

    code = (
        "import sys, polars as pl\n"
        "from pathlib import Path\n"
        "from voirdire.analysis.report.judge_charts import judge_scatter\n"
        "from voirdire.analysis.report.vega import spec_of, write_static\n"
        "p = pl.DataFrame({'judge': ['ok', 'evil\\x1b]0;pwn\\x07', 'x\\ufffey'], 'pc': [0.5, 0.6, 0.7], 'pf': [0.1, 0.2, -0.1]})\n"
        "s = spec_of(judge_scatter(p, 'pf', 'pc', p['judge'].to_list(), 'bench\\x1b[2J', x_title='PF', y_title='PC', x_domain=(-1, 1)))\n"
        "print(sorted(r['judge_name'] for r in next(iter(s['datasets'].values()))))  # names keyed by index: the name is judge_name\n"
        "write_static(s, Path(sys.argv[1]) / 'f', ('png', 'svg'))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-1500:]
    assert "evil\\\\x1b]0;pwn\\\\x07" in r.stdout and "x\ufffdy" in r.stdout
    svg = (tmp_path / "f.svg").read_text(encoding="utf-8")
    assert "\x1b" not in svg and "evil\\x1b]0;pwn\\x07" in svg
