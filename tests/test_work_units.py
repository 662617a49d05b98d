"""The work-unit record: one WorkUnit per query, its fields the schema's columns, the Query
derived from it, and a UnitBatch's columns read from the records."""

from __future__ import annotations

import dataclasses

from voirdire.engine.rewrite import RewriteUnit
from voirdire.engine.unit_records import UnitBatch, WorkUnit
from voirdire.schema import REWRITE_UNIT_SCHEMA, WORK_UNIT_COLUMNS


def _unit(**over) -> WorkUnit:
    row = dict(
        unit_id="u1",
        query_id="q1",
        judge="j",
        benchmark="MTBench",
        question_id="81",
        task="writing",
        instance_id="81;a;b",
        candidate="a",
        reference="b",
        candidates=("a", "b"),
        shown=("b", "a"),
        permutation=1,
        repetition=2,
        mode="pairwise",
        option_mode=3,
        input_chars=10,
        output_chars=20,
        prompt_chars=30,
        perturbation="control",
        perturbation_kind="control",
        perturbation_param=None,
        target=None,
        target_rule=None,
        target_slot=None,
        better=None,
        gold=None,
        prompt="P",
    )
    row.update(over)
    return WorkUnit(**row)


def test_the_records_fields_are_the_schemas_columns():
    names = [f.name for f in dataclasses.fields(WorkUnit)]
    assert names[: len(WORK_UNIT_COLUMNS)] == list(WORK_UNIT_COLUMNS)
    assert names[len(WORK_UNIT_COLUMNS) :] == ["prompt", "system", "control_query_id"]
    assert [
        f.name for f in dataclasses.fields(RewriteUnit)
    ] == REWRITE_UNIT_SCHEMA.names


def test_the_query_is_derived_from_the_record():
    q = _unit().query()
    assert (q.unit_id, q.query_id, q.shown, q.repetition, q.option_mode, q.prompt) == (
        "u1",
        "q1",
        ("b", "a"),
        2,
        3,
        "P",
    )
    assert (
        q.perturbation_kind is None
        and q.perturbation_param is None
        and q.control_query_id is None
    )
    p = _unit(
        unit_id="u2",
        perturbation="bandwagon:share=80:target=candidate",
        perturbation_kind="bandwagon",
        perturbation_param="80",
        target="a",
        target_rule="candidate",
        target_slot="B",
        control_query_id="q0",
    ).query()
    assert (
        p.perturbation_kind,
        p.perturbation_param,
        p.target_slot,
        p.control_query_id,
    ) == ("bandwagon", "80", "B", "q0")


def test_a_batch_reads_its_columns_from_the_records():
    units = [_unit(), _unit(unit_id="u2", repetition=3)]
    batch = UnitBatch("j", units)
    assert list(batch.columns) == list(WORK_UNIT_COLUMNS)
    assert batch.columns["unit_id"] == ["u1", "u2"] and batch.columns["repetition"] == [
        2,
        3,
    ]
    kept = batch.select([False, True])
    assert (
        len(kept) == 1
        and kept.columns["unit_id"] == ["u2"]
        and kept.queries[0].repetition == 3
    )
    assert UnitBatch("j", []).columns == {k: [] for k in WORK_UNIT_COLUMNS}


def test_the_rows_sent_to_a_worker_are_the_queries():
    """The scheduler sends each batch as tuples (``UnitBatch.query_rows``, cheaper to
    pickle than the records or queries); the worker's ``Query(*row)`` is the record's
    query, for the control, a perturbed unit and a rewriter's unit, and ``judge_rows``
    answers exactly as ``judge`` does."""
    import asyncio
    import io
    import pickle

    from voirdire.engine.worker import JudgeWorker
    from voirdire.judges.base import JudgeContext, Query

    perturbed = _unit(unit_id="u2", perturbation="bandwagon:share=80:target=candidate",
                      perturbation_kind="bandwagon", perturbation_param="80", target="a",
                      target_rule="candidate", target_slot="B", control_query_id="q1")  # fmt: skip
    batch = UnitBatch("j", [_unit(), perturbed, _unit(unit_id="u3", repetition=3)])

    class _NoGlobals(pickle.Unpickler):
        # plain tuples of str/int/None need no global: any class in the rows is refused
        def find_class(self, module: str, name: str):
            raise pickle.UnpicklingError(f"global {module}.{name} refused")

    rows = _NoGlobals(io.BytesIO(pickle.dumps(batch.query_rows))).load()
    assert all(type(r) is tuple for r in rows)
    assert [Query(*r) for r in rows] == batch.queries
    rw = RewriteUnit(
        "w1", "rw", "h", "MTBench", "81", "a", 1, "verbosity", "long", "o", "P"
    )
    rw_batch = UnitBatch("rw", [rw], names=REWRITE_UNIT_SCHEMA.names)
    assert [Query(*r) for r in rw_batch.query_rows] == [rw.query()]

    ctx = JudgeContext(judge="j", benchmark="MTBench", data_dir=None, output_dir=None)
    worker = JudgeWorker("simulated", {}, ctx)
    by_rows = asyncio.run(worker.judge_rows(batch.query_rows))
    by_queries = asyncio.run(worker.judge(batch.queries))
    assert by_rows["unit_id"] == ["u1", "u2", "u3"] and by_rows == by_queries


def test_prompt_free_judges_get_large_batches_unless_the_job_sets_one():
    from voirdire.engine.spec import RunSpec
    from voirdire.engine.units import PROMPT_FREE_BATCH, batch_size_for

    unset, small, large = RunSpec(), RunSpec(batch_size=16), RunSpec(batch_size=9000)
    assert (
        batch_size_for(unset, prompt_free=True) == PROMPT_FREE_BATCH > unset.batch_size
    )
    assert batch_size_for(unset, prompt_free=False) == unset.batch_size == 256
    assert batch_size_for(small, prompt_free=True) == 16  # the job's setting holds
    assert batch_size_for(large, prompt_free=False) == 9000
    # a record read back (what a resumed run parses) keeps whether it was set
    again = RunSpec.model_validate(unset.model_dump(exclude_unset=True))
    assert batch_size_for(again, prompt_free=True) == PROMPT_FREE_BATCH
