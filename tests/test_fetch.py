"""``voirdire data fetch`` without the internet: a loopback HTTP server serves files in the
release's layout (``QA_data/``, ``judgment_data/...``), built here from the shared data
(TSV records written from the JSON lines, the xlsx tables copied, pickles), with a manifest
of their git blob ids. Fetch, verify, convert and replay must give what the shared copy
gives; a corrupted or truncated file, or a malicious pickle, is refused with a clear error
and leaves no half-written data directory."""

from __future__ import annotations

import csv
import filecmp
import functools
import gzip
import http.server
import io
import json
import os
import pickle
import re
import shutil
import threading
from pathlib import Path

import pytest

import voirdire
from tests.cli import voirdire as voirdire_cli
from voirdire.benchmarks.releases import fetch as release_fetch
from voirdire.benchmarks.releases.catalogue import fetch_release, locate_or_fetch
from voirdire.benchmarks.releases.fetch import read_manifest
from voirdire.benchmarks.releases.jtj import QA_FILES, load_plain_pickle, plan_records
from voirdire.benchmarks.releases.mirror import blob_id
from voirdire.benchmarks.releases.steps import MARKER
from voirdire.core import ConfigError, DataError
from voirdire.engine.plan import plan_job
from voirdire.engine.spec import parse_job

ROOT = Path(__file__).resolve().parents[1]
PB_DIR = "judgment_data/data_MTBench_position_bias/MTBench_data_infer_input_2680_record0_{judge}_3"
REP_DIR = "judgment_data/data_MTBench_repetition/Repetition{rep}-MTBench_3q-4m-vicuna13b-v1_record0_{judge}_3"
#: how each judge is published on the test mirror: gpt-4-0613 as TSV only, gemini-pro as a
#: pickle only (the TSV is "lacking": the fallback), gpt-3.5-turbo-1106 in both forms
PB_FORMS = {
    "gpt-4-0613": ("tsv",),
    "gemini-pro": ("pkl",),
    "gpt-3.5-turbo-1106": ("tsv", "pkl"),
}
REP_JUDGE = "gpt-4-0613"


class _Payload:
    """A pickle that would run a shell command when loaded by plain ``pickle.load``."""

    def __init__(self, sentinel: Path) -> None:
        self.sentinel = sentinel

    def __reduce__(self):
        return (os.system, (f"touch {self.sentinel}",))


def _records(data_dir: Path, study: str, judge: str) -> list[dict]:
    with gzip.open(
        data_dir / "judgments" / study / "MTBench" / f"{judge}.jsonl.gz",
        "rt",
        encoding="utf-8",
    ) as f:
        return [json.loads(line) for line in f]


def _tsv(rows: list[dict], judge: str) -> bytes:
    """A ``record_<judge>_3.tsv`` as the release writes it: tab-separated, every field quoted."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["cmp_index", "A", "B", "task", judge])
    for r in rows:
        _, a, b = r["cmp_index"].split(";")
        w.writerow(
            [
                r["cmp_index"],
                a,
                b,
                "",
                r["judgment"] if r["judgment"] is not None else "",
            ]
        )
    return buf.getvalue().encode("utf-8")


def _put(root: Path, manifest: dict[str, str], rel: str, data: bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    manifest[rel] = blob_id(data)


def build_mirror(root: Path, data_dir: Path) -> dict[str, str]:
    """Write a release-layout mirror of part of the shared data under ``root``; returns its
    manifest (``{release path: blob id}``)."""
    man: dict[str, str] = {}
    for target, src in QA_FILES.items():
        _put(root, man, src, (data_dir / target).read_bytes())
    _put(root, man, "LICENSE", (data_dir / "LICENSE").read_bytes())
    for judge, forms in PB_FORMS.items():
        rows = _records(data_dir, "position_bias", judge)
        d = PB_DIR.format(judge=judge)
        tsv = _tsv(rows, judge)
        pkl = pickle.dumps({r["cmp_index"]: r["judgment"] for r in rows}, protocol=4)
        for form, rel, data in (
            ("tsv", f"{d}/record_{judge}_3.tsv", tsv),
            ("pkl", f"{d}/tmp.pkl", pkl),
        ):
            if form in forms:
                _put(root, man, rel, data)
            else:  # in the release, not on this mirror
                man[rel] = blob_id(data)
    rows = _records(data_dir, "repetition", REP_JUDGE)
    for rep in (1, 2, 3):
        d = REP_DIR.format(rep=rep, judge=REP_JUDGE)
        _put(
            root,
            man,
            f"{d}/record_{REP_JUDGE}_3.tsv",
            _tsv([r for r in rows if r["repetition"] == rep], REP_JUDGE),
        )
    return man


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request lines in the test output
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A loopback HTTP server over a directory; yields ``(root, base URL)``."""
    root = tmp_path_factory.mktemp("www")
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root))
    )
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def mirror(server, data_dir):
    """The good mirror: ``(base URL, manifest)``."""
    root, url = server
    man = build_mirror(root / "good", data_dir)
    return f"{url}/good/", man, root / "good"


