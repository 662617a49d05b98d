"""The third release: PandaLM's human-annotated test set (Wang et al., ICLR 2024;
``WeOpenML/PandaLM``, ``data/testset-v1.json``, Apache-2.0).

What :mod:`voirdire.benchmarks.releases.catalogue` fetches of it (the release record :data:`PANDALM`) (the package manifest
``pandalm-manifest.tsv``: ``data/testset-v1.json`` and the ``LICENSE``) and the layout it is
converted into, read by :mod:`voirdire.benchmarks.pandalm`::

    pairs.parquet   idx (i32: the item's ``idx``), id (str: ``idx`` as text), task (str: the
                    item's ``motivation_app``), prompt (i32: 0-based index of the item's
                    (instruction, input) among the distinct ones, in file order: the
                    question several pairs share), instruction, input, response1,
                    response2 (str), question (str: the instruction, then a blank line
                    and the input when there is one: the question shown to judges),
                    model_1, model_2 (str: the two models of ``cmp_key``,
                    ``"<model_1>_<model_2>"``; response1 is model_1's), annotator1,
                    annotator2, annotator3 (i8: 1 or 2 = that response is better, 0 = tie),
                    label (i8: the majority of the three, same coding), gold (str: the
                    majority's model name, or ``"tie"``)
    recorded.parquet  the two judges the release recorded on the test set (PandaLM's
                    evaluation of its own judge and of GPT-3.5, ``data/pandalm-7b-testset-v1.json``
                    and ``data/gpt-3.5-turbo-testset-v1.json``, one object per item with its
                    ``idx``): judge (str: ``pandalm-7b``, ``gpt-3.5-turbo``), idx (i32), result
                    (str: the recorded verdict as text: ``1``/``2`` = that response is better,
                    ``0`` or ``Tie`` = a tie, anything else (GPT-3.5's ``garbage``) = none
                    read), reason (str|null: the judge's explanation)
    LICENSE, RELEASE.json

The file holds the three annotators' labels and no majority field; the majority is computed
here (every item of the release has one: at least two annotators agree). Six responses of
the release are JSON ``true``, not text; they are read as ``"True"`` (any JSON boolean or
number in a text field is read as Python's ``str`` writes it). An item where all
three differ is an error, as is any other departure from the format (one-line
:class:`~voirdire.core.DataError` naming the item).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl

from voirdire.benchmarks.releases.fetch import Release
from voirdire.benchmarks.releases.jtj import Converted
from voirdire.benchmarks.releases.mirror import NotOnMirror
from voirdire.core import DataError

#: the release file of the test set
TESTSET = "data/testset-v1.json"
#: the judges' recorded verdicts on the test set: judge -> (file, result field, reason field)
RECORDED_FILES = {
    "pandalm-7b": (
        "data/pandalm-7b-testset-v1.json",
        "pandalm_result",
        "pandalm_reason",
    ),
    "gpt-3.5-turbo": ("data/gpt-3.5-turbo-testset-v1.json", "gpt_result", "gpt_reason"),
}
RECORDED_SCHEMA = {
    "judge": pl.String,
    "idx": pl.Int32,
    "result": pl.String,
    "reason": pl.String,
}
ANNOTATORS = ("annotator1", "annotator2", "annotator3")
TEXT_FIELDS = ("motivation_app", "instruction", "input", "response1", "response2")
#: label code -> meaning (PandaLM's README: 1 or 2 = that response is better, 0 = similar quality)
TIE = 0

PAIRS_SCHEMA = {
    "idx": pl.Int32,
    "id": pl.String,
    "task": pl.String,
    "prompt": pl.Int32,
    "instruction": pl.String,
    "input": pl.String,
    "response1": pl.String,
    "response2": pl.String,
    "question": pl.String,
    "model_1": pl.String,
    "model_2": pl.String,
    **{a: pl.Int8 for a in ANNOTATORS},
    "label": pl.Int8,
    "gold": pl.String,
}


#: JSON scalars read as text (a few responses of the release are JSON ``true``: an answer "True")
SCALARS = (bool, int, float)


def _text(v: object) -> str:
    """A text field's value: text as is, a JSON boolean as ``True``/``False``, a number as written by ``str``."""
    return v if isinstance(v, str) else str(v)


