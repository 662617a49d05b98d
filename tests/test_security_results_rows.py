"""A results directory holds the rows of one configuration (``docs/security.md``).

A rerun into an output directory after changing a judge's settings, its comparison design,
the data or the template is refused in one line before anything is sent (the old rows would
stay beside the new and be read with them); the same job resumes and asks nothing again;
additions (a judge, more repetitions) resume too.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import voirdire
from voirdire.analysis.results_dir import load_judgments
from voirdire.core import ConfigError
from voirdire.engine.spec import parse_job

pytestmark = pytest.mark.ray


def _job(tmp_path: Path, judges: list[dict] | None = None, **comparison) -> dict:
    """2 MT-Bench questions x 3 candidates against the reference, both orders."""
    return {
        "name": "rows",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "questions": ["81", "111"],
            "candidates": ["alpaca-13b", "gpt-4", "llama-13b"],
        },
        "comparison": {"option_mode": 3, "permutations": "both", **comparison},
        "run": {"batch_size": 8, "flush_seconds": 0.05},
        "judges": judges
        or [{"name": "sim", "backend": "simulated", "primacy": 0.6, "seed": 1}],
    }


def _run(d: dict):
    return voirdire.run(parse_job(d), show_progress=False)


def _rows(out: Path) -> int:
    return load_judgments(out).height


def test_changed_judge_settings_refused_before_any_query(tmp_path, data_ray):
    first = _run(_job(tmp_path, repetitions=2))
    out = first.output_dir
    n = _rows(out)
    assert n == 2 * 3 * 2 * 2  # questions x candidates x orders x repetitions
    changed = _job(
        tmp_path,
        [{"name": "sim", "backend": "simulated", "primacy": 0.9, "seed": 1}],
        repetitions=2,
    )
    with pytest.raises(ConfigError) as err:
        _run(changed)
    msg = str(err.value)
    assert "\n" not in msg and "different configuration" in msg and "'sim'" in msg
    assert "settings changed" in msg and "new output_dir" in msg
    assert _rows(out) == n  # nothing asked, nothing added
    # the same job resumes: nothing asked again, nothing duplicated
    again = _run(_job(tmp_path, repetitions=2))
    assert again.stats.queries == 0 and _rows(out) == n
    # in a new directory the changed judge runs
    changed["output_dir"] = str(tmp_path / "new")
    assert _rows(_run(changed).output_dir) == n


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"repetitions": 1}, "repetitions fell (2 -> 1)"),
        ({"repetitions": 2, "permutations": "original"}, "permutations changed"),
        ({"repetitions": 2, "option_mode": 2}, "option_mode changed"),
    ],
)
def test_changed_design_refused(tmp_path, data_ray, change, named):
    out = _run(_job(tmp_path, repetitions=2)).output_dir
    n = _rows(out)
    with pytest.raises(ConfigError, match="different configuration") as err:
        _run(_job(tmp_path, **change))
    assert named in str(err.value)
    assert _rows(out) == n


def test_changed_data_refused(tmp_path, data_ray):
    out = _run(_job(tmp_path)).output_dir
    other = _job(tmp_path)
    other["benchmark"]["candidates"] = ["alpaca-13b", "gpt-4", "vicuna-13b-v1.3"]
    with pytest.raises(ConfigError, match="data, questions, candidates or template"):
        _run(other)
    assert set(load_judgments(out)["candidate"]) == {"alpaca-13b", "gpt-4", "llama-13b"}


def test_additions_resume(tmp_path, data_ray):
    """More repetitions and a new judge: every stored unit still belongs to the job."""
    out = _run(_job(tmp_path)).output_dir
    n = _rows(out)
    judges = [
        {"name": "sim", "backend": "simulated", "primacy": 0.6, "seed": 1},
        {"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613"},
    ]
    more = _run(_job(tmp_path, judges, repetitions=2))
    # sim: its second repetitions only; the new judge: both repetitions
    assert more.stats.queries == n + 2 * n
    j = load_judgments(out)
    assert j.group_by("judge").len().sort("judge")["len"].to_list() == [2 * n, 2 * n]


def test_directory_of_an_older_voirdire_is_checked_by_identity(tmp_path, data_ray):
    """A job.json without the configuration record (written before it existed) is still
    compared on each judge's identity hash."""
    out = _run(_job(tmp_path)).output_dir
    path = out / "job.json"
    record = json.loads(path.read_text())
    del record["configuration"]
    path.write_text(json.dumps(record))
    changed = _job(
        tmp_path, [{"name": "sim", "backend": "simulated", "primacy": 0.9, "seed": 1}]
    )
    with pytest.raises(ConfigError, match="judge 'sim' settings changed"):
        _run(changed)
    assert _run(_job(tmp_path)).stats.queries == 0


def test_job_json_records_the_configuration(tmp_path, data_ray):
    out = _run(_job(tmp_path, repetitions=2)).output_dir
    config = json.loads((out / "job.json").read_text())["configuration"]
    assert config["benchmark"] == "MTBench" and len(config["data"]) == 32
    assert config["judges"]["sim"]["repetitions"] == 2
    assert config["judges"]["sim"]["units"]["permutations"] == "both"
    assert pl.read_csv(out / "metrics" / "judge_metrics.csv").height == 1


@pytest.fixture
def data_ray(data_dir, ray_local):
    """The benchmark data and the module's local Ray cluster."""
    return data_dir


def test_edited_own_pairs_refused(tmp_path, data_ray):
    """An edited row of a user's own pairs (same ids, another answer) is other data."""
    rows = [
        {
            "id": f"q{i}",
            "instruction": f"Say {i}.",
            "output_a": f"{i}",
            "output_b": "no",
        }
        for i in range(3)
    ]
    cols = {"id": "id", "instruction": "instruction", "output_a": "output_a"}
    cols["output_b"] = "output_b"
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    job = {
        "name": "own",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {"name": "pairs", "pairs": {"path": str(path), "columns": cols}},
        "run": {"batch_size": 8, "flush_seconds": 0.05},
        "judges": [{"name": "sim", "backend": "simulated", "seed": 2}],
    }
    out = _run(job).output_dir
    n = _rows(out)
    assert _run(job).stats.queries == 0
    rows[1]["output_a"] = "one, edited"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match="data, questions, candidates or template"):
        _run(job)
    assert _rows(out) == n
