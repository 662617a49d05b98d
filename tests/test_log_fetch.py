"""``voirdire data fetch prd|alpaca_eval|judgebench`` without the internet: a loopback HTTP
server serves log files built here in each tool's exact format (SYNTHETIC: nothing of the
real logs is committed) at their repository paths, with a manifest of their git blob ids.
The fetch writes them unchanged, only those picked, says what the licence allows (a
repository without one: for reading only), refuses a corrupted file, and ``voirdire audit``'s
readers read the fetched files."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from tests.audit_logs import draws, write_judgebench
from tests.cli import voirdire as voirdire_cli
from tests.test_audit_logs2 import write_alpaca_eval, write_people, write_prd
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.benchmarks.logs.judgebench import JudgeBench
from voirdire.benchmarks.logs.prd import PRD
from voirdire.benchmarks.releases import logs as log_release
from voirdire.benchmarks.releases import mirror
from voirdire.benchmarks.releases.logs import Picks, fetch_logs
from voirdire.benchmarks.releases.steps import MARKER
from voirdire.core import ConfigError, DataError

ROOT = Path(__file__).resolve().parents[1]
JB = "outputs/dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model={}.jsonl"
AE = "results/{}/{}/annotations.json"
BOARD = "src/alpaca_eval/leaderboards/data_AlpacaEval_2/{}_leaderboard.csv"
WEIGHTS = "src/alpaca_eval/metrics/weights/{}/length_controlled_v1/baseline_gpt4_1106_preview.csv"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The three repositories' files under one loopback server: ``(root, base URL)``;
    ``root/<repo>/`` holds each one's files at their repository paths."""
    root = tmp_path_factory.mktemp("www")
    prd = root / "prd" / "data" / "vicuna80"
    for i, reviewer in enumerate(("gpt4", "bard")):
        write_prd(prd, reviewer, seed=i, n=6)
    write_people(prd, {(1, "bard", "gpt4"): [1, 1], (2, "gpt4", "bard"): [2]})
    (root / "prd" / "LICENSE").write_text("MIT License\n")
    ae = root / "alpaca_eval"
    for i, model in enumerate(("model-x", "model-y", "model-z")):
        write_alpaca_eval(
            ae / AE.format(model, "weighted_alpaca_eval_gpt4_turbo"), model, 12, seed=i
        )
    write_alpaca_eval(
        ae / AE.format("model-x", "alpaca_eval_gpt4"), "model-x", 5, seed=7
    )
    for ann in ("weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4"):
        (ae / BOARD.format(ann)).parent.mkdir(parents=True, exist_ok=True)
        (ae / BOARD.format(ann)).write_text(",win_rate\nmodel-x,50.0\n")
    (ae / WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")).parent.mkdir(parents=True)
    (ae / WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")).write_text(
        ",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\n"
        "model-x,-1.5,0.8,0.25\ngpt4_1106_preview,0.0,0.0,0.0\n"
    )
    (ae / "LICENSE").write_text("Apache License 2.0\n")
    jb = root / "judgebench"
    for i, judge in enumerate(("claude-3-haiku-20240307", "o1-mini-2024-09-12")):
        f = jb / JB.format(judge)
        f.parent.mkdir(parents=True, exist_ok=True)
        write_judgebench(f, draws(10, i), ["A>B", "B>A"] * 5, judge_model=judge)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root))
    )  # fmt: skip
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _manifest(repo: Path, out: Path) -> Path:
    """A manifest TSV (``blob_sha1<TAB>path<TAB>size``) of every file of a served repository."""
    lines = [
        f"{mirror.blob_id(p.read_bytes())}\t{p.relative_to(repo).as_posix()}\t{p.stat().st_size}"
        for p in sorted(repo.rglob("*")) if p.is_file()
    ]  # fmt: skip
    out.write_text("# test mirror\n" + "\n".join(lines) + "\n")
    return out


def _fetch(served, tmp_path, name, repo, picks=None, **kw):
    root, url = served
    tmp_path.mkdir(parents=True, exist_ok=True)
    man = _manifest(root / repo, tmp_path / f"{repo}.tsv")
    lines: list[str] = []
    rep = fetch_logs(name, tmp_path / "data", f"{url}/{repo}/", picks=picks or Picks(),
                     manifest=man, progress=False, log=lines.append, **kw)  # fmt: skip
    return rep, lines


