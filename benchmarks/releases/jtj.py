"""The first release: Shi et al. (2024), "Judging the Judges" (``Slimshilin/Position-Bias-Analyzer``).

What :mod:`voirdire.benchmarks.releases.catalogue` fetches of it and how it is converted into the
layout the readers use (:mod:`voirdire.benchmarks.data`)::

    qa/mtbench.xlsx, qa/devbench.xlsx,
    qa/mtbench_repetition_sample.xlsx, qa/devbench_repetition_sample.xlsx
    judgments/<study>/<MTBench|DevBench>/<judge>.jsonl.gz   # {cmp_index, judgment[, repetition]}

A judge's outputs exist in the release in two forms: ``record_<judge>_<n>.tsv`` (a
``cmp_index`` column and one column named after the judge with its raw output) and
``tmp.pkl`` (a pickled ``{cmp_index: output}`` dict). The preferred form is fetched and the
other is the fallback when a mirror lacks the first. A pickle from the internet is never
executed: :func:`load_plain_pickle` refuses every global, so only plain dicts, lists,
strings and None can come out of it. A judge whose outputs of a (study, benchmark) the
mirror has in no form is skipped there and named (:class:`Converted`), unless the fetch is
strict.
"""

from __future__ import annotations

import gzip
import io
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl

from voirdire.benchmarks.releases.mirror import NotOnMirror
from voirdire.core import DataError

#: The question/answer tables: target in the data directory -> path in the release. The
#: three repetition-sample tables of a benchmark are one file (same blob id); the first is read.
QA_FILES = {
    "qa/mtbench.xlsx": "QA_data/full_data/MTBench/MTBench_data.xlsx",
    "qa/devbench.xlsx": "QA_data/full_data/DevBench/human_4gpts_6opens_detailedTasks.xlsx",
    "qa/mtbench_repetition_sample.xlsx": "QA_data/repetition_sampled_data/MTBench/Repetition1-MTBench_3q-4m-vicuna13b-v1.3.xlsx",
    "qa/devbench_repetition_sample.xlsx": "QA_data/repetition_sampled_data/DevBench/Repetition1-human_4gpts_6opens_sample-3q-4m-human.xlsx",
}
LICENSE_FILE = "LICENSE"

_JUDGMENT = re.compile(
    r"^judgment_data/data_(?P<bench>MTBench|DevBench)_(?P<study>position_bias|repetition)/"
    r"(?:Repetition(?P<rep>\d+)-)?[^/]*_record0_(?P<judge>[^/]+)_(?P<om>\d)/(?P<file>[^/]+)$"
)

Form = Literal["tsv", "pkl"]


@dataclass(frozen=True)
class RecordSource:
    """One judge's outputs in one benchmark, study and repetition, with the release paths of
    its forms in the order they are tried (``forms``: ``(form, path)``)."""

    study: str
    bench: str
    judge: str
    repetition: int | None
    forms: tuple[tuple[Form, str], ...]


def plan_records(manifest: dict[str, str], prefer: Form = "pkl") -> list[RecordSource]:
    """The judges' output files of a manifest, grouped per (study, benchmark, judge,
    repetition); the preferred form first. Sorted by study, benchmark, judge, repetition."""
    groups: dict[tuple[str, str, str, int | None], dict[str, str]] = {}
    for path in manifest:
        m = _JUDGMENT.match(path)
        if not m:
            continue
        judge, fname = m["judge"], m["file"]
        if fname == f"record_{judge}_{m['om']}.tsv":
            form = "tsv"
        elif fname == "tmp.pkl":
            form = "pkl"
        else:
            continue
        rep = int(m["rep"]) if m["rep"] else None
        groups.setdefault((m["study"], m["bench"], judge, rep), {})[form] = path
    order: tuple[Form, Form] = ("tsv", "pkl") if prefer == "tsv" else ("pkl", "tsv")
    return [
        RecordSource(
            study, bench, judge, rep, tuple((f, forms[f]) for f in order if f in forms)
        )
        for (study, bench, judge, rep), forms in sorted(
            groups.items(), key=lambda kv: (kv[0][:3], kv[0][3] or 0)
        )
    ]


