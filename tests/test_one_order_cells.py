"""A cell judged in one order only has no PC, PF or owr (issue 40, item 3): its counts stay
(``n`` its pairs, ``both_orders`` 0), its figures are null, not 0, in ``cell_metrics``,
``metrics/cell_metrics.csv`` and the study's ``regression_cells.csv``; the factor
regression leaves its judge out and says so, escaped; the two-order judges' cells and
figures are those of an audit without the one-order judge."""

from __future__ import annotations

import html

import polars as pl
import pytest

from tests.audit_simulate import one_order_table
from tests.study_simulate import simulated_study_log
from voirdire.analysis.position.cells import cell_metrics
from voirdire.analysis.position.metrics import judge_metrics
from voirdire.analysis.position.regression import factor_regressions, one_order_notes

FIGURES = ("pc", "pf", "owr", "quality_gap")
COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip
#: the one-order judge: a name every output must show as text
ONE = "atlas/<i>cot</i>&1"


def _judged(t: pl.DataFrame) -> pl.DataFrame:
    """:func:`one_order_table`'s rows with the letter of the slot chosen (``C`` a tie,
    null failed) and lengths, the columns the position metrics read."""
    slot = pl.when(pl.col("failed")).then(None).when(pl.col("tie")).then(pl.lit("C"))
    slot = slot.when(pl.col("chosen") == pl.col("shown").list.first()).then(pl.lit("A"))
    return t.with_columns(
        extracted=slot.otherwise(pl.lit("B")),
        query_id=pl.concat_str("judge", "question_id", "candidate", "permutation"),
        input_chars=1,
        output_chars=1,
        prompt_chars=1,
    )


def _mixed() -> pl.DataFrame:
    """Judge ``fix`` in one fixed order, ``both`` in both orders, and ``half`` in both
    orders for candidate m0 and in one order for m1."""
    half = one_order_table(12, [0.0, 0.5], design="both", judge="half", seed=2)
    half = half.filter(
        (pl.col("candidate") != "m1") | (pl.col("shown").list.first() == "m1")
    )
    return _judged(
        pl.concat(
            [
                one_order_table(12, [0.0, 0.5], design="fixed", judge="fix", seed=1),
                one_order_table(12, [0.0, 0.5], design="both", judge="both", seed=1),
                half,
            ]
        )
    )


def test_a_one_order_cell_keeps_its_count_and_has_no_figures():
    cells = cell_metrics(_mixed())
    assert set(cells.get_column("candidate")) == {"m0", "m1"}
    for r in cells.iter_rows(named=True):
        one = r["judge"] == "fix" or (r["judge"], r["candidate"]) == ("half", "m1")
        assert r["n"] == 12  # the pairs, each a question asked in one or both orders
        assert r["both_orders"] == (0 if one else 12)
        if one:
            assert all(r[c] is None for c in FIGURES), (
                r
            )  # was 0.0: read as a measurement
            assert r["consistent"] == r["primacy"] == r["recency"] == 0
        else:
            v = r["consistent"] + r["primacy"] + r["recency"]
            assert v > 0 and r["pc"] == pytest.approx(r["consistent"] / v)
            assert r["pf"] == pytest.approx((r["recency"] - r["primacy"]) / r["n"])
    jm = {r["judge"]: r for r in judge_metrics(_mixed()).iter_rows(named=True)}
    assert jm["fix"]["pc"] is None and jm["fix"]["pc_std"] is None
    assert jm["both"]["pc"] is not None and jm["half"]["pc"] is not None
    # half's spread is over its one measured cell, not that cell and a 0
    assert jm["half"]["pc_std"] == 0.0


def test_the_regression_leaves_the_one_order_judge_out_and_names_it():
    t = _judged(
        pl.concat(
            [
                one_order_table(30, [0.0, 0.4, 0.8], design="both", judge=j, seed=s)
                for s, j in enumerate(["a", "b", "c"])
            ]
            + [one_order_table(30, [0.0, 0.4, 0.8], design="fixed", judge=ONE, seed=9)]
        )
    )
    cells = cell_metrics(t)
    res = factor_regressions(cells)
    assert res, "the two-order judges' cells are enough to regress"
    note = (
        f"B: judge {ONE} left out of the regression: it has one order only (no pair "
        "judged in both orders, so its cells have no PC or PF)"
    )
    assert one_order_notes(cells) == [note]
    for r in res:
        assert r.n == 9 and note in r.notes  # three judges × three candidates
    assert one_order_notes(cells.filter(pl.col("judge") != ONE)) == []


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    """Two audits of one simulated log: three judges and a fourth (``ONE``) in one order
    only, and the three judges alone."""
    import voirdire

    tmp = tmp_path_factory.mktemp("one_order_cells")
    log = simulated_study_log(4, questions=8)
    names = sorted(log.get_column("judge").unique().to_list())
    log = log.with_columns(pl.col("judge").replace({names[0]: ONE}))
    log = log.filter(~((pl.col("judge") == ONE) & (pl.col("first") == "b")))
    out = {}
    for x, part in (("with", log), ("without", log.filter(pl.col("judge") != ONE))):
        part.write_parquet(tmp / f"{x}.parquet")
        done = voirdire.audit(
            [tmp / f"{x}.parquet"], "logtable", out=tmp / f"audit_{x}",
            log={"columns": {c: c for c in COLUMNS}},
        )  # fmt: skip
        out[x] = done.output_dir
    return out