def majority(labels: tuple[int, int, int]) -> int | None:
    """The label at least two of three annotators gave, or None when all three differ."""
    for v in set(labels):
        if labels.count(v) >= 2:
            return v
    return None


def _item(n: int, item: object) -> tuple:
    """One row of ``pairs.parquet`` (without ``prompt``) from the n-th item (0-based)."""
    where = f"{TESTSET}: item {n}"
    if not isinstance(item, dict):
        raise DataError(f"{where} is not an object")
    missing = [
        k for k in ("idx", "cmp_key", *TEXT_FIELDS, *ANNOTATORS) if k not in item
    ]
    if missing:
        raise DataError(f"{where} lacks the field {missing[0]!r}")
    bad = [k for k in TEXT_FIELDS if not isinstance(item[k], (str, *SCALARS))]
    if not isinstance(item["cmp_key"], str):
        bad.insert(0, "cmp_key")
    if bad:
        raise DataError(f"{where}: {bad[0]!r} is not text: {item[bad[0]]!r}")
    if not isinstance(item["idx"], int) or isinstance(item["idx"], bool):
        raise DataError(f"{where}: 'idx' is not an integer: {item['idx']!r}")
    models = item["cmp_key"].split("_")
    if len(models) != 2 or not all(models) or models[0] == models[1]:
        raise DataError(
            f"{where}: cmp_key {item['cmp_key']!r} is not '<model 1>_<model 2>' with two distinct models"
        )
    labels = tuple(item[a] for a in ANNOTATORS)
    wrong = [
        a
        for a, v in zip(ANNOTATORS, labels)
        if isinstance(v, bool) or v not in (0, 1, 2)
    ]
    if wrong:
        raise DataError(
            f"{where}: {wrong[0]!r} is {item[wrong[0]]!r}, not 0 (tie), 1 or 2"
        )
    label = majority(labels)  # type: ignore[arg-type]
    if label is None:
        raise DataError(
            f"{where}: the three annotators all differ ({labels}); no majority label"
        )
    gold = "tie" if label == TIE else models[label - 1]
    item = {**item, **{k: _text(item[k]) for k in TEXT_FIELDS}}
    question = item["instruction"] + (f"\n\n{item['input']}" if item["input"] else "")
    return (
        item["idx"],
        str(item["idx"]),
        item["motivation_app"],
        item["instruction"],
        item["input"],
        item["response1"],
        item["response2"],
        question,
        *models,
        *labels,
        label,
        gold,
    )


def read_testset(data: bytes) -> pl.DataFrame:
    """``pairs.parquet`` (module docstring) from the bytes of ``data/testset-v1.json``.

    Raises:
        DataError: not JSON, not a non-empty list of items, an item lacking a field or with
            a field of the wrong type, a ``cmp_key`` that is not two distinct models, a label
            outside 0/1/2, no majority, or an ``idx`` that appears twice.
    """
    try:
        items = json.loads(data)
    except ValueError as exc:
        raise DataError(f"{TESTSET}: not valid JSON: {exc}") from None
    if not isinstance(items, list) or not items:
        raise DataError(
            f"{TESTSET}: expected a non-empty JSON list of items, got {type(items).__name__}"
        )
    rows = [_item(n, it) for n, it in enumerate(items)]
    cols = [c for c in PAIRS_SCHEMA if c != "prompt"]
    frame = pl.DataFrame(rows, schema={c: PAIRS_SCHEMA[c] for c in cols}, orient="row")
    dup = frame.filter(pl.col("idx").is_duplicated())
    if dup.height:
        raise DataError(f"{TESTSET}: idx {dup['idx'][0]} appears more than once")
    first: dict[tuple[str, str], int] = {}
    for key in zip(frame["instruction"], frame["input"]):
        first.setdefault(key, len(first))
    ids = [first[k] for k in zip(frame["instruction"], frame["input"])]
    return frame.with_columns(prompt=pl.Series(ids, dtype=pl.Int32)).select(
        list(PAIRS_SCHEMA)
    )


