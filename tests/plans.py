"""A digest of a job's dry-run plan, to compare plans across versions of the code.

``plan_digest`` reduces a plan to what must not move when planning is reorganised: the
instance count, the work units per judge, the variants and, per judge, its identity hash,
its unit count and a digest of its unit and query ids in unit order; the rewrites' ids. It
uses only names that the engine had before planning became named stages
(``voirdire.engine.job.plan_job``), so the same code digests an older checkout:

    python -c "from tests.plans import main; main()" [--summary] examples/*.toml
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from voirdire.engine.plan import plan_job
from voirdire.engine.spec import load_job
from voirdire.engine.units import iter_unit_batches


def _hash(items: Iterable[Any]) -> str:
    """The first 16 hex characters of the SHA-256 of ``items`` as text, NUL-separated."""
    d = hashlib.sha256()
    for x in items:
        d.update(str(x).encode())
        d.update(b"\0")
    return d.hexdigest()[:16]


def plan_digest(path: str | Path) -> dict[str, Any]:
    """The dry-run plan of the job file ``path`` as a small JSON-able dict: ``instances``
    (int), ``units_per_judge`` (int), ``variants`` (label, key), ``rewrites`` (count,
    id digest), ``judges`` (name -> identity hash, unit count, unit-id digest, query-id
    digest). Sends nothing. Raises ConfigError as planning does."""
    job = load_job(path)
    plan = plan_job(job, dry_run=True)
    # the rewritten answers do not enter ids: the originals stand in for them (as in estimate_job)
    originals = {
        (q, m, lab): plan.bench.answers(q, m)
        for q, m, lab in plan.rewrites.select(
            "question_id", "model", "variant"
        ).iter_rows()
    }
    judges = {}
    for rj in plan.judges:
        units, queries = [], []
        for b in iter_unit_batches(
            plan.bench,
            plan.instances,
            rj.comparison_for(job.comparison),
            judge=rj.name,
            identity_hash=rj.identity_hash,
            needs_prompt=False,
            batch_size=job.run.batch_size,
            variants=plan.variants,
            rewrites=originals,
        ):
            for q in b.queries:
                units.append(q.unit_id)
                queries.append(q.query_id)
        judges[rj.name] = [rj.identity_hash, len(units), _hash(units), _hash(queries)]
    return {
        "instances": plan.instances.height,
        "units_per_judge": plan.units_per_judge,
        "variants": [[v.label, v.key] for v in plan.variants],
        "rewrites": [plan.rewrites.height, _hash(plan.rewrites["unit_id"].to_list())],
        "judges": judges,
    }


def main() -> None:
    """Print the digests of the job files named on the command line as JSON (with
    ``--summary``: their :func:`plan_summary`)."""
    paths = [p for p in sys.argv[1:] if p != "--summary"]
    how = plan_summary if "--summary" in sys.argv else plan_digest
    json.dump(
        {Path(p).name: how(p) for p in paths}, sys.stdout, indent=1, sort_keys=True
    )


def plan_summary(path: str | Path) -> list[Any]:
    """The dry-run plan of ``path`` in one line: instances, units per judge, judges,
    variants, rewrites (ints) and the digest of the whole :func:`plan_digest` (16 hex)."""
    d = plan_digest(path)
    return [
        d["instances"],
        d["units_per_judge"],
        len(d["judges"]),
        len(d["variants"]),
        d["rewrites"][0],
        _hash([json.dumps(d, sort_keys=True)]),
    ]
