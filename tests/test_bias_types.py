"""Bias types as records (benchmarks/biases): a new kind is one record plus registration,
and it runs end to end through a job with simulated judges (docs/contributing.md)."""

from __future__ import annotations

import polars as pl
import pytest

from voirdire.analysis.results_dir import load_judgments
from voirdire.benchmarks.biases.bias import INSTRUCTION, BiasParam, BiasType, Slots
from voirdire.benchmarks.biases.registry import (
    bias_type,
    get_bias,
    known_biases,
    register_bias,
    unregister_bias,
)
from voirdire.core import ConfigError
from voirdire.engine.plan import plan_job
from voirdire.engine.spec import parse_job
from voirdire.engine.units import iter_unit_batches

#: a kind of this test's own: a flattering remark about the target answer's author
FLATTERY = BiasType(
    name="flattery",
    family=INSTRUCTION,
    param=BiasParam("remarks", "remark", str, ("expert",), allowed=("expert", "award")),
    default_targets=("candidate",),
    instruction=lambda value, slots: (
        f"{slots.target} was written by a renowned expert."
        if value == "expert"
        else f"{slots.target} was written by an award-winning author."
    ),
)


@pytest.fixture
def flattery():
    register_bias(FLATTERY)
    yield FLATTERY
    unregister_bias("flattery")


def _job(tmp_path, **over):
    d = {
        "name": "flattery",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "questions": ["81", "82", "83", "84", "85", "86"],
            "candidates": ["gpt-4", "alpaca-13b", "llama-13b"],
        },
        "comparison": {"repetitions": 1},
        "perturbations": [{"kind": "flattery", "remarks": ["expert", "award"]}],
        "judges": [
            {"name": "robust", "backend": "simulated", "primacy": 0.6, "seed": 2},
            {
                "name": "flattered",
                "backend": "simulated",
                "primacy": 0.6,
                "seed": 2,
                "susceptibility": {"flattery": 0.6},
            },
        ],
    }
    d.update(over)
    return parse_job(d)


def test_registry_lists_builtins_then_registered(flattery):
    assert known_biases()[:10] == (
        "bandwagon",
        "distraction",
        "diversity",
        "cot",
        "refinement_aware",
        "compassion_fade",
        "authority",
        "verbosity",
        "sentiment",
        "fallacy",
    )
    assert known_biases()[-1] == "flattery" and get_bias("flattery") is FLATTERY
    with pytest.raises(ValueError, match="already registered"):
        register_bias(
            BiasType(
                name="bandwagon", family=INSTRUCTION, instruction="{target} is popular."
            )
        )
    with pytest.raises(ValueError, match="already registered"):
        register_bias(BiasType(name="flattery", family=INSTRUCTION, instruction="x"))
    # an import path names a record without registering it first
    assert get_bias("tests.test_bias_types:FLATTERY") is FLATTERY


def test_a_kind_is_one_decorator_on_its_text(tmp_path):
    """``@bias_type`` builds the record from the decorated function and registers it; the
    job spec then reads it like any other kind."""

    @bias_type(
        "praise",
        param=BiasParam("tones", "tone", str, ("warm",)),
        default_targets=("candidate",),
    )
    def PRAISE(value, slots):
        return f"{slots.target} is {value}ly praised."

    try:
        assert (
            isinstance(PRAISE, BiasType)
            and get_bias("praise") is PRAISE
            and known_biases()[-1] == "praise"
        )
        assert PRAISE.family == INSTRUCTION and PRAISE.instruction(
            "warm", Slots(target="Assistant B")
        ) == ("Assistant B is warmly praised.")
        job = _job(
            tmp_path, perturbations=[{"kind": "praise", "tones": ["warm", "cold"]}]
        )
        assert job.perturbations[0].values == ("warm", "cold")
        with pytest.raises(ValueError, match="already registered"):
            bias_type("praise")(lambda value, slots: "again")
    finally:
        unregister_bias("praise")
    assert "praise" not in known_biases()


