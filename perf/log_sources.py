"""Where :mod:`perf.log_findings` gets the public logs: fetched by the command, read from a
folder, or (``--smoke`` on a machine without the mirrors) built in each tool's format.

- **Fetched** (default): a loopback HTTP server serves each repository's files at its pinned
  commit from the local bare git mirrors (``--mirror``, ``<owner>+<name>/repo``, read with
  ``git cat-file``; a blob the mirror lacks is a 404, which the fetch skips and names), and
  ``voirdire data fetch NAME --base-url ...`` downloads and verifies every file against the
  package manifest's git blob ids, as a user's fetch does. Auto-J (no licence file: never
  fetched by voirdire) and the files the sources publish their own figures in that the
  fetch does not take (PRD's notebook, Auto-J's README and scenario groups) are written
  from the mirror at the pinned commit, as a user's checkout holds them.
- **A folder** (``--fetched DIR``): ``DIR/prd``, ``DIR/judgebench``, ``DIR/alpaca_eval`` (both
  annotators' files, or ``DIR/alpaca_eval_1`` for AlpacaEval 1's) and ``DIR/autoj``, each
  with the repository's files at their paths (``voirdire data fetch`` folders or checkouts).
- **Built** (``--smoke`` without mirrors, as in CI): small files in each format from the
  tests' writers (``tests/``), served over loopback with their own manifest and fetched by
  the same command (``--manifest``).
"""

from __future__ import annotations

import functools
import http.server
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from perf.log_commands import run

__all__ = [
    "AE1", "AE2", "AUTOJ_COMMIT", "MIRRORS", "Sources", "built", "fetch", "folder",
    "fetched", "serve",
]  # fmt: skip

MIRRORS = {
    "prd": "bcdnlp+PRD",
    "alpaca_eval": "tatsu-lab+alpaca_eval",
    "judgebench": "ScalerLab+JudgeBench",
    "autoj": "GAIR-NLP+auto-j",
}
AE2, AE1 = "weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4"
AUTOJ_COMMIT = "2ae17a3965d933232e9cd50302aa0f176249c83b"
#: Auto-J's files the audit and the comparison read (a user's checkout holds them)
AUTOJ_FILES = (
    "data/test/testdata_pairwise.jsonl",
    "data/outputs/pairwise_example_output.jsonl",
    "data/outputs/pairwise_exchange_example_output.jsonl",
    "codes/leaderboard/README.md",
    "codes/leaderboard/utils_constants.py",
)
#: files a source publishes its figures in that its fetch does not take
EXTRAS = {"prd": ("peer_rank/peer_ranking.ipynb",)}


@dataclass(frozen=True)
class Sources:
    """Each log's folder, its files at their repository paths (None: not there)."""

    prd: Path | None = None
    judgebench: Path | None = None
    alpaca_eval_2: Path | None = None
    alpaca_eval_1: Path | None = None
    autoj: Path | None = None


class _GitServer(http.server.BaseHTTPRequestHandler):
    """``GET /<source>/<path>``: the blob at the source's pinned commit, or 404."""

    def __init__(self, *args, repos: dict[str, tuple[Path, str]], **kw) -> None:
        self.repos = repos
        super().__init__(*args, **kw)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        source, _, path = self.path.lstrip("/").partition("/")
        git_dir, commit = self.repos.get(source, (None, ""))
        r = subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "blob", f"{commit}:{path}"],
            capture_output=True,
        ) if git_dir else None  # fmt: skip
        if r is None or r.returncode:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(r.stdout)))
        self.end_headers()
        self.wfile.write(r.stdout)

    def log_message(self, *args) -> None:
        pass


