"""Getting the data: download the public release, verify it, convert it once.

The benchmark data of voirdire is the public release of Shi et al. (2024), "Judging the
Judges: A Systematic Study of Position Bias in LLM-as-a-Judge": the GitHub repository
``Slimshilin/Position-Bias-Analyzer`` (MIT licence, copyright 2024 Slimshilin) at commit
:data:`RELEASE_COMMIT`. :func:`fetch_release` downloads, file by file from the raw-content
URLs of that commit, only the files voirdire reads (the package data
``release-manifest.tsv`` lists them with their git blob ids), verifies every file against
its blob id, and writes the layout the readers use (:mod:`voirdire.benchmarks.data`)::

    qa/mtbench.xlsx, qa/devbench.xlsx,
    qa/mtbench_repetition_sample.xlsx, qa/devbench_repetition_sample.xlsx
    judgments/<study>/<MTBench|DevBench>/<judge>.jsonl.gz   # {cmp_index, judgment[, repetition]}
    LICENSE, RELEASE.json                                   # the release's licence; provenance

A judge's outputs exist in the release in two forms: ``record_<judge>_<n>.tsv`` (a
``cmp_index`` column and one column named after the judge with its raw output) and
``tmp.pkl`` (a pickled ``{cmp_index: output}`` dict). The preferred form is fetched and the
other is the fallback when a mirror lacks the first. A pickle from the internet is never
executed: :func:`load_plain_pickle` refuses every global, so only plain dicts, lists,
strings and None can come out of it.

Everything is downloaded, verified and converted in a temporary directory beside the
destination, which is renamed into place only when all of it succeeded: a corrupted or
truncated download leaves no half-written data directory.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl
import pooch
import requests
from voirdire.benchmarks.data import DATA_ENV, default_data_dir, resolve_data_dir

from voirdire.core import ConfigError, DataError

#: The release's repository and the commit whose files are fetched.
RELEASE_REPO = "Slimshilin/Position-Bias-Analyzer"
RELEASE_COMMIT = "9f8b7e8e83862cf1ffd9dd2c33f589262efc66ee"
#: Raw-content URL of that commit; a file's URL is this plus its path in the repository.
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{RELEASE_REPO}/{RELEASE_COMMIT}/"
#: Environment variable overriding the base URL (a mirror serving the same paths).
URL_ENV = "VOIRDIRE_RELEASE_URL"
#: Package data: ``blob_sha1<TAB>path`` of every release file voirdire reads.
MANIFEST = Path(__file__).resolve().parent / "release-manifest.tsv"
#: The provenance file written into a fetched data directory.
MARKER = "RELEASE.json"

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


def blob_id(data: bytes) -> str:
    """The git blob id of a file's content: ``sha1(b"blob <size>\\0" + content)``, hex.

    This is git's object id (an external definition), not a voirdire content key, hence
    SHA-1 here rather than :func:`voirdire.core.content_hash`.
    """
    h = hashlib.sha1(b"blob %d\0" % len(data))  # noqa: S324 - git's object id, not security
    h.update(data)
    return h.hexdigest()


def read_manifest(path: str | os.PathLike[str] = MANIFEST) -> dict[str, str]:
    """``{release path: git blob id}`` from a manifest (TSV ``blob_sha1, path``; ``#`` comments).

    Raises:
        DataError: the file is missing or malformed.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"release manifest {str(p)!r} cannot be read: {exc}") from exc
    out: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#") or line.startswith("blob_sha1\t"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{40}", parts[0]):
            raise DataError(f"release manifest {str(p)!r} line {n} is not 'blob_sha1<TAB>path': {line[:120]!r}")
        out[parts[1]] = parts[0]
    return out


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
        RecordSource(study, bench, judge, rep, tuple((f, forms[f]) for f in order if f in forms))
        for (study, bench, judge, rep), forms in sorted(groups.items(), key=lambda kv: (kv[0][:3], kv[0][3] or 0))
    ]


