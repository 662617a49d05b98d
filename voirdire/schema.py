"""The tables that flow between voirdire's stages, as Arrow schemas.

Data flows one way (the README's "How it works")::

    instances -> work units -> raw outputs (Parquet, append-only) -> judgments -> metrics

Every stage reads the previous stage's table and writes its own. The column lists below are
the contract between the rooms: ``engine`` writes ``WORK_UNIT_SCHEMA`` and ``RAW_SCHEMA``,
verdict extraction turns raw rows into ``JUDGMENT_SCHEMA`` rows, and ``analysis`` reads
judgments only.

Conventions
-----------
- Slots are named by position letters: ``A`` = first slot shown, ``B`` = second, ...; in
  pairwise three-option mode the tie letter is ``C`` (the letter after the last slot).
- ``candidates`` is the instance's canonical candidate list. Pairwise:
  ``[candidate, reference]``. ``shown`` lists the same models in the order of the slots of
  this permutation. ``permutation`` is the index of that order in the permutation scheme
  (pairwise ``both``: 0 = canonical order, 1 = swapped).
- ``repetition`` is 1-based.
- Lengths are in characters (``*_chars``); token counts, when known, in tokens.
"""

from __future__ import annotations

import pyarrow as pa

#: One row per query (judge, instance, permutation, repetition, perturbation): a work unit.
WORK_UNIT_SCHEMA = pa.schema(
    [
        pa.field(
            "unit_id", pa.string(), nullable=False
        ),  # stable content hash, 32 hex chars
        pa.field(
            "query_id", pa.string(), nullable=False
        ),  # judge-independent: bench+question+shown+option_mode
        pa.field("judge", pa.string(), nullable=False),  # the judge's label in the job
        pa.field(
            "benchmark", pa.string(), nullable=False
        ),  # "MTBench" | "DevBench" | ...
        pa.field("question_id", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field(
            "instance_id", pa.string(), nullable=False
        ),  # question_id + ";" + ";".join(candidates)
        pa.field(
            "candidate", pa.string()
        ),  # pairwise: the model compared with the reference; list-wise: null
        pa.field(
            "reference", pa.string()
        ),  # pairwise: the reference model; list-wise: null
        pa.field("candidates", pa.list_(pa.string()), nullable=False),
        pa.field("shown", pa.list_(pa.string()), nullable=False),
        pa.field("permutation", pa.int32(), nullable=False),
        pa.field("repetition", pa.int32(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),  # "pairwise" | "listwise"
        pa.field(
            "option_mode", pa.int32(), nullable=False
        ),  # number of options offered (2, 3, p, p+1)
        pa.field(
            "input_chars", pa.int64(), nullable=False
        ),  # question(s), summed over turns
        pa.field(
            "output_chars", pa.int64(), nullable=False
        ),  # the shown answers, summed over turns
        pa.field(
            "prompt_chars", pa.int64(), nullable=False
        ),  # the full prompt sent to the judge
        # perturbations (the CALM bias suite, docs/biases.md); the control has "control" and nulls
        # one name, one meaning: ``perturbation`` is the variant's label (engine.perturb.Variant.label),
        # ``perturbation_kind`` its bias type (benchmarks.biases; judges.base.Query.perturbation_kind)
        pa.field(
            "perturbation", pa.string(), nullable=False
        ),  # variant label, e.g. "bandwagon:share=80:target=worse"
        pa.field(
            "perturbation_kind", pa.string(), nullable=False
        ),  # "control" | "bandwagon" | ... | "fallacy"
        pa.field(
            "perturbation_param", pa.string()
        ),  # the variant's parameter ("80", "cheerful", "url", "2.0")
        pa.field(
            "target", pa.string()
        ),  # the candidate the perturbation treats; null: control, no target (cot)
        pa.field(
            "target_rule", pa.string()
        ),  # "better" | "worse" | "candidate" | "reference" | "slot:A" ...
        pa.field(
            "target_slot", pa.string()
        ),  # the target's position letter in this permutation
        pa.field(
            "better", pa.string()
        ),  # the instance's truly better candidate (quality source), else null
        # the benchmark's gold label: the candidate the dataset says is better (human or the
        # dataset's label); "tie" where the label is a tie; null where the benchmark has none
        pa.field("gold", pa.string()),
    ]
)

#: What a judge returned for one unit (appended to ``raw/`` as batches finish).
RESULT_FIELDS = [
    pa.field("output", pa.string()),  # the judge's full text; null when the call failed
    pa.field(
        "failure", pa.string()
    ),  # failure class, null on success (see judges.base.FailureClass)
    pa.field("failure_message", pa.string()),
    pa.field(
        "choice", pa.string()
    ),  # set by backends that decide the verdict themselves (structured/logprobs)
    pa.field(
        "option_probs", pa.map_(pa.string(), pa.float64())
    ),  # letter -> probability (logprob mode)
    pa.field(
        "verdict_mode", pa.string()
    ),  # "free" | "structured" | "logprobs" | "replay"
    pa.field("latency_s", pa.float64()),  # seconds
    pa.field("input_tokens", pa.int64()),
    pa.field("output_tokens", pa.int64()),
    pa.field("cost_usd", pa.float64()),  # USD
    pa.field("cached", pa.bool_()),  # answered from the response cache
    pa.field("finished_at", pa.timestamp("us", tz="UTC")),
]

RAW_SCHEMA = pa.schema(list(WORK_UNIT_SCHEMA) + RESULT_FIELDS)

#: Raw rows after verdict extraction: what analysis reads.
JUDGMENT_FIELDS = [
    pa.field(
        "extracted", pa.string()
    ),  # the extracted letter ("A".."H"), null when failed
    pa.field(
        "chosen", pa.string()
    ),  # model in the chosen slot; null for tie, failure or a letter outside the slots
    pa.field("tie", pa.bool_()),  # the extracted letter is the tie option
    pa.field(
        "failed", pa.bool_()
    ),  # no verdict: the call failed or nothing could be extracted
    pa.field(
        "slot_scores", pa.list_(pa.float64())
    ),  # score mode: each slot's score (1-10), slot order; else null
]

JUDGMENT_SCHEMA = pa.schema(list(RAW_SCHEMA) + JUDGMENT_FIELDS)

#: the columns of a work unit (the engine's; the analysis groups judgments into cells instead)
WORK_UNIT_COLUMNS = WORK_UNIT_SCHEMA.names
#: the columns a judge returns per work unit
RESULT_COLUMNS = [f.name for f in RESULT_FIELDS]


#: One row per answer rewritten for an answer-side perturbation (the rewrite stage), in
#: ``rewrites/<rewriter>/part-*.parquet``: the work unit of a rewriter, with its provenance.
REWRITE_UNIT_SCHEMA = pa.schema(
    [
        pa.field(
            "unit_id", pa.string(), nullable=False
        ),  # the rewrite id: H(rewriter identity hash, prompt)
        pa.field(
            "rewriter", pa.string(), nullable=False
        ),  # the rewriter's label in the job
        pa.field(
            "rewriter_identity", pa.string(), nullable=False
        ),  # its identity (canonical JSON)
        pa.field("benchmark", pa.string(), nullable=False),
        pa.field("question_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),  # whose answer is rewritten
        pa.field(
            "turn", pa.int32(), nullable=False
        ),  # the rewritten turn, 1-based (the judged, last, turn)
        pa.field(
            "kind", pa.string(), nullable=False
        ),  # authority | verbosity | sentiment | fallacy
        pa.field(
            "param", pa.string()
        ),  # citation style, length ratio, emotion; null for fallacy
        pa.field(
            "original", pa.string(), nullable=False
        ),  # the answer before rewriting
        pa.field("prompt", pa.string(), nullable=False),  # what the rewriter was asked
    ]
)

#: A rewrite with its result: ``output`` is the rewritten answer (null when it failed).
REWRITE_SCHEMA = pa.schema(list(REWRITE_UNIT_SCHEMA) + RESULT_FIELDS)