def test_the_spec_validates_a_new_kinds_parameter(tmp_path, flattery):
    with pytest.raises(
        ConfigError, match="unknown remark 'genius'; known: expert, award"
    ):
        _job(tmp_path, perturbations=[{"kind": "flattery", "remarks": ["genius"]}])
    with pytest.raises(
        ConfigError,
        match="'shares' is not a parameter of this kind \\(its parameter is 'remarks'\\)",
    ):
        _job(tmp_path, perturbations=[{"kind": "flattery", "shares": [80]}])
    with pytest.raises(ConfigError, match="remarks must be a non-empty list"):
        _job(tmp_path, perturbations=[{"kind": "flattery", "remarks": []}])
    unregister_bias("flattery")
    with pytest.raises(ConfigError, match="unknown perturbation kind 'flattery'"):
        _job(tmp_path)


def test_builtin_parameters_are_converted_as_before(tmp_path):
    """``ratios = [2]`` reads 2.0 (label ``ratio=2.0``), ``shares`` are percentages."""
    job = _job(
        tmp_path,
        perturbations=[
            {"kind": "verbosity", "ratios": [2], "rewriter": "t", "target": "candidate"}
        ],
        rewriters=[{"name": "t", "backend": "template"}],
    )
    assert job.perturbations[0].values == ("2.0",) and job.model_dump()[
        "perturbations"
    ][0]["ratios"] == [2.0]
    with pytest.raises(ConfigError, match="share 0 is not a percentage in 1..100"):
        _job(tmp_path, perturbations=[{"kind": "bandwagon", "shares": [0]}])
    with pytest.raises(ConfigError, match="shares: 'many'"):
        _job(tmp_path, perturbations=[{"kind": "bandwagon", "shares": ["many"]}])


def test_a_new_kind_runs_end_to_end(tmp_path, data_dir, ray_local, flattery):
    """The kind added above, and nothing else, through plan, prompts, Ray judges and
    judgments: its sentence stands in the prompt before the first answer; a judge that
    ignores it answers exactly as on the control (the perturbed query reuses the control's
    draws, repetition_noise = 0); the flattered judge's verdict is the control's or the
    target's slot, and moves to the target about 60 % of the time it can."""
    import voirdire

    job = _job(tmp_path)
    plan = plan_job(job)
    assert [v.label for v in plan.variants] == [
        "control",
        "flattery:remark=expert:target=candidate",
        "flattery:remark=award:target=candidate",
    ]
    batches = iter_unit_batches(
        plan.bench,
        plan.instances,
        job.comparison,
        judge="x",
        identity_hash="h",
        needs_prompt=True,
        batch_size=50,
        variants=plan.variants,
    )
    seen = 0
    for b in batches:
        for q, label, slot in zip(
            b.queries, b.columns["perturbation"], b.columns["target_slot"]
        ):
            if label.startswith("flattery:remark=expert"):
                head = q.prompt.partition("\n\n<|The Start of ")[0]
                assert head.endswith(
                    f"\n\nAssistant {slot} was written by a renowned expert."
                )
                assert (
                    q.perturbation_kind == "flattery"
                    and q.perturbation_param == "expert"
                )
                seen += 1
    assert seen == plan.instances.height * 2

    voirdire.run(job, show_progress=False)
    j = load_judgments(job.output_dir)
    assert j.height == 2 * plan.units_per_judge == 2 * plan.instances.height * 2 * 3
    keys = ["judge", "instance_id", "permutation", "repetition"]
    ctl = j.filter(pl.col("perturbation") == "control").select(
        *keys, pl.col("extracted").alias("ctl")
    )
    pert = j.filter(pl.col("perturbation_kind") == "flattery").join(ctl, on=keys)
    robust = pert.filter(pl.col("judge") == "robust")
    assert (robust["extracted"] == robust["ctl"]).all()
    moved = pert.filter(pl.col("judge") == "flattered")
    assert (
        moved["extracted"].eq(moved["ctl"])
        | moved["extracted"].eq(moved["target_slot"])
    ).all()
    could = moved.filter(pl.col("ctl") != pl.col("target_slot"))
    share = could.select(pl.col("extracted").eq(pl.col("target_slot")).mean()).item()
    assert could.height >= 20 and 0.35 < share < 0.85, (could.height, share)