@pytest.fixture(scope="module")
def fetched(mirror, tmp_path_factory):
    base, man, _ = mirror
    dest = tmp_path_factory.mktemp("fetched") / "data"
    report = fetch_release(dest, base, manifest=man, progress=False)
    return dest, report


def _variant(server, mirror, name: str) -> tuple[Path, str]:
    """A copy of the good mirror to spoil; ``(its root, its base URL)``."""
    root, url = server
    shutil.copytree(root / "good", root / name)
    return root / name, f"{url}/{name}/"


def _no_leftovers(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if ".partial-" in p.name], list(
        parent.iterdir()
    )


# ----------------------------------------------------------------------------- units


def test_blob_id_is_gits():
    assert (
        blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    )  # git hash-object
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_package_manifest_covers_what_voirdire_reads(data_dir):
    man = read_manifest()
    assert set(QA_FILES.values()) <= set(man) and "LICENSE" in man
    groups = plan_records(man)
    # 9 judges x (2 benchmarks position bias + 2 benchmarks x 3 repetitions)
    assert len(groups) == 72 and all(
        [f for f, _ in g.forms] == ["pkl", "tsv"] for g in groups
    )  # pickles first (67 MB)
    assert {
        g.judge for g in groups if g.study == "position_bias" and g.bench == "MTBench"
    } >= set(PB_FORMS)
    assert [f for f, _ in plan_records(man, "tsv")[0].forms] == ["tsv", "pkl"]
    full = data_dir / "release-manifest.tsv"
    if full.is_file():  # every id agrees with the complete manifest of the release
        ref = read_manifest(full)
        assert all(ref[p] == b for p, b in man.items() if p != "LICENSE")
    for target, src in QA_FILES.items():  # the shared tables are the release's files
        assert blob_id((data_dir / target).read_bytes()) == man[src]


def test_safe_unpickler_accepts_plain_and_refuses_globals(tmp_path):
    assert load_plain_pickle(
        pickle.dumps({"81;a;b": "[[A]]", "82;a;b": None}), "t.pkl"
    ) == {"81;a;b": "[[A]]", "82;a;b": None}
    sentinel = tmp_path / "pwned"
    with pytest.raises(
        DataError,
        match=r"refused to load this pickle.*global (posix|os|nt)\.system.*nothing from it was executed",
    ):
        load_plain_pickle(pickle.dumps(_Payload(sentinel)), "evil.pkl")
    assert not sentinel.exists()
    with pytest.raises(DataError, match="global"):
        load_plain_pickle(pickle.dumps({"x": Path("/")}), "p.pkl")
    with pytest.raises(DataError, match="not a dict"):
        load_plain_pickle(pickle.dumps(["a"]), "l.pkl")
    with pytest.raises(DataError, match="expected cmp_index"):
        load_plain_pickle(pickle.dumps({"a": 1}), "i.pkl")
    with pytest.raises(DataError, match="refused"):
        load_plain_pickle(b"\x80\x04garbage", "g.pkl")


# ---------------------------------------------------------------------- fetch, convert


