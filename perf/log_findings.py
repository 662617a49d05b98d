"""The findings on public judgment logs (``docs/findings.md``, "Audits of logs other tools
wrote"), recomputed through the fetch path: no network.

A loopback HTTP server serves each repository's files at its pinned commit from local git
mirrors (``--mirror``, default ``/work/.mirror``: ``<owner>+<name>/repo``, read with ``git
cat-file``; a blob the mirror lacks is a 404, which the fetch skips and names), so
``voirdire data fetch``'s code (:func:`voirdire.benchmarks.log_release.fetch_logs`) downloads
and verifies every file against the package manifest's git blob ids. Then ``voirdire.audit``
(the engine, a replay judge per judge in the logs) reads the fetched files, and this script
prints:

- PRD: per reviewer PC, flip rate, PF, the share of decided verdicts picking the answer shown
  first, κ between the orders, accuracy against the people (PRD's notebook rule);
- JudgeBench (``--judge arena_hard``): the same per judge, accuracy against the gold label,
  and JudgeBench's own score (``utils/metrics.py``, ``compute_final_metrics``: per pair +1
  per order whose decision, the second flipped back, equals the label, −1 per order with the
  opposite; correct when the sum is > 0; 100 × correct / pairs);
- AlpacaEval 2 (``weighted_alpaca_eval_gpt4_turbo``): the position effect of the one-order
  analysis (:func:`voirdire.analysis.position.one_order.one_order_effect`: win rate when
  shown first against second, pooled and per model, bootstrap interval, randomisation
  p-value), and each model's AlpacaEval win rate recomputed from the fetched annotations
  (``metrics/helpers.py``, ``describe_head2head``: mean of preference − 1 with 0 read as
  1.5, × 100; wins > 0.5, base wins < 0.5) against the repository's leaderboard CSV.

- PRD's leaderboards (``voirdire.rank`` on the audit, each order's own verdicts, no
  mitigation strategy): per reviewer its pooled board against the people's (the board of
  the gold labels, :mod:`~voirdire.analysis.ranking.people`): each model's place by rating,
  Kendall τ-b and the flips (Holm-significant ones); and its first-shown against its
  swapped board: flips, those significant under the order permutation test, its p-values
  (from the flips and from τ) and τ.

``--smoke``: one PRD reviewer, two AlpacaEval models, one JudgeBench judge, few replicates.
``--only prd``: PRD alone (its audit and boards).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import polars as pl

MIRRORS = {
    "prd": "bcdnlp+PRD",
    "alpaca_eval": "tatsu-lab+alpaca_eval",
    "judgebench": "ScalerLab+JudgeBench",
}
AE_REFERENCE = "gpt4_1106_preview"


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


def serve(mirror: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A loopback server over the mirrors at the pinned commits; ``(server, base URL)``."""
    from voirdire.benchmarks.log_release import LOG_RELEASES

    repos = {
        n: (mirror / MIRRORS[n] / "repo", r.commit) for n, r in LOG_RELEASES.items()
    }
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_GitServer, repos=repos)
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def fetch(name: str, url: str, root: Path, picks) -> Path:
    """:func:`fetch_logs` of one source from the loopback server; its data directory."""
    from voirdire.benchmarks.log_release import fetch_logs

    t = time.perf_counter()
    rep = fetch_logs(name, root / name, f"{url}/{name}/", picks=picks, progress=False)
    print(
        f"fetched {name}: {len(rep.files)} files verified, {rep.downloaded_bytes / 1e6:.1f} MB, "
        f"{len(rep.skipped)} not on the mirror, {time.perf_counter() - t:.1f} s"
    )
    return rep.dest


def _first_share(data_dir: str) -> pl.DataFrame:
    """Per judge the share of decided verdicts (A or B) that pick the answer shown first."""
    from voirdire.benchmarks.logs.reading import RECORDED

    rec = pl.read_parquet(Path(data_dir) / RECORDED)
    return (
        rec.filter(pl.col("choice").is_in(["A", "B"]))
        .group_by("judge")
        .agg(first_picks=(pl.col("choice") == "A").mean())
    )


def audit_table(res) -> pl.DataFrame:
    """PC, flip rate, PF, first-shown picks, κ between orders, accuracy per judge."""
    jm = res.judge_metrics
    cols = [c for c in ("pc", "pf", "pass_kappa", "accuracy") if c in jm.columns]
    return (
        jm.select("judge", *cols)
        .with_columns(flip=1 - pl.col("pc"))
        .join(_first_share(res.job["data_dir"]), on="judge", how="left")
        .sort("judge")
    )