class _NoGlobals(pickle.Unpickler):
    """An unpickler that refuses every global (class or function) and every persistent id:
    only the built-in containers and scalars of the pickle protocol can be built, so nothing
    in the file is ever called."""

    def find_class(self, module: str, name: str):  # type: ignore[override]
        raise pickle.UnpicklingError(
            f"it refers to the global {module}.{name}, which is refused"
        )

    def persistent_load(self, pid):  # type: ignore[override]
        raise pickle.UnpicklingError("it uses a persistent id, which is refused")


def load_plain_pickle(data: bytes, what: str) -> dict[str, str | None]:
    """A release ``tmp.pkl`` (``{cmp_index: raw output or None}``) loaded without running it.

    Raises:
        DataError: the pickle refers to any global (a class, a function: the way a pickle
            executes code), is malformed, or is not a dict of strings to strings/None; the
            message names ``what`` and says that nothing of it was executed.
    """
    try:
        obj = _NoGlobals(io.BytesIO(data)).load()
    except Exception as exc:  # noqa: BLE001 - any failure of an untrusted pickle is a refusal
        raise DataError(
            f"{what}: refused to load this pickle: {exc}. Only plain dicts, lists, strings and None are "
            "accepted; nothing from it was executed"
        ) from None
    if not isinstance(obj, dict):
        raise DataError(
            f"{what}: the pickle holds a {type(obj).__name__}, not a dict of cmp_index -> output"
        )
    for k, v in obj.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise DataError(
                f"{what}: the pickle maps {type(k).__name__} -> {type(v).__name__} "
                f"({str(k)[:60]!r}); expected cmp_index (str) -> output (str or None)"
            )
    return obj


def load_record_tsv(data: bytes, judge: str, what: str) -> dict[str, str | None]:
    """A release ``record_<judge>_<n>.tsv`` as ``{cmp_index: raw output}``.

    The file is tab-separated with quoted fields; its ``cmp_index`` column keys the rows and
    the column named ``judge`` holds the judge's raw output. An empty output (a failed call
    written as an empty cell) becomes None.

    Raises:
        DataError: unreadable table or a missing column (named).
    """
    try:
        df = pl.read_csv(
            io.BytesIO(data), separator="\t", quote_char='"', infer_schema_length=0
        )
    except Exception as exc:  # noqa: BLE001 - polars' parse errors, re-raised with the file
        raise DataError(f"{what}: cannot read the table: {exc}") from exc
    missing = [c for c in ("cmp_index", judge) if c not in df.columns]
    if missing:
        raise DataError(
            f"{what}: lacks column {missing[0]!r}; its columns are: {', '.join(df.columns)}"
        )
    out = df.select(
        pl.col("cmp_index"), pl.col(judge).replace("", None).alias("judgment")
    )
    return dict(zip(out["cmp_index"].to_list(), out["judgment"].to_list()))


@dataclass
class Converted:
    """What a release's converter wrote: the release files used (``{path: blob id}``), the
    judges per group (``"position_bias/MTBench"`` -> names) and what the mirror lacked
    (``skipped``: one line per judge and group left out)."""

    files: dict[str, str] = field(default_factory=dict)
    judges: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def copy_license(
        self,
        get: Callable[[str], bytes],
        manifest: dict[str, str],
        out: Path,
        log: Callable[[str], None],
        licence: str,
    ) -> None:
        """Copy the release's ``LICENSE`` into ``out`` when the manifest lists it; a mirror
        without it is logged with ``licence`` (the terms it would have shown) instead."""
        if LICENSE_FILE not in manifest:
            return
        try:
            (out / LICENSE_FILE).write_bytes(get(LICENSE_FILE))
            self.files[LICENSE_FILE] = manifest[LICENSE_FILE]
        except NotOnMirror:
            log(f"the mirror has no LICENSE ({licence})")


