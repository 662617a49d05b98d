"""The contributor guide's two recipes (``docs/contributing.md``), done: a new mitigation
strategy and a new metric, each one module with one decorator, run through the product's
own entry points and checked against a direct count.

The strategy and the metric modules are written to a temporary folder and found by their
import paths ``"module:NAME"``, as an outside package's would be; the registries import
them when first asked for."""

from __future__ import annotations

import itertools
import sys
import textwrap

import polars as pl
import pytest

from tests.test_mitigation import _rows
from voirdire.analysis.mitigation import evaluation as E
from voirdire.analysis.mitigation import registry
from voirdire.analysis.position import registry as metric_registry
from voirdire.analysis.position.simulate import simulate_judgments
from voirdire.analysis.position.uncertainty import bootstrap_ci
from voirdire.judges.simulated import SimulatedSettings

STRATEGY = '''
"""Strategy ``swap-loss``: both orders; a disagreement counts against the candidate."""

import polars as pl
from voirdire.analysis.mitigation.registry import register_strategy
from voirdire.analysis.mitigation.verdicts import COMPARISON_KEYS, conform, normalise, pair_orders


@register_strategy("swap-loss", doc="both orders; disagreement -> loss")
def swap_loss(judgments: pl.DataFrame) -> pl.DataFrame:
    p = pair_orders(normalise(judgments))
    decided = pl.col("v1").is_in(["win", "tie", "loss"]) & pl.col("v2").is_in(["win", "tie", "loss"])
    verdict = pl.when(~decided.fill_null(False)).then(pl.lit("undecided")).when(pl.col("v1") == pl.col("v2")).then(pl.col("v1")).otherwise(pl.lit("loss"))
    return conform(p.select(*COMPARISON_KEYS, "repetition", verdict=verdict, queries="queries"))
'''

METRIC = '''
"""Tie share: consistent ties over consistent pairs."""

import polars as pl
from voirdire.analysis.position.formulas import ratio_statistic
from voirdire.analysis.position.cells import pairwise_pairs
from voirdire.analysis.position.registry import HIGHER, register_metric


def tie_sums(judgments: pl.DataFrame) -> pl.DataFrame:
    k = pl.col("klass")
    return pairwise_pairs(judgments).group_by("benchmark", "judge", "candidate", "task", "question_id").agg(
        ties=pl.col("consistent_tie").sum().cast(pl.Float64), consistent=(k == "consistent").sum().cast(pl.Float64)
    )


@register_metric("tie_share", sums=tie_sums, values=("ties", "consistent"), cells=("candidate", "task"), label="tie share", direction=HIGHER)
def tie_share(s):
    return ratio_statistic("ties", "consistent")(s)
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A package ``contrib_plugin`` with the two modules, importable for this test only."""
    pkg = tmp_path / "contrib_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "swap_loss.py").write_text(textwrap.dedent(STRATEGY))
    (pkg / "tie_share.py").write_text(textwrap.dedent(METRIC))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "contrib_plugin"
    for name in [m for m in sys.modules if m.startswith("contrib_plugin")]:
        del sys.modules[name]
    metric_registry.METRICS.unregister("tie_share")
    registry.STRATEGIES.unregister("swap-loss")


def test_a_new_strategy_is_one_module_and_one_decorator(plugin):
    assert "swap-loss" not in registry.STRATEGIES
    rec = registry.strategy(
        f"{plugin}.swap_loss:swap_loss"
    )  # the import path imports it: its decorator registers it
    assert (
        rec.name == "swap-loss"
        and registry.strategy("swap-loss") is rec
        and not rec.default
    )
    assert "swap-loss" not in registry.default_strategies(
        pl.DataFrame({"slot_scores": [None]})
    )
    letters = ["A", "B", "C", None]
    spec = [
        (f"q{i}", "x", a, b)
        for i, (a, b) in enumerate(itertools.product(letters, letters))
    ]
    j = _rows(spec)
    got = registry.apply_strategies(j, ["swap-loss"]).filter(
        pl.col("strategy") == "swap-loss"
    )
    # by hand: the candidate-side verdict of each order; equal -> that, a failed order -> undecided, else loss
    side = {
        ("A", 0): "win",
        ("B", 0): "loss",
        ("A", 1): "loss",
        ("B", 1): "win",
        ("C", 0): "tie",
        ("C", 1): "tie",
    }
    want = {}
    for q, _, a, b in spec:
        v1, v2 = side.get((a, 0)), side.get((b, 1))
        want[q] = (
            "undecided" if v1 is None or v2 is None else v1 if v1 == v2 else "loss"
        )
    assert dict(zip(got.get_column("question_id"), got.get_column("verdict"))) == want
    assert got.get_column("queries").to_list() == [2] * len(spec) and got.get_column(
        "side"
    ).null_count() == len(spec)
    # graded like the built-in strategies: order-invariant, PC 1 and PF 0 by construction
    row = (
        E.evaluate(registry.apply_strategies(j, ["single", "swap-loss"]), replicates=50)
        .filter(pl.col("strategy") == "swap-loss")
        .row(0, named=True)
    )
    assert (
        row["order_invariant"]
        and row["pc"] == 1.0
        and row["undecided"] == pytest.approx(7 / 16)
    )


def test_a_new_metric_is_one_module_and_one_decorator(plugin):
    m = metric_registry.metric(
        f"{plugin}.tie_share:tie_share"
    )  # the import path imports it: its decorator registers it
    assert metric_registry.metric("tie_share") is m and m.label == "tie share"
    df = simulate_judgments(
        {"j": SimulatedSettings(sensitivity=1.0, tie_rate=0.3, primacy=0.3)},
        n_questions=40,
        option_mode=3,
        seed=3,
    )
    ci = bootstrap_ci(df, replicates=200)
    got = ci.filter(pl.col("metric") == "tie_share").row(0, named=True)
    # a direct count over the judgment pairs: (C, C) over the consistent ones
    by_pair = df.group_by("question_id", "candidate", "repetition").agg(
        first=pl.col("extracted")
        .filter(pl.col("shown").list.first() == pl.col("candidate"))
        .first(),
        second=pl.col("extracted")
        .filter(pl.col("shown").list.first() != pl.col("candidate"))
        .first(),
    )
    pairs = list(zip(by_pair.get_column("first"), by_pair.get_column("second")))
    consistent = [p for p in pairs if p in (("A", "B"), ("B", "A"), ("C", "C"))]
    assert got["estimate"] == pytest.approx(
        sum(p == ("C", "C") for p in consistent) / len(consistent)
    )
    assert got["lo"] < got["estimate"] < got["hi"]
    # the built-in figures are unchanged by the addition (same draw of questions)
    metric_registry.METRICS.unregister("tie_share")
    assert ci.filter(pl.col("metric") != "tie_share").equals(
        bootstrap_ci(df, replicates=200)
    )
