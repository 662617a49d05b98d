"""The README works as written (issue 40, item 9): its quick start says how to run the
commands it installed; its one example runs on what the quick start installed (no vLLM, no
API key) and writes into a directory of its own, not one of the quick start's."""

from __future__ import annotations

import re
import tomllib

from tests.repo import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_the_quick_start_says_how_to_run_the_commands():
    quick = _section("Quick start")
    assert "`. .venv/bin/activate`" in quick and "`.venv/bin/voirdire" in quick


def test_the_example_runs_on_the_quick_start_install_in_its_own_directory(
    data_dir, monkeypatch
):
    from voirdire import api

    block = re.search(r"```toml\n(.*?)```", _section("One example"), re.S).group(1)
    job = tomllib.loads(block)
    assert {j["backend"] for j in job["judges"]} <= {"replay", "simulated"}
    quick_dirs = {
        tomllib.loads(p.read_text())["output_dir"]
        for p in (REPO / "examples").glob("*_position_bias.toml")
    } | {
        tomllib.loads(p.read_text())["output_dir"]
        for p in (REPO / "examples").glob("*_repetition.toml")
    }
    assert job["output_dir"] not in quick_dirs
    monkeypatch.setenv("VOIRDIRE_DATA", str(data_dir))
    plan = api.plan(job, dry_run=True)  # validated against the data; sends nothing
    assert [j.name for j in plan.judges] == [j["name"] for j in job["judges"]]
    # the commands below it read the example's directory
    assert f"voirdire report {job['output_dir']}" in README
