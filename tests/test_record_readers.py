"""Every field of every registry's record has a reader (after vLLM's registry test, which
checks each registered model against what the engine reads).

A field that is set and read by nothing is a promise the code does not keep: the analysis
then switches on names instead (``name.startswith("jury")``, ``kind == "fallacy"``).
Here each record's fields must be read as an attribute (``record.field``) somewhere in the
product code (the record's own methods included: ``Metric.sums_fn`` hands on ``sums``), and
the analysis must not test a registered kind's name where its record says the same thing.
"""

from __future__ import annotations

import ast
import dataclasses

import polars as pl
import pytest

from tests.repo import REPO
from tests.test_sizes import product_files


def _records():
    from voirdire.analysis.mitigation.registry import Strategy
    from voirdire.analysis.position.registry import Metric
    from voirdire.benchmarks.biases.bias import BiasType

    return [BiasType, Strategy, Metric]


def _attributes_read() -> set[str]:
    """Every attribute name read (``x.name`` in a load context) in the product code."""
    names: set[str] = set()
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                names.add(node.attr)
    return names


@pytest.mark.parametrize("record", _records(), ids=lambda r: r.__name__)
def test_every_field_of_a_record_has_a_reader(record):
    read = _attributes_read()
    unread = [f.name for f in dataclasses.fields(record) if f.name not in read]
    assert unread == [], f"{record.__name__} fields set but read by nothing: {unread}"


def test_the_analysis_reads_a_bias_kinds_metric_and_damage_from_its_record():
    """A bias registered with ``metric="accuracy"`` and ``damages_target=True`` is read as
    the built-in ``fallacy`` is; an unknown kind (a directory from another session) as a
    robustness bias."""
    from voirdire.analysis.biases.perturbed import bias_record_columns
    from voirdire.benchmarks.biases.bias import ANSWER, BiasType
    from voirdire.benchmarks.biases.registry import register_bias, unregister_bias

    register_bias(
        BiasType(
            name="misdirection",
            family=ANSWER,
            rewrite="Make the answer subtly wrong.",
            metric="accuracy",
            damages_target=True,
        )
    )
    try:
        kinds = [
            "misdirection",
            "fallacy",
            "bandwagon",
            "refinement_aware",
            "elsewhere",
        ]
        got = pl.DataFrame({"k": kinds}).select(**bias_record_columns(pl.col("k")))
    finally:
        unregister_bias("misdirection")
    assert got["metric"].to_list() == [
        "accuracy",
        "accuracy",
        "robustness",
        "error_rate",
        "robustness",
    ]
    assert got["damages_target"].to_list() == [True, True, False, False, False]


def test_no_analysis_module_tests_a_strategy_or_bias_name_its_record_carries():
    """The names whose properties the records carry are not compared in the analysis."""
    bad = []
    for path in (REPO / "analysis").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in (
            'startswith("jury")',
            '("gate", "swap-tie")',
            '== "fallacy"',
            '== "refinement_aware"',
            '["fallacy", "cot"]',
        ):
            if needle in text:
                bad.append(f"{path.relative_to(REPO)}: {needle}")
    assert bad == []
