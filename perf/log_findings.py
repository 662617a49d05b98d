"""Every figure the docs state about a public judgment log, from the commands a user runs.

    python -m perf.log_findings                       # fetch from /work/.mirror, run, print
    python -m perf.log_findings --fetched DIR         # DIR/prd, DIR/judgebench, DIR/alpaca_eval, DIR/autoj
    python -m perf.log_findings --only alpaca_eval_2 --work /tmp/lf --reuse
    python -m perf.log_findings --smoke               # tiny picks (no mirror: files built here)

The logs (:mod:`perf.log_sources`): fetched with ``voirdire data fetch`` at the pinned
commits from a loopback server over local git mirrors (every file verified against the
package manifest's git blob id), or read from a folder. Then, per log, the commands as a user
types them, each a fresh process (:mod:`perf.log_commands`: wall time and the peak resident
memory of its process tree, killed past ``--kill-gib``):

- **PRD** (the five reviewers and the people): ``voirdire audit ratings-* --format prd``,
  ``voirdire rank AUDIT --strategies single``, ``voirdire mitigate AUDIT --reference gold``;
- **JudgeBench** (the two ``judge_name=arena_hard`` files): ``voirdire audit`` of both
  together and of each alone, ``voirdire rank`` (refused: anonymous responses) and
  ``voirdire mitigate --reference gold``;
- **AlpacaEval 2** (``weighted_alpaca_eval_gpt4_turbo``) and **AlpacaEval 1**
  (``alpaca_eval_gpt4``): ``voirdire audit results/*/<annotator>/annotations.json --format
  alpacaeval``, ``voirdire rank AUDIT --style --strategies single`` (the length-controlled
  win rate), ``voirdire mitigate AUDIT``;
- **Auto-J** (its pairwise test data and two example prediction files, from the user's
  copy): ``voirdire audit ... --format autoj``, ``voirdire rank`` (refused),
  ``voirdire mitigate --reference gold``.

Every figure printed is read from the files those commands wrote (metrics CSVs, judgments,
ranking and mitigation CSVs: :mod:`perf.log_prd`, :mod:`perf.log_judgebench`,
:mod:`perf.log_alpaca_eval`, :mod:`perf.log_autoj`), no figure set by hand; where a source
publishes a figure (AlpacaEval's leaderboard CSV, PRD's notebook, Auto-J's README) or a rule
(JudgeBench's score), its own file is read and both are printed with their difference.

``--smoke``: one PRD reviewer, two AlpacaEval 2 models, JudgeBench's files audited together
only, Auto-J, 20 replicates, AlpacaEval 1 left out; without the mirrors the logs are built
here in each format (``tests/``'s writers) and fetched from a loopback server all the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import polars as pl

from perf import log_alpaca_eval, log_autoj, log_judgebench, log_prd, log_sources
from perf.log_commands import Ran, run

SOURCES = ("prd", "judgebench", "alpaca_eval_2", "alpaca_eval_1", "autoj")


def _f(x, fmt: str = "{:.3f}") -> str:
    """A figure as the docs write it (− for minus, – for none)."""
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return fmt.format(x).replace("-", "−")


def _show(title: str, df: pl.DataFrame) -> None:
    print(f"\n{title}")
    with pl.Config(tbl_rows=100, tbl_cols=30, float_precision=4, tbl_width_chars=250,
                   fmt_str_lengths=60):  # fmt: skip
        print(df)


class Steps:
    """Runs the commands into ``work`` (``reuse``: a step whose output is there is not run
    again), keeps each one's :class:`Ran` for the closing table."""

    def __init__(self, work: Path, kill_gib: float, reuse: bool) -> None:
        self.work, self.kill_gib, self.reuse = work, kill_gib, reuse
        self.done: list[tuple[str, Ran | None]] = []

        self.failed: list[str] = []

    def __call__(
        self, label: str, args: list, out: str, marker: str
    ) -> tuple[Path | None, Ran | None]:
        """``voirdire ARGS --out WORK/OUT``: ``(the output directory, or None when the
        command did not write ``marker``; its run, or None when reused)``."""
        dest = self.work / out
        if self.reuse and (dest / marker).is_file():
            print(f"{label}: reused {dest}")
            self.done.append((label, None))
            return dest, None
        ran = run([*args, "--out", dest], kill_gib=self.kill_gib)
        print(f"{label}: {ran.line()}")
        self.done.append((label, ran))
        if (dest / marker).is_file() and ran.ok:
            return dest, ran
        self.failed.append(label)
        print(f"{label}: no {marker} written: its figures are left out")
        return None, ran

    def refused(self, label: str, args: list) -> None:
        """A command expected to refuse (exit 2): its exit status and its one line."""
        ran = run([*args, "--out", self.work / "refused"], kill_gib=self.kill_gib)
        self.done.append((label, ran))
        said = " ".join(ran.stderr.split())
        print(f"{label}: exit {ran.rc}: {said[-300:]}")
        if ran.rc != 2:
            self.failed.append(label)