def test_prd_fetch_picks_reviewers_unchanged_and_the_audit_reads_them(served, tmp_path):
    """``--judge gpt4``: gpt4's 6 files and the people's come, byte for byte, bard's do not;
    RELEASE.json records the pinned commit and the licence; PRD's reader reads the copy."""
    root, _ = served
    rep, lines = _fetch(served, tmp_path, "prd", "prd", Picks(judges=("gpt4",)))
    got = sorted(p.relative_to(rep.dest).as_posix() for p in rep.dest.rglob("*.jsonl"))
    assert len(got) == 6 + 2 and not [p for p in got if "ratings-bard" in p]
    for p in got:
        assert (rep.dest / p).read_bytes() == (root / "prd" / p).read_bytes()
    marker = json.loads((rep.dest / MARKER).read_text())
    assert (
        marker["commit"] == log_release.PRD_LOGS.commit
        and marker["redistribute"] is True
    )
    assert marker["audit_format"] == "prd" and (rep.dest / "LICENSE").is_file()
    assert any("MIT" in m for m in lines) and any("--format prd" in m for m in lines)
    vic = rep.dest / "data" / "vicuna80"
    bench = PRD(
        [vic / "ratings-gpt4", vic / "ratings-human"], data_dir=tmp_path / "copy"
    )
    assert bench.pairs.height == 6 * 3  # 6 questions x 3 model pairs
    gold = dict(zip(bench.pairs["question_id"], bench.pairs["gold"]))
    assert gold["1|bard|gpt4"] == "bard" and gold["2|bard|gpt4"] == "bard"


