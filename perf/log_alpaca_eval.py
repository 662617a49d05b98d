"""AlpacaEval's figures for :mod:`perf.log_findings`, read from what the commands wrote:
``voirdire audit`` (``metrics/order_design.csv``, ``metrics/one_order_effect.csv``,
``judgments.parquet``) and ``voirdire rank --style`` (``metrics/lc_win_rate.csv``: the win
rate and the length-controlled win rate of each model's pooled board), beside what AlpacaEval
publishes: its leaderboard CSV (``src/alpaca_eval/leaderboards/<data_AlpacaEval[_2]>/
<annotator>_leaderboard.csv``: ``win_rate``, ``n_wins``, ``n_wins_base``, ``n_draws``,
``n_total``, ``length_controlled_winrate``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from scipy.stats import kendalltau

__all__ = ["against_board", "design", "effects", "pair_unit", "shown_first", "summary"]

BOARDS = {"weighted_alpaca_eval_gpt4_turbo": "data_AlpacaEval_2", "alpaca_eval_gpt4": "data_AlpacaEval"}  # fmt: skip


def board_csv(root: Path, annotator: str) -> Path:
    """The annotator's leaderboard CSV under a fetched folder."""
    return root / "src" / "alpaca_eval" / "leaderboards" / BOARDS[annotator] / f"{annotator}_leaderboard.csv"  # fmt: skip


def design(audit: Path) -> dict:
    """The judge's row of ``order_design.csv`` (pairs, shown first/second, design)."""
    return pl.read_csv(audit / "metrics" / "order_design.csv").row(0, named=True)


def effects(audit: Path) -> tuple[dict, pl.DataFrame]:
    """``one_order_effect.csv``: the pooled row and the per-model rows (sorted by effect)."""
    e = pl.read_csv(audit / "metrics" / "one_order_effect.csv")
    pooled = e.filter(pl.col("candidate").is_null()).row(0, named=True)
    return pooled, e.filter(pl.col("candidate").is_not_null()).sort("effect")


def _model_p() -> pl.Expr:
    """The probability that the model (the candidate) wins, from the verdict's
    probabilities as shown (AlpacaEval's preference − 1; a draw 0.5), or from its letter
    where the annotator gave none (1 the model, 0.5 a tie, 0 the baseline)."""
    first = pl.col("shown").list.first() == pl.col("candidate")
    a = pl.col("option_probs").map_elements(
        lambda m: dict(m).get("A"), return_dtype=pl.Float64
    )  # noqa: E501
    letter = pl.col("choice").replace_strict(
        {"A": 1.0, "B": 0.0, "C": 0.5}, default=None
    )
    shown_a = pl.coalesce(a, letter)
    return pl.when(first).then(shown_a).otherwise(1 - shown_a)


def shown_first(audit: Path) -> dict:
    """How the seeded switch split the instructions: the share of rows with the model shown
    first, per model the number of instructions it was shown first on (least, most), the
    models whose files lack an instruction, and the instructions shown first to some models
    and second to others (the instruction: the question id's first field; 0 when the switch
    is one per instruction)."""
    j = pl.read_parquet(
        audit / "judgments.parquet", columns=["question_id", "candidate", "shown"]
    )
    j = j.with_columns(instruction=pl.col("question_id").str.split("|").list.first(),
                       first=pl.col("shown").list.first() == pl.col("candidate"))  # fmt: skip
    per = j.group_by("candidate").agg(n=pl.col("first").sum(), rows=pl.len())
    mixed = j.group_by("instruction").agg(pl.col("first").n_unique() > 1)["first"].sum()
    return {
        "rows": j.height, "models": j["candidate"].n_unique(),
        "instructions": j["instruction"].n_unique(), "share_first": float(j["first"].mean()),
        "first_min": int(per["n"].min()), "first_max": int(per["n"].max()), "mixed": int(mixed),
        "models_short": int((per["rows"] < j["instruction"].n_unique()).sum()),
    }  # fmt: skip


def counts(audit: Path) -> pl.DataFrame:
    """AlpacaEval's counts per model from the judgments: wins (the model's probability
    > 0.5), base wins (< 0.5), draws, total."""
    j = pl.read_parquet(audit / "judgments.parquet", columns=["candidate", "shown", "option_probs", "choice", "failed"])  # fmt: skip
    j = j.filter(~pl.col("failed")).with_columns(p=_model_p())
    return j.group_by(model="candidate").agg(
        n_wins=(pl.col("p") > 0.5).sum(), n_wins_base=(pl.col("p") < 0.5).sum(),
        n_draws=(pl.col("p") == 0.5).sum(), n_total=pl.len(),
    )  # fmt: skip


