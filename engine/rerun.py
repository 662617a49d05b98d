"""A rerun into an output directory: resume the same configuration, refuse another.

A run records in ``job.json`` (key ``configuration``) what defines its work units besides
the per-question content the unit ids already carry: the prompt template version, the
benchmark, a fingerprint of the data (:func:`data_key`), the perturbation variants, and per
judge its identity hash (backend, model, settings, sampling), its comparison design (mode,
option mode, permutation scheme and seed, list size, score style) and its repetitions.

A rerun into a directory whose ``raw/`` already holds results compares the planned
configuration with the recorded one (:func:`check_rerun`) before anything is sent. Results
of another configuration would otherwise stay beside the new ones and be read with them
(a judge with 144 rows for 36 queries, RS computed across two temperatures), so:

- the same configuration resumes (nothing asked twice);
- more is allowed: a new judge, more repetitions, more perturbation variants (every stored
  unit still belongs to the job);
- anything else is refused in one line naming what changed: a judge's settings (its
  identity hash), its comparison design, fewer repetitions, a removed variant, another
  benchmark, other data, candidates, questions or template.

A directory written before this record existed (no ``configuration``) is compared on what
its ``job.json`` has: the benchmark name and each judge's identity hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from voirdire.core import ConfigError, canonical_json, content_hash, slug
from voirdire.engine.unit_records import TEMPLATE_VERSION

if TYPE_CHECKING:
    from voirdire.engine.plan import JobPlan
    from voirdire.engine.spec import JobSpec

__all__ = ["check_rerun", "configuration", "data_key"]

#: the comparison settings that enter a judge's unit ids (besides repetitions)
_UNIT_SETTINGS = (
    "mode",
    "option_mode",
    "permutations",
    "permutation_seed",
    "list_size",
    "score_style",
)


def data_key(plan: JobPlan) -> str:
    """Fingerprint (32 hex chars) of what the job's prompts are made of: per instance its
    id, and per question and candidate the question's prompt key (a user's template and
    row), its text and the candidates' answers, in sorted order. Equal data give equal keys;
    an edited answer, question, template or another sample of instances gives another.

    The key is :func:`~voirdire.core.content_hash` of the parts ``ids``, ``[question,
    prompt key, text]`` per question and ``[question, model, [answer per turn]]`` per
    candidate, each part written as :func:`~voirdire.core.canonical_json`."""
    bench, inst = plan.bench, plan.instances
    ids = inst["instance_id"].sort().to_list()
    # (question, model) pairs in sorted order (polars sorts strings by code point, as
    # Python's sorted does)
    pairs = (
        inst.select("question_id", m="candidates")
        .explode("m")
        .unique()
        .sort("question_id", "m")
    )
    qs, ms = pairs["question_id"].to_list(), pairs["m"].to_list()
    parts = [canonical_json(ids)]
    parts += [
        canonical_json([q, bench.prompt_key(q), _question_text(bench, q)])
        for q in dict.fromkeys(qs)
    ]
    answers = bench.answers
    parts += [canonical_json([q, m, list(answers(q, m))]) for q, m in zip(qs, ms)]
    return content_hash(*parts)


def _question_text(bench: Any, question_id: str) -> str | None:
    """The benchmark's question text, or None for a benchmark that keeps none apart
    (:meth:`~voirdire.benchmarks.base.Benchmark.question_text` is optional: rewriters need it,
    the job does not; its prompt key still covers the content)."""
    try:
        return bench.question_text(question_id)
    except NotImplementedError:
        return None


def configuration(
    job: JobSpec, plan: JobPlan, recorded: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``configuration`` record of ``job.json`` (module docstring): ``template_version``,
    ``benchmark``, ``data`` (:func:`data_key`), ``variants`` (variant label -> key) and
    ``judges`` (name -> ``identity_hash``, ``units`` (the comparison settings),
    ``repetitions``). Judges of ``recorded`` (the directory's earlier record) that this job
    does not plan keep their entry: their results stay in ``raw/``."""
    judges = dict((recorded or {}).get("judges") or {})
    for rj in plan.judges:
        comp = rj.comparison_for(job.comparison).model_dump(mode="json")
        judges[rj.name] = {
            "identity_hash": rj.identity_hash,
            "units": {k: comp.get(k) for k in _UNIT_SETTINGS},
            "repetitions": comp["repetitions"],
        }
    return {
        "template_version": TEMPLATE_VERSION,
        "benchmark": plan.bench.name,
        "data": data_key(plan),
        "variants": {v.label: v.key for v in plan.variants},
        "judges": judges,
    }


def _has_rows(out: Path, judge: str | None = None) -> bool:
    """Whether ``raw/`` (or a judge's folder in it) holds a part file."""
    base = out / "raw" / slug(judge) if judge else out / "raw"
    return base.is_dir() and any(base.rglob("part-*.parquet"))


def _changed(old: dict[str, Any], new: dict[str, Any], out: Path) -> str | None:
    """What differs between the recorded and the planned configuration, in words."""
    for key, what in (
        ("template_version", "the prompt template version"),
        ("benchmark", "the benchmark"),
    ):
        if key in old and old[key] != new[key]:
            return f"{what} changed ({old[key]!r} -> {new[key]!r})"
    if "data" in old and old["data"] != new["data"]:
        return "the benchmark data, questions, candidates or template changed"
    gone = sorted(set(old.get("variants") or {}) - set(new["variants"]))
    if gone:
        return f"perturbation {gone[0]!r} was removed"
    for label, key in (old.get("variants") or {}).items():
        if new["variants"].get(label, key) != key:
            return f"perturbation {label!r} changed"
    for name, was in (old.get("judges") or {}).items():
        now = new["judges"].get(name)
        if now is None or now is was or not _has_rows(out, name):
            continue
        if was.get("identity_hash") != now["identity_hash"]:
            return f"judge {name!r} settings changed"
        for k, v in (was.get("units") or {}).items():
            if now["units"].get(k) != v:
                return f"judge {name!r} {k} changed ({v!r} -> {now['units'].get(k)!r})"
        if now["repetitions"] < was.get("repetitions", 0):
            return f"judge {name!r} repetitions fell ({was['repetitions']} -> {now['repetitions']})"
    return None


def check_rerun(out: Path, record: dict[str, Any], new: dict[str, Any]) -> None:
    """Refuse a run into ``out`` whose results belong to another configuration.

    Args:
        out: the output directory.
        record: its ``job.json`` (the earlier run's record).
        new: the planned :func:`configuration`.

    Raises:
        ConfigError: one line, ``output_dir X holds results of a different configuration
            (what changed); use a new output_dir``, when ``raw/`` holds results and
            something other than an addition changed (module docstring).
    """
    if not _has_rows(out):
        return
    old = record.get("configuration")
    if not isinstance(old, dict):  # a directory of an older voirdire: what job.json has
        judges = record.get("judges") or {}
        old = {
            "benchmark": record.get("benchmark"),
            "judges": {
                n: {"identity_hash": j.get("identity_hash")}
                for n, j in judges.items()
                if isinstance(j, dict)
            },
        }
    why = _changed(old, new, out)
    if why:
        raise ConfigError(
            f"output_dir {out} holds results of a different configuration ({why}); "
            "use a new output_dir"
        )
