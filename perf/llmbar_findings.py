"""The README's LLMBar findings: PC, PF and accuracy against gold, with intervals, from the replay.

    python -m perf.llmbar_findings [--data DIR] [--run DIR] [--replicates 1000]
    python -m perf.llmbar_findings --smoke     # GPT-4 Vanilla and Rating (both readings) on
                                               # LLMBar Natural, 200 replicates (CI)

Replays (or reads ``--run``, a finished directory of a replay of every subset) the six
evaluators of LLMBar (Zeng et al., ICLR 2024) and prints two markdown tables:

1. per evaluator and dataset (LLMBar Natural; Adversarial, its four sets pooled; FairEval;
   MT-Bench human labels), with the strategy the release ran there for every evaluator
   (Vanilla on LLMBar, Vanilla_NoRules on the Processed sets): PC, PF and accuracy (both
   orders pooled, a failed verdict counted as wrong);
2. per prompting strategy (Vanilla, CoT, Swap, Metrics, Reference, Rating and their
   combinations), over the five LLMBar sets and every evaluator that ran it: PC, PF and
   accuracy. A rating strategy (``Rating*``) has two rows, one per reading of equal ratings
   (``docs/llmbar.md``): ``Rating`` the release's (recorded name ``"GPT-4/Rating"``, what
   ``"*"`` replays: equal ratings go to the output shown second, so PC < 1) and
   ``Rating@tie`` voirdire's (``"GPT-4/Rating@tie"``: equal ratings a tie, PC 1 by
   construction); below the table, the number of pairs with equal ratings in each.

Definitions: ``docs/metrics.md`` (PC = consistent / valid pairs; PF per cell
(rcn - pcn) / n, averaged over the cells (subsets) of a row); accuracy as
:func:`voirdire.analysis.position.release_stats.gold_accuracy`. Intervals: 95 % cluster-bootstrap
percentile intervals, items resampled (:func:`voirdire.analysis.position.uncertainty.cluster_bootstrap`, with
:func:`~voirdire.analysis.position.formulas.pc_statistic` and ``pf_statistic``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import polars as pl

LLMBAR_SETS = [
    "LLMBar/Natural",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
    "LLMBar/Adversarial/Neighbor",
]
GROUPS = {
    "LLMBar/Natural": "Natural",
    "Processed/FairEval": "FairEval",
    "Processed/MT-Bench": "MT-Bench",
    **{s: "Adversarial" for s in LLMBAR_SETS[1:]},
}
EVALUATORS = ["GPT-4", "ChatGPT", "ChatGPT-0301", "PaLM2", "LLaMA2", "Falcon"]
_VALUES = ["ccn", "v", "d", "n", "correct"]


def _stat_acc(m):
    return m["correct"].sum(axis=1) / (2 * m["n"].sum(axis=1))


def per_item(judgments: pl.DataFrame) -> pl.DataFrame:
    """One row per (judge, task, question) with the summed counts the statistics need."""
    from voirdire.analysis.position.release_stats import pair_outcomes

    # pairs the release has no output for (an evaluator/strategy not run on a subset) are left out
    recorded = pl.col("failure_message").fill_null("") != "no recorded output"
    p = pair_outcomes(judgments.filter(pl.col("gold").is_not_null() & recorded))
    k, g = pl.col("klass"), pl.col("gold")
    return p.select(
        "judge",
        "task",
        "question_id",
        ccn=(k == "consistent").cast(pl.Float64),
        v=k.is_in(["consistent", "primacy", "recency"]).cast(pl.Float64),
        d=(k == "recency").cast(pl.Float64) - (k == "primacy").cast(pl.Float64),
        n=pl.lit(1.0),
        correct=(pl.col("w1") == g).fill_null(False).cast(pl.Float64)
        + (pl.col("w2") == g).fill_null(False).cast(pl.Float64),
        tie=((pl.col("w1") == "tie") | (pl.col("w2") == "tie")).fill_null(False),
    )


def judge_specs(data: Path, subsets: list[str], smoke: bool) -> list[dict]:
    """Replay judges: every recorded ``evaluator/strategy`` on ``subsets`` (smoke: GPT-4's
    Vanilla and Rating), and each rating strategy once more read ``@tie``."""
    from voirdire.benchmarks.llmbar import TIE_SUFFIX, LLMBar

    judges = (
        ["GPT-4/Vanilla", "GPT-4/Rating"]
        if smoke
        else LLMBar.recorded_judges(data, "position_bias", subsets)
    )
    ties = [j + TIE_SUFFIX for j in judges if j.split("/", 1)[1].startswith("Rating")]
    return [{"name": j, "backend": "replay", "recorded": j} for j in judges + ties]


def reading(strategy: str) -> str:
    """The strategy as printed: a rating strategy names its reading of equal ratings."""
    if not strategy.startswith("Rating"):
        return strategy
    if strategy.endswith("@tie"):
        return f"{strategy} (tie reading)"
    return f"{strategy} (release reading)"


def figures(items: pl.DataFrame, by: list[str], replicates: int) -> pl.DataFrame:
    """PC, PF and accuracy with intervals per ``by`` (cells: tasks; clusters: items)."""
    from voirdire.analysis.position.formulas import pc_statistic, pf_statistic
    from voirdire.analysis.stats.bootstrap import cluster_bootstrap

    stats = {"pc": pc_statistic, "pf": pf_statistic, "accuracy": _stat_acc}
    ci = cluster_bootstrap(
        items, _VALUES, stats, groups=by, cells=["task"], replicates=replicates, seed=0
    )
    return ci.pivot(
        on="metric", index=["benchmark", *by], values=["estimate", "lo", "hi"]
    )


def _fmt(r: dict, m: str, sign: bool = False) -> str:
    f = "{:+.2f}" if sign else "{:.2f}"
    return f"{f.format(r[f'estimate_{m}'])} [{f.format(r[f'lo_{m}'])}, {f.format(r[f'hi_{m}'])}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument(
        "--run",
        type=Path,
        default=None,
        help="a finished replay directory (else one is run); its rating judges read @tie, if any, give the tie-reading rows",
    )
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    import voirdire
    from voirdire.benchmarks.releases.catalogue import locate
    from voirdire.benchmarks.releases.llmbar import LLMBAR

    if args.run:
        judgments = voirdire.load(args.run).judgments
    else:
        data = locate(LLMBAR, args.data)
        subsets = (
            LLMBAR_SETS[:1]
            if args.smoke
            else [*LLMBAR_SETS, "Processed/FairEval", "Processed/MT-Bench"]
        )
        judges = judge_specs(data, subsets, args.smoke)
        with tempfile.TemporaryDirectory() as tmp:
            job = {
                "name": "llmbar-findings",
                "output_dir": f"{tmp}/run",
                "run": {"batch_size": 2048},
                "benchmark": {
                    "name": "llmbar",
                    "data_dir": str(data),
                    "subsets": subsets,
                },
                "judges": judges,
            }
            judgments = voirdire.run(job, show_progress=False).judgments
    items = (
        per_item(judgments)
        .with_columns(benchmark=pl.col("task").replace_strict(GROUPS, default=None))
        .drop_nulls("benchmark")
    )
    items = items.with_columns(
        evaluator=pl.col("judge").str.split("/").list.first(),
        strategy=pl.col("judge").str.split("/").list.last(),
    )
    reps = 200 if args.smoke else args.replicates
    base = items.filter(
        pl.when(pl.col("task").str.starts_with("LLMBar/"))
        .then(pl.col("strategy") == "Vanilla")
        .otherwise(pl.col("strategy") == "Vanilla_NoRules")
    )
    t1 = figures(base, ["evaluator", "strategy"], reps)
    print(
        "| evaluator | dataset (strategy) | PC | PF | accuracy |\n|---|---|---|---|---|"
    )
    order = {e: i for i, e in enumerate(EVALUATORS)}
    for r in t1.sort(
        pl.col("evaluator").replace_strict(order, default=99), "benchmark"
    ).iter_rows(named=True):
        print(
            f"| {r['evaluator']} | {r['benchmark']} ({r['strategy']}) | {_fmt(r, 'pc')} | {_fmt(r, 'pf', True)} | {_fmt(r, 'accuracy')} |"
        )
    strat = items.filter(pl.col("task").is_in(LLMBAR_SETS)).with_columns(
        benchmark=pl.lit("LLMBar")
    )
    t2 = figures(strat, ["evaluator", "strategy"], reps)
    print("\n| evaluator | strategy | PC | PF | accuracy |\n|---|---|---|---|---|")
    for r in t2.sort(
        pl.col("evaluator").replace_strict(order, default=99), "strategy"
    ).iter_rows(named=True):
        print(
            f"| {r['evaluator']} | {reading(r['strategy'])} | {_fmt(r, 'pc')} | {_fmt(r, 'pf', True)} | {_fmt(r, 'accuracy')} |"
        )
    ties = (
        strat.filter(pl.col("strategy").str.ends_with("@tie"))
        .group_by("judge")
        .agg(pairs=pl.len(), equal=pl.col("tie").sum())
        .sort("judge")
    )
    if ties.height:
        print(
            "\nRating rows: release reading = equal ratings go to the output shown second (the"
            " release's evaluate.py); tie reading (@tie) = equal ratings a tie. Pairs with equal"
            " ratings (a tie in the @tie reading, in either order):"
        )
        for r in ties.iter_rows(named=True):
            print(
                f"- {r['judge'].removesuffix('@tie')}: {r['equal']} of {r['pairs']} pairs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