def read_recorded_file(judge: str, data: bytes, items: set[int]) -> pl.DataFrame:
    """``recorded.parquet``'s rows of one judge from the bytes of its release file.

    Raises:
        DataError: not JSON, not a list of objects with an integer ``idx`` and the result
            field, an ``idx`` that is not an item of the test set or appears twice.
    """
    path, field, why = RECORDED_FILES[judge]
    try:
        recs = json.loads(data)
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(recs, list):
        raise DataError(
            f"{path}: expected a JSON list of records, got {type(recs).__name__}"
        )
    rows, seen = [], set()
    for n, r in enumerate(recs):
        if (
            not isinstance(r, dict)
            or field not in r
            or not isinstance(r.get("idx"), int)
            or isinstance(r["idx"], bool)
        ):
            raise DataError(
                f"{path}: record {n} is not an object with an integer 'idx' and {field!r}"
            )
        if r["idx"] not in items or r["idx"] in seen:
            raise DataError(
                f"{path}: record {n}: idx {r['idx']} is not an item of the test set, or appears twice"
            )
        seen.add(r["idx"])
        reason = r.get(why)
        rows.append(
            (judge, r["idx"], str(r[field]), None if reason is None else str(reason))
        )
    return pl.DataFrame(rows, schema=RECORDED_SCHEMA, orient="row")


def convert(
    get: Callable[[str], bytes],
    manifest: dict[str, str],
    out: Path,
    *,
    log: Callable[[str], None] = lambda s: None,
    **_,
) -> Converted:
    """Fetch the test set with ``get`` (verified bytes; :class:`NotOnMirror` when absent) and
    write the layout of the module docstring into ``out``.

    Raises:
        DataError: the manifest does not list the test set, the mirror lacks it, or the file
            is malformed (:func:`read_testset`).
    """
    if TESTSET not in manifest:
        raise DataError(f"the release manifest does not list {TESTSET}")
    try:
        frame = read_testset(get(TESTSET))
    except NotOnMirror as exc:
        raise DataError(
            f"the test set {TESTSET} is not on the mirror ({exc})"
        ) from None
    done = Converted()
    out.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(out / "pairs.parquet")
    done.files[TESTSET] = manifest[TESTSET]
    done.judges["people"] = list(ANNOTATORS)
    recorded = []
    for judge, (path, _, _) in RECORDED_FILES.items():
        if path not in manifest:
            continue
        try:
            recorded.append(
                read_recorded_file(judge, get(path), set(frame["idx"].to_list()))
            )
        except NotOnMirror:
            done.skipped.append(f"{judge}: {path} is not on the mirror")
            continue
        done.files[path] = manifest[path]
    if recorded:
        pl.concat(recorded).write_parquet(out / "recorded.parquet")
        done.judges["recorded"] = sorted(set(pl.concat(recorded)["judge"]))
    log(
        f"{frame.height} pairs, {frame['prompt'].n_unique()} questions, "
        f"{len(set(frame['model_1']) | set(frame['model_2']))} models"
    )
    done.copy_license(
        get, manifest, out, log, "PandaLM is Apache-2.0 licensed (WeOpenML/PandaLM)"
    )
    return done


#: the release record (``voirdire data fetch pandalm``): the pinned commit and the package manifest
PANDALM = Release(
    name="pandalm",
    repo="WeOpenML/PandaLM",
    commit="3871806e72b4832f815ecafd24d3503c73403f48",
    manifest=Path(__file__).resolve().parent / "pandalm-manifest.tsv",
    dir_name="pandalm",
    data_env="VOIRDIRE_PANDALM_DATA",
    url_env="VOIRDIRE_PANDALM_URL",
    convert=convert,
)


__all__ = [
    "ANNOTATORS",
    "RECORDED_FILES",
    "read_recorded_file",
    "PAIRS_SCHEMA",
    "PANDALM",
    "TESTSET",
    "convert",
    "majority",
    "read_testset",
]