def convert(
    get: Callable[[str], bytes],
    manifest: dict[str, str],
    out: Path,
    *,
    prefer: Form = "pkl",
    log: Callable[[str], None] = lambda s: None,
) -> Converted:
    """Fetch the first release's files with ``get`` (verified bytes; :class:`NotOnMirror`
    when absent) and write its data layout into ``out`` (see the module docstring).

    Raises:
        DataError: a question/answer table is missing from the manifest or the mirror, a
            pickle was refused, or a table lacks its columns.
    """
    missing_qa = [src for src in QA_FILES.values() if src not in manifest]
    if missing_qa:
        raise DataError(
            f"the release manifest lacks the question/answer table {missing_qa[0]!r}"
        )
    done = Converted()
    (out / "qa").mkdir(parents=True)
    for name, src in QA_FILES.items():
        try:
            (out / name).write_bytes(get(src))
        except NotOnMirror as exc:
            raise DataError(
                f"the question/answer table {src} is not on the mirror ({exc})"
            ) from None
        done.files[src] = manifest[src]
    done.copy_license(
        get,
        manifest,
        out,
        log,
        "the release is MIT licensed, copyright 2024 Slimshilin",
    )
    groups: dict[tuple[str, str, str], list[tuple[pl.DataFrame, str]]] = {}
    lacking: dict[tuple[str, str, str], str] = {}
    for source in plan_records(manifest, prefer):
        key = (source.study, source.bench, source.judge)
        if key in lacking:
            continue
        try:
            outputs, used = _read_source(get, source)
        except NotOnMirror as exc:
            lacking[key] = str(exc)
            continue
        if source.study == "repetition":
            outputs = outputs.with_columns(
                pl.lit(source.repetition or 1, pl.Int64).alias("repetition")
            )
        groups.setdefault(key, []).append((outputs, used))
    for (study, bench, judge), why in sorted(lacking.items()):
        groups.pop((study, bench, judge), None)
        done.skipped.append(why)
    for (study, bench, judge), parts in groups.items():
        keys = ["cmp_index", "repetition"] if study == "repetition" else ["cmp_index"]
        table = pl.concat([f for f, _ in parts]).select(*keys, "judgment").sort(keys)
        path = out / "judgments" / study / bench / f"{judge}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=0) as gz:
            table.write_ndjson(gz)
        done.files.update({used: manifest[used] for _, used in parts})
        done.judges.setdefault(f"{study}/{bench}", []).append(judge)
    return done


def _read_source(
    get: Callable[[str], bytes], src: RecordSource
) -> tuple[pl.DataFrame, str]:
    """The outputs of one record source (``cmp_index``, ``judgment``: String) from the first
    form the mirror has, and the release path read.

    Raises:
        NotOnMirror: the mirror has none of its forms (the message names them).
    """
    lacking = []
    for form, path in src.forms:
        try:
            data = get(path)
        except NotOnMirror as exc:
            lacking.append(str(exc))
            continue
        outputs = (
            load_record_tsv(data, src.judge, path)
            if form == "tsv"
            else load_plain_pickle(data, path)
        )
        frame = pl.DataFrame(
            {"cmp_index": list(outputs), "judgment": list(outputs.values())},
            schema={"cmp_index": pl.String, "judgment": pl.String},
        )
        return frame, path
    where = f"{src.study}, {src.bench}" + (
        f", repetition {src.repetition}" if src.repetition else ""
    )
    raise NotOnMirror(
        f"the outputs of {src.judge} ({where}) are not on the mirror in any form: "
        + (", ".join(lacking) or "no file in the manifest")
    )


__all__ = [
    "QA_FILES",
    "Converted",
    "RecordSource",
    "convert",
    "load_plain_pickle",
    "load_record_tsv",
    "plan_records",
]