def against_board(audit: Path, rank: Path | None, board: Path) -> pl.DataFrame:
    """Per model on the leaderboard CSV: the command's win rate and LC win rate (× 100, from
    ``lc_win_rate.csv``, the raw pooled board; None without a ranking) and counts (from the
    judgments) beside the CSV's, with the differences."""
    pub = pl.read_csv(board).rename({"": "model"})
    ours = counts(audit)
    if rank is not None and (rank / "metrics" / "lc_win_rate.csv").is_file():
        lc = pl.read_csv(rank / "metrics" / "lc_win_rate.csv").filter(
            (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
        )
        ours = ours.join(lc.select("model", "formula", wr=100 * pl.col("win_rate"),
                                   lc=100 * pl.col("lc_win_rate")), on="model", how="left")  # fmt: skip
    keep = ["model", "win_rate", "n_wins", "n_wins_base", "n_draws", "n_total"]
    keep += (
        ["length_controlled_winrate"]
        if "length_controlled_winrate" in pub.columns
        else []
    )
    both = ours.join(pub.select(keep), on="model", suffix="_pub").rename(
        {"win_rate": "wr_pub", "length_controlled_winrate": "lc_pub"}, strict=False
    )
    both = both.with_columns(
        counts_equal=pl.all_horizontal(
            [pl.col(c) == pl.col(f"{c}_pub") for c in ("n_wins", "n_wins_base", "n_draws", "n_total")]
        )
    )  # fmt: skip
    if "wr" in both.columns:
        both = both.with_columns(wr_diff=pl.col("wr") - pl.col("wr_pub"))
        if "lc_pub" in both.columns:
            both = both.with_columns(lc_diff=pl.col("lc") - pl.col("lc_pub"))
    return both.sort("model")


def summary(t: pl.DataFrame) -> dict:
    """The comparison's summary: models, counts equal, largest |win rate difference|; with
    LC: mean and mean |difference|, largest, models within 0.5 points, Kendall τ-b of the LC
    ranking and of the raw win rate's against the published LC."""
    out = {"models": t.height, "counts_equal": int(t["counts_equal"].sum())}
    if "wr_diff" in t.columns:
        out["wr_largest"] = float(t["wr_diff"].abs().max())
    if "lc_diff" in t.columns:
        # a model the CSV lists without an LC figure (AlpacaEval 1's ghost-7b-alpha) is
        # counted apart, not compared (Kendall's τ of a column with a null is NaN)
        pub = t.filter(pl.col("lc_pub").is_not_null() & pl.col("lc").is_not_null())
        d = pub["lc_diff"]
        out |= {
            "lc_models": pub.height, "lc_not_published": t.height - pub.height,
            "lc_mean": float(d.mean()), "lc_mean_abs": float(d.abs().mean()),
            "lc_largest": float(d.abs().max()), "lc_within": int((d.abs() <= 0.5).sum()),
            "tau_lc": float(kendalltau(pub["lc"], pub["lc_pub"]).statistic),
            "tau_raw": float(kendalltau(pub["wr"], pub["lc_pub"]).statistic),
            "formulas": dict(pub.group_by("formula").len().iter_rows()),
        }  # fmt: skip
    return out


def pair_unit(audit: Path, permutations: int = 2000) -> dict:
    """For contrast, not a figure of the command: the pooled randomisation p of the same
    function ``voirdire audit`` calls (:func:`~voirdire.analysis.position.one_order.
    one_order_effect`) on the audit's judgments with the unit set to the pair, as if each
    model's order had been drawn apart (AlpacaEval's switch is one per instruction). The
    pooled row of the judge with the most verdicts."""
    import voirdire
    from voirdire.analysis.position.one_order import one_order_effect

    res = voirdire.load(audit)
    bench = res.judgments["benchmark"][0]
    e = one_order_effect(res.judgments, replicates=200, permutations=permutations, seed=0,
                         clusters=res.clusters, units={bench: "pair"})  # fmt: skip
    pooled = e.filter(pl.col("candidate").is_null())
    return pooled.sort(pl.col("n_first") + pl.col("n_second"), descending=True).row(
        0, named=True
    )
