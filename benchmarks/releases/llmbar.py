"""The second release: LLMBar (Zeng et al., ICLR 2024; ``princeton-nlp/LLMBar``, MIT).

Its :class:`~voirdire.benchmarks.releases.catalogue.Release` record :data:`LLMBAR` (the benchmark's
``release``), what :mod:`voirdire.benchmarks.releases.catalogue` fetches of it (the package manifest
``llmbar-manifest.tsv``: every ``Dataset/<subset>/dataset.json``, each evaluator's
``result.json`` and ``statistics.json``, the ``LICENSE``) and the layout it is converted into,
read by :mod:`voirdire.benchmarks.llmbar` and the replay judge::

    pairs.parquet       subset (str: the release folder under Dataset/, "LLMBar/Natural"),
                        item (i32: 0-based index in its dataset.json), input, output_1,
                        output_2 (str), label (i8: 1 or 2, the better output)
    outputs.parquet     subset, evaluator ("GPT-4"), strategy ("Vanilla"), item,
                        order (i8: 0 = "swap = False", outputs shown as given; 1 = "swap = True"),
                        stage (i8: index of the element of ``results`` read, the last),
                        completion, finish_reason (str|null; null for rating strategies),
                        winner (str|null: "1"/"2" in the dataset's numbering, as the release
                        recorded it), score_1, score_2 (str|null: a rating strategy's two
                        completions, each output rated alone; null otherwise)
    statistics.parquet  subset, evaluator, strategy, n, correct_False, correct_True,
                        correct_both, equal (i32 counts read from "k / n = p%"),
                        statistics (str: the release's statistics.json, verbatim)
    LICENSE, RELEASE.json

Intermediate generations of multi-stage strategies (the metrics or reference answer a
strategy wrote first; the first round of Swap) are not kept: the verdicts are the last
stage's, as in the release's own statistics. An evaluator × strategy whose ``result.json``
of a subset the mirror lacks is skipped there and named; a missing ``dataset.json`` is an
error (the pairs are the benchmark).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl

from voirdire.benchmarks.releases.fetch import Release
from voirdire.benchmarks.releases.jtj import Converted
from voirdire.benchmarks.releases.mirror import NotOnMirror
from voirdire.core import DataError

_DATASET = re.compile(r"^Dataset/(?P<subset>.+)/dataset\.json$")
_RESULT = re.compile(
    r"^Dataset/(?P<subset>.+)/evaluators/(?P<ev>[^/]+)/(?P<st>[^/]+)/(?P<file>result|statistics)\.json$"
)
_COUNT = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*=")
STAT_KEYS = ("correct_False", "correct_True", "correct_both", "equal")

PAIRS_SCHEMA = {
    "subset": pl.String,
    "item": pl.Int32,
    "input": pl.String,
    "output_1": pl.String,
    "output_2": pl.String,
    "label": pl.Int8,
}
OUTPUTS_SCHEMA = {
    "subset": pl.String,
    "evaluator": pl.String,
    "strategy": pl.String,
    "item": pl.Int32,
    "order": pl.Int8,
    "stage": pl.Int8,
    "completion": pl.String,
    "finish_reason": pl.String,
    "winner": pl.String,
    "score_1": pl.String,
    "score_2": pl.String,
}
STATS_SCHEMA = {
    "subset": pl.String,
    "evaluator": pl.String,
    "strategy": pl.String,
    "n": pl.Int32,
    **{k: pl.Int32 for k in STAT_KEYS},
    "statistics": pl.String,
}


def plan(manifest: dict[str, str]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The subsets (sorted) and the (subset, evaluator, strategy) cells with a ``result.json``
    in a manifest (sorted)."""
    subsets = sorted(m["subset"] for p in manifest if (m := _DATASET.match(p)))
    cells = sorted(
        (m["subset"], m["ev"], m["st"])
        for p in manifest
        if (m := _RESULT.match(p)) and m["file"] == "result"
    )
    return subsets, cells


def _json(data: bytes, path: str):
    try:
        return json.loads(data)
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None