def test_fetch_converts_to_the_shared_layout(fetched, mirror, data_dir):
    dest, report = fetched
    for target in QA_FILES:
        assert filecmp.cmp(dest / target, data_dir / target, shallow=False), target
    for judge in PB_FORMS:
        assert _records(dest, "position_bias", judge) == _records(
            data_dir, "position_bias", judge
        ), judge
    assert _records(dest, "repetition", REP_JUDGE) == _records(
        data_dir, "repetition", REP_JUDGE
    )
    assert report.judges["position_bias/MTBench"] == sorted(PB_FORMS)
    # the preferred form (the pickle) where the mirror has it, the TSV where it lacks the pickle
    used = json.loads((dest / MARKER).read_text())["files"]
    assert any("gpt-3.5-turbo-1106_3/tmp.pkl" in p for p in used)
    assert not any(p.endswith("record_gpt-3.5-turbo-1106_3.tsv") for p in used)
    assert any(p.endswith("record_gpt-4-0613_3.tsv") for p in used)
    assert any("gemini-pro_3/tmp.pkl" in p for p in used)
    assert report.downloaded_bytes == sum((mirror[2] / p).stat().st_size for p in used)
    _no_leftovers(dest.parent)


def test_replay_of_fetched_data_gives_the_shared_figures(
    fetched, data_dir, tmp_path, ray_local
):
    dest, _ = fetched
    results = {}
    for label, root in (("fetched", dest), ("shared", data_dir)):
        job = {
            "name": f"fetch-{label}",
            "output_dir": str(tmp_path / label),
            "benchmark": {
                "name": "mtbench",
                "data_dir": str(root),
                "questions": ["81", "111", "130", "151"],
            },
            "comparison": {"option_mode": 3, "permutations": "both"},
            "run": {"flush_seconds": 0.05},
            "judges": [
                {
                    "name": "*",
                    "backend": "replay",
                    "recorded": "*",
                    "study": "position_bias",
                }
            ],
        }
        results[label] = voirdire.run(job)
    a, b = results["fetched"], results["shared"]
    assert sorted(a.judge_metrics["judge"].to_list()) == sorted(PB_FORMS)
    assert a.judge_metrics.sort("judge").equals(b.judge_metrics.sort("judge"))
    assert a.cell_metrics.sort("judge", "candidate", "task").equals(
        b.cell_metrics.sort("judge", "candidate", "task")
    )
    assert a.judgments["failed"].sum() == b.judgments["failed"].sum()


def test_refetch_replaces_and_env_url_is_used(mirror, tmp_path, monkeypatch):
    base, man, _ = mirror
    dest = tmp_path / "d"
    monkeypatch.setenv(release_fetch.URL_ENV, base)
    first = fetch_release(
        dest, manifest=man, progress=False
    )  # the base URL from the environment
    assert first.downloaded_bytes > 0 and (dest / MARKER).is_file()
    again = fetch_release(dest, manifest=man, progress=False)
    assert again.dest == dest and (dest / "qa" / "mtbench.xlsx").is_file()
    _no_leftovers(tmp_path)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "x.txt").write_text("mine")
    with pytest.raises(DataError, match="was not written by `voirdire data fetch`"):
        fetch_release(tmp_path / "foreign", manifest=man, progress=False)
    assert (tmp_path / "foreign" / "x.txt").read_text() == "mine"


