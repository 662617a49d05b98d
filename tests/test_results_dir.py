"""The analysis' one door into a finished directory, and its stages (issue 28, items 1 and 3).

Reading a directory imports nothing of the engine and no Ray, and reads ``job.json`` once;
a command runs only the stages producing what it needs (``rank`` and ``mitigate`` draw no
kappa bootstrap).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import voirdire
from tests.repo import modules_after
from voirdire.engine.spec import parse_job

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def finished(data_dir, ray_local, tmp_path_factory) -> Path:
    """A small finished directory: 2 MT-Bench questions x 3 candidates, both orders."""
    out = tmp_path_factory.mktemp("door") / "out"
    job = {
        "name": "door",
        "output_dir": str(out),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "questions": ["81", "111"],
            "candidates": ["alpaca-13b", "gpt-4", "llama-13b"],
        },
        "comparison": {"option_mode": 3, "permutations": "both"},
        "run": {"batch_size": 8, "flush_seconds": 0.05},
        "judges": [{"name": "sim", "backend": "simulated", "primacy": 0.6, "seed": 1}],
    }
    voirdire.run(parse_job(job), show_progress=False)
    return out


def test_analysing_a_pairwise_directory_imports_no_scipy_stats_or_statsmodels(
    finished, tmp_path
):
    """``voirdire analyze`` of a pairwise directory (every stage, the files written) needs
    neither ``scipy.stats`` nor ``statsmodels`` (a second of imports on the 2-core machine):
    the stages that use them (the sign test, the list-wise chi-square, Fleiss' kappa, the
    bias suite's McNemar test) import them when they run."""
    copy = tmp_path / "copy"
    shutil.copytree(finished, copy)
    mods = modules_after(
        "from voirdire.analysis.outputs import compute_dir\n"
        "from voirdire.analysis.build import write_analysis\n"
        f"r = compute_dir({str(copy)!r})\n"
        f"write_analysis(r, {str(copy)!r})\n"
        "assert r.judge_metrics.get_column('pass_kappa').is_not_null().all()"
    )
    assert "voirdire.analysis.report.files" in mods  # the files were written
    found = [
        m
        for m in mods
        if m.split(".")[0] == "statsmodels" or m.startswith("scipy.stats")
    ]
    assert not found, found[:10]


def test_reading_a_directory_imports_no_engine_and_no_ray(finished):
    mods = modules_after(
        "from voirdire.analysis.results_dir import read_dir\n"
        "from voirdire.analysis.outputs import compute_dir\n"
        f"d = read_dir({str(finished)!r})\n"
        "assert d.judgments.height == 2 * 3 * 2 and d.job['job']['name'] == 'door'\n"
        f"assert compute_dir({str(finished)!r}).judge_metrics.height == 1"
    )
    assert "voirdire.analysis.outputs" in mods  # the directory was analysed
    found = [
        m for m in mods if m.split(".")[0] == "ray" or m.startswith("voirdire.engine")
    ]
    assert not found, found[:10]


def test_reading_a_directorys_judgments_imports_no_pandas(finished):
    """The reader's empty frame of the store's columns is made without
    ``pyarrow.Schema.empty_table``, which imports pandas (0.2 s)."""
    mods = modules_after(
        "from voirdire.analysis.results_dir import read_dir\n"
        f"assert read_dir({str(finished)!r}).judgments.height == 12"
    )
    assert "voirdire.analysis.results_dir" in mods
    assert not [m for m in mods if m.split(".")[0] == "pandas"]


def test_job_json_is_read_once(finished, monkeypatch):
    from voirdire.analysis.outputs import compute_dir

    reads = []

    def counting(method):
        def counted(self, *a, **k):
            if self.name == "job.json":
                reads.append(self)
            return method(self, *a, **k)

        return counted

    # the record is read as bytes (bounded before it is decoded) or as text
    monkeypatch.setattr(Path, "read_text", counting(Path.read_text))
    monkeypatch.setattr(Path, "read_bytes", counting(Path.read_bytes))
    compute_dir(finished)
    assert len(reads) == 1


def _no_kappa(monkeypatch) -> None:
    """Make the inter-pass kappa bootstrap raise wherever the analysis reaches it."""
    import voirdire.analysis.mitigation.pass_kappa as pk
    import voirdire.analysis.outputs as outputs

    def boom(*a, **k):
        raise AssertionError("the kappa bootstrap ran")

    monkeypatch.setattr(pk, "pass_kappa", boom)
    monkeypatch.setattr(outputs, "pass_kappa", boom)


def test_rank_and_mitigate_draw_no_kappa_bootstrap(finished, tmp_path, monkeypatch):
    from voirdire.analysis.outputs import compute_dir

    _no_kappa(monkeypatch)
    with pytest.raises(AssertionError, match="kappa bootstrap ran"):
        compute_dir(finished)  # the full analysis does draw it: the patch reaches it
    ranking, paths = voirdire.api.rank([finished], out=tmp_path / "rank", replicates=20)
    assert paths["leaderboard"].is_file() and ranking.leaderboard.height
    got = voirdire.api.mitigate([finished], out=tmp_path / "mit", replicates=20)
    assert got["table"].is_file()


def test_stages_run_are_those_of_the_outputs_asked(finished):
    from voirdire.analysis.results_dir import read_dir
    from voirdire.analysis.stages import (
        ANALYSIS_INPUTS,
        ANALYSIS_STAGES,
        DIR_OUTPUTS,
        analyse,
    )
    from voirdire.stages import check_stages

    check_stages(ANALYSIS_STAGES, ANALYSIS_INPUTS, DIR_OUTPUTS)
    ran: list[str] = []
    state = analyse(
        read_dir(finished),
        ["judgments", "clusters"],
        on_stage=lambda s: ran.append(s.name),
    )
    assert ran == ["judgments", "clusters"] and state["judgments"].height == 12
    ran.clear()
    analyse(
        read_dir(finished), ["judge_metrics"], on_stage=lambda s: ran.append(s.name)
    )
    assert "pass_kappa" in ran and "bias_effects" not in ran


def test_the_cli_prints_the_gold_accuracy_the_analysis_computed(finished, monkeypatch):
    """``voirdire analyze`` reads accuracy against gold labels from the judge table
    ``compute_dir`` returned; it computes none itself."""
    import voirdire.analysis.position.release_stats as rs
    from voirdire.cli.results import analyze

    def boom(*a, **k):
        raise AssertionError("the CLI computed gold accuracy again")

    monkeypatch.setattr(rs, "gold_accuracy", boom)
    analyze([finished])


def test_the_gold_table_reads_the_judge_table(capsys):
    import polars as pl
    from rich.console import Console

    from voirdire.analysis.report.terminal import print_gold_table

    jm = pl.DataFrame(
        {"benchmark": ["B", "B"], "judge": ["j", "k"], "pc": [0.8, 0.7], "pf": [0.1, -0.2],
         "n_gold": [12, None], "accuracy": [0.75, None], "accuracy_shown": [0.5, None],
         "accuracy_swapped": [1.0, None], "both_correct": [0.25, None]}
    )  # fmt: skip
    print_gold_table(jm, console=Console(width=200))
    out = capsys.readouterr().out
    assert "1 benchmark × judge rows" in out and "0.750" in out and "0.250" in out
    print_gold_table(jm.drop("n_gold"), console=Console(width=200))
    assert capsys.readouterr().out == ""
