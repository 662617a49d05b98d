"""Judge families: the model a judge runs and its strategy (prompt template, prompting
strategy, sampling), so a study of many judges can be read family by family.

From the job where it says (a live judge's ``identity.model`` in ``job.json``), else parsed
from the judge's name or recorded name as studies name them: ``<model>/<strategy>`` (LLMBar's
``GPT-4/Swap_CoT``, ``atlas/cot-2``). A judge whose name has no ``/`` and whose job names no
model is a family of its own (model = its name, strategy empty).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

__all__ = ["judge_families"]


def _family(name: str, identity: Mapping[str, Any]) -> tuple[str, str]:
    model = identity.get("model")
    label = (
        identity.get("recorded") if isinstance(identity.get("recorded"), str) else name
    )
    head, sep, tail = label.partition("/")
    if isinstance(model, str) and model:
        strategy = (
            tail
            if sep
            else str(identity.get("template") or identity.get("prompt") or name)
        )
        return model, strategy
    if sep and head and tail:
        return head, tail
    return name, ""


def judge_families(
    judges: Iterable[str], jobs: Iterable[Mapping[str, Any]] = ()
) -> pl.DataFrame:
    """The family of each judge.

    Args:
        judges: judge names.
        jobs: job records (``job.json``, parsed) whose ``judges`` map names to
            ``{"identity": {...}}``; the first record naming a judge is used.

    Returns:
        ``judge``, ``model``, ``strategy`` (strings), one row per distinct judge, sorted.
    """
    ident: dict[str, Mapping[str, Any]] = {}
    for job in jobs:
        for name, rec in (job.get("judges") or {}).items():
            if isinstance(rec, Mapping) and isinstance(rec.get("identity"), Mapping):
                ident.setdefault(name, rec["identity"])
    rows = [(j, *_family(j, ident.get(j, {}))) for j in sorted(set(judges))]
    return pl.DataFrame(rows, schema=["judge", "model", "strategy"], orient="row")