def _pairs(subset: str, rows: list, path: str) -> pl.DataFrame:
    try:
        cols = {
            "subset": [subset] * len(rows),
            "item": list(range(len(rows))),
            **{k: [str(r[k]) for r in rows] for k in ("input", "output_1", "output_2")},
            "label": [int(r["label"]) for r in rows],
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(
            f"{path}: an item lacks input/output_1/output_2/label or has a bad label ({exc})"
        ) from None
    bad = [i for i, v in enumerate(cols["label"]) if v not in (1, 2)]
    if bad:
        raise DataError(
            f"{path}: item {bad[0]} has label {cols['label'][bad[0]]!r}, not 1 or 2"
        )
    return pl.DataFrame(cols, schema=PAIRS_SCHEMA)


def _outputs(
    cell: tuple[str, str, str], items: list, labels: list[int], path: str
) -> list[tuple]:
    """One row per (item, order) of a result.json (see OUTPUTS_SCHEMA)."""
    if len(items) != len(labels) or any(
        int(it.get("label", -1)) != lab for it, lab in zip(items, labels)
    ):
        raise DataError(
            f"{path}: its items do not match the subset's dataset.json (count or labels differ)"
        )
    rows = []
    for i, it in enumerate(items):
        try:
            last = it["results"][-1]
            s1 = last["score_1"][0] if "score_1" in last else None
            s2 = last["score_2"][0] if "score_2" in last else None
            for order in (0, 1):
                r = last[f"swap = {order == 1}"]
                comp = r.get("completion") or [None, None]
                rows.append(
                    (
                        *cell,
                        i,
                        order,
                        len(it["results"]) - 1,
                        comp[0],
                        comp[1],
                        r["winner"],
                        s1,
                        s2,
                    )
                )
        except (KeyError, IndexError, TypeError) as exc:
            raise DataError(
                f"{path}: item {i} lacks the results of both orders ({exc})"
            ) from None
    return rows


def _statistics(cell: tuple[str, str, str], data: bytes, path: str) -> tuple:
    stats = _json(data, path)
    counts, n = [], None
    for k in STAT_KEYS:
        m = _COUNT.match(str(stats.get(k, "")))
        if not m:
            raise DataError(f"{path}: {k!r} is not 'k / n = p%': {stats.get(k)!r}")
        counts.append(int(m[1]))
        n = int(m[2])
    return (*cell, n, *counts, data.decode("utf-8"))


def convert(
    get: Callable[[str], bytes],
    manifest: dict[str, str],
    out: Path,
    *,
    log: Callable[[str], None] = lambda s: None,
    **_,
) -> Converted:
    """Fetch LLMBar's files with ``get`` (verified bytes; :class:`NotOnMirror` when absent)
    and write the layout of the module docstring into ``out``.

    Raises:
        DataError: no dataset in the manifest, a dataset not on the mirror, malformed JSON,
            or a result.json whose items do not match its dataset.
    """
    subsets, cells = plan(manifest)
    if not subsets:
        raise DataError("the release manifest lists no Dataset/<subset>/dataset.json")
    done = Converted()
    out.mkdir(parents=True, exist_ok=True)
    pairs, labels = [], {}
    for subset in subsets:
        path = f"Dataset/{subset}/dataset.json"
        try:
            frame = _pairs(subset, _json(get(path), path), path)
        except NotOnMirror as exc:
            raise DataError(
                f"the dataset {path} is not on the mirror ({exc})"
            ) from None
        pairs.append(frame)
        labels[subset] = frame["label"].to_list()
        done.files[path] = manifest[path]
    rows: list[tuple] = []
    stats: list[tuple] = []
    for cell in cells:
        base = f"Dataset/{cell[0]}/evaluators/{cell[1]}/{cell[2]}"
        try:
            rows += _outputs(
                cell,
                _json(get(f"{base}/result.json"), f"{base}/result.json"),
                labels[cell[0]],
                base,
            )
        except NotOnMirror as exc:
            done.skipped.append(
                f"{cell[1]}/{cell[2]} on {cell[0]}: {base}/result.json is not on the mirror ({exc})"
            )
            continue
        done.files[f"{base}/result.json"] = manifest[f"{base}/result.json"]
        done.judges.setdefault(cell[0], []).append(f"{cell[1]}/{cell[2]}")
        if f"{base}/statistics.json" in manifest:
            try:
                stats.append(
                    _statistics(
                        cell, get(f"{base}/statistics.json"), f"{base}/statistics.json"
                    )
                )
                done.files[f"{base}/statistics.json"] = manifest[
                    f"{base}/statistics.json"
                ]
            except NotOnMirror:
                log(
                    f"{base}/statistics.json is not on the mirror: its published figures are left out"
                )
    pl.concat(pairs).write_parquet(out / "pairs.parquet")
    pl.DataFrame(rows, schema=OUTPUTS_SCHEMA, orient="row").write_parquet(
        out / "outputs.parquet"
    )
    pl.DataFrame(stats, schema=STATS_SCHEMA, orient="row").write_parquet(
        out / "statistics.parquet"
    )
    done.copy_license(
        get,
        manifest,
        out,
        log,
        "LLMBar is MIT licensed, copyright 2023 Princeton Natural Language Processing",
    )
    return done


LLMBAR = Release(
    name="llmbar",
    repo="princeton-nlp/LLMBar",
    commit="900616bff90b6c6c8e1681f7d079250637c55992",
    manifest=Path(__file__).resolve().parent / "llmbar-manifest.tsv",
    dir_name="llmbar",
    data_env="VOIRDIRE_LLMBAR_DATA",
    url_env="VOIRDIRE_LLMBAR_URL",
    convert=convert,
    copy_name="llmbar-release",
)


__all__ = [
    "LLMBAR",
    "OUTPUTS_SCHEMA",
    "PAIRS_SCHEMA",
    "STATS_SCHEMA",
    "STAT_KEYS",
    "convert",
    "plan",
]
