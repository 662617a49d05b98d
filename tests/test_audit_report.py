"""The report's one-order and calibration sections (``analysis/report/audit_sections.py``,
their tables computed by ``analysis/build.py: dir_shown``)
and their ``voirdire.Results`` methods: a replayed job judged in one fixed order says that
position cannot be separated and gives no figure; a randomised one-order table with
probabilities and labels gets both sections, their CSVs and the reliability figure; a
table with both orders and no probabilities gets neither."""

from __future__ import annotations

import polars as pl
import pytest

import voirdire
from tests.audit_simulate import calibration_table, one_order_table
from voirdire.analysis.build import dir_shown
from voirdire.analysis.outputs import Results
from voirdire.analysis.position.one_order import FIXED_MESSAGE
from voirdire.analysis.report.audit_sections import audit_sections, audit_view
from voirdire.analysis.report.files import write_csv


def _results(tmp_path, judgments):
    return Results(
        tmp_path, {"job": {"name": "t"}}, judgments, pl.DataFrame(), pl.DataFrame()
    )


def test_fixed_order_job_says_position_cannot_be_separated(
    tmp_path, data_dir, ray_local
):
    from voirdire.engine.spec import parse_job

    spec = parse_job(
        {
            "name": "fixed",
            "output_dir": str(tmp_path / "fixed"),
            "benchmark": {"name": "mtbench", "data_dir": str(data_dir), "sample": "repetition",
                          "tasks": ["writing"]},
            "comparison": {"mode": "pairwise", "option_mode": 3, "permutations": "original"},
            "judges": [{"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613",
                        "study": "repetition"}],
        },
        "fixed",
    )  # fmt: skip
    voirdire.run(spec)
    res = voirdire.analyze(tmp_path / "fixed")
    md = (tmp_path / "fixed" / "report.md").read_text()
    assert "## Position effect, one order per pair" in md and FIXED_MESSAGE in md
    eff = res.one_order()
    assert eff.get_column("design").to_list() == ["fixed"]
    assert eff.item(0, "effect") is None
    design = pl.read_csv(tmp_path / "fixed" / "metrics" / "order_design.csv")
    assert design.get_column("reference_first").to_list() == [0]
    assert not (
        tmp_path / "fixed" / "metrics" / "calibration.csv"
    ).exists()  # no labels
    assert res.one_order() is eff  # computed once, then kept
    page = voirdire.report([tmp_path / "fixed"], out=tmp_path / "rep").read_text()
    assert "One order per pair, and calibration" in page and FIXED_MESSAGE in page


def test_randomised_table_with_probabilities_gets_both_sections(tmp_path):
    t = one_order_table(30, [0.0, 1.0], delta=0.5, seed=1)
    probs, _ = calibration_table(30, 2, slope=2.0, seed=1)
    t = t.join(
        probs.select("question_id", "candidate", "gold", "option_probs"),
        on=["question_id", "candidate"],
    )
    res = _results(tmp_path, t)
    md, csvs = audit_sections(dir_shown(res), tmp_path)
    for name, table in csvs.items():
        write_csv(table, tmp_path / "metrics" / f"{name}.csv")
    assert "## Position effect, one order per pair" in md
    assert "## Calibration against the labels" in md and "![reliability]" in md
    pooled = res.one_order().filter(pl.col("candidate").is_null()).row(0, named=True)
    assert f"{pooled['effect']:+.3f}" in md
    cal = res.calibration().row(0, named=True)
    assert f"{cal['ece']:.3f}" in md and f"{cal['brier']:.3f}" in md
    for f in ("order_design", "one_order_effect", "calibration", "reliability"):
        assert (tmp_path / "metrics" / f"{f}.csv").stat().st_size > 0
    png = (tmp_path / "figures" / "reliability.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    rel = pl.read_csv(tmp_path / "metrics" / "reliability.csv")
    assert rel.get_column("n").sum() == cal["n"]
    (view,) = audit_view([dir_shown(res)], tmp_path / "html")
    assert view["one_order"]["rows"] and view["calibration"]["rows"]
    assert view["reliability"]["src"].startswith("data:image/png;base64,")
    assert (
        audit_view(
            [dir_shown(_results(tmp_path, one_order_table(5, [0.0], design="both")))],
            tmp_path,
        )
        is None
    )


def test_both_orders_without_probabilities_get_no_section(tmp_path):
    res = _results(tmp_path, one_order_table(10, [0.0], design="both"))
    assert audit_sections(dir_shown(res), tmp_path) == ("", {})
    assert not (tmp_path / "metrics").exists()
    assert res.one_order().height == 0 and res.calibration().height == 0


@pytest.mark.parametrize("bad", [-0.1, 1.2])
def test_a_probability_outside_0_1_is_refused(tmp_path, bad):
    t = one_order_table(3, [0.0], design="both").with_columns(
        gold=pl.col("candidate"), p_candidate=pl.lit(bad)
    )
    with pytest.raises(voirdire.ConfigError, match="p_candidate"):
        _results(tmp_path, t).calibration()


def test_a_bar_in_a_label_does_not_split_the_markdown_cell(tmp_path):
    t = one_order_table(10, [0.0], seed=3, judge="a|b")
    md, _ = audit_sections(dir_shown(_results(tmp_path, t)), tmp_path)
    row = next(line for line in md.splitlines() if line.startswith("| a"))
    assert row.startswith("| a\\|b |")
    assert row.replace("\\|", "").count("|") == 11  # ten cells


def test_the_sections_render_the_tables_they_are_given(tmp_path):
    """The one-order and calibration tables are computed by the analysis' stages
    (``dir_shown``, once, kept on the Results), and the report renders what it is given:
    a table changed after the stages is what the section shows."""
    import dataclasses

    t = one_order_table(30, [0.0, 1.0], delta=0.5, seed=1)
    res = _results(tmp_path, t)
    shown = dir_shown(res)
    assert shown.one_order is res.one_order() and shown.calibration is None
    given = dataclasses.replace(
        shown, one_order=shown.one_order.with_columns(effect=pl.lit(0.4321))
    )
    md, csvs = audit_sections(given, tmp_path)
    assert "+0.432" in md and csvs["one_order_effect"] is given.one_order
    assert f"{res.one_order().item(0, 'effect'):+.3f}" not in md
