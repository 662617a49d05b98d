"""PandaLM's test set, the third release: fetched from a loopback mirror serving a small
SYNTHETIC file in the release's exact format (the real one is never committed) with a manifest
written here, converted (majority labels, model names), read as a benchmark whose instances
carry the models' names and the majority as gold, run end to end with simulated judges; bad
files refused with one line."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import urllib.parse
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.cli import voirdire as voirdire_cli
from tests.pandalm_synthetic import LICENSE, MODELS, synthetic_items, write_release
from voirdire.benchmarks.pandalm import PandaLM
from voirdire.benchmarks.registry import load_benchmark
from voirdire.benchmarks.releases.catalogue import fetch_release, get_release
from voirdire.benchmarks.releases.mirror import read_manifest
from voirdire.benchmarks.releases.pandalm import (
    PANDALM,
    RECORDED_FILES,
    TESTSET,
    majority,
    read_testset,
)
from voirdire.benchmarks.releases.steps import MARKER
from voirdire.core import ConfigError, DataError
from voirdire.engine.shipping import release_for
from voirdire.engine.spec import parse_job

ROOT = Path(__file__).resolve().parents[1]


class _Files(http.server.BaseHTTPRequestHandler):
    root: Path
    hits: list

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        rel = urllib.parse.unquote(self.path).lstrip("/")
        src = self.root / rel
        self.hits.append(rel)
        if ".." in rel or not src.is_file():
            self.send_error(404)
            return
        data = src.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """``(base URL, served root, request log)``: a loopback server of a directory."""
    root = tmp_path_factory.mktemp("mirror")
    hits: list = []
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("F", (_Files,), {"root": root, "hits": hits})
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root, hits
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def data(mirror, tmp_path_factory) -> Path:
    base, root, _ = mirror
    man = write_release(root / "good", synthetic_items())
    dest = tmp_path_factory.mktemp("pandalm") / "data"
    report = fetch_release(
        dest, f"{base}/good/", release="pandalm", manifest=man, progress=False
    )
    assert sorted(report.files) == ["LICENSE", TESTSET]
    return dest


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return voirdire_cli(*args, cwd=ROOT, env=env or dict(os.environ))


# ------------------------------------------------------------------------- the release record


def test_release_record_and_package_manifest():
    rel = get_release("pandalm")
    assert rel is PANDALM and rel.repo == "WeOpenML/PandaLM" and len(rel.commit) == 40
    man = read_manifest(rel.manifest)
    recorded = {path for path, _, _ in RECORDED_FILES.values()}
    assert set(man) == {TESTSET, "LICENSE", *recorded} and all(
        len(b) == 40 for b in man.values()
    )
    lines = [
        ln.split("\t")
        for ln in rel.manifest.read_text().splitlines()[1:]
        if not ln.startswith("#")
    ]
    sizes = {p: int(n) for p, _, n in lines}
    assert sizes[TESTSET] > 900_000  # the real file: 999 items


def test_majority_by_enumeration():
    for a in range(3):
        for b in range(3):
            for c in range(3):
                labels = (a, b, c)
                want = next((v for v in range(3) if labels.count(v) >= 2), None)
                assert majority(labels) == want


# ------------------------------------------------------------------------- fetch


def test_cli_fetch_converts_and_copies_the_licence(mirror, tmp_path):
    base, root, _ = mirror
    man = write_release(root / "cli", synthetic_items())
    dest = tmp_path / "d"
    r = _cli(
        "data",
        "fetch",
        "pandalm",
        "--dest",
        str(dest),
        "--base-url",
        f"{base}/cli/",
        "--manifest",
        str(man),
        "--no-progress",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(dest)
    rec = json.loads((dest / MARKER).read_text())
    assert (
        rec["release"] == "pandalm"
        and rec["commit"] == PANDALM.commit
        and rec["repository"] == "WeOpenML/PandaLM"
    )
    assert (dest / "LICENSE").read_bytes() == LICENSE
    pairs = pl.read_parquet(dest / "pairs.parquet")
    items = synthetic_items()
    assert pairs.height == len(items) == 30 and pairs["prompt"].n_unique() == 3
    for it, row in zip(items, pairs.iter_rows(named=True)):
        m1, m2 = it["cmp_key"].split("_")
        lab = majority((it["annotator1"], it["annotator2"], it["annotator3"]))
        assert (row["model_1"], row["model_2"], row["label"]) == (m1, m2, lab)
        assert row["gold"] == {0: "tie", 1: m1, 2: m2}[lab]
        assert row["question"] == it["instruction"] + (
            f"\n\n{it['input']}" if it["input"] else ""
        )
    assert pairs["response1"][3] == "True"  # a JSON true, read as the text it stood for


def test_if_missing_fetches_once_into_the_user_data_dir(mirror, tmp_path):
    base, root, hits = mirror
    man = write_release(root / "once", synthetic_items())
    env = {k: v for k, v in os.environ.items() if k != "VOIRDIRE_PANDALM_DATA"}
    env["XDG_DATA_HOME"] = str(tmp_path / "share")
    cmd = [
        "data",
        "fetch",
        "pandalm",
        "--if-missing",
        "--base-url",
        f"{base}/once/",
        "--manifest",
        str(man),
        "--no-progress",
    ]
    r = _cli(*cmd, env=env)
    assert r.returncode == 0, r.stderr
    assert (
        Path(r.stdout.strip())
        == (tmp_path / "share" / "voirdire" / "pandalm").resolve()
    )
    before = len([h for h in hits if h.startswith("once/")])
    assert before == 2
    r = _cli(*cmd, env=env)
    assert (
        r.returncode == 0
        and Path(r.stdout.strip())
        == (tmp_path / "share" / "voirdire" / "pandalm").resolve()
    )
    assert (
        len([h for h in hits if h.startswith("once/")]) == before
    )  # found, not fetched again


def test_corrupted_download_is_refused_and_leaves_the_data_as_it_was(
    mirror, data, tmp_path
):
    base, root, _ = mirror
    man = write_release(root / "corrupt", synthetic_items())
    (root / "corrupt" / TESTSET).write_bytes(
        (root / "corrupt" / TESTSET).read_bytes()[:-10]
    )  # truncated
    dest = tmp_path / "d"
    r = _cli(
        "data",
        "fetch",
        "pandalm",
        "--dest",
        str(dest),
        "--base-url",
        f"{base}/corrupt/",
        "--manifest",
        str(man),
        "--no-progress",
    )
    assert r.returncode == 1 and "expected" in r.stderr and "git blob id" in r.stderr
    assert r.stderr.count("error:") == 1 and "Traceback" not in r.stderr
    assert not dest.exists()


def _broken(kind: str) -> object:
    items = synthetic_items()
    if kind == "not json":
        return b"[{"
    if kind == "not a list":
        return {"idx": 0}
    if kind == "no majority":
        items[5].update(annotator1=0, annotator2=1, annotator3=2)
    elif kind == "bad label":
        items[5]["annotator2"] = 3
    elif kind == "bool label":
        items[5]["annotator2"] = True
    elif kind == "missing field":
        del items[5]["response2"]
    elif kind == "one model":
        items[5]["cmp_key"] = "llama-7b_llama-7b"
    elif kind == "list response":
        items[5]["response2"] = ["a"]
    elif kind == "duplicate idx":
        items[5]["idx"] = 4
    return items


BROKEN = {
    "not json": "not valid JSON",
    "not a list": "non-empty JSON list",
    "no majority": "item 5: the three annotators all differ",
    "bad label": "item 5: 'annotator2' is 3",
    "bool label": "item 5: 'annotator2' is True",
    "missing field": "item 5 lacks the field 'response2'",
    "one model": "item 5: cmp_key 'llama-7b_llama-7b'",
    "list response": "item 5: 'response2' is not text",
    "duplicate idx": "idx 4 appears more than once",
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_bad_file_is_one_line_data_error(kind, mirror, tmp_path):
    _, root, _ = mirror
    data = _broken(kind)
    with pytest.raises(
        DataError, match=BROKEN[kind].replace("(", r"\(").replace(")", r"\)")
    ) as exc:
        read_testset(data if isinstance(data, bytes) else json.dumps(data).encode())
    assert "\n" not in str(exc.value) and TESTSET in str(exc.value)
    if kind == "no majority":  # and through the CLI: one line, exit 1, nothing written
        man = write_release(root / "bad", data)
        r = _cli(
            "data",
            "fetch",
            "pandalm",
            "--dest",
            str(tmp_path / "d"),
            "--base-url",
            f"{mirror[0]}/bad/",
            "--manifest",
            str(man),
            "--no-progress",
        )
        assert (
            r.returncode == 1
            and BROKEN[kind] in " ".join(r.stderr.split())
            and "Traceback" not in r.stderr
        )
        assert not (tmp_path / "d").exists()


# ------------------------------------------------------------------------- the benchmark


def test_instances_carry_the_models_names_and_the_majority_as_gold(data):
    bench = load_benchmark("PandaLM", data)
    assert (
        isinstance(bench, PandaLM)
        and bench.name == "PandaLM"
        and sorted(bench.models) == MODELS
    )
    job = parse_job(
        {
            "name": "p",
            "output_dir": "unused",
            "benchmark": {"name": "pandalm", "data_dir": str(data)},
            "judges": [{"name": "s", "backend": "simulated"}],
        }
    )
    assert release_for(job) is PANDALM
    inst = bench.fixed_instances()
    pairs = pl.read_parquet(data / "pairs.parquet")
    assert inst["question_id"].to_list() == pairs["id"].to_list()
    assert inst["candidate"].to_list() == pairs["model_1"].to_list()
    assert inst["reference"].to_list() == pairs["model_2"].to_list()
    assert (
        inst["gold"].to_list() == pairs["gold"].to_list()
        and "tie" in inst["gold"].to_list()
    )
    assert inst["task"].to_list() == pairs["task"].to_list()
    # the prompt: FastChat's pair-v2 with the question (instruction, then the input) and the answers in order
    prompt = bench.build_prompt("10", ["bloom-7b", "cerebras-gpt-6.7B"], 3)
    assert "Answer question 1.\n\ncontext 1" in prompt
    assert prompt.index("bloom-7b's answer to 1") < prompt.index(
        "cerebras-gpt-6.7B's answer to 1"
    )
    assert "impartial judge" in bench.system_prompt(
        "10", ["bloom-7b", "cerebras-gpt-6.7B"], 3
    )
    assert bench.default_option_mode == 3
    llm = load_benchmark("pandalm", data, prompt="llmbar")
    assert (
        "Output (a)" in llm.build_prompt("10", ["bloom-7b", "cerebras-gpt-6.7B"], 2)
        and llm.default_option_mode == 2
    )
    with pytest.raises(ConfigError, match="unknown prompt 'x'"):
        PandaLM(data, prompt="x")
    with pytest.raises(
        ConfigError, match="no .*pairs.parquet.*voirdire data fetch pandalm"
    ):
        PandaLM(data / "nowhere")
    with pytest.raises(ConfigError, match="has no subsets choice"):
        load_benchmark("pandalm", data, subsets=["x"])


def test_simulated_job_end_to_end(data, tmp_path, ray_local):
    qualities = {m: q for m, q in zip(MODELS, [-0.7, -1.3, 0.0, -1.0, -0.6])}
    res = voirdire.run(
        {
            "name": "pandalm-sim",
            "output_dir": str(tmp_path / "o"),
            "benchmark": {"name": "pandalm", "data_dir": str(data)},
            "comparison": {"mode": "pairwise", "permutations": "both"},
            "judges": [
                {
                    "name": "oracle",
                    "backend": "simulated",
                    "primacy": 0.5,
                    "sensitivity": 50.0,
                    "question_noise": 0.0,
                    "qualities": qualities,
                }
            ],
        },
        show_progress=False,
    )
    j = res.judgments
    assert j.height == 60 and j["failed"].sum() == 0
    assert set(j["candidate"]) | set(j["reference"]) == set(MODELS)
    # the oracle picks the model of higher quality in both orders: its verdicts name that model
    better = pl.col("candidate").replace_strict(qualities) > pl.col(
        "reference"
    ).replace_strict(qualities)
    best = j.select(
        pl.when(better).then("candidate").otherwise("reference").alias("b"), "chosen"
    )
    assert (best["b"] == best["chosen"]).all()
    gold = dict(
        pl.read_parquet(data / "pairs.parquet").select("id", "gold").iter_rows()
    )
    assert all(gold[q] == g for q, g in j.select("question_id", "gold").iter_rows())