def judgebench_score(data_dir: str) -> pl.DataFrame:
    """JudgeBench's ``compute_final_metrics`` score per judge (module docstring), from the
    normalised copy: a decision as a winner slot, compared with the gold slot."""
    from voirdire.benchmarks.logs.reading import INSTANCES, RECORDED

    rec = pl.read_parquet(Path(data_dir) / RECORDED)
    gold = pl.read_parquet(Path(data_dir) / INSTANCES).select("question_id", "gold")
    won = (
        pl.when(pl.col("choice") == "A").then(pl.col("first"))
        .when(pl.col("choice") == "B").then(pl.col("second"))
    )  # fmt: skip
    vote = (
        pl.when(won == pl.col("gold")).then(1)
        .when(won.is_not_null() & (won != pl.col("gold"))).then(-1).otherwise(0)
    )  # fmt: skip
    per_pair = (
        rec.join(gold, on="question_id")
        .group_by("judge", "question_id")
        .agg(s=vote.sum())
    )
    return per_pair.group_by("judge").agg(
        pairs=pl.len(), judgebench_score=100 * (pl.col("s") > 0).mean()
    )


def alpaca_eval_check(data_dir: str, board: Path) -> pl.DataFrame:
    """Each model's AlpacaEval win rate from the annotations against the leaderboard CSV."""
    from voirdire.benchmarks.logs.alpaca_eval import PREFERENCES

    pref = pl.read_parquet(Path(data_dir) / PREFERENCES).with_columns(
        model=pl.when(pl.col("first") == AE_REFERENCE)
        .then(pl.col("second"))
        .otherwise(pl.col("first")),
        p=pl.col("preference").replace(0.0, 1.5) - 1,
    )
    ours = (
        pref.filter(pl.col("p").is_between(0, 1))
        .group_by("model")
        .agg(
            win_rate=100 * pl.col("p").mean(),
            n_wins=(pl.col("p") > 0.5).sum(),
            n_wins_base=(pl.col("p") < 0.5).sum(),
            n_total=pl.len(),
        )
    )
    csv = pl.read_csv(board).rename({"": "model"})
    both = ours.join(csv.select("model", "win_rate", "n_wins", "n_wins_base", "n_total"),
                     on="model", suffix="_board")  # fmt: skip
    return both.with_columns(
        diff=(pl.col("win_rate") - pl.col("win_rate_board")).abs(),
        counts_equal=(pl.col("n_wins") == pl.col("n_wins_board"))
        & (pl.col("n_wins_base") == pl.col("n_wins_base_board"))
        & (pl.col("n_total") == pl.col("n_total_board")),
    ).sort("model")


def start_ray(tries: int = 5) -> None:
    """A local Ray cluster (2 CPUs), started again when its node misses Ray's fixed 30 s
    start-up wait (a loaded machine); the audits join it."""
    import os

    import ray

    os.environ.setdefault("RAY_ACCEPT_CLUSTER_AUTH_TOKEN", "1")
    for i in range(tries):
        try:
            ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
            return
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception here
            print(f"Ray start-up failed ({exc}); try {i + 2} of {tries}")
            ray.shutdown()
    raise SystemExit("Ray did not start")


def _show(title: str, df: pl.DataFrame) -> None:
    print(f"\n{title}")
    with pl.Config(tbl_rows=80, tbl_cols=20, float_precision=3, tbl_width_chars=200):
        print(df)


def run_prd(url: str, work: Path, smoke: bool, replicates: int) -> None:
    """Fetch and audit PRD, print the reviewers' table and their boards (module docstring)."""
    import voirdire
    from voirdire.benchmarks.log_release import Picks

    prd = fetch("prd", url, work, Picks(judges=("gpt4",) if smoke else ()))
    t = time.perf_counter()
    start_ray()
    ratings = sorted((prd / "data" / "vicuna80").glob("ratings-*"))
    res = voirdire.audit(ratings, "prd", out=work / "audit-prd")
    _show("PRD reviewers (accuracy against the people's majority)", audit_table(res))
    print(f"PRD audit: {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    ranking, _ = voirdire.rank(
        [work / "audit-prd"],
        out=work / "rank-prd",
        strategies=[],
        replicates=replicates,
    )
    from perf.prd_boards import notebook_winrates, prd_boards

    places, flips = prd_boards(ranking)
    _show(
        "PRD boards: each model's place (rating), pooled orders and the people's",
        places,
    )
    _show("PRD boards: against the people's, and first shown against swapped", flips)
    print(f"PRD ranking ({replicates} replicates): {time.perf_counter() - t:.1f} s")
    _show(
        "PRD's notebook's win rates (compute_winrates), from the audit's copy",
        notebook_winrates(res.job["data_dir"]),
    )


