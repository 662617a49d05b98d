"""Strategies that need both orders, on a judge that judged each pair in one order
(:mod:`voirdire.analysis.mitigation.orders`), and panels of one judge.

A one-order judge has no swap-and-tie, gate or PC-weighted verdict: those strategies are not
computed for it and the mitigation output says so in one line, where they used to print a
row of verdicts all ``undecided`` with PC 1 by construction. A panel of one judge would
repeat that judge: a default run leaves the juries out where every benchmark has one judge.
"""

from __future__ import annotations

import polars as pl
import pytest

from voirdire.analysis.mitigation import registry
from voirdire.analysis.mitigation.evaluation import run_mitigation
from voirdire.analysis.mitigation.orders import one_order_judges, one_order_lines
from voirdire.judges.extract import extract_verdicts

REF = "base"
BOTH = [n for n, r in registry.strategies().items() if r.both_orders]


def _rows(judge: str, orders: str, n: int = 24) -> pl.DataFrame:
    """Pairwise judgment rows of ``judge`` through the real extraction: ``n`` pairs (three
    candidates against ``REF``), each in both orders or in one (alternating)."""
    out = []
    for i in range(n):
        cand = f"m{i % 3}"
        kept = [True, False] if orders == "both" else [i % 2 == 0]
        for first in kept:
            letter = "ABC"[(i * 7 + first) % 3]
            out.append({"benchmark": "B", "judge": judge, "question_id": f"q{i}", "task": "t",
                        "candidate": cand, "reference": REF, "shown": [cand, REF] if first else [REF, cand],
                        "permutation": 0 if first else 1, "repetition": 1, "mode": "pairwise",
                        "option_mode": 3, "query_id": f"{judge}/{i}/{first}", "output": f"[[{letter}]]",
                        "choice": None, "input_chars": 1, "output_chars": 1, "prompt_chars": 1})  # fmt: skip
    raw = pl.DataFrame(out, schema_overrides={"option_mode": pl.Int32, "choice": pl.String,
                                              "permutation": pl.Int32, "repetition": pl.Int32})  # fmt: skip
    return extract_verdicts(raw, {"B": r"\[\[([ABCD])\]\]"})


def test_a_one_order_judge_has_no_verdict_of_a_strategy_that_needs_both_orders():
    """Judge ``solo`` judged each pair once, ``duo`` both orders: swap-tie, gate and the
    PC-weighted and swap-and-tie panels are computed for ``duo`` only (the panels without
    ``solo``), the per-order strategies for both; one line names ``solo`` and them."""
    j = pl.concat([_rows("solo", "one"), _rows("duo", "both")], how="diagonal_relaxed")
    assert one_order_judges(j).rows() == [("B", "solo")]
    assert {"swap-tie", "gate", "jury-pc", "jury+swap-tie"} <= set(BOTH)
    names = registry.default_strategies(j)
    table, _, _ = run_mitigation(j, replicates=30)
    got = set(table.select("strategy", "judge").iter_rows())
    assert {
        ("single", "solo"),
        ("single", "duo"),
        ("swap-tie", "duo"),
        ("gate", "duo"),
    } <= got
    assert not {(s, "solo") for s in BOTH} & got
    assert ("jury", "panel-2") in got and ("jury+swap-tie", "panel-1") in got
    assert ("jury-pc", "panel-1") in got and ("jury-pc", "panel-2") not in got
    lines = one_order_lines(j, registry.both_orders_names(names))
    assert len(lines) == 1 and "solo" in lines[0] and "duo" not in lines[0]
    assert all(s in lines[0] for s in ("swap-tie", "gate", "jury-pc", "jury+swap-tie"))
    assert registry.both_orders_names(["single", "jury", "gate"]) == ["gate"]
    assert one_order_lines(j, []) == []


def test_only_both_orders_strategies_on_one_order_judges_give_an_empty_table():
    table, _, _ = run_mitigation(
        _rows("solo", "one"), strategies=["swap-tie", "gate"], replicates=10
    )
    assert table.height == 0 and "pass_kappa_gate" in table.columns


def test_a_panel_of_one_judge_is_not_run_by_default():
    """One judge: no jury by default (its panel would repeat it); named, it still runs;
    two judges: the panels run."""
    one = _rows("duo", "both")
    two = pl.concat([one, _rows("other", "both")], how="diagonal_relaxed")
    panels = {n for n, r in registry.strategies().items() if r.panel}
    assert panels == {"jury", "jury-pc", "jury+swap-tie"}
    assert not panels & set(registry.default_strategies(one))
    assert panels <= set(registry.default_strategies(two))
    table, _, _ = run_mitigation(one, strategies=["jury"], replicates=10)
    assert table.get_column("judge").to_list() == ["panel-1"]


@pytest.mark.ray
def test_mitigate_on_a_one_order_log_says_so_in_one_line(tmp_path, ray_local):
    """Through the audit and ``voirdire mitigate``: AlpacaEval's annotations (each pair in
    the one order its seeded switch drew) get the per-order rows and one line for the rest."""
    from typer.testing import CliRunner

    import voirdire
    from tests.test_audit_logs2 import write_alpaca_eval
    from voirdire.cli import app

    files = []
    for m in ("model-x", "model-y"):
        files.append(
            tmp_path / f"results/{m}/weighted_alpaca_eval_gpt4_turbo/annotations.json"
        )
        write_alpaca_eval(files[-1], m, 30, seed=len(files))
    voirdire.audit(files, "alpacaeval", out=tmp_path / "audit")
    r = CliRunner().invoke(
        app,
        ["mitigate", str(tmp_path / "audit"), "--out", str(tmp_path / "mit"),
         "--replicates", "20"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    t = pl.read_csv(tmp_path / "mit" / "mitigation.csv")
    assert t.get_column("strategy").to_list() == ["single"]
    md = (tmp_path / "mit" / "mitigation.md").read_text()
    line = [x for x in md.splitlines() if "one order only" in x]
    assert len(line) == 1 and "swap-tie, gate" in line[0] and "not computed" in line[0]
    assert "one order only" in r.output