def prd(src: Path, steps: Steps, reps: int) -> None:
    """PRD's reviewers, boards, win rates and strategies (module docstring)."""
    print("\n== PRD")
    ratings = sorted((src / "data" / "vicuna80").glob("ratings-*"))
    audit, _ = steps("audit prd", ["audit", *ratings, "--format", "prd"], "audit-prd", "metrics/judge_metrics.csv")  # fmt: skip
    rank, _ = steps("rank prd", ["rank", audit, "--strategies", "single", "--replicates", reps], "rank-prd", "metrics/rank_flips.csv")  # fmt: skip
    mit, _ = steps("mitigate prd", ["mitigate", audit, "--reference", "gold", "--replicates", reps], "mitigate-prd", "mitigation.csv")  # fmt: skip
    if audit is None:
        return
    t = log_prd.reviewers(audit)
    print(
        "\n| reviewer | PC | flip rate (1 − PC) | PF | first-shown picks | κ between orders | accuracy vs people |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in t.iter_rows(named=True):
        print(f"| {r['judge']} | {_f(r['pc'])} | {_f(r['flip'])} | {_f(r['pf'], '{:+.3f}')} | {_f(r['first_picks'])} "
              f"| {_f(r['pass_kappa'])} | {_f(r['accuracy'])} |")  # fmt: skip
    _show(
        "stored score against the review text's last line (from the judgments)",
        log_prd.stored_scores(audit),
    )
    if rank is not None:
        print("\nboards: each model's place (rating), pooled orders and the gold board; first shown: each pair "
              "with the model whose name sorts first shown first")  # fmt: skip
        print("\n".join(log_prd.boards_markdown(rank)))
    wr = log_prd.winrates_against_notebook(
        audit, src / "peer_rank" / "peer_ranking.ipynb"
    )
    if wr is None:
        print(
            "\nPRD's notebook (peer_rank/peer_ranking.ipynb) is not in the folder: not compared"
        )
    else:
        _show("PRD's notebook's win rates (compute_winrates) against the audit's", wr)
        print(
            f"largest |difference| {wr['diff'].abs().max():.2e} over {wr.height} win rates"
        )
    if mit is not None:
        print("\nvoirdire mitigate --reference gold: accuracy against the people")
        print("\n".join(log_prd.mitigation_markdown(mit)))


def judgebench(src: Path, steps: Steps, reps: int, smoke: bool) -> None:
    """JudgeBench's two arena-hard judges, together and alone (module docstring)."""
    print("\n== JudgeBench")
    files = sorted((src / "outputs").glob("*judge_name=arena_hard*.jsonl"))
    audit, _ = steps("audit judgebench (both files)", ["audit", *files, "--format", "judgebench"], "audit-jb", "metrics/judge_metrics.csv")  # fmt: skip
    alone = [] if smoke else [
        steps(f"audit judgebench (file {i} alone)", ["audit", f, "--format", "judgebench"], f"audit-jb-{i}", "metrics/judge_metrics.csv")[0]
        for i, f in enumerate(files)
    ]  # fmt: skip
    if not smoke:
        steps.refused("rank judgebench", ["rank", audit, "--replicates", reps])
    mit, _ = steps("mitigate judgebench", ["mitigate", audit, "--reference", "gold", "--replicates", reps], "mitigate-jb", "mitigation.csv")  # fmt: skip
    if audit is None:
        return
    t = log_judgebench.judges(audit).join(
        log_judgebench.file_scores(files), on="judge", how="left"
    )
    print("\n| judge | pairs | PC | flip rate | PF | first-shown picks | κ between orders | errors | accuracy vs gold "
          "| shown first | swapped | both orders | JudgeBench score |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in t.iter_rows(named=True):
        print(f"| {r['judge']} | {r['pairs']} | {_f(r['pc'])} | {_f(r['flip'])} | {_f(r['pf'], '{:+.3f}')} "
              f"| {_f(r['first_picks'])} | {_f(r['pass_kappa'])} | {100 * r['error_rate']:.2f} % | {_f(r['accuracy'])} "
              f"| {_f(r['accuracy_shown'])} | {_f(r['accuracy_swapped'])} | {_f(r['both_correct'])} | {r['score']:.2f} |")  # fmt: skip
    _show("per judge: judgments without a verdict (the audit) and null decisions (the file); pairs right in "
          "both orders, in one and a tie, in one and wrong in the other; the score from the judgments and "
          "from the file's own decisions (compute_final_metrics)",
          t.select("judge", "judgments", "no_verdict", "null_decisions", "right_both", "right_tie", "right_wrong",
                   "score", "file_score", d_score=pl.col("score") - pl.col("file_score")))  # fmt: skip
    if alone and None not in alone:
        _show("each judge audited with the other file and alone",
              log_judgebench.alone_vs_together(audit, alone))  # fmt: skip
    _mitigation(mit)


def alpaca_eval(
    src: Path, annotator: str, steps: Steps, reps: int, smoke: bool
) -> None:
    """One AlpacaEval annotator's files: design, one-order effect, win rates and LC against
    the leaderboard CSV, strategies (module docstring)."""
    tag = "2" if annotator == log_sources.AE2 else "1"
    print(f"\n== AlpacaEval {tag} ({annotator})")
    files = sorted((src / "results").glob(f"*/{annotator}/annotations.json"))
    audit, ran = steps(f"audit alpaca_eval {tag} ({len(files)} files)", ["audit", *files, "--format", "alpacaeval"],
                       f"audit-ae{tag}", "metrics/one_order_effect.csv")  # fmt: skip
    if audit is None:
        return
    if ran is not None:
        for ln in ran.stderr.splitlines():
            if "given twice" in ln or "warning" in ln.lower():
                print(f"  the audit said: {ln.strip()}")
    rank, _ = steps(f"rank --style alpaca_eval {tag}", ["rank", audit, "--style", "--strategies", "single",
                    "--replicates", reps], f"rank-ae{tag}", "metrics/lc_win_rate.csv")  # fmt: skip
    steps(f"mitigate alpaca_eval {tag}", ["mitigate", audit, "--replicates", reps], f"mitigate-ae{tag}", "mitigation.md")  # fmt: skip
    for d in pl.read_csv(audit / "metrics" / "order_design.csv").iter_rows(named=True):
        print(f"design {d['judge']}: {d['design']}, {d['pairs']:,} pairs, candidate first {d['candidate_first']:,}, "
              f"reference first {d['reference_first']:,}")  # fmt: skip
    print(f"shown first: {log_alpaca_eval.shown_first(audit)}")
    eff = pl.read_csv(audit / "metrics" / "one_order_effect.csv")
    print(
        "\n| judge | candidate | shown first: win (n) | shown second: win (n) | effect | 95 % interval | p |"
    )
    print("|---|---|---|---|---|---|---|")
    order = [pl.col("judge"), pl.col("candidate").is_not_null(), pl.col("effect")]
    for r in eff.sort(order).iter_rows(named=True):
        print(f"| {r['judge']} | {r['candidate'] or 'pooled'} | {_f(r['win_first'])} ({r['n_first']:,}) "
              f"| {_f(r['win_second'])} ({r['n_second']:,}) | {_f(r['effect'], '{:+.3f}')} "
              f"| [{_f(r['effect_lo'], '{:+.3f}')}, {_f(r['effect_hi'], '{:+.3f}')}] | {_f(r['p_value'], '{:.4f}')} |")  # fmt: skip
    per = eff.filter(pl.col("candidate").is_not_null())
    for judge, g in per.group_by("judge"):
        print(f"{judge[0]}: {g.height} models; wins less shown first: {(g['effect'] < 0).sum()}; interval "
              f"excludes 0: {((g['effect_hi'] < 0) | (g['effect_lo'] > 0)).sum()}; p < 0.05: {(g['p_value'] < 0.05).sum()}"
              f"; not: {', '.join(g.filter(pl.col('p_value') >= 0.05)['candidate'].to_list())}")  # fmt: skip
    if not smoke:
        pu = log_alpaca_eval.pair_unit(audit)
        print(f"for contrast (not a command figure): the same test shuffling pairs apart: pooled p {pu['p_value']:.4f} "
              f"({pu['judge']})")  # fmt: skip
    board = log_alpaca_eval.board_csv(src, annotator)
    if not board.is_file():
        print(f"no leaderboard CSV {board}: not compared")
        return
    t = log_alpaca_eval.against_board(audit, rank, board)
    cols = [c for c in ("model", "formula", "wr", "wr_pub", "wr_diff", "lc", "lc_pub", "lc_diff", "counts_equal") if c in t.columns]  # fmt: skip
    _show(f"against {board.name} (win rate and LC × 100; counts: n_wins, n_wins_base, n_draws, n_total)",
          t.select(cols).sort("lc_diff" if "lc_diff" in t.columns else "model"))  # fmt: skip
    print(f"summary: {log_alpaca_eval.summary(t)}")
    for r in t.filter(pl.col("lc_diff").abs() > 0.5).sort("lc_diff").iter_rows(named=True) if "lc_diff" in t.columns else []:  # fmt: skip
        print(
            f"  beyond 0.5: {r['model']} ({r['formula']}): LC {r['lc']:.2f} vs {r['lc_pub']:.2f} ({r['lc_diff']:+.2f})"
        )
    if "lc" in t.columns:
        gamed = t.filter(pl.col("model") == "gpt4_gamed")
        if gamed.height:
            print(
                f"gpt4_gamed: LC {gamed['lc'][0]:.2f}, published {gamed['lc_pub'][0]:.2f}"
            )


def autoj(src: Path, steps: Steps, reps: int, smoke: bool) -> None:
    """Auto-J's example predictions against its README (module docstring)."""
    print("\n== Auto-J")
    files = [src / p for p in log_sources.AUTOJ_FILES[:3]]
    audit, _ = steps("audit autoj", ["audit", *files, "--format", "autoj"], "audit-autoj", "metrics/cell_metrics.csv")  # fmt: skip
    if not smoke:
        steps.refused("rank autoj", ["rank", audit, "--replicates", reps])
    mit, _ = steps("mitigate autoj", ["mitigate", audit, "--reference", "gold", "--replicates", reps], "mitigate-autoj", "mitigation.csv")  # fmt: skip
    if audit is None:
        return
    if (src / "codes" / "leaderboard" / "README.md").is_file():
        t = log_autoj.against_readme(audit, src)
        print("\n| | " + " | ".join(t["group"]) + " |")
        print("|---" * (t.height + 1) + "|")
        print("| pairs | " + " | ".join(f"{n:,}" for n in t["pairs"]) + " |")
        for col, name in (("agreement", "Agreement = 100 × both_correct"), ("consistency", "Consistency = 100 × PC"),
                          ("single", "single Agreement = 100 × accuracy_shown")):  # fmt: skip
            print(f"| {name} | " + " | ".join(f"{x:g}" for x in t[col]) + " |")
        d = t.select(
            pl.max_horizontal(
                pl.col("d_agreement", "d_consistency", "d_single").abs()
            ).max()
        ).item()
        print(
            f"against the README's tables ({t.height} rows, both types): largest |difference| {d}"
        )
    else:
        print("no codes/leaderboard/README.md: not compared")
    b = log_autoj.beyond(audit)
    print(f"beyond the README: {b['pairs']:,} pairs; the verdict changes with the order in {b['changed']} "
          f"({b['lean_first']} lean to the response shown first, {b['lean_second']} to the second); "
          f"PF {_f(b['pf'], '{:+.3f}')}; first-shown picks {_f(b['first_picks'])} of the decided verdicts; "
          f"κ between the orders {_f(b['kappa'])} [{_f(b['kappa_lo'])}, {_f(b['kappa_hi'])}]; accuracy "
          f"{_f(b['accuracy'])} (as stored {_f(b['accuracy_shown'])}, swapped {_f(b['accuracy_swapped'])})")  # fmt: skip
    _mitigation(mit)


def _mitigation(mit: Path | None) -> None:
    if mit is not None:
        _show("voirdire mitigate --reference gold", pl.read_csv(mit / "mitigation.csv").select(
            "strategy", "judge", "undecided", "accuracy", "accuracy_lo", "accuracy_hi", "kappa", "cost"))  # fmt: skip


def _closing(steps: Steps) -> None:
    print("\n== commands (wall seconds, peak RSS of the process tree)")
    for label, ran in steps.done:
        print(f"  {label}: " + ("reused" if ran is None else
              f"{ran.seconds:.1f} s, {ran.peak_gib:.2f} GiB, exit {ran.rc}{' (killed)' if ran.killed else ''}"))  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny picks, 20 replicates")
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument(
        "--fetched",
        type=Path,
        help="a folder already holding the logs (module docstring)",
    )
    ap.add_argument(
        "--only", choices=SOURCES, action="append", help="these sources alone (repeat)"
    )
    ap.add_argument(
        "--replicates", type=int, help="rank's and mitigate's (default 1000; smoke 20)"
    )
    ap.add_argument(
        "--work", type=Path, help="where to fetch and run (default: a temporary folder)"
    )
    ap.add_argument(
        "--reuse", action="store_true", help="keep a step's output found in --work"
    )
    ap.add_argument(
        "--kill-gib", type=float, default=6.0, help="kill a command past this RSS"
    )
    a = ap.parse_args(argv)
    want = set(a.only or SOURCES) - (
        {"alpaca_eval_1"} if a.smoke and not a.only else set()
    )
    reps = a.replicates or (20 if a.smoke else 1000)
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        work = (a.work or Path(tmp)).absolute()
        if a.fetched:
            src = log_sources.folder(a.fetched, want)
        elif all(
            (a.mirror / log_sources.MIRRORS[m] / "repo").is_dir()
            for m in log_sources.MIRRORS
        ):
            src = log_sources.fetched(a.mirror, work / "src", want, a.smoke)
        elif a.smoke:
            print(
                f"no mirrors under {a.mirror}: the logs are built here in each format"
            )
            src = log_sources.built(work / "src", want)
        else:
            sys.exit(f"no mirrors under {a.mirror} and no --fetched folder")
        steps = Steps(work, a.kill_gib, a.reuse)
        if src.prd:
            prd(src.prd, steps, reps)
        if src.judgebench:
            judgebench(src.judgebench, steps, reps, a.smoke)
        if src.alpaca_eval_2:
            alpaca_eval(src.alpaca_eval_2, log_sources.AE2, steps, reps, a.smoke)
        if src.alpaca_eval_1:
            alpaca_eval(src.alpaca_eval_1, log_sources.AE1, steps, reps, a.smoke)
        if src.autoj:
            autoj(src.autoj, steps, reps, a.smoke)
        _closing(steps)
        if steps.failed:
            sys.exit(f"failed: {', '.join(steps.failed)}")


if __name__ == "__main__":
    main()