def test_alpaca_eval_fetch_picks_annotator_and_models(served, tmp_path):
    """The default annotator (AlpacaEval 2's) and ``--model model-x --model model-z``: those
    two files, that annotator's leaderboard and length-control weights, the licence; not
    model-y, not the other annotator."""
    rep, lines = _fetch(served, tmp_path, "alpaca_eval", "alpaca_eval",
                        Picks(models=("model-x", "model-z")))  # fmt: skip
    got = sorted(rep.files)
    assert got == ["LICENSE", AE.format("model-x", "weighted_alpaca_eval_gpt4_turbo"),
                   AE.format("model-z", "weighted_alpaca_eval_gpt4_turbo"),
                   BOARD.format("weighted_alpaca_eval_gpt4_turbo"),
                   WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")]  # fmt: skip
    assert (rep.dest / WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")).read_bytes() == (
        served[0] / "alpaca_eval" / WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")).read_bytes()  # fmt: skip
    hint = next(m for m in lines if m.startswith("audit them with"))
    assert (
        "results/*/weighted_alpaca_eval_gpt4_turbo/annotations.json --format alpacaeval"
        in hint
    )
    files = [rep.dest / p for p in got if p.endswith("annotations.json")]
    bench = AlpacaEval(files, data_dir=tmp_path / "copy")
    assert bench.pairs.height == 24
    rep2, _ = _fetch(served, tmp_path / "b", "alpaca_eval", "alpaca_eval",
                     Picks(annotator="alpaca_eval_gpt4"))  # fmt: skip
    assert (
        AE.format("model-x", "alpaca_eval_gpt4") in rep2.files and len(rep2.files) == 3
    )


def test_judgebench_has_no_licence_and_is_fetched_for_reading_only(served, tmp_path):
    """No LICENSE in the repository: the fetch says the logs are for reading, never to be
    redistributed, and RELEASE.json records it; ``--judge`` picks by judge model."""
    rep, lines = _fetch(served, tmp_path, "judgebench", "judgebench",
                        Picks(judges=("o1-mini-2024-09-12",)))  # fmt: skip
    assert list(rep.files) == [JB.format("o1-mini-2024-09-12")]
    assert any(re.search(r"no licence file.*never redistribute", m) for m in lines)
    marker = json.loads((rep.dest / MARKER).read_text())
    assert marker["redistribute"] is False and marker["licence"].startswith("none")
    bench = JudgeBench([rep.dest / "outputs"], data_dir=tmp_path / "copy")
    assert bench.pairs.height == 10


def test_a_corrupted_log_is_refused_and_nothing_written(served, tmp_path):
    """A served file that differs from its manifest blob id: DataError naming the file,
    the destination untouched (no data directory, no partial one)."""
    root, url = served
    man = _manifest(root / "judgebench", tmp_path / "jb.tsv")
    text = man.read_text().replace("\t", "\t", 1)
    blob = re.search(r"^([0-9a-f]{40})\t", text, re.M)[1]
    man.write_text(text.replace(blob, "0" * 40, 1))
    with pytest.raises(DataError, match=r"outputs/dataset=judgebench.*git blob id"):
        fetch_logs("judgebench", tmp_path / "data", f"{url}/judgebench/",
                   manifest=man, progress=False)  # fmt: skip
    assert list(tmp_path.iterdir()) == [man]


def test_unknown_picks_are_one_line_and_exit_2(tmp_path):
    """An unknown reviewer, model or annotator, or a pick the source does not take: one
    error line naming it, exit code 2, nothing fetched."""
    for args, want in ((["prd", "--judge", "nobody"], "unknown reviewer 'nobody'"),
                       (["alpaca_eval", "--annotator", "nobody"], "unknown annotator 'nobody'"),
                       (["judgebench", "--model", "x"], "pick judges with --judge")):  # fmt: skip
        r = voirdire_cli("data", "fetch", *args,
                            "--dest", str(tmp_path / "d"), cwd=ROOT)  # fmt: skip
        assert r.returncode == 2 and want in r.stderr.replace("\n", ""), r.stderr
        assert not (tmp_path / "d").exists()


def test_cli_fetch_prints_the_directory_and_the_terms(served, tmp_path):
    """``voirdire data fetch judgebench --base-url ... --manifest ...``: the data directory on
    stdout, the read-only terms and the audit command on stderr."""
    root, url = served
    man = _manifest(root / "judgebench", tmp_path / "jb.tsv")
    r = voirdire_cli("data", "fetch", "judgebench",
                        "--dest", str(tmp_path / "d"), "--base-url", f"{url}/judgebench/",
                        "--manifest", str(man), "--no-progress", cwd=ROOT)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == (tmp_path / "d").resolve()
    err = r.stderr.replace("\n", " ")
    assert "never redistribute" in err and "--format judgebench" in err


def test_package_manifests_name_the_pinned_files():
    """Each source's package manifest parses, every line a 40-hex blob id; the default picks
    give PRD's five reviewers and the people, AlpacaEval 2's annotator and its leaderboard,
    and JudgeBench's outputs; only JudgeBench lacks a licence."""
    prd = log_release.PRD_LOGS
    m = prd.pick(mirror.read_manifest(prd.manifest), Picks())
    reviewers = {
        re.match(r"data/vicuna80/ratings-([^/]+)/", p)[1] for p in m if p != "LICENSE"
    }
    assert reviewers == {"bard", "claude", "gpt35", "gpt4", "vicuna-13b", "human"}
    ae = log_release.ALPACA_EVAL_LOGS
    m = ae.pick(mirror.read_manifest(ae.manifest), Picks())
    assert BOARD.format("weighted_alpaca_eval_gpt4_turbo") in m and "LICENSE" in m
    assert WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo") in m
    assert (
        m[WEIGHTS.format("weighted_alpaca_eval_gpt4_turbo")]
        == "a6c7fa7707ee5f5dc7925ee4aad80ccaaaa2ac91"
    )
    assert all(
        "/weighted_alpaca_eval_gpt4_turbo/" in p for p in m if p.startswith("results/")
    )
    jb = log_release.JUDGEBENCH_LOGS
    m = jb.pick(mirror.read_manifest(jb.manifest), Picks(judges=("arena_hard",)))
    assert m and all("judge_name=arena_hard" in p for p in m)
    assert [r.name for r in log_release.LOG_RELEASES.values() if r.licence is None] == [
        "judgebench"
    ]
    for r in log_release.LOG_RELEASES.values():
        assert re.fullmatch(r"[0-9a-f]{40}", r.commit)
    with pytest.raises(ConfigError, match="unknown log source"):
        fetch_logs("nope")
