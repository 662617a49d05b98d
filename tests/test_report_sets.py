"""A directory's analysis and its report as sets (issue 43, item 6; ``docs/security.md``,
"Sets of files"): ``analysis_manifest.json`` names ``judgments.parquet``, ``metrics/*.csv``
and ``report.md``; ``report_manifest.json`` names the report's files and records the
analysis it was built beside. An analysis written again removes a report built from
another one; a report over a mixed analysis set rebuilds it from ``raw/`` (never reads it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.cli import voirdire
from tests.test_file_set import audited
from voirdire.analysis.report.files import check_report
from voirdire.core import ConfigError
from voirdire.file_set import check_set, file_digest, staged_name, write_manifest
from voirdire.layout import ANALYSIS_MANIFEST, JOB_FILE, RAW_DIR, REPORT_MANIFEST

REQUIRED = ("judgments.parquet", "metrics/judge_metrics.csv", "metrics/cell_metrics.csv", "report.md")  # fmt: skip
FAST = ("--figures", "none", "--replicates", "20")


def _named(d: Path, manifest: str) -> set[str]:
    return set(json.loads((d / manifest).read_text())["files"])


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}  # fmt: skip


def _report(*args) -> None:
    ran = voirdire("report", *args, *FAST)
    assert ran.returncode == 0, ran.output


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> Path:
    """An audit of two simulated judges and ``voirdire report`` of it in place."""
    d = audited(tmp_path_factory.mktemp("sets"))
    _report(d)
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_the_analysis_and_the_report_are_two_sets_naming_every_file_once(reported):
    d = reported
    assert check_set(d, ANALYSIS_MANIFEST, "voirdire analyze", REQUIRED) == {}
    meta = check_report(d)
    sha = file_digest(d / ANALYSIS_MANIFEST)["sha256"]
    assert meta["inputs"] == [{"dir": ".", "analysis": sha}] and meta["people"] is None
    analysis, report = _named(d, ANALYSIS_MANIFEST), _named(d, REPORT_MANIFEST)
    assert not analysis & report  # no file of two sets
    assert {"report.html", "verdicts.html", "metrics/choice.csv"} <= report
    written = {
        f
        for f in _tree(d)
        if not f.startswith(f"{RAW_DIR}/")
        and f not in (JOB_FILE, ANALYSIS_MANIFEST, REPORT_MANIFEST)
    }
    assert written == analysis | report


def test_a_report_stands_beside_the_same_analysis_written_again(reported, tmp_path):
    d = _copy(reported, tmp_path / "audit")
    ran = voirdire("analyze", d)
    assert ran.returncode == 0, ran.output
    assert "StaleReportWarning" not in ran.output and "removed" not in ran.output
    assert (d / "report.html").is_file()
    check_report(d)


def _built_from_another_analysis(d: Path) -> None:
    """The report's manifest as a report of an earlier analysis of ``d`` left it."""
    body = json.loads((d / REPORT_MANIFEST).read_text())
    body["meta"]["inputs"][0]["analysis"] = "0" * 64
    write_manifest(d, REPORT_MANIFEST, [d / f for f in body["files"]], body["meta"])


def test_an_analysis_written_again_removes_a_report_of_another_one(reported, tmp_path):
    d = _copy(reported, tmp_path / "audit")
    _built_from_another_analysis(d)
    with pytest.raises(ConfigError) as got:
        check_report(d)
    msg = str(got.value)
    assert "\n" not in msg and msg.startswith(f"{d / 'report.html'} was built from")
    ran = voirdire("analyze", d)
    assert ran.returncode == 0, ran.output
    said = " ".join(ran.stderr.split())
    assert "removed report.html, verdicts.html, report_manifest.json" in said, said
    assert f"run voirdire report {d} again" in said
    for gone in ("report.html", "verdicts.html", REPORT_MANIFEST):
        assert not (d / gone).exists()
    # a report cut short (its manifest removed first, as the writer does) goes the same way
    e = _copy(reported, tmp_path / "cut")
    (e / REPORT_MANIFEST).unlink()
    assert voirdire("analyze", e).returncode == 0
    assert not (e / "report.html").exists()


def test_a_report_over_a_mixed_analysis_set_rebuilds_it_from_raw(reported, tmp_path):
    """An analysis cut short (no manifest) with another run's table beside its own: the
    report reads ``raw/``, never those files; in place it writes the set again, with
    ``--out`` it leaves the input as it is and records that it had no whole analysis."""
    (tmp_path / "o").mkdir()
    other = audited(tmp_path / "o", 3)
    d = _copy(reported, tmp_path / "audit")
    (d / ANALYSIS_MANIFEST).unlink()
    want = (d / "metrics" / "judge_metrics.csv").read_bytes()
    shutil.copy(other / "metrics" / "judge_metrics.csv", d / "metrics")
    assert (d / "metrics" / "judge_metrics.csv").read_bytes() != want
    before = _tree(d)

    _report(d, "--out", tmp_path / "elsewhere")
    assert _tree(d) == before  # the input only read
    out = tmp_path / "elsewhere"
    meta = check_report(out)
    rel = "../audit"
    assert meta["inputs"] == [{"dir": rel, "analysis": None}]
    panel = (reported / "metrics" / "panel.csv").read_bytes()
    assert (out / "metrics" / "panel.csv").read_bytes() == panel  # from raw/, as before

    _report(d)  # in place: the analysis set written again, whole
    check_set(d, ANALYSIS_MANIFEST, "voirdire analyze", REQUIRED)
    assert (d / "metrics" / "judge_metrics.csv").read_bytes() == want
    check_report(d)
    # the report elsewhere now stands beside an analysis it was not built from
    with pytest.raises(ConfigError, match=r"was built from another analysis of"):
        check_report(out)


