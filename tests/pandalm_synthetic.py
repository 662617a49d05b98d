"""A small SYNTHETIC test set in PandaLM's exact format (``data/testset-v1.json``: ``idx``,
``motivation_app``, ``cmp_key``, ``instruction``, ``input``, ``response1``, ``response2``,
``annotator1..3``) and a fetched data directory made from it: PandaLM's real file is never
committed, so tests serve or convert this one with a manifest written for it."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

from voirdire.benchmarks.releases.catalogue import fetch_release
from voirdire.benchmarks.releases.mirror import blob_id
from voirdire.benchmarks.releases.pandalm import RECORDED_FILES, TESTSET

MODELS = ["bloom-7b", "cerebras-gpt-6.7B", "llama-7b", "opt-7b", "pythia-6.9b"]
LICENSE = b"                                 Apache License\n (synthetic stand-in for the test)\n"
#: annotator labels cycled over the items: unanimous, 2-of-3 each way, ties
LABELS = [(1, 1, 1), (2, 2, 2), (0, 0, 0), (1, 2, 2), (1, 1, 0), (0, 2, 0), (2, 1, 2)]


def synthetic_items(questions: int = 3) -> list[dict]:
    """Every pair of the five models on each question (10 items per question), labels cycled
    from :data:`LABELS`; item 3's response1 is a JSON ``true``, as six are in the release."""
    items = []
    for q in range(questions):
        for m1, m2 in combinations(MODELS, 2):
            a = LABELS[len(items) % len(LABELS)]
            items.append(
                {
                    "idx": len(items),
                    "motivation_app": ["Gmail", "IMDB"][q % 2],
                    "cmp_key": f"{m1}_{m2}",
                    "instruction": f"Answer question {q}.",
                    "input": "" if q == 0 else f"context {q}",
                    "response1": f"{m1}'s answer to {q}",
                    "response2": f"{m2}'s answer to {q}",
                    "annotator1": a[0],
                    "annotator2": a[1],
                    "annotator3": a[2],
                }
            )
    items[3]["response1"] = True
    return items


#: the recorded judges' results cycled over the items, in each file's own spelling
RECORDED_RESULTS = {
    "pandalm-7b": [1, 2, 0],
    "gpt-3.5-turbo": ["1", "2", "Tie", "garbage"],
}


def recorded_files(items: list[dict], results: dict | None = None) -> dict[str, bytes]:
    """The two judges' files in the release's format (``idx``, the result and the reason
    fields), results cycled from ``results`` (default :data:`RECORDED_RESULTS`)."""
    out = {}
    for judge, cycle in (RECORDED_RESULTS if results is None else results).items():
        path, field, why = RECORDED_FILES[judge]
        recs = [
            {"idx": it["idx"], field: cycle[n % len(cycle)], why: f"reason {n}"}
            for n, it in enumerate(items)
        ]
        out[path] = json.dumps(recs, indent=4).encode()
    return out


def write_release(
    root: Path, items: object, recorded: dict[str, bytes] | None = None
) -> Path:
    """The release's files under ``root`` (``data/testset-v1.json``, ``LICENSE``, and the
    ``recorded`` judges' files by path) and a manifest for them beside it (path-first form
    with sizes, like the package's); returns the manifest's path."""
    data = items if isinstance(items, bytes) else json.dumps(items, indent=4).encode()
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / TESTSET).write_bytes(data)
    (root / "LICENSE").write_bytes(LICENSE)
    for path, body in (recorded or {}).items():
        (root / path).write_bytes(body)
    man = root.parent / f"{root.name}-manifest.tsv"
    man.write_text(
        "path\tgit_blob_id\tsize\n"
        + "".join(
            f"{p}\t{blob_id((root / p).read_bytes())}\t{(root / p).stat().st_size}\n"
            for p in (TESTSET, "LICENSE", *(recorded or {}))
        )
    )
    return man


def synthetic_data_dir(where: Path) -> Path:
    """A data directory fetched (from a local copy) out of :func:`synthetic_items` and the
    two recorded judges (:func:`recorded_files`): ``where/data``."""
    items = synthetic_items()
    man = write_release(where / "release", items, recorded_files(items))
    return fetch_release(
        where / "data",
        release="pandalm",
        source=where / "release",
        manifest=man,
        progress=False,
    ).dest
