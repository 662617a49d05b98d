"""`voirdire mitigate` on a small real job: MT-Bench replays of three release judges run
through Ray, then the no-query strategies against gpt-4-0613's consistent verdicts, and
the bad-input errors. Skipped when the benchmark data is missing."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import voirdire
from voirdire.analysis.mitigation import grading as R
from voirdire.analysis.mitigation import registry
from voirdire.analysis.mitigation import verdicts as M
from voirdire.analysis.position.cells import pairwise_pairs
from voirdire.cli import app

pytestmark = pytest.mark.ray

JUDGES = ["gemini-pro", "gpt-3.5-turbo-1106", "gpt-4-0613"]


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory, data_dir, ray_local):
    from voirdire.engine.spec import parse_job

    tmp = tmp_path_factory.mktemp("mitigate")
    spec = parse_job(
        {
            "name": "mt-mit",
            "output_dir": str(tmp / "mt-mit"),
            "benchmark": {
                "name": "mtbench",
                "data_dir": str(data_dir),
                "sample": "full",
                "tasks": ["writing", "math", "coding"],
                "candidates": ["gpt-4", "alpaca-13b", "llama-13b", "claude-v1"],
            },
            "comparison": {
                "mode": "pairwise",
                "option_mode": 3,
                "permutations": "both",
                "repetitions": 1,
            },
            "judges": [
                {
                    "name": j,
                    "backend": "replay",
                    "recorded": j,
                    "study": "position_bias",
                }
                for j in JUDGES
            ],
        },  # fmt: skip
        "mt-mit",
    )
    res = voirdire.run(spec)
    return Path(res.output_dir), res.judgments


def test_mitigate_writes_table_figure_and_annotation(job_dir, tmp_path):
    d, judgments = job_dir
    out = tmp_path / "mit"
    r = CliRunner().invoke(
        app,
        [
            "mitigate",
            str(d),
            "--reference",
            "judge:gpt-4-0613",
            "--out",
            str(out),
            "--replicates",
            "200",
        ],
    )
    assert r.exit_code == 0, r.output
    for name in (
        "mitigation.csv",
        "mitigation.md",
        "figures/mitigation_cost_agreement.png",
        "bpde_annotation.csv",
    ):
        assert (out / name).stat().st_size > 0, name
    t = pl.read_csv(out / "mitigation.csv")
    assert set(t.get_column("strategy")) == {
        n for n, r in registry.strategies().items() if r.default and not r.score
    }
    assert "gpt-4-0613" not in set(
        t.get_column("judge")
    )  # the reference is not graded against itself
    assert set(t.filter(pl.col("strategy") == "jury").get_column("judge")) == {
        "panel-2"
    }  # jury without the reference
    assert (
        "agreement with a judge, not with people" in (out / "mitigation.md").read_text()
    )
    # the single strategy's flip rate is the practitioners' flip rate of the raw judgments
    fr = (
        M.flip_rate(M.normalise(judgments))
        .filter(pl.col("judge") == "gemini-pro")
        .get_column("flip_rate")
        .item()
    )
    single = t.filter(
        (pl.col("strategy") == "single") & (pl.col("judge") == "gemini-pro")
    ).row(0, named=True)
    assert single["flip"] == pytest.approx(fr)
    pairs = judgments.filter(pl.col("judge") == "gemini-pro").height // 2
    gate = t.filter(
        (pl.col("strategy") == "gate") & (pl.col("judge") == "gemini-pro")
    ).row(0, named=True)
    assert gate["verdicts"] == pairs and gate["cost"] == 2.0
    # the gate leaves undecided exactly the pairs that are not consistent (failed ones included)
    ccn = (
        pairwise_pairs(judgments.filter(pl.col("judge") == "gemini-pro"))
        .filter(pl.col("klass") == "consistent")
        .height
    )
    assert gate["undecided"] == pytest.approx(1 - ccn / pairs)
    assert gate["accuracy"] > single["accuracy"]
    ann = pl.read_csv(out / "bpde_annotation.csv")
    assert ann.filter(pl.col("judge") == "gemini-pro").height == -(
        -pairs * 2 // 10
    )  # ceil(20 % of the pairs)


def test_mitigate_bad_input(job_dir, tmp_path):
    d, _ = job_dir
    run = CliRunner().invoke
    r = run(
        app, ["mitigate", str(d), "--reference", "judge:gpt-9", "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "gpt-9" in r.output
    r = run(
        app,
        [
            "mitigate",
            str(d),
            "--strategies",
            "logprob-calibrated",
            "--out",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 2 and "option_probs" in r.output
    labels = tmp_path / "labels.csv"
    pl.DataFrame(
        {
            "question_id": ["81"],
            "candidate": ["nobody-13b"],
            "reference": ["vicuna-13b-v1.3"],
            "winner": ["tie"],
        }
    ).write_csv(labels)
    r = run(
        app, ["mitigate", str(d), "--reference", str(labels), "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "nobody-13b" in r.output


def test_people_labels_for_the_bpde_pairs_are_read_back(job_dir, tmp_path):
    d, judgments = job_dir
    out = tmp_path / "first"
    assert (
        CliRunner()
        .invoke(app, ["mitigate", str(d), "--out", str(out), "--replicates", "50"])
        .exit_code
        == 0
    )
    # "people" answer the chosen pairs as gpt-4-0613 does where it is consistent, else tie
    ref = R.judge_grading(judgments, "gpt-4-0613").select(
        "question_id", "candidate", "reference", "ref_verdict"
    )
    ann = (
        pl.read_csv(
            out / "bpde_annotation.csv",
            schema_overrides={"question_id": pl.String, "winner": pl.String},
        )
        .filter(pl.col("judge") == "gemini-pro")
        .join(ref, on=["question_id", "candidate", "reference"], how="left")
        .with_columns(
            winner=pl.col("ref_verdict").replace_strict(
                {"win": "candidate", "loss": "reference", "tie": "tie"}, default="tie"
            )
        )
    )
    assert (
        ann.height > 0 and ann["bpde"].min() > 0
    )  # the chosen pairs are the order-dependent ones
    labels = tmp_path / "people.csv"
    ann.select("question_id", "candidate", "reference", "winner").write_csv(labels)
    second = tmp_path / "second"
    r = CliRunner().invoke(
        app,
        [
            "mitigate",
            str(d),
            "--reference",
            "judge:gpt-4-0613",
            "--labels",
            str(labels),
            "--out",
            str(second),
            "--replicates",
            "50",
        ],
    )
    assert r.exit_code == 0, r.output
    t = pl.read_csv(second / "mitigation.csv").filter(pl.col("judge") == "gemini-pro")
    row = {
        s: t.filter(pl.col("strategy") == s).row(0, named=True)
        for s in ("gate", "gate+labels", "swap-tie+labels")
    }
    assert row["gate+labels"]["undecided"] < row["gate"]["undecided"]
    assert (
        row["gate+labels"]["cost"] == row["gate"]["cost"] == 2.0
    )  # people's labels cost no query


def test_default_outputs_of_two_inputs_do_not_collide(job_dir, tmp_path):
    """Issue 40, item 7: ``mitigate`` on two directories without ``--out`` writes two
    folders named after them (before, both went to ``mitigation/`` and the second
    overwrote the first)."""
    import shutil

    d, _ = job_dir
    runs = tmp_path / "runs"
    first, second = runs / "first-run", runs / "second-run"
    shutil.copytree(d, first)
    shutil.copytree(d, second)
    for src in (first, second):
        r = CliRunner().invoke(
            app,
            [
                "mitigate",
                str(src),
                "--reference",
                "judge:gpt-4-0613",
                "--replicates",
                "50",
            ],
        )
        assert r.exit_code == 0, r.output
    assert (runs / "first-run-mitigation" / "mitigation.csv").is_file()
    assert (runs / "second-run-mitigation" / "mitigation.csv").is_file()
    assert not (runs / "mitigation").exists()