def test_a_report_in_place_with_people_puts_their_section_in_the_analysis_set(
    reported, tmp_path
):
    """``report.md`` of a directory is its analysis' file: the people section the report
    adds goes in through the analysis set, so no file is named by two sets that disagree."""
    import voirdire

    d = _copy(reported, tmp_path / "audit")
    voirdire.people([d], share=0.5, alpha=0.2)  # audit-people/, found by the report
    _report(d)
    assert "## Human boards from a few labels" in (d / "report.md").read_text()
    check_set(d, ANALYSIS_MANIFEST, "voirdire analyze", REQUIRED)
    meta = check_report(d)
    people = tmp_path / "audit-people"
    assert meta["people"] == {
        "dir": "../audit-people",
        "manifest": file_digest(people / "people_manifest.json")["sha256"],
    }
    assert "report.md" not in _named(d, REPORT_MANIFEST)


def test_mitigate_writes_its_files_as_one_set(reported, tmp_path):
    """``voirdire mitigate`` names its table, Markdown and figure in
    ``mitigation_manifest.json``; a rerun that fails midway leaves no manifest (the old one
    removed first), so the set is refused; the report's own mitigation files are in the
    report's set, with no mitigation manifest of their own."""
    from voirdire.analysis.report.files import write_mitigation
    from voirdire.layout import MITIGATION_MANIFEST

    out = tmp_path / "mitigation"
    ran = voirdire("mitigate", reported, "--out", out, "--replicates", "20")
    assert ran.returncode == 0, ran.output
    files = ("mitigation.csv", "mitigation.md", "figures/mitigation_cost_agreement.png")
    assert check_set(out, MITIGATION_MANIFEST, "voirdire mitigate", files) == {}
    assert _named(out, MITIGATION_MANIFEST) == {*files, "bpde_annotation.csv"}
    # the figure cannot be written (a folder where its temporary file goes): the rerun fails
    # after the table, with the old manifest gone
    blocked = staged_name(out / "figures" / "mitigation_cost_agreement.png")
    blocked.mkdir()
    with pytest.raises(IsADirectoryError):
        write_mitigation(pl.read_csv(out / "mitigation.csv"), None, out)
    blocked.rmdir()
    with pytest.raises(ConfigError, match="mitigation_manifest.json"):
        check_set(out, MITIGATION_MANIFEST, "voirdire mitigate", files)
    assert "mitigation.csv" in _named(reported, REPORT_MANIFEST)
    assert not (reported / MITIGATION_MANIFEST).exists()


def test_a_report_showing_people_files_replaced_is_refused_and_retired(
    reported, tmp_path
):
    """The report records the digest of the people's set it showed: when ``voirdire people``
    writes that set again, :func:`check_report` refuses the report (naming the folder) and
    the people command removes the report beside its input, with a StaleReportWarning; a
    people folder moved away leaves the report standing."""
    import voirdire
    from voirdire.exceptions import StaleReportWarning

    d = _copy(reported, tmp_path / "audit")
    people = tmp_path / "audit-people"
    voirdire.people([d], share=0.5, alpha=0.2)
    _report(d)
    check_report(d)
    kept = _copy(
        d, tmp_path / "kept" / "audit"
    )  # the report, its people folder elsewhere
    with pytest.warns(StaleReportWarning, match="earlier voirdire people run"):
        voirdire.people([d], share=0.6, alpha=0.2, seed=1)
    assert not (d / "report.html").exists() and not (d / REPORT_MANIFEST).exists()
    assert check_set(d, ANALYSIS_MANIFEST, "voirdire analyze", REQUIRED) == {}
    check_report(kept)  # ../audit-people not there: stands as written
    _copy(people, tmp_path / "kept" / "audit-people")
    with pytest.raises(ConfigError, match="other people's files than those in"):
        check_report(kept)


def test_rank_writes_its_files_as_one_set(reported, tmp_path):
    """``voirdire rank`` names its tables, pages and figures in ``ranking_manifest.json``,
    the figures under their final names (the Markdown links them so); the report's
    leaderboard files are in the report's set."""
    from voirdire.layout import RANKING_MANIFEST

    out = tmp_path / "ranking"
    ran = voirdire("rank", reported, "--out", out, "--replicates", "20")
    assert ran.returncode == 0, ran.output
    files = (
        "metrics/leaderboard.csv",
        "metrics/rank_flips.csv",
        "ranking.md",
        "ranking.html",
    )
    assert check_set(out, RANKING_MANIFEST, "voirdire rank", files) == {}
    named = _named(out, RANKING_MANIFEST)
    figures = {p for p in named if p.startswith("figures/")}
    assert figures and named == {*files, *figures}
    md = (out / "ranking.md").read_text()
    assert all(Path(f).name in md for f in figures) and ".tmp" not in md
    d = _copy(reported, tmp_path / "audit")
    _report(d, "--leaderboards")
    assert "metrics/leaderboard.csv" in _named(d, REPORT_MANIFEST)
    assert not (d / RANKING_MANIFEST).exists()