class _NoGlobals(pickle.Unpickler):
    """An unpickler that refuses every global (class or function) and every persistent id:
    only the built-in containers and scalars of the pickle protocol can be built, so nothing
    in the file is ever called."""

    def find_class(self, module: str, name: str):  # type: ignore[override]
        raise pickle.UnpicklingError(f"it refers to the global {module}.{name}, which is refused")

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
        raise DataError(f"{what}: the pickle holds a {type(obj).__name__}, not a dict of cmp_index -> output")
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
        df = pl.read_csv(io.BytesIO(data), separator="\t", quote_char='"', infer_schema_length=0)
    except Exception as exc:  # noqa: BLE001 - polars' parse errors, re-raised with the file
        raise DataError(f"{what}: cannot read the table: {exc}") from exc
    missing = [c for c in ("cmp_index", judge) if c not in df.columns]
    if missing:
        raise DataError(f"{what}: lacks column {missing[0]!r}; its columns are: {', '.join(df.columns)}")
    out = df.select(pl.col("cmp_index"), pl.col(judge).replace("", None).alias("judgment"))
    return dict(zip(out["cmp_index"].to_list(), out["judgment"].to_list()))


@dataclass
class FetchReport:
    """What :func:`fetch_release` did: the data directory written, the bytes downloaded, the
    release files used (``{release path: blob id}``) and the judges per (study, benchmark)."""

    dest: Path
    downloaded_bytes: int = 0
    files: dict[str, str] = field(default_factory=dict)
    judges: dict[str, list[str]] = field(default_factory=dict)


class _NotOnMirror(Exception):
    """The mirror answered 404 for a file (another form may be tried)."""


def _base_url(base_url: str | None) -> str:
    base = base_url or os.environ.get(URL_ENV) or DEFAULT_BASE_URL
    return base if base.endswith("/") else base + "/"


class _HTTPDownloader(pooch.HTTPDownloader):
    """pooch's HTTP downloader, with a 404 raised as :class:`_NotOnMirror` at once (pooch
    retries network errors, not a file the mirror does not have)."""

    def __call__(self, url, output_file, pooch, check_only=False):  # type: ignore[override]
        try:
            return super().__call__(url, output_file, pooch, check_only=check_only)
        except requests.exceptions.HTTPError as exc:
            if exc.response is not None and exc.response.status_code == 404:
                raise _NotOnMirror(url) from None
            raise


class _Downloader:
    """Downloads release files with pooch (3 tries each, progress bar) into ``raw`` and
    checks each against its blob id."""

    def __init__(self, base: str, raw: Path, manifest: dict[str, str], progress: bool):
        pooch.get_logger().setLevel("WARNING")
        self.base, self.raw, self.manifest = base, raw, manifest
        self.pooch = pooch.create(path=raw, base_url=base, registry={p: None for p in manifest}, retry_if_failed=2)
        self.downloader = _HTTPDownloader(progressbar=progress, timeout=60)
        self.bytes = 0

    def get(self, path: str) -> bytes:
        url = self.base + path
        try:
            local = self.pooch.fetch(path, downloader=self.downloader)
        except _NotOnMirror:
            raise
        except Exception as exc:  # noqa: BLE001 - connection errors, timeouts: named with the URL
            raise DataError(f"cannot download {url}: {exc}") from None
        data = Path(local).read_bytes()
        got, want = blob_id(data), self.manifest[path]
        if got != want:
            raise DataError(
                f"{path}: the downloaded file ({len(data):,} bytes, from {url}) has git blob id {got}, "
                f"expected {want}: it is corrupted or truncated. Nothing was written; run the fetch again "
                "(or use another mirror)"
            )
        self.bytes += len(data)
        return data


