"""Errors and help (issue 40, item 10): an unknown key or name comes with the closest known
one; a log given the wrong ``--format`` is called so (each format says whether a file is
its own), not "not valid JSON … truncated?"; a missing API key is refused before anything
slow (Ray, the benchmark's data); help texts read as sentences."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from voirdire.cli import app
from voirdire.core import did_you_mean

EXAMPLES = Path(__file__).parents[1] / "examples"


def _err(args: list[str], env: dict | None = None) -> str:
    r = CliRunner().invoke(app, args, env=env)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error:") and "Traceback" not in r.output, r.output
    return " ".join(line.strip() for line in r.output.splitlines())


def _job(
    tmp_path: Path, old: str, new: str, name: str = "mtbench_position_bias"
) -> Path:
    text = (EXAMPLES / f"{name}.toml").read_text()
    assert old in text
    p = tmp_path / "job.toml"
    p.write_text(text.replace(old, new, 1))
    return p


def test_the_closest_known_name():
    assert (
        did_you_mean("permutation", ["permutations", "mode"])
        == " (did you mean 'permutations'?)"
    )
    assert (
        did_you_mean("mtbenh", ["MTBench", "DevBench"]) == " (did you mean 'MTBench'?)"
    )
    assert (
        did_you_mean("anthropic_batch", ["anthropic-batch"])
        == " (did you mean 'anthropic-batch'?)"
    )
    assert did_you_mean("zzz", ["MTBench"]) == ""


def test_an_unknown_job_key_names_the_closest(tmp_path):
    job = _job(tmp_path, 'permutations = "both"', 'permutation = "both"')
    msg = _err(["run", str(job), "--dry-run"])
    assert "comparison.permutation: unknown key (did you mean 'permutations'?)" in msg
    job = _job(tmp_path, "[sampling]", "[samplng]")
    assert "samplng: unknown key (did you mean 'sampling'?)" in _err(
        ["run", str(job), "--dry-run"]
    )


def test_an_unknown_judge_setting_names_the_closest(tmp_path):
    job = _job(tmp_path, 'recorded = "*"', 'recordd = "gpt-4-0613"')
    job.write_text(job.read_text().replace('name = "*"', 'name = "gpt-4-0613"'))
    assert "recordd: unknown key (did you mean 'recorded'?)" in _err(
        ["run", str(job), "--dry-run"]
    )


def test_unknown_names_name_the_closest(tmp_path):
    job = _job(tmp_path, 'name = "mtbench"', 'name = "mtbenh"')
    assert "unknown benchmark 'mtbenh' (did you mean 'MTBench'?)" in _err(
        ["run", str(job), "--dry-run"]
    )
    job = _job(tmp_path, 'backend = "replay"', 'backend = "repaly"')
    assert "unknown judge backend 'repaly' (did you mean 'replay'?)" in _err(
        ["run", str(job), "--dry-run"]
    )


def _annotations(path: Path) -> Path:
    rows = [{"instruction": f"q{i}", "output_1": "a", "output_2": "b", "generator_1": "m1",
             "generator_2": "m2", "annotator": "ann", "preference": 1.0} for i in range(3)]  # fmt: skip
    path.write_text(json.dumps(rows, indent=2))
    return path


def test_a_wrong_format_is_called_so(tmp_path):
    log = _annotations(tmp_path / "annotations.json")
    msg = _err(
        ["audit", str(log), "--format", "arena-hard", "--out", str(tmp_path / "a")]
    )
    assert (
        "not a log of the ArenaHard format: it reads as alpacaeval (give --format alpacaeval)"
        in msg
    )
    assert "not valid JSON" not in msg and "truncated" not in msg


def test_a_format_name_that_is_no_format_lists_the_formats(tmp_path):
    log = _annotations(tmp_path / "annotations.json")
    msg = _err(["audit", str(log), "--format", "alpaca", "--out", str(tmp_path / "a")])
    assert "'alpaca' is not a judgment log format (did you mean 'AlpacaEval'?)" in msg
    assert "formats: AlpacaEval, AnthropicBatch," in msg and "MTBench" not in msg


def test_a_missing_api_key_is_refused_before_the_data_is_read(tmp_path):
    """The job's data directory does not exist: the key is refused first (before, the plan
    read the benchmark first and the key came after Ray had started)."""
    job = _job(
        tmp_path,
        'sample = "full"',
        f'sample = "full"\ndata_dir = "{tmp_path / "no-data"}"',
        "mtbench_api",
    )
    msg = _err(
        ["run", str(job), "--output-dir", str(tmp_path / "out")],
        env={"OPENAI_API_KEY": ""},
    )
    assert "needs an API key in the environment variable OPENAI_API_KEY" in msg
    assert not (tmp_path / "out").exists()


def test_help_texts_read_as_sentences():
    r = CliRunner().invoke(
        app, ["data", "fetch", "--help"], env={"COLUMNS": "400"}, terminal_width=400
    )
    assert r.exit_code == 0, r.output
    text = re.sub(r"\s+", " ", r.output)
    assert "skipped and named (exit 0), or, with --strict, the fetch fails." in text
    # no line of the description ends mid-sentence: the paragraph is one line wide
    lines = [ln.strip() for ln in r.output.splitlines()]
    assert any(
        ln.startswith("A mirror lacking") and "the fetch fails." in ln for ln in lines
    ), r.output