# -------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("spoil", ["corrupted", "truncated"])
def test_bad_download_is_rejected_and_leaves_nothing(
    server, mirror, fetched, tmp_path, spoil
):
    _, man, _ = mirror
    root, base = _variant(server, mirror, spoil)
    rel = f"{PB_DIR.format(judge='gpt-4-0613')}/record_gpt-4-0613_3.tsv"
    data = (root / rel).read_bytes()
    (root / rel).write_bytes(
        data[:-1] + b"X" if spoil == "corrupted" else data[: len(data) // 2]
    )
    dest = tmp_path / "new"
    with pytest.raises(
        DataError,
        match=rf"{rel}: the downloaded file .* has git blob id [0-9a-f]{{40}}, expected {man[rel]}: it is corrupted or truncated",
    ):
        fetch_release(dest, base, manifest=man, progress=False)
    assert not dest.exists()
    _no_leftovers(tmp_path)
    # an earlier good fetch stays as it was
    good, _ = fetched
    before = (good / MARKER).read_text()
    with pytest.raises(DataError, match="corrupted or truncated"):
        fetch_release(good, base, manifest=man, progress=False)
    assert (good / MARKER).read_text() == before and (
        good / "judgments" / "position_bias" / "MTBench" / "gpt-4-0613.jsonl.gz"
    ).is_file()
    _no_leftovers(good.parent)


def test_malicious_pickle_is_refused_and_never_run(server, mirror, tmp_path):
    _, man, _ = mirror
    root, base = _variant(server, mirror, "evil")
    sentinel = tmp_path / "pwned"
    rel = f"{PB_DIR.format(judge='gemini-pro')}/tmp.pkl"  # gemini-pro exists on the mirror only as a pickle
    evil = pickle.dumps({"81;a;b": _Payload(sentinel)})
    (root / rel).write_bytes(evil)
    man = {**man, rel: blob_id(evil)}  # a mirror that publishes its own (matching) ids
    dest = tmp_path / "data"
    with pytest.raises(
        DataError,
        match=rf"{rel}: refused to load this pickle.*system.*nothing from it was executed",
    ):
        fetch_release(dest, base, manifest=man, progress=False)
    assert not sentinel.exists() and not dest.exists()
    _no_leftovers(tmp_path)


def test_partial_mirror_skips_and_names_a_missing_judge(server, mirror, tmp_path):
    """A mirror that lacks one judge's outputs in both forms: the other judges are fetched,
    the missing one is named (report and RELEASE.json); strict refuses and writes nothing."""
    _, man, _ = mirror
    root, base = _variant(server, mirror, "lacking")
    rel = f"{PB_DIR.format(judge='gemini-pro')}/tmp.pkl"
    (root / rel).unlink()
    lines: list[str] = []
    report = fetch_release(
        tmp_path / "d", base, manifest=man, progress=False, log=lines.append
    )
    assert report.judges["position_bias/MTBench"] == [
        "gpt-3.5-turbo-1106",
        "gpt-4-0613",
    ]
    assert len(report.skipped) == 1
    assert re.match(
        r"the outputs of gemini-pro \(position_bias, MTBench\) are not on the mirror in any form: ",
        report.skipped[0],
    )
    # one line for what was skipped, the list in a file (issue 40: 163 lines before)
    summary = [line for line in lines if line.startswith("skipped")]
    assert len(summary) == 1 and summary[0].startswith(
        "skipped 1 file(s) the mirror does not have"
    )
    listed = tmp_path / "d" / "skipped.txt"
    assert str(listed) in summary[0]
    assert listed.read_text().splitlines() == report.skipped
    assert (
        json.loads((tmp_path / "d" / MARKER).read_text())["skipped"] == report.skipped
    )
    assert not (
        tmp_path
        / "d"
        / "judgments"
        / "position_bias"
        / "MTBench"
        / "gemini-pro.jsonl.gz"
    ).exists()
    assert _records(
        tmp_path / "d", "repetition", REP_JUDGE
    )  # the other study is complete
    with pytest.raises(
        DataError,
        match=r"strict fetch: 1 judge output\(s\) not on the mirror; the first: the outputs of gemini-pro",
    ):
        fetch_release(tmp_path / "s", base, manifest=man, progress=False, strict=True)
    assert not (tmp_path / "s").exists()
    _no_leftovers(tmp_path)


def test_a_local_folder_or_file_url_is_read_as_a_copy(mirror, tmp_path):
    """``--base-url`` naming a folder of the release's files (a clone of its repository):
    a plain path and a ``file://`` URL are read from the disk, verified the same way
    (before, both ended in raw ``requests`` errors); a path that is no folder is one line."""
    _, man, root = mirror
    for i, base in enumerate((str(root), root.as_uri())):
        report = fetch_release(tmp_path / f"d{i}", base, manifest=man, progress=False)
        assert report.judges["position_bias/MTBench"] == [
            "gemini-pro", "gpt-3.5-turbo-1106", "gpt-4-0613",
        ]  # fmt: skip
        assert json.loads((tmp_path / f"d{i}" / MARKER).read_text())["skipped"] == []
    with pytest.raises(DataError, match=r"nowhere: no such directory \(a local copy"):
        fetch_release(
            tmp_path / "x", str(tmp_path / "nowhere"), manifest=man, progress=False
        )
    with pytest.raises(DataError, match=r"no such directory"):
        fetch_release(
            tmp_path / "y",
            (tmp_path / "nowhere").as_uri(),
            manifest=man,
            progress=False,
        )
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.slow
def test_offline_names_both_ways_out(tmp_path, monkeypatch):
    monkeypatch.setenv("VOIRDIRE_DATA", str(tmp_path / "data"))
    with pytest.raises(DataError) as err:
        locate_or_fetch(None, "http://127.0.0.1:9/", progress=False)
    msg = str(err.value)
    assert "cannot download http://127.0.0.1:9/QA_data/" in msg
    assert "voirdire data fetch" in msg and "VOIRDIRE_DATA" in msg
    assert not (tmp_path / "data").exists()
    _no_leftovers(tmp_path)
    # the data directory a cluster client handed over is named when it is not there
    with pytest.raises(
        DataError,
        match=r"handed over \(/nowhere/data\) is not a directory on this machine",
    ):
        locate_or_fetch("/nowhere/data", "http://127.0.0.1:9/", progress=False)


def test_locate_prefers_what_exists(fetched, data_dir, monkeypatch):
    dest, _ = fetched
    assert (
        locate_or_fetch(dest, "http://127.0.0.1:9/", progress=False) == dest.resolve()
    )
    monkeypatch.setenv("VOIRDIRE_DATA", str(data_dir))
    assert (
        locate_or_fetch("/nowhere", "http://127.0.0.1:9/", progress=False)
        == data_dir.resolve()
    )


# ------------------------------------------------------------------------------- CLI


@pytest.mark.slow
def test_cli_fetch_prints_the_directory(mirror, tmp_path):
    base, man, _ = mirror
    dest = tmp_path / "cli"
    # the CLI reads the package's manifest: serve it only the files the test mirror has
    env = {k: v for k, v in os.environ.items() if k != "VOIRDIRE_DATA"}
    r = voirdire_cli(
        "data",
        "fetch",
        "--dest",
        str(dest),
        "--base-url",
        "http://127.0.0.1:9",
        "--no-progress",
        cwd=ROOT,
        env=env,
    )
    assert (
        r.returncode == 1
        and "cannot download http://127.0.0.1:9/" in r.stderr
        and not dest.exists()
    )
    r = voirdire_cli(
        "data",
        "fetch",
        "--if-missing",
        "--try",
        str(ROOT),
        "--no-progress",
        cwd=ROOT,
        env=env,
    )
    assert r.returncode == 0 and r.stdout.strip() == str(ROOT)


# ------------------------------------------------------------------- recorded = "*"


def test_recorded_star_expands_to_every_recorded_judge(tmp_path, data_dir):
    def job(**judge):
        return parse_job({
            "name": "x", "output_dir": str(tmp_path / "o"),
            "benchmark": {"name": "mtbench", "data_dir": str(data_dir), "questions": ["81"]},
            "judges": [{"backend": "replay", "recorded": "*", **judge}],
        })  # fmt: skip

    have = sorted(
        p.name.removesuffix(".jsonl.gz")
        for p in (data_dir / "judgments" / "position_bias" / "MTBench").glob(
            "*.jsonl.gz"
        )
    )
    plan = plan_job(job(name="*"))
    assert [rj.name for rj in plan.judges] == have
    assert [rj.settings.recorded for rj in plan.judges] == have
    assert [rj.name for rj in plan_job(job(name="replay-*")).judges] == [
        f"replay-{h}" for h in have
    ]
    empty = tmp_path / "empty"
    shutil.copytree(data_dir / "qa", empty / "qa")
    with pytest.raises(
        ConfigError,
        match=r'recorded = "\*" found no recorded outputs in .*judgments/position_bias/MTBench',
    ):
        plan_job(job(name="*", data_dir=str(empty)))