def fetch_release(
    dest: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    prefer: Form = "pkl",
    manifest: str | os.PathLike[str] | dict[str, str] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
) -> FetchReport:
    """Download, verify and convert the release into ``dest`` (replacing an earlier fetch).

    Args:
        dest: the data directory to write; default ``$VOIRDIRE_DATA``, else
            :func:`~voirdire.benchmarks.data.default_data_dir` (a user data directory).
        base_url: where the release's files are (paths appended as in the repository);
            default ``$VOIRDIRE_RELEASE_URL``, else :data:`DEFAULT_BASE_URL`.
        prefer: ``"tsv"`` (``record_*.tsv``) or ``"pkl"`` (``tmp.pkl``): the form of the
            judges' outputs fetched first; the other is used where the mirror lacks it (404).
        manifest: the release paths and blob ids to use (a path or a dict); default the
            package's :data:`MANIFEST`.
        progress: show pooch's download progress bars (stderr).
        log: called with one line per step.

    Returns:
        A :class:`FetchReport`.

    Raises:
        DataError: a download failed (the URL is named), a file does not match its blob id
            (corrupted or truncated), a pickle was refused, a table lacks its columns, or
            ``dest`` is a non-empty directory not written by a fetch. Nothing is left behind:
            ``dest`` is either the complete new data or as it was before.
    """
    if prefer not in ("tsv", "pkl"):
        raise ConfigError(f"prefer must be 'tsv' or 'pkl', not {prefer!r}")
    man = dict(manifest) if isinstance(manifest, dict) else read_manifest(manifest or MANIFEST)
    target = Path(dest or os.environ.get(DATA_ENV) or default_data_dir()).expanduser().absolute()
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MARKER).is_file())):
        raise DataError(
            f"{target} exists and was not written by `voirdire data fetch` (no {MARKER}); "
            "choose another --dest or remove it"
        )
    base = _base_url(base_url)
    missing_qa = [src for src in QA_FILES.values() if src not in man]
    if missing_qa:
        raise DataError(f"the release manifest lacks the question/answer table {missing_qa[0]!r}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    except OSError as exc:
        raise DataError(f"cannot write beside the data directory {target}: {exc}; choose another --dest") from None
    report = FetchReport(dest=target)
    try:
        dl = _Downloader(base, work / "raw", man, progress)
        out = work / "data"
        (out / "qa").mkdir(parents=True)
        log(f"fetching the release {RELEASE_REPO}@{RELEASE_COMMIT[:7]} from {base}")
        for name, src in QA_FILES.items():
            try:
                data = dl.get(src)
            except _NotOnMirror as exc:
                raise DataError(f"the question/answer table {src} is not on the mirror ({exc})") from None
            (out / name).write_bytes(data)
            report.files[src] = man[src]
        if LICENSE_FILE in man:
            try:
                (out / LICENSE_FILE).write_bytes(dl.get(LICENSE_FILE))
                report.files[LICENSE_FILE] = man[LICENSE_FILE]
            except _NotOnMirror:
                log("the mirror has no LICENSE (the release is MIT licensed, copyright 2024 Slimshilin)")
        groups: dict[tuple[str, str, str], list[pl.DataFrame]] = {}
        for source in plan_records(man, prefer):
            outputs, used = _read_source(dl, source)
            report.files[used] = man[used]
            if source.study == "repetition":
                outputs = outputs.with_columns(pl.lit(source.repetition or 1, pl.Int64).alias("repetition"))
            groups.setdefault((source.study, source.bench, source.judge), []).append(outputs)
        for (study, bench, judge), frames in groups.items():
            keys = ["cmp_index", "repetition"] if study == "repetition" else ["cmp_index"]
            table = pl.concat(frames).select(*keys, "judgment").sort(keys)
            path = out / "judgments" / study / bench / f"{judge}.jsonl.gz"
            path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.GzipFile(path, "wb", mtime=0) as gz:
                table.write_ndjson(gz)
            report.judges.setdefault(f"{study}/{bench}", []).append(judge)
        report.downloaded_bytes = dl.bytes
        (out / MARKER).write_text(
            json.dumps(
                {"repository": RELEASE_REPO, "commit": RELEASE_COMMIT, "base_url": base, "files": report.files},
                indent=1, sort_keys=True,
            ) + "\n",
            encoding="utf-8",
        )
        _swap_into_place(out, target, work)
    except OSError as exc:  # disk full, permissions: nothing was put in place
        raise DataError(f"cannot write the data directory {target}: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"wrote {target} ({report.downloaded_bytes / 1e6:.1f} MB downloaded)")
    return report


def _read_source(dl: _Downloader, src: RecordSource) -> tuple[pl.DataFrame, str]:
    """The outputs of one record source (``cmp_index``, ``judgment``: String) from the first
    form the mirror has, and the release path read."""
    lacking = []
    for form, path in src.forms:
        try:
            data = dl.get(path)
        except _NotOnMirror as exc:
            lacking.append(str(exc))
            continue
        outputs = load_record_tsv(data, src.judge, path) if form == "tsv" else load_plain_pickle(data, path)
        frame = pl.DataFrame(
            {"cmp_index": list(outputs), "judgment": list(outputs.values())},
            schema={"cmp_index": pl.String, "judgment": pl.String},
        )
        return frame, path
    raise DataError(
        f"the outputs of {src.judge} ({src.study}, {src.bench}"
        + (f", repetition {src.repetition}" if src.repetition else "")
        + f") are not on the mirror in any form: {', '.join(lacking) or 'no file in the manifest'}"
    )


def _swap_into_place(new: Path, target: Path, work: Path) -> None:
    """Rename ``new`` to ``target``; an earlier fetch there is moved aside first and removed
    after (both renames stay on one filesystem: ``work`` is beside ``target``)."""
    old = None
    if target.exists():
        old = work / "previous"
        os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise


def locate_or_fetch(
    try_dir: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    fetch: bool = True,
    prefer: Form = "pkl",
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
) -> Path:
    """The data directory to use, fetching the release when none is found.

    Order: ``try_dir`` when it is a directory on this machine (the location a cluster client
    handed over); the usual lookup (:func:`~voirdire.benchmarks.data.resolve_data_dir`:
    ``$VOIRDIRE_DATA``, ``../shared/data/judging-the-judges``, the user data directory);
    else, with ``fetch``, :func:`fetch_release` into ``$VOIRDIRE_DATA`` or the user data
    directory.

    Raises:
        DataError: nothing was found and the fetch failed (or was not allowed); the message
            says what was tried and names both ways out (``voirdire data fetch``,
            ``VOIRDIRE_DATA``).
    """
    tried = []
    if try_dir:
        p = Path(try_dir).expanduser()
        if p.is_dir():
            return p.resolve()
        tried.append(f"the data directory handed over ({p}) is not a directory on this machine")
    try:
        return resolve_data_dir()
    except ConfigError as exc:
        tried.append(str(exc).split(". The public release")[0])
    ways_out = (
        f"Ways out: run `voirdire data fetch` where the release can be downloaded (or with --base-url "
        f"pointing at a mirror), or set {DATA_ENV} to a directory holding the data."
    )
    if not fetch:
        raise DataError("; ".join(tried) + ". " + ways_out)
    dest = Path(os.environ.get(DATA_ENV) or default_data_dir())
    log(f"no benchmark data found; fetching the public release into {dest}")
    try:
        return fetch_release(dest, base_url, prefer=prefer, progress=progress, log=log).dest
    except DataError as exc:
        raise DataError("; ".join(tried + [f"fetching the release into {dest} failed: {exc}"]) + ". " + ways_out) from None


__all__ = [
    "DEFAULT_BASE_URL",
    "MANIFEST",
    "QA_FILES",
    "RELEASE_COMMIT",
    "RELEASE_REPO",
    "URL_ENV",
    "FetchReport",
    "RecordSource",
    "blob_id",
    "fetch_release",
    "load_plain_pickle",
    "load_record_tsv",
    "locate_or_fetch",
    "plan_records",
    "read_manifest",
]
