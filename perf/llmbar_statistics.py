"""Reproduce LLMBar's published statistics (all 499 ``statistics.json``) through voirdire.

    python -m perf.llmbar_statistics [--data DIR] [--out DIR]
    python -m perf.llmbar_statistics --smoke     # 2 subsets, 5 recorded judges (CI)

Replays every evaluator × strategy of every subset of the release (``recorded = "*"``)
through the whole pipeline (replay judges on local Ray, verdict extraction, judgments),
then, per (evaluator/strategy, subset) with a ``statistics.json``:

1. the release's view of voirdire's judgments
   (:func:`voirdire.analysis.position.release_stats.release_view`) equals the published
   ``equal``, ``correct_False``, ``correct_True`` and ``correct_both`` (and ``n``);
2. on the pairs without a failed or tie verdict, voirdire's own counts (PC's consistent
   pairs, per-order and both-orders correctness) equal the release's: those pairs are the
   only difference between the two conventions.

Rating strategies are replayed as the release read them (the default: equal ratings go to
the output shown second), so voirdire's own correct counts (per order, both orders) equal the
published ones too; their tie reading (``"<evaluator>/<Rating*>@tie"``, equal ratings a
tie) is replayed beside them and its counts printed apart.

Prints the number of cells reproduced by the release's view and by voirdire's own counts
(exit code 1 unless all 499 are), and the pairs where the conventions differ (null winners
of comparison strategies; ties and unreadable ratings of the ``@tie`` reading). Data: ``--data`` or the usual LLMBar lookup
(:func:`voirdire.benchmarks.releases.catalogue.locate`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

SMOKE_SUBSETS = ["LLMBar/Adversarial/Neighbor", "Processed/FairEval"]
SMOKE_JUDGES = [
    "GPT-4/Vanilla_NoRules",
    "PaLM2/Vanilla_NoRules",
    "LLaMA2/Metrics_Reference",
    "ChatGPT/Metrics_Reference",
    "ChatGPT/Rating",
]


def replay(
    data: Path, out: Path, subsets: list[str], judges: list[str] | None
) -> pl.DataFrame:
    """The judgments of a replay job over ``subsets`` (every recorded judge, or ``judges``)."""
    import voirdire

    if judges is None:
        from voirdire.benchmarks.llmbar import LLMBar

        judges = LLMBar.recorded_judges(data, "position_bias", subsets)
    ties = [f"{j}@tie" for j in judges if j.split("/", 1)[1].startswith("Rating")]
    specs = [{"name": j, "backend": "replay", "recorded": j} for j in judges + ties]
    job = {
        "name": "llmbar-statistics",
        "output_dir": str(out),
        "benchmark": {"name": "llmbar", "data_dir": str(data), "subsets": subsets},
        "run": {"flush_seconds": 0.5, "batch_size": 2048},
        "judges": specs,
    }
    return voirdire.run(job, show_progress=False).judgments


def check(
    judgments: pl.DataFrame, published: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(cells, differing)``: per published cell the release view beside the published counts
    (``ok``: all equal) and voirdire's PC; the pairs where the conventions differ, counted
    per cell, with ``same_elsewhere`` (voirdire's and the release's counts agree on the
    other pairs)."""
    from voirdire.analysis.position.release_stats import (
        RELEASE_COLUMNS,
        as_release,
        pair_outcomes,
        release_view,
        voirdire_view,
    )

    keys = ["judge", "task"]
    judgments = judgments.filter(~pl.col("judge").str.ends_with("@tie"))
    published_keys = published.select(
        judge=pl.col("evaluator") + "/" + pl.col("strategy"), task=pl.col("subset")
    )
    pairs = pair_outcomes(judgments).join(
        published_keys, on=keys, how="semi"
    )  # cells the release has
    mine = release_view(pairs, keys)
    pub = published.select(
        judge=pl.col("evaluator") + "/" + pl.col("strategy"),
        task=pl.col("subset"),
        **{f"pub_{c}": pl.col(c).cast(pl.Int64) for c in RELEASE_COLUMNS},
    )
    cells = pub.join(mine, on=keys, how="left").join(
        voirdire_view(pairs, keys).select(*keys, "pc", "v"), on=keys, how="left"
    )
    ok = pl.all_horizontal(
        [pl.col(c).eq_missing(pl.col(f"pub_{c}")) for c in RELEASE_COLUMNS]
    )
    own = as_release(voirdire_view(pairs, keys)).select(
        *keys, **{f"own_{c}": c for c in RELEASE_COLUMNS}
    )
    cells = cells.join(own, on=keys, how="left")
    own_ok = pl.all_horizontal(
        [
            pl.col(f"own_{c}").eq_missing(pl.col(f"pub_{c}"))
            for c in ("n", "correct_False", "correct_True", "correct_both")
        ]
    )
    cells = cells.with_columns(
        ok=ok, own_ok=own_ok, pub_pc=pl.col("pub_equal") / pl.col("pub_n")
    )
    rest = pairs.filter(~pl.col("differs"))
    same = release_view(rest, keys).join(
        as_release(voirdire_view(rest, keys)),
        on=keys,
        how="full",
        coalesce=True,
        suffix="_v",
    )
    same = same.select(
        *keys,
        same_elsewhere=pl.all_horizontal(
            [pl.col(c).eq_missing(pl.col(f"{c}_v")) for c in RELEASE_COLUMNS]
        ),
    )
    differing = (
        pairs.group_by(keys)
        .agg(
            differing=pl.col("differs").sum(),
            null_winners=(
                pl.col("r1").is_null().cast(pl.Int64) + pl.col("r2").is_null()
            ).sum(),
        )
        .join(same, on=keys, how="full", coalesce=True)
    )
    return cells, differing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    from voirdire.benchmarks.releases.catalogue import locate
    from voirdire.benchmarks.releases.llmbar import LLMBAR

    data = locate(LLMBAR, args.data)
    published = pl.read_parquet(data / "statistics.parquet")
    subsets = (
        SMOKE_SUBSETS
        if args.smoke
        else sorted(
            pl.read_parquet(data / "pairs.parquet")["subset"].unique().to_list()
        )
    )
    if args.smoke:
        published = published.filter(
            pl.col("subset").is_in(subsets)
            & (pl.col("evaluator") + "/" + pl.col("strategy")).is_in(SMOKE_JUDGES)
        )
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        judgments = replay(
            data,
            args.out or Path(tmp) / "run",
            subsets,
            SMOKE_JUDGES if args.smoke else None,
        )
        seconds = time.perf_counter() - t
    from voirdire.analysis.position.release_stats import pair_outcomes, voirdire_view

    cells, differing = check(judgments, published)
    bad = cells.filter(~pl.col("ok").fill_null(False))
    print(
        f"replayed {judgments.height:,} judgments of {judgments['judge'].n_unique()} judges in {seconds:.1f} s"
    )
    print(
        f"published statistics reproduced: {cells.height - bad.height} of {cells.height} cells "
        f"(equal, correct_False, correct_True, correct_both and n)"
    )
    own = cells.filter(pl.col("own_ok").fill_null(False)).height
    print(
        f"voirdire's own counts (correct per order and in both, n) reproduce: {own} of {cells.height} cells"
    )
    tie = pair_outcomes(judgments.filter(pl.col("judge").str.ends_with("@tie")))
    if tie.height:
        tv = voirdire_view(tie, ["judge", "task"])
        print(
            f"beside them, voirdire's tie reading (@tie) of {tv.height} rating cells: "
            f"{int(tie.filter(pl.col('w1') == 'tie').height):,} tied pairs, "
            f"PC {tv['pc'].min():.3f}-{tv['pc'].max():.3f} (1 by construction)"
        )
    print(
        f"pairs where the conventions differ: {int(differing['differing'].sum()):,} "
        f"({int(differing['null_winners'].sum()):,} null winners in "
        f"{differing.filter(pl.col('null_winners') > 0).height} cells; the rest ties or unreadable ratings); "
        f"on every other pair voirdire's counts equal the release's: {bool(differing['same_elsewhere'].all())}"
    )
    if bad.height:
        with pl.Config(tbl_rows=20, tbl_cols=20):
            print(bad)
    ok = bad.height == 0 and own == cells.height and differing["same_elsewhere"].all()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