def test_an_audit_writes_null_figures_for_the_one_order_judge(audits, tmp_path):
    import voirdire

    m = audits["with"] / "metrics"
    cells = pl.read_csv(m / "cell_metrics.csv")
    mine = cells.filter(pl.col("judge") == ONE)
    assert mine.height == 8 and (mine.get_column("n") > 0).all()  # 4 tasks × 2 models
    assert (mine.get_column("both_orders") == 0).all()
    for c in FIGURES:
        assert mine.get_column(c).null_count() == mine.height, c
    others = cells.filter(pl.col("judge") != ONE)
    assert (others.get_column("both_orders") == others.get_column("n")).all()
    jm = pl.read_csv(m / "judge_metrics.csv")
    assert jm.filter(pl.col("judge") == ONE).row(0, named=True)["pc"] is None
    # the two-order judges read as in an audit without the one-order judge
    alone = audits["without"] / "metrics"
    for name in ("cell_metrics.csv", "judge_metrics.csv"):
        got = pl.read_csv(m / name).filter(pl.col("judge") != ONE)
        assert got.equals(pl.read_csv(alone / name)), name

    page = voirdire.report([audits["with"]], out=tmp_path / "rep", replicates=20)
    reg = pl.read_csv(tmp_path / "rep" / "metrics" / "regression_cells.csv")
    one = reg.filter(pl.col("judge") == ONE)
    assert one.height == 8 and one.get_column("pc").null_count() == 8
    assert one.get_column("owr").null_count() == 8
    assert reg.filter(pl.col("judge") != ONE).get_column("pc").null_count() == 0
    text = page.read_text()
    section = text[text.index('id="regression"') : text.index('id="agreement"')]
    said = "left out of the regression: it has one order only"
    assert f"judge {html.escape(ONE)} {said}" in section and ONE not in section
    md = (tmp_path / "rep" / "report.md").read_text()
    assert said in md and ONE not in md


def test_the_win_rate_curves_pick_only_judges_with_a_curve(audits, tmp_path):
    import json
    import re

    import voirdire
    from voirdire.analysis.report.curve_charts import default_picks, picked_judges

    cells = pl.DataFrame(
        {
            "judge": ["one"] * 4 + ["few"] * 2 + ["a"] * 4 + ["b"] * 4,
            "owr": [None] * 4 + [0.2, 0.6] + [0.1, 0.4, 0.6, 0.9] * 2,
            "pc": [None] * 4 + [0.5, 0.7] + [0.9, 0.7, 0.6, 0.8] * 2,
            "pf": [None] * 4 + [0.1, 0.0] + [0.1, -0.2, 0.0, 0.3] * 2,
            "n": [8] * 14,
        }
    )
    assert default_picks(cells, ["one", "few", "b", "a"]) == ["b", "a"]
    assert default_picks(cells, ["one", "few", "b", "a"], k=1) == ["b"]

    page = voirdire.report([audits["with"]], out=tmp_path / "rep", replicates=20)
    text = page.read_text()
    specs = {
        k: json.loads(s.replace("<\\/", "</"))
        for k, s in re.findall(
            r'data-key="(owr:[^"]*)"></div><script type="application/json" '
            r'id="fig\d+-spec">(.*?)</script>',
            text,
            re.S,
        )
    }
    (spec,) = specs.values()
    picked = picked_judges(spec)
    judges = pl.read_csv(audits["with"] / "metrics" / "judge_metrics.csv")
    others = set(judges.filter(pl.col("judge") != ONE).get_column("judge"))
    assert set(picked) == others  # four judges, five picks: all but the one-order judge
    boxes = dict(
        re.findall(r'<input type="checkbox" class="pick" data-judge="([^"]*)"'
                   r' aria-label="curve"( checked)?>', text)
    )  # fmt: skip
    assert boxes[html.escape(ONE)] == ""  # its box is not checked: no curve to draw
    assert all(boxes[html.escape(j)] == " checked" for j in others)
