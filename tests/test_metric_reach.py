"""A metric registered with one decorator reaches every per-judge output through its record
(label, format, direction), not by name: ``metrics/judge_metrics.csv``, the terminal table,
``report.md``, the HTML report's judges table (with its bootstrap interval) and a figure.

The metric (the share of consistent pairs that are ties, lower is better here) is defined
in this module, a simulated job is run on the local Ray cluster, and every figure shown is
checked against a direct count of the judgments."""

from __future__ import annotations

import polars as pl
import pytest
from rich.console import Console

import voirdire
from voirdire.analysis.outputs import JUDGE_METRIC_COLUMNS
from voirdire.analysis.position.cells import pairwise_pairs
from voirdire.analysis.position.formulas import ratio_statistic
from voirdire.analysis.position.registry import LOWER, METRICS, register_metric
from voirdire.analysis.report.terminal import print_judge_table

pytestmark = pytest.mark.ray


def _tie_sums(judgments: pl.DataFrame) -> pl.DataFrame:
    k = pl.col("klass")
    return (
        pairwise_pairs(judgments)
        .group_by("benchmark", "judge", "candidate", "task", "question_id")
        .agg(
            ties=pl.col("consistent_tie").sum().cast(pl.Float64),
            consistent=(k == "consistent").sum().cast(pl.Float64),
        )
    )


@pytest.fixture
def tie_share():
    @register_metric("tie_share", sums=_tie_sums, values=("ties", "consistent"), cells=("candidate", "task"),
                     label="Tie share", fmt="{:.4f}", direction=LOWER, doc="consistent ties over consistent pairs")  # fmt: skip
    def tie_share(s):
        return ratio_statistic("ties", "consistent")(s)

    yield tie_share
    METRICS.unregister("tie_share")


def _direct(judgments: pl.DataFrame) -> dict[str, float]:
    """Per judge, (C, C) pairs over the consistent pairs ((A, B), (B, A), (C, C)), counted
    from the letters of the two orders."""
    by_pair = judgments.group_by("judge", "question_id", "candidate", "repetition").agg(
        first=pl.col("extracted")
        .filter(pl.col("shown").list.first() == pl.col("candidate"))
        .first(),
        second=pl.col("extracted")
        .filter(pl.col("shown").list.first() != pl.col("candidate"))
        .first(),
    )
    out = {}
    for (judge,), grp in by_pair.group_by("judge"):
        pairs = list(zip(grp.get_column("first"), grp.get_column("second")))
        consistent = [p for p in pairs if p in (("A", "B"), ("B", "A"), ("C", "C"))]
        out[judge] = sum(p == ("C", "C") for p in consistent) / len(consistent)
    return out


def test_a_registered_metric_reaches_every_table_the_report_and_the_figures(
    tie_share, data_dir, tmp_path, ray_local
):
    job = {
        "name": "metric-reach",
        "output_dir": str(tmp_path / "run"),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "candidates": ["gpt-4", "alpaca-13b"],
            "tasks": ["writing", "math"],
        },
        "comparison": {"option_mode": 3},
        "judges": [
            {
                "name": "sim-ties",
                "backend": "simulated",
                "tie_rate": 0.7,
                "sensitivity": 0.3,
                "primacy": 0.6,
                "seed": 1,
            },
            {
                "name": "sim-few",
                "backend": "simulated",
                "tie_rate": 0.3,
                "sensitivity": 0.3,
                "primacy": 0.7,
                "seed": 2,
            },
        ],
    }
    res = voirdire.run(job)
    want = _direct(res.judgments)
    assert 0 < want["sim-few"] < want["sim-ties"] < 1
    got = dict(
        zip(
            res.judge_metrics.get_column("judge"),
            res.judge_metrics.get_column("tie_share"),
        )
    )
    assert got == pytest.approx(want, abs=1e-12)

    # metrics/judge_metrics.csv: the built-in columns as before, the metric's appended
    csv = pl.read_csv(res.output_dir / "metrics" / "judge_metrics.csv")
    assert (
        csv.columns[: len(JUDGE_METRIC_COLUMNS)] == JUDGE_METRIC_COLUMNS
        and csv.columns[-1] == "tie_share"
    )
    assert dict(
        zip(csv.get_column("judge"), csv.get_column("tie_share"))
    ) == pytest.approx(want, abs=1e-12)

    # the terminal table: its label as header, its format
    console = Console(record=True, width=300)
    print_judge_table(res.judge_metrics, console=console)
    text = console.export_text()
    assert "Tie share" in text and all(f"{v:.4f}" in text for v in want.values())

    # report.md of the directory: the column and how to read it
    md = (res.output_dir / "report.md").read_text()
    header = next(
        line
        for line in md.splitlines()
        if line.startswith("| benchmark | judge | PC |")
    )
    assert header.endswith("| Tie share |") and all(
        f"| {v:.4f} |" in md for v in want.values()
    )
    assert "Tie share: consistent ties over consistent pairs (lower is better)." in md

    # the HTML report: the panel with the estimate and its bootstrap interval, and a figure
    html = voirdire.report(
        [res.output_dir], out=tmp_path / "report", replicates=50
    ).read_text()
    assert all(
        h in html
        for h in (
            ">Tie share<",
            ">Tie share lo<",
            ">Tie share hi<",
            'data-key="metric_tie_share:MTBench"',  # its figure, interactive
            "MTBench: Tie share per judge",
        )
    )
    assert all(f">{v:.4f}<" in html for v in want.values())
    panel = pl.read_csv(tmp_path / "report" / "metrics" / "panel.csv")
    for r in panel.iter_rows(named=True):
        assert (
            r["tie_share"] == pytest.approx(want[r["judge"]], abs=1e-12)
            and r["tie_share_lo"] <= r["tie_share"] <= r["tie_share_hi"]
        )
    assert list((tmp_path / "report" / "figures").glob("metric_tie_share_*.png"))
    boot = pl.read_csv(tmp_path / "report" / "metrics" / "bootstrap_run.csv").filter(
        pl.col("metric") == "tie_share"
    )
    assert dict(
        zip(boot.get_column("judge"), boot.get_column("estimate"))
    ) == pytest.approx(want, abs=1e-12)

    # unregistered, the built-in tables are as they were
    METRICS.unregister("tie_share")
    assert voirdire.load(res.output_dir).judge_metrics.columns == [
        c for c in res.judge_metrics.columns if c != "tie_share"
    ]
