"""The public Python API, used as a notebook would: ``import voirdire`` and call it.

A small job given as a dict (no TOML file), validated, estimated, run on the local Ray
cluster, loaded back, reported and mitigated, each through the names ``voirdire`` exports.
"""

from __future__ import annotations

import polars as pl
import pytest

import voirdire


def _job(data_dir, out) -> dict:
    return {
        "name": "api-notebook",
        "output_dir": str(out),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "candidates": ["gpt-4", "alpaca-13b"],
            "tasks": ["writing", "math"],
        },
        "judges": [
            {"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613"},
            {"name": "gemini-pro", "backend": "replay", "recorded": "gemini-pro"},
        ],
    }


def test_exports_are_the_documented_entry_points():
    for name in (
        "run",
        "load",
        "analyze",
        "plan",
        "estimate",
        "report",
        "mitigate",
        "load_job_spec",
        "Results",
        "ConfigError",
    ):
        assert getattr(voirdire, name) is not None, name
    assert set(voirdire.__all__) >= {"run", "load", "report", "mitigate"}
    with pytest.raises(AttributeError):
        voirdire.no_such_thing  # noqa: B018


def test_bad_job_is_a_config_error_before_anything_runs(data_dir, tmp_path):
    job = _job(data_dir, tmp_path / "out")
    job["judges"][0]["backend"] = "gpt5-magic"
    with pytest.raises(voirdire.ConfigError, match="gpt5-magic"):
        voirdire.plan(job)
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_notebook_session(data_dir, tmp_path, ray_local):
    job = _job(data_dir, tmp_path / "run")
    plan = voirdire.plan(job)
    assert (
        plan.units_per_judge == 2 * 20 * 2
    )  # candidates x questions (2 tasks x 10) x orders
    assert voirdire.estimate(job) == {
        "gpt-4-0613": None,
        "gemini-pro": None,
    }  # replay costs nothing

    res = voirdire.run(job)
    assert isinstance(res, voirdire.Results) and res.stats.queries == 2 * 80
    assert set(res.judge_metrics["judge"]) == {"gpt-4-0613", "gemini-pro"}
    assert res.cell_metrics.height == 2 * 2 * 2  # judges x candidates x tasks
    assert res.judgments.height == 160 and res.judgments["failed"].sum() == 0

    again = voirdire.load(res.output_dir)  # a finished directory, no judge called
    assert again.stats is None
    assert again.judge_metrics.sort("judge").equals(res.judge_metrics.sort("judge"))
    assert again.job["job"]["name"] == "api-notebook"
    # load only reads; analyze also rewrites the directory's files
    (res.output_dir / "report.md").unlink()
    (res.output_dir / "metrics" / "judge_metrics.csv").unlink()
    voirdire.load(res.output_dir)
    assert (
        not (res.output_dir / "report.md").exists()
        and not (res.output_dir / "metrics" / "judge_metrics.csv").exists()
    )
    redone = voirdire.analyze(res.output_dir)
    assert (res.output_dir / "report.md").is_file() and redone.judge_metrics.equals(
        again.judge_metrics
    )
    assert pl.read_csv(res.output_dir / "metrics" / "judge_metrics.csv").height == 2

    html = voirdire.report([res.output_dir], out=tmp_path / "report", replicates=50)
    assert html.name == "report.html" and "gpt-4-0613" in html.read_text()

    written = voirdire.mitigate(
        [res.output_dir],
        reference="judge:gpt-4-0613",
        out=tmp_path / "mit",
        replicates=50,
    )
    table = pl.read_csv(written["table"])
    assert set(table["strategy"]) >= {"single", "swap-tie", "gate"}
    assert set(table["judge"]) >= {"gemini-pro"}
