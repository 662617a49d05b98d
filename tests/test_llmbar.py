"""LLMBar, the second release: fetched from a loopback mirror of the real bytes (the shared
copy's ``files/<path>.gz``, decompressed on the fly), converted, read as a benchmark with gold
labels, replayed through the whole pipeline, and its published statistics reproduced.

A partial mirror (one evaluator × strategy missing) is fetched with that judge named and
skipped, exit code 0; ``--strict`` refuses it."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import threading
import urllib.parse
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.cli import voirdire as voirdire_cli
from voirdire.analysis.position.release_stats import (
    RELEASE_COLUMNS,
    as_release,
    pair_outcomes,
    release_view,
    voirdire_view,
)
from voirdire.benchmarks.llmbar import LLMBar
from voirdire.benchmarks.llmbar_prompts import (
    LINE_RULES,
    chat_messages,
    load_prompt,
    read_verdict,
    verdict_rules,
)
from voirdire.benchmarks.registry import load_benchmark
from voirdire.benchmarks.releases.catalogue import fetch_release, locate
from voirdire.benchmarks.releases.llmbar import LLMBAR
from voirdire.benchmarks.releases.mirror import blob_id, read_manifest
from voirdire.benchmarks.releases.steps import MARKER
from voirdire.core import ConfigError, DataError
from voirdire.engine.plan import plan_job
from voirdire.engine.spec import parse_job

#: the release fetched and converted, then read by every test: seconds each
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
COPY = ROOT.parent / "shared" / "data" / "llmbar-release"
#: a sample from every dataset family, and judges that cover every reading rule: the line
#: rule, the CoT rule, Swap's two rounds, a rating strategy (ties, a rating of 10), null
#: winners (PaLM2 and LLaMA2 leave some unanswered)
SUBSETS = [
    "LLMBar/Natural",
    "LLMBar/Adversarial/Neighbor",
    "Processed/FairEval",
    "CaseStudy/Constraint",
]
JUDGES = [
    "PaLM2/Vanilla_NoRules",
    "LLaMA2/Metrics_Reference",
    "GPT-4/Swap",
    "ChatGPT/CoT",
    "ChatGPT/Rating",
    "ChatGPT/Rating@tie",
]
LACKING = "Dataset/LLMBar/Natural/evaluators/Falcon/CoT/result.json"


@pytest.fixture(scope="module")
def copy_dir() -> Path:
    if not (COPY / "files").is_dir():
        if os.environ.get("CI") == "true":
            raise AssertionError(f"the LLMBar release copy is missing: {COPY}")
        pytest.skip(f"no LLMBar release copy at {COPY}")
    return COPY


class _Gz(http.server.BaseHTTPRequestHandler):
    """Serves ``<copy>/files/<path>.gz`` decompressed at ``/<prefix>/<path>``; the prefix
    ``partial`` lacks :data:`LACKING`."""

    copy: Path

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        prefix, _, rel = urllib.parse.unquote(self.path).lstrip("/").partition("/")
        src = self.copy / "files" / f"{rel}.gz"
        if not src.is_file() or (prefix == "partial" and rel == LACKING):
            self.send_error(404)
            return
        data = gzip.decompress(src.read_bytes())
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def base_url(copy_dir):
    handler = type("Gz", (_Gz,), {"copy": copy_dir})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def data(base_url, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("llmbar") / "data"
    report = fetch_release(dest, f"{base_url}/full/", release="llmbar", progress=False)
    assert report.skipped == [] and len(report.files) == 1012
    return dest


# ------------------------------------------------------------------------- fetch


def test_fetch_converts_the_release(data, copy_dir):
    rec = json.loads((data / MARKER).read_text())
    assert (
        rec["release"] == "llmbar"
        and rec["commit"] == LLMBAR.commit
        and rec["skipped"] == []
    )
    pairs = pl.read_parquet(data / "pairs.parquet")
    counts = dict(pairs.group_by("subset").len().iter_rows())
    assert counts["LLMBar/Natural"] == 100 and counts["Processed/FairEval"] == 66
    assert sum(v for k, v in counts.items() if k.startswith("LLMBar/")) == 419
    assert pl.read_parquet(data / "statistics.parquet").height == 499
    # every id of the package manifest is the release's (the copy's full manifest)
    full = read_manifest(copy_dir / "release-manifest.tsv")
    assert all(full[p] == b for p, b in read_manifest(LLMBAR.manifest).items())


def test_partial_mirror_skips_and_names_the_judge_then_strict_fails(base_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "VOIRDIRE_LLMBAR_DATA"}
    cmd = [
        "data",
        "fetch",
        "llmbar",
        "--base-url",
        f"{base_url}/partial/",
        "--no-progress",
    ]
    r = voirdire_cli(*cmd, "--dest", str(tmp_path / "d"), cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "d")
    # one line for what was skipped, the list in a file (issue 40, item 9)
    said = " ".join(r.stderr.split())
    assert "skipped 1 file(s) the mirror does not have" in said
    assert f"the list is in {tmp_path / 'd' / 'skipped.txt'}" in said
    assert (
        "Falcon/CoT on LLMBar/Natural" in (tmp_path / "d" / "skipped.txt").read_text()
    )
    rec = json.loads((tmp_path / "d" / MARKER).read_text())
    assert len(rec["skipped"]) == 1 and LACKING not in rec["files"]
    out = pl.read_parquet(tmp_path / "d" / "outputs.parquet")
    mine = (pl.col("evaluator") == "Falcon") & (pl.col("strategy") == "CoT")
    assert out.filter(mine & (pl.col("subset") == "LLMBar/Natural")).height == 0
    assert out.filter(mine).height > 0  # the other subsets' Falcon/CoT are there
    r = voirdire_cli(*cmd, "--dest", str(tmp_path / "s"), "--strict", cwd=ROOT, env=env)
    assert r.returncode == 1 and "strict fetch: 1 judge output(s)" in " ".join(
        r.stderr.split()
    )
    assert not (tmp_path / "s").exists()


def test_local_copy_is_converted_once_and_a_bad_file_is_refused(
    copy_dir, data, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.delenv("VOIRDIRE_LLMBAR_DATA", raising=False)
    monkeypatch.chdir(ROOT)  # ../shared/data/llmbar-release beside the checkout
    got = locate(LLMBAR)
    assert got.parent == (tmp_path / "cache" / "voirdire").resolve()
    assert pl.read_parquet(got / "pairs.parquet").equals(
        pl.read_parquet(data / "pairs.parquet")
    )
    assert locate(LLMBAR) == got  # reused, not converted again
    with pytest.raises(ConfigError, match="holds no fetched release"):
        locate(LLMBAR, tmp_path)
    bad = tmp_path / "bad"
    (bad / "files" / "Dataset" / "LLMBar" / "Natural").mkdir(parents=True)
    (bad / "files" / "Dataset" / "LLMBar" / "Natural" / "dataset.json.gz").write_bytes(
        gzip.compress(b"[]")
    )
    with pytest.raises(
        DataError,
        match=r"Dataset/LLMBar/Natural/dataset.json: the downloaded file \(2 bytes, from .*dataset.json.gz\) has git blob id .* corrupted or truncated",
    ):
        man = {
            "Dataset/LLMBar/Natural/dataset.json": read_manifest(LLMBAR.manifest)[
                "Dataset/LLMBar/Natural/dataset.json"
            ]
        }
        fetch_release(
            tmp_path / "x", release="llmbar", source=bad, manifest=man, progress=False
        )
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------ the benchmark


def test_prompts_ship_byte_exact_and_read_as_chat_messages(copy_dir):
    full = read_manifest(copy_dir / "release-manifest.tsv")
    shipped = sorted((ROOT / "benchmarks" / "templates" / "llmbar").rglob("*.txt"))
    assert len(shipped) == 17
    for f in shipped:
        rel = (
            "LLMEvaluator/evaluators/prompts/"
            + f.relative_to(ROOT / "benchmarks" / "templates" / "llmbar").as_posix()
        )
        assert blob_id(f.read_bytes()) == full[rel], rel
    system, user = load_prompt("Vanilla")
    assert system.startswith(
        "You are a helpful assistant in evaluating"
    ) and user.startswith("Select the Output (a)")
    assert "{output_1}" in user and "<|im" not in system + user
    assert [
        m["role"]
        for m in chat_messages(
            (ROOT / "benchmarks/templates/llmbar/comparison/CoT.txt").read_text()
        )
    ] == ["system", "user"]
    with pytest.raises(ConfigError, match="ChatML"):
        chat_messages("plain text")


def test_benchmark_instances_gold_and_prompts(data):
    bench = load_benchmark(
        "llmbar", data, subsets=["Processed/FairEval", "LLMBar/Natural"], prompt="CoT"
    )
    q = bench.questions
    assert (
        q.height == 166
        and q["question_id"][0] == "Processed/FairEval/0"
        and q["task"][0] == "Processed/FairEval"
    )
    pairs = (
        pl.read_parquet(data / "pairs.parquet")
        .filter(pl.col("subset") == "Processed/FairEval")
        .sort("item")
    )
    assert q["gold"][:66].to_list() == [
        "output_1" if v == 1 else "output_2" for v in pairs["label"]
    ]
    msgs = bench.messages("Processed/FairEval/3", ("output_2", "output_1"))
    assert msgs[0]["content"] == bench.system_prompt(
        "Processed/FairEval/3", ("output_2", "output_1"), 2
    )
    assert (
        f"# Output (a):\n{pairs['output_2'][3]}\n\n# Output (b):\n{pairs['output_1'][3]}"
        in msgs[1]["content"]
    )
    assert "Therefore, Output (a) is better." in msgs[1]["content"]
    with pytest.raises(
        ConfigError,
        match="unknown subset 'LLMBar/Nope'; the release has: CaseStudy/Base_10",
    ):
        LLMBar(data, subsets=["LLMBar/Nope"])
    with pytest.raises(ConfigError, match="unknown prompt 'Metrics'"):
        LLMBar(data, prompt="Metrics")
    with pytest.raises(ConfigError, match="has no subsets"):
        load_benchmark("mtbench", subsets=["LLMBar/Natural"])


def test_a_directory_reloads_its_benchmark_with_subsets_and_prompt(data):
    """``voirdire rank --style`` and the report's token lengths reload the benchmark a job
    record names: with the subsets and the prompt the job chose, not the whole release and
    the default prompt."""
    from voirdire.analysis.results_dir import dir_benchmark

    chosen = {"name": "llmbar", "subsets": ["LLMBar/Natural"], "prompt": "CoT"}
    got = dir_benchmark({"data_dir": str(data), "job": {"benchmark": chosen}})
    want = load_benchmark("llmbar", data, subsets=["LLMBar/Natural"], prompt="CoT")
    whole = load_benchmark("llmbar", data)
    assert got.questions.equals(want.questions)
    assert got.questions.height < whole.questions.height
    q = got.questions["question_id"][0]
    shown = ("output_2", "output_1")
    assert got.messages(q, shown) == want.messages(q, shown) != whole.messages(q, shown)
    with pytest.raises(ConfigError, match="subsets is not a list"):
        dir_benchmark(
            {"data_dir": str(data), "job": {"benchmark": {**chosen, "subsets": "x"}}}
        )


def test_every_recorded_verdict_reads_as_the_release_read_it(data):
    """The reading rules (per evaluator, strategy and round) give the recorded winner of every
    completion of the release (37,480 pairs of comparison strategies)."""
    out = pl.read_parquet(data / "outputs.parquet").filter(
        pl.col("completion").is_not_null()
    )
    swap = {"A": "2", "B": "1"}
    wrong = 0
    for r in out.iter_rows(named=True):
        letter = read_verdict(
            r["completion"], verdict_rules(r["evaluator"], r["strategy"], r["stage"])
        )
        winner = (
            None
            if letter is None
            else ({"A": "1", "B": "2"}[letter] if r["order"] == 0 else swap[letter])
        )
        wrong += winner != r["winner"]
    assert out.height == 74_960 and wrong == 0
    # the line rule, as LLMEvaluator applies it: (a) anywhere first, then (b)
    assert (
        read_verdict("Output (b)\nOutput (a)", LINE_RULES) == "A"
        and read_verdict("neither", LINE_RULES) is None
    )


def test_replayed_evaluator_as_quality_source(data, tmp_path):
    """``quality = "replay:GPT-4/Vanilla"`` on LLMBar: the better output is the one the
    release's recorded winner names in both orders (read by the release's rules, as its
    judgments are), for a comparison strategy and a rating strategy."""
    out = pl.read_parquet(data / "outputs.parquet")
    for recorded in ("GPT-4/Vanilla", "ChatGPT/Rating", "ChatGPT/Rating@tie"):
        ev, _, strategy = recorded.partition("/")
        strategy, tie_reading = strategy.partition("@")[::2]
        job = {
            "name": "q",
            "output_dir": str(tmp_path / "out"),
            "benchmark": {
                "name": "llmbar",
                "data_dir": str(data),
                "subsets": ["LLMBar/Natural"],
                "quality": f"replay:{recorded}",
            },
            "perturbations": [{"kind": "bandwagon", "target": "worse", "shares": [80]}],
            "judges": [{"name": "s", "backend": "simulated"}],
        }
        inst = plan_job(parse_job(job)).instances
        rec = out.filter(
            pl.col("evaluator") == ev,
            pl.col("strategy") == strategy,
            pl.col("subset") == "LLMBar/Natural",
        )
        if tie_reading:  # the higher rating (0-9) wins; equal ratings are no winner
            s1, s2 = (
                pl.col(c).str.strip_chars().cast(pl.Float64, strict=False)
                for c in ("score_1", "score_2")
            )
            ok = s1.is_between(0, 9) & s2.is_between(0, 9)
            rec = rec.with_columns(
                winner=pl.when(ok & (s1 > s2))
                .then(pl.lit("1"))
                .when(ok & (s2 > s1))
                .then(pl.lit("2"))
            )
        both = rec.group_by("item").agg(
            w=pl.col("winner").unique(), n=pl.col("winner").drop_nulls().len()
        )
        both = both.filter((pl.col("n") == 2) & (pl.col("w").list.len() == 1))
        want = {
            f"LLMBar/Natural/{i}": f"output_{w[0]}"
            for i, w in both.select("item", "w").iter_rows()
        }
        got = dict(
            inst.filter(pl.col("better").is_not_null())
            .select("question_id", "better")
            .iter_rows()
        )
        assert 0 < len(got) < inst.height and got == want, recorded
        assert (
            inst.filter(pl.col("better").is_not_null())["worst"]
            != inst.filter(pl.col("better").is_not_null())["better"]
        ).all()


# ------------------------------------------------- replay and the published statistics


@pytest.fixture(scope="module")
def replayed(data, tmp_path_factory, ray_local):
    job = {
        "name": "llmbar-sample",
        "output_dir": str(tmp_path_factory.mktemp("run") / "out"),
        "benchmark": {"name": "llmbar", "data_dir": str(data), "subsets": SUBSETS},
        "run": {"flush_seconds": 0.1, "batch_size": 1024},
        "judges": [{"name": j, "backend": "replay", "recorded": j} for j in JUDGES],
    }
    return voirdire.run(job, show_progress=False)


def test_replay_reproduces_the_published_statistics(replayed, data):
    """For every published cell of the sample: the release's view of voirdire's judgments
    equals statistics.json; voirdire's own PC and correct counts equal the release's on the
    pairs without a failed or tie verdict (the only difference)."""
    j = replayed.judgments
    assert set(j.filter(pl.col("judge") == "ChatGPT/Rating@tie")["mode"].unique()) == {
        "score"
    }
    assert set(j.filter(pl.col("judge") == "ChatGPT/Rating")["mode"]) == {"pairwise"}
    assert j.filter(pl.col("mode") == "score")["slot_scores"].drop_nulls().len() > 0
    pairs = pair_outcomes(j)
    pub = (
        pl.read_parquet(data / "statistics.parquet")
        .select(
            *[pl.col(c).cast(pl.Int64) for c in RELEASE_COLUMNS],
            judge=pl.col("evaluator") + "/" + pl.col("strategy"),
            task=pl.col("subset"),
        )
        .join(pl.DataFrame({"judge": JUDGES}), on="judge", how="semi")
        .join(pl.DataFrame({"task": SUBSETS}), on="task", how="semi")
    )
    assert pub.height == 15 and set(pub["task"]) == set(SUBSETS)
    mine = release_view(pairs, ["judge", "task"]).join(
        pub.select("judge", "task"), on=["judge", "task"], how="semi"
    )
    assert mine.sort("judge", "task").equals(
        pub.select("judge", "task", *RELEASE_COLUMNS).sort("judge", "task")
    )
    sample = pairs.join(pub.select("judge", "task"), on=["judge", "task"], how="semi")
    assert (
        sample["r1"].is_null().sum() + sample["r2"].is_null().sum() > 0
    )  # null winners are in the sample
    rated = pub.filter(pl.col("judge") == "ChatGPT/Rating").select("task")
    tie = pairs.filter(pl.col("judge") == "ChatGPT/Rating@tie").join(
        rated, on="task", how="semi"
    )  # the subsets the release rated
    assert tie.filter(pl.col("score") & (pl.col("w1") == "tie")).height > 0  # ties
    assert (  # the release's view of voirdire's tie reading: the published counts too
        release_view(tie, ["judge", "task"])
        .with_columns(judge=pl.lit("ChatGPT/Rating"))
        .sort("task")
        .equals(
            pub.filter(pl.col("judge") == "ChatGPT/Rating")
            .select("judge", "task", *RELEASE_COLUMNS)
            .sort("task")
        )
    )
    rest = sample.filter(~pl.col("differs"))
    left = release_view(rest, ["judge", "task"]).sort("judge", "task")
    assert left.equals(
        as_release(voirdire_view(rest, ["judge", "task"])).sort("judge", "task")
    )
    v = voirdire_view(sample, ["judge", "task"])
    cells = replayed.cell_metrics.select("judge", "task", "pc").join(
        v.select("judge", "task", pc_v="pc"), on=["judge", "task"]
    )
    assert cells.height == 15 and (cells["pc"] - cells["pc_v"]).abs().max() < 1e-12
    # voirdire's own counts equal the published correct counts (the default reading)
    acc = v.join(pub, on=["judge", "task"])
    assert acc.height == 15 and (acc["correct_shown"] == acc["correct_False"]).all()
    assert (acc["both_correct"] == acc["correct_both"]).all()
    mine_tie = voirdire_view(tie, ["judge", "task"])
    assert (mine_tie["pc"] == 1.0).all()  # read as a tie, ratings have no order
    assert (v.filter(pl.col("judge") == "ChatGPT/Rating")["pc"] < 1.0).all()


def test_replay_units_carry_gold_and_both_orders(replayed):
    j = replayed.judgments.filter(
        pl.col("judge") == "GPT-4/Swap", pl.col("task") == "LLMBar/Natural"
    )
    assert j.height == 200 and j["gold"].is_in(["output_1", "output_2"]).all()
    assert sorted(j["permutation"].unique()) == [0, 1]
    first = j.filter(pl.col("permutation") == 0)
    assert (first["shown"].list.first() == "output_1").all() and (
        first["candidate"] == "output_1"
    ).all()
    missing = replayed.judgments.filter(
        pl.col("judge") == "GPT-4/Swap", pl.col("task") == "Processed/FairEval"
    )
    assert (
        missing["failed"].all()
        and (missing["failure_message"] == "no recorded output").all()
    )


@pytest.mark.slow
def test_example_prints_pc_pf_and_accuracy_of_every_judge(data, tmp_path):
    """The acceptance path: after `voirdire data fetch llmbar` (here: the fetched fixture),
    `voirdire run examples/llmbar_replay.toml` prints PC, PF and accuracy of every
    evaluator/strategy on the five LLMBar sets."""
    env = {**os.environ, "VOIRDIRE_LLMBAR_DATA": str(data)}
    r = voirdire_cli(
        "run",
        "examples/llmbar_replay.toml",
        "--no-progress",
        "--output-dir",
        str(tmp_path / "o"),
        cwd=ROOT,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "54,470 queries" in r.stdout and "0 recorded failures" in r.stdout
    acc = r.stdout[r.stdout.index("Accuracy against gold labels") :]
    rows = [
        [c.strip() for c in line.split("│")[1:-1]]
        for line in acc.splitlines()
        if line.startswith("│ LLMBar")
    ]
    assert len(rows) == 65
    # GPT-4/Vanilla: pairs, PC, PF, accuracy pooled / shown / swapped / both, over the 419 pairs
    assert [
        "LLMBar",
        "GPT-4/Vanilla",
        "419",
        "0.928",
        "-0.030",
        "0.845",
        "0.828",
        "0.862",
        "0.809",
    ] in rows