def _start(handler) -> tuple[http.server.ThreadingHTTPServer, str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def serve(mirror: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A loopback server over the mirrors at the pinned commits; ``(server, base URL)``."""
    from voirdire.benchmarks.releases.logs import LOG_RELEASES

    repos = {
        n: (mirror / MIRRORS[n] / "repo", r.commit) for n, r in LOG_RELEASES.items()
    }
    return _start(functools.partial(_GitServer, repos=repos))


def fetch(name: str, url: str, dest: Path, picks: list[str], manifest=None) -> Path:
    """``voirdire data fetch NAME --dest DEST --base-url URL/NAME/ PICKS``: its data folder.

    Raises:
        SystemExit: the fetch failed (its last lines)."""
    args = ["data", "fetch", name, "--dest", dest, "--base-url", f"{url}/{name}/",
            "--no-progress", *picks]  # fmt: skip
    if manifest:
        args += ["--manifest", manifest]
    ran = run(args, kill_gib=2)
    if not ran.ok:
        raise SystemExit(f"fetch of {name} failed:\n{ran.stderr[-2000:]}")
    got = Path(ran.stdout.strip().splitlines()[-1])
    files = [p for p in got.rglob("*") if p.is_file() and p.name != "RELEASE.json"]
    wrote = [ln for ln in ran.stderr.splitlines() if ln.startswith("wrote ")]
    print(f"{ran.line()}: {len(files)} files verified and written"
          f"{' (' + wrote[-1].rpartition('(')[2] if wrote else ''}, "
          f"{ran.stderr.count('skipped:')} of the manifest's picks not on the mirror")  # fmt: skip
    return got


def _git_files(mirror: Path, repo: str, commit: str, paths, dest: Path) -> None:
    """Write ``paths`` at ``commit`` from a bare mirror under ``dest`` (a checkout's subset)."""
    for p in paths:
        r = subprocess.run(
            ["git", f"--git-dir={mirror / repo / 'repo'}", "cat-file", "blob", f"{commit}:{p}"],
            capture_output=True,
        )  # fmt: skip
        if r.returncode == 0:
            (dest / p).parent.mkdir(parents=True, exist_ok=True)
            (dest / p).write_bytes(r.stdout)


def fetched(mirror: Path, root: Path, want: set[str], smoke: bool) -> Sources:
    """Every wanted source fetched by ``voirdire data fetch`` from the mirrors (module
    docstring); ``smoke``: one PRD reviewer, two AlpacaEval models, JudgeBench's arena-hard
    judges."""
    from voirdire.benchmarks.releases.logs import PRD_LOGS

    got: dict[str, Path] = {}
    httpd, url = serve(mirror)
    try:
        if "prd" in want:
            got["prd"] = fetch("prd", url, root / "prd", ["--judge", "gpt4"] if smoke else [])  # fmt: skip
            _git_files(mirror, MIRRORS["prd"], PRD_LOGS.commit, EXTRAS["prd"], root / "extras" / "prd")  # fmt: skip
        if "judgebench" in want:
            got["judgebench"] = fetch("judgebench", url, root / "judgebench", ["--judge", "arena_hard"])  # fmt: skip
        models = ["--model", "alpaca-7b", "--model", "claude-2"] if smoke else []
        if "alpaca_eval_2" in want:
            got["alpaca_eval_2"] = fetch("alpaca_eval", url, root / "alpaca_eval_2", ["--annotator", AE2, *models])  # fmt: skip
        if "alpaca_eval_1" in want:
            got["alpaca_eval_1"] = fetch("alpaca_eval", url, root / "alpaca_eval_1", ["--annotator", AE1, *models])  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    if "autoj" in want:
        got["autoj"] = root / "autoj"
        _git_files(mirror, MIRRORS["autoj"], AUTOJ_COMMIT, AUTOJ_FILES, got["autoj"])
    if "prd" in want:  # the notebook beside the fetched reviews, as in a checkout
        _copy_tree(root / "extras" / "prd", got["prd"])
    return Sources(**got)


def _copy_tree(src: Path, dest: Path) -> None:
    for p in src.rglob("*"):
        if p.is_file():
            (dest / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            (dest / p.relative_to(src)).write_bytes(p.read_bytes())


def folder(d: Path, want: set[str]) -> Sources:
    """The sources under an already fetched folder (module docstring)."""
    pick = {
        "prd": d / "prd",
        "judgebench": d / "judgebench",
        "alpaca_eval_2": d / "alpaca_eval_2" if (d / "alpaca_eval_2").is_dir() else d / "alpaca_eval",
        "alpaca_eval_1": d / "alpaca_eval_1" if (d / "alpaca_eval_1").is_dir() else d / "alpaca_eval",
        "autoj": d / "autoj",
    }  # fmt: skip
    return Sources(**{k: p for k, p in pick.items() if k in want and p.is_dir()})


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _manifest(repo: Path, out: Path) -> Path:
    """A manifest TSV (``blob_sha1<TAB>path<TAB>size``) of every file under ``repo``."""
    from voirdire.benchmarks.releases import mirror

    lines = [
        f"{mirror.blob_id(p.read_bytes())}\t{p.relative_to(repo).as_posix()}\t{p.stat().st_size}"
        for p in sorted(repo.rglob("*")) if p.is_file()
    ]  # fmt: skip
    out.write_text("# built by perf/log_sources.py\n" + "\n".join(lines) + "\n")
    return out


def _alpaca_board(rows_by_model: dict[str, list[dict]], path: Path) -> None:
    """A leaderboard CSV by AlpacaEval's rule (``describe_head2head``: preference − 1, 0 read
    as 1.5) for built annotations."""
    lines = [",win_rate,n_wins,n_wins_base,n_draws,n_total,length_controlled_winrate"]
    for m, rows in rows_by_model.items():
        p = [(r["preference"] or 1.5) - 1 for r in rows if r["preference"] is not None]
        wr = 100 * sum(p) / len(p)
        wins, base = sum(x > 0.5 for x in p), sum(x < 0.5 for x in p)
        lines.append(f"{m},{wr},{wins},{base},{len(p) - wins - base},{len(p)},{wr}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def built(root: Path, want: set[str]) -> Sources:
    """Small logs written here in each tool's format by the tests' writers (``tests/``),
    served over loopback with manifests of their blob ids and fetched by ``voirdire data
    fetch --manifest``, as on the mirrors; Auto-J's files written where a checkout has them
    (no README or scenario groups: not compared). For ``--smoke`` on a machine without the
    mirrors (CI)."""
    import random

    from tests.audit_logs import draws, write_judgebench
    from tests.test_audit_autoj import TABLE, expand, write_autoj
    from tests.test_audit_logs2 import (
        MODELS,
        write_alpaca_eval,
        write_people,
        write_prd,
    )

    www = root / "www"
    vic = www / "prd" / "data" / "vicuna80"
    for i, reviewer in enumerate(("gpt4", "bard")):
        write_prd(vic, reviewer, seed=i, n=6)
    rng = random.Random(0)
    write_people(vic, {(q, a, b): [rng.choice((1, 2, 3)) for _ in range(3)]
                       for q in range(1, 7) for a in MODELS for b in MODELS if a < b})  # fmt: skip
    ae = www / "alpaca_eval"
    rows = {m: write_alpaca_eval(ae / f"results/{m}/{AE2}/annotations.json", m, 16, seed=i)
            for i, m in enumerate(("model-x", "model-y", "model-z"))}  # fmt: skip
    _alpaca_board(
        rows,
        ae / f"src/alpaca_eval/leaderboards/data_AlpacaEval_2/{AE2}_leaderboard.csv",
    )
    weights = (
        ae
        / f"src/alpaca_eval/metrics/weights/{AE2}/length_controlled_v1/baseline_gpt4_1106_preview.csv"
    )
    weights.parent.mkdir(parents=True)
    weights.write_text(
        ",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\n"
        "model-x,-1.5,0.8,0.25\ngpt4_1106_preview,0.0,0.0,0.0\n"
    )
    jb = www / "judgebench" / "outputs"
    jb.mkdir(parents=True)
    for i, judge in enumerate(("claude-3-haiku-20240307", "o1-mini-2024-09-12")):
        name = f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model={judge}.jsonl"
        write_judgebench(jb / name, draws(12, i), ["A>B", "B>A"] * 6, judge_model=judge)
    for repo in ("prd", "alpaca_eval"):
        (www / repo / "LICENSE").write_text("MIT License\n")
    httpd, url = _start(functools.partial(_Quiet, directory=str(www)))
    got: dict[str, Path] = {}
    try:
        for key, name, picks in (("prd", "prd", []), ("judgebench", "judgebench", []),
                                 ("alpaca_eval_2", "alpaca_eval", ["--annotator", AE2])):  # fmt: skip
            if key in want:
                man = _manifest(www / name, root / f"{name}.tsv")
                got[key] = fetch(name, url, root / key, picks, manifest=man)
    finally:
        httpd.shutdown()
        httpd.server_close()
    if "autoj" in want:
        tmp = write_autoj(root / "autoj-files", expand(TABLE))
        got["autoj"] = root / "autoj"
        for p in AUTOJ_FILES[:3]:
            (got["autoj"] / p).parent.mkdir(parents=True, exist_ok=True)
            (tmp / Path(p).name).replace(got["autoj"] / p)
    return Sources(**got)