def run(
    mirror: Path, smoke: bool, work: Path, only: str | None, replicates: int
) -> None:
    """Fetch, audit and print every finding (module docstring); ``only="prd"``: PRD's."""
    import voirdire
    from voirdire.benchmarks.log_release import AE_ANNOTATOR, Picks

    httpd, url = serve(mirror)
    try:
        run_prd(url, work, smoke, replicates)
        if only == "prd":
            return
        jb = fetch("judgebench", url, work, Picks(judges=("arena_hard",)))
        ae_models = ("alpaca-7b", "claude-2") if smoke else ()
        ae = fetch("alpaca_eval", url, work, Picks(models=ae_models))
    finally:
        httpd.shutdown()
    _checks(jb, ae, smoke)
    t = time.perf_counter()
    res = voirdire.audit(_jb_files(jb, smoke), "judgebench", out=work / "audit-jb")
    score = judgebench_score(res.job["data_dir"])
    _show(
        "JudgeBench judges (accuracy against gold)",
        audit_table(res).join(score, on="judge"),
    )
    files = sorted(ae.glob(f"results/*/{AE_ANNOTATOR}/annotations.json"))
    res = voirdire.audit(files, "alpacaeval", out=work / "audit-ae")
    eff = alpaca_eval_effect(res.judgments, res.job["data_dir"], 200 if smoke else 2000)
    _show(
        f"AlpacaEval 2 ({len(files)} models): position effect, pooled",
        eff.filter(pl.col("candidate").is_null()),
    )
    _show("per model (sorted by effect)", eff.filter(pl.col("candidate").is_not_null()).sort("effect")
          .select("candidate", "n_first", "n_second", "win_first", "win_second", "effect", "effect_lo", "effect_hi", "p_value"))  # fmt: skip
    print(f"audits: {time.perf_counter() - t:.1f} s")


def alpaca_eval_effect(judgments: pl.DataFrame, data_dir: str, n: int) -> pl.DataFrame:
    """The one-order position effect of AlpacaEval's annotator per leaderboard model and
    pooled: the audit's pairs have the output shown first as ``model_a`` (its candidate), so
    the roles are set back to AlpacaEval's (the leaderboard model the candidate, the
    reference ``gpt4_1106_preview`` the reference; verdicts unchanged), the bootstrap
    resamples instructions (the benchmark's clusters) and the randomisation test permutes
    them, the unit AlpacaEval's switch was drawn over."""
    from voirdire.analysis.position.clusters import benchmark_order_units
    from voirdire.analysis.position.one_order import one_order_effect
    from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval

    roles = judgments.with_columns(
        candidate=pl.when(pl.col("candidate") == AE_REFERENCE)
        .then(pl.col("reference"))
        .otherwise(pl.col("candidate")),
        reference=pl.lit(AE_REFERENCE),
    )
    clusters = AlpacaEval.clusters(data_dir).with_columns(
        benchmark=pl.lit(AlpacaEval.name)
    )
    units = benchmark_order_units(
        [AlpacaEval.name]
    )  # the instruction: AlpacaEval's switch
    return one_order_effect(
        roles, replicates=n, permutations=n, seed=0, clusters=clusters, units=units
    )


def _jb_files(jb: Path, smoke: bool) -> list[Path]:
    return sorted((jb / "outputs").glob("*.jsonl"))[: 1 if smoke else None]


def _checks(jb: Path, ae: Path, smoke: bool) -> None:
    """The figures the sources publish or define, from the normalised copies alone (no
    engine): AlpacaEval's win rates against its leaderboard CSV, JudgeBench's score."""
    from voirdire.benchmarks.log_release import AE_ANNOTATOR
    from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
    from voirdire.benchmarks.logs.judgebench import JudgeBench

    files = sorted(ae.glob(f"results/*/{AE_ANNOTATOR}/annotations.json"))
    board = next(
        ae.glob(
            f"src/alpaca_eval/leaderboards/data_AlpacaEval_2/{AE_ANNOTATOR}_leaderboard.csv"
        )
    )
    chk = alpaca_eval_check(str(AlpacaEval(files).data_dir), board)
    _show("AlpacaEval win rate from the annotations against the leaderboard CSV", chk)
    print(f"leaderboard check: {chk.height} models, largest |win rate difference| "
          f"{chk['diff'].max():.2e} points, counts equal for {chk['counts_equal'].sum()}")  # fmt: skip
    _show(
        "JudgeBench's own score (compute_final_metrics)",
        judgebench_score(str(JudgeBench(_jb_files(jb, smoke)).data_dir)),
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny picks, seconds")
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--only", choices=["prd"], help="one source's findings alone")
    ap.add_argument(
        "--replicates",
        type=int,
        default=None,
        help="the boards' (default 1000; smoke 100)",
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="where to fetch and audit (default: a temporary directory)",
    )
    args = ap.parse_args(argv)
    want = {args.only: MIRRORS[args.only]} if args.only else MIRRORS
    missing = [m for m in want.values() if not (args.mirror / m / "repo").is_dir()]
    if missing:
        print(
            f"no local mirror of {', '.join(missing)} under {args.mirror}: nothing to do"
        )
        sys.exit(0 if args.smoke else 2)
    reps = args.replicates or (100 if args.smoke else 1000)
    if args.work:
        run(args.mirror, args.smoke, args.work, args.only, reps)
        return
    with tempfile.TemporaryDirectory() as d:
        run(args.mirror, args.smoke, Path(d), args.only, reps)


if __name__ == "__main__":
    main()
