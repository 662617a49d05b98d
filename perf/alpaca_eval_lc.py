"""AlpacaEval through the command: the one-order effect at the instruction level and the
length-controlled win rate against AlpacaEval's own leaderboard CSV.

    python -m perf.alpaca_eval_lc FETCHED [--annotator weighted_alpaca_eval_gpt4_turbo]
        [--board data_AlpacaEval_2] [--work DIR] [--replicates 200] [--no-rank] [--lc-only]
        [--subsets K [--subset-size 8] [--seed 0]]

``FETCHED``: a folder holding AlpacaEval's files at their repository paths (what
``voirdire data fetch alpaca_eval`` writes, or a checkout): ``results/<model>/<annotator>/
annotations.json``, ``src/alpaca_eval/leaderboards/<board>/<annotator>_leaderboard.csv`` and,
for the v1 formula, ``src/alpaca_eval/metrics/weights/<annotator>/length_controlled_v1/``.
It runs, as a user would, ``voirdire audit <the annotator's files> --format alpacaeval`` and
``voirdire rank <audit> --style --strategies single``, then prints

- the audit's ``order_design.csv`` (designs per judge) and the pooled row of
  ``one_order_effect.csv`` (win rate shown first − shown second, its bootstrap interval over
  instructions, the randomisation p at the unit the format declares: instructions);
- per model on the leaderboard: the win rate and the LC win rate of ``lc_win_rate.csv``
  (the raw pooled board) against the CSV's ``win_rate`` and ``length_controlled_winrate``,
  their differences, the LC formula used, and the summary (mean and largest |difference|,
  models within 0.5 points, Kendall τ-b of the LC ranking against the published one).

``--lc-only``: the LC table computed by the functions ``rank --style`` calls for it
(:func:`~voirdire.analysis.ranking.length_control_v1.lc_board` on the raw verdicts' pooled
board, the benchmark's weights and answer lengths), without the leaderboards' boards, whose
bootstrap on the full audit exceeds this machine's memory budget until the bounded
bootstrap lands (issue 34, item 5).

``--subsets K``: K random subsets of ``--subset-size`` models of the leaderboard (seeded by
``--seed``), each audited alone (``voirdire audit`` of its models' files), its LC table
computed with the difficulty of the whole release (``--lc-difficulty release``, the
default where the logs sit in a release) and refitted on its models (``audited``); per
subset the models' LC against the full audit's and the published column, and the summary
(largest |difference| from the full audit; models within 0.5 points of the published
figure, by both sources; ``docs/ranking.md``, *Where the difficulty comes from*).

The LC difference of a v1 model comes from one term only: the weights are AlpacaEval's
shipped ones, so it is the instruction difficulty (AlpacaEval's precomputed file, not in its
repository, against voirdire's fit across the audited models: ``docs/ranking.md``).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
from scipy.stats import kendalltau


def _run(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(
            f"{' '.join(cmd[:3])} ... failed ({r.returncode}):\n{r.stderr[-3000:]}"
        )
    return time.perf_counter() - t


def _lc_only(audit: Path, replicates: int, difficulty: str = "auto") -> pl.DataFrame:
    """``lc_win_rate.csv`` as ``rank --style --strategies single --lc-difficulty DIFFICULTY``
    computes it, boards left out."""
    from voirdire.analysis.ranking.length_control_v1 import lc_board
    from voirdire.analysis.ranking.order_views import order_views
    from voirdire.analysis.ranking.rank import _pairwise_rows, _with_probabilities
    from voirdire.analysis.together import read_together

    found = read_together([audit], ["job", "judgments", "clusters"], own_names=False)
    rows = _pairwise_rows(found.judgments)
    comps = _with_probabilities(order_views(rows, ["single"]), rows).filter(
        (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    )
    name = comps.get_column("benchmark")[0]
    base = comps.group_by("b").len().sort("len").get_column("b")[-1]  # the reference
    weights = found.length_control_weights().get(name)
    release = found.length_control_release().get(name)
    return lc_board(comps, found.features(), base, weights, "auto", release, difficulty,
                    replicates=replicates, level=0.95, seed=0, clusters=found.clusters)  # fmt: skip


def _subsets(a, files: list[str], exe: str, full: pl.DataFrame) -> None:
    """``--subsets``: per random subset its models' LC by the release's and the audited
    models' difficulty against ``full`` (the full audit's rows joined with the published
    column: ``model``, ``lc``, ``lc_pub``, ``formula``), then the totals."""
    by_model = {Path(f).parents[1].name: f for f in files}
    v1 = full.filter(pl.col("formula") == "v1").get_column("model").to_list()
    models = sorted(m for m in v1 if m in by_model)
    rng = random.Random(a.seed)
    parts = []
    for k in range(a.subsets):
        pick = sorted(rng.sample(models, a.subset_size))
        audit = a.work / f"subset-{k}" / "audit"
        if not (audit / "metrics" / "order_design.csv").is_file():
            _run([exe, "audit", *(by_model[m] for m in pick), "--format", "alpacaeval", "--out", str(audit)])  # fmt: skip
        t = time.perf_counter()
        got = [
            _lc_only(audit, a.replicates, src)
            .filter(pl.col("model").is_in(pick))
            .select("model", pl.col("difficulty").alias(f"source_{src}"), (100 * pl.col("lc_win_rate")).alias(f"lc_{src}"))
            for src in ("release", "audited")
        ]  # fmt: skip
        s = time.perf_counter() - t
        tab = full.select("model", lc_full="lc", lc_pub="lc_pub").join(got[0], on="model").join(got[1], on="model")  # fmt: skip
        tab = tab.with_columns(
            subset=pl.lit(k),
            d_full=pl.col("lc_release") - pl.col("lc_full"),
            d_pub=pl.col("lc_release") - pl.col("lc_pub"),
            d_pub_audited=pl.col("lc_audited") - pl.col("lc_pub"),
            d_full_audited=pl.col("lc_audited") - pl.col("lc_full"),
        )
        parts.append(tab)
        with pl.Config(tbl_rows=50, tbl_width_chars=200, float_precision=2):
            print(f"subset {k} ({s:.1f} s for both LC tables):")
            print(tab.select("model", "lc_release", "lc_full", "d_full", "lc_pub", "d_pub", "lc_audited", "d_full_audited", "d_pub_audited"))  # fmt: skip
        print(_summary(tab, f"subset {k}"))
    if parts:
        print(_summary(pl.concat(parts), f"{len(parts)} subsets of {a.subset_size}"))


def _summary(tab: pl.DataFrame, name: str) -> str:
    """One line: release vs the full audit (largest |Δ|), and both sources vs published."""
    n = tab.height
    rel, aud = tab["d_pub"].abs(), tab["d_pub_audited"].abs()
    return (f"{name}: release difficulty vs the full audit: largest |diff| {tab['d_full'].abs().max():.2e}; "
            f"vs the published LC: release largest |diff| {rel.max():.2f}, within 0.5: {(rel <= 0.5).sum()} of {n}; "
            f"audited (refitted on the subset) largest |diff| {aud.max():.2f}, within 0.5: {(aud <= 0.5).sum()} of {n}, "
            f"mean diff {tab['d_pub_audited'].mean():+.2f}; audited vs the full audit "
            f"{tab['d_full_audited'].min():+.2f} to {tab['d_full_audited'].max():+.2f}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fetched", type=Path)
    ap.add_argument("--annotator", default="weighted_alpaca_eval_gpt4_turbo")
    ap.add_argument("--board", default="data_AlpacaEval_2")
    ap.add_argument("--work", type=Path, default=Path("runs/alpaca-eval-lc"))
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--no-rank", action="store_true", help="the audit's effect only")
    ap.add_argument(
        "--lc-only", action="store_true", help="the LC table without the boards"
    )
    ap.add_argument(
        "--subsets", type=int, default=0, help="random subsets of models audited alone"
    )
    ap.add_argument("--subset-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="the subsets' draw")
    a = ap.parse_args(argv)
    exe = str(Path(sys.executable).with_name("voirdire"))
    files = sorted(
        str(p) for p in a.fetched.glob(f"results/*/{a.annotator}/annotations.json")
    )
    audit, rank = a.work / "audit", a.work / "rank"
    if not (audit / "metrics" / "order_design.csv").is_file():
        s = _run([exe, "audit", *files, "--format", "alpacaeval", "--out", str(audit)])
        print(f"audit of {len(files)} files: {s:.1f} s")
    design = pl.read_csv(audit / "metrics" / "order_design.csv")
    print(
        design.select("judge", "pairs", "candidate_first", "reference_first", "design")
    )
    eff = audit / "metrics" / "one_order_effect.csv"
    if eff.is_file():
        e = pl.read_csv(eff).filter(pl.col("candidate").is_null())
        with pl.Config(fmt_str_lengths=200, tbl_width_chars=200):
            print(e.select("judge", "n_first", "n_second", "win_first", "win_second", "effect",
                           "effect_lo", "effect_hi", "p_value", "message"))  # fmt: skip
    if a.no_rank:
        return
    if a.lc_only:
        (rank / "metrics").mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        _lc_only(audit, a.replicates).write_csv(rank / "metrics" / "lc_win_rate.csv")
        print(f"LC table (--lc-only): {time.perf_counter() - t:.1f} s")
    if not (rank / "metrics" / "lc_win_rate.csv").is_file():
        s = _run([exe, "rank", str(audit), "--style", "--strategies", "single",
                  "--replicates", str(a.replicates), "--out", str(rank)])  # fmt: skip
        print(f"rank --style: {s:.1f} s")
    lc = pl.read_csv(rank / "metrics" / "lc_win_rate.csv").filter(
        (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    )
    board = next(
        a.fetched.glob(
            f"src/alpaca_eval/leaderboards/{a.board}/{a.annotator}_leaderboard.csv"
        )
    )
    pub = pl.read_csv(board).rename({"": "model"})
    both = lc.join(
        pub.select("model", wr_pub="win_rate", lc_pub="length_controlled_winrate"),
        on="model",
    )
    both = both.with_columns(
        wr=100 * pl.col("win_rate"), lc=100 * pl.col("lc_win_rate"),
    ).with_columns(wr_diff=pl.col("wr") - pl.col("wr_pub"), lc_diff=pl.col("lc") - pl.col("lc_pub"))  # fmt: skip
    with pl.Config(tbl_rows=300, tbl_width_chars=200):
        print(both.sort("lc_diff").select("model", "n", "formula", "wr", "wr_pub", "wr_diff", "lc", "lc_pub", "lc_diff"))  # fmt: skip
    d = both["lc_diff"].abs()
    tau = kendalltau(both["lc"].to_numpy(), both["lc_pub"].to_numpy()).statistic
    tau_raw = kendalltau(both["wr"].to_numpy(), both["lc_pub"].to_numpy()).statistic
    print(f"{both.height} models on the leaderboard: win rate largest |diff| {both['wr_diff'].abs().max():.2e}; "
          f"LC mean diff {both['lc_diff'].mean():+.2f}, mean |diff| {d.mean():.2f}, largest {d.max():.2f}, "
          f"within 0.5: {(d <= 0.5).sum()}; Kendall τ vs the published LC {tau:.3f} (raw win rate's: {tau_raw:.3f})")  # fmt: skip
    for r in (
        both.filter(pl.col("lc_diff").abs() > 0.5).sort("lc_diff").iter_rows(named=True)
    ):
        term = ("the instruction difficulty term (the weights are AlpacaEval's own)" if r["formula"] == "v1"
                else "every term: no published weights, the minimal formula fitted")  # fmt: skip
        print(
            f"  exception {r['model']}: LC {r['lc']:.2f} vs {r['lc_pub']:.2f} ({r['lc_diff']:+.2f}): {term}"
        )
    if a.subsets:
        _subsets(a, files, exe, both)


if __name__ == "__main__":
    main()
