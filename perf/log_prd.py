"""PRD's figures for :mod:`perf.log_findings`, read from what the commands wrote: the audit
(``metrics/judge_metrics.csv``, ``judgments.parquet``), ``voirdire rank`` (``metrics/
leaderboard.csv``, ``metrics/rank_flips.csv``) and ``voirdire mitigate`` (``mitigation.csv``),
and, for comparison, what PRD publishes: its notebook's win rates (``peer_rank/
peer_ranking.ipynb``, the printed outputs of ``compute_winrates``)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import polars as pl

from voirdire.analysis.ranking.gold import GOLD, read_gold

__all__ = ["boards", "notebook", "reviewers", "stored_scores", "winrates"]

#: the notebook's model names → PRD's file names (voirdire's)
NB_MODELS = {"gpt-4": "gpt4", "gpt-3.5": "gpt35", "vicuna": "vicuna-13b", "claude": "claude", "bard": "bard"}  # fmt: skip
#: the notebook's calls → the battles they count (a reviewer, the gold labels, all reviewers)
NB_CALLS = {
    "compute_winrates(gpt4_reviews)": "gpt4",
    "compute_winrates(auto_reviews[auto_reviews.reviewer == 'gpt-3.5'])": "gpt35",
    "compute_winrates(human_reviews)": GOLD,
    "compute_winrates(auto_reviews)": "all reviewers",
}


def _first_picks(j: pl.DataFrame) -> pl.DataFrame:
    """Per judge the share of decided verdicts (A or B) picking the answer shown first."""
    return (
        j.filter(pl.col("choice").is_in(["A", "B"]))
        .group_by("judge")
        .agg(first_picks=(pl.col("choice") == "A").mean())
    )


def reviewers(audit: Path) -> pl.DataFrame:
    """Per reviewer: PC, flip rate (1 − PC), PF, first-shown picks, κ between the orders
    (with its interval), accuracy against the people, from the audit's files."""
    jm = pl.read_csv(audit / "metrics" / "judge_metrics.csv")
    j = pl.read_parquet(audit / "judgments.parquet", columns=["judge", "choice"])
    return (
        jm.select("judge", "pc", "pf", "pass_kappa", "pass_kappa_lo", "pass_kappa_hi",
                  "error_rate", "accuracy", "accuracy_shown", "accuracy_swapped", "both_correct")
        .with_columns(flip=1 - pl.col("pc"))
        .join(_first_picks(j), on="judge", how="left")
        .sort("judge")
    )  # fmt: skip


def stored_scores(audit: Path) -> pl.DataFrame:
    """Per reviewer: reviews, those whose text's last line is a choice (1, 2, 3), and those
    whose last line equals the stored score the audit read (its letter)."""
    j = pl.read_parquet(
        audit / "judgments.parquet", columns=["judge", "output", "choice"]
    )
    last = (
        pl.col("output").str.strip_chars().str.split("\n").list.last().str.strip_chars()
    )
    letter = last.replace_strict({"1": "A", "2": "B", "3": "C"}, default=None)
    return (
        j.group_by("judge")
        .agg(reviews=pl.len(), last_line_choice=letter.is_not_null().sum(),
             equal=(letter == pl.col("choice")).sum())
        .sort("judge")
    )  # fmt: skip


def boards(rank: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(places, flips)`` from ``rank``'s CSVs. ``places``: per board (each reviewer's
    pooled board, the gold board) each model's place by rating (1 = highest) and its rating in
    parentheses. ``flips``: per reviewer against the gold board (τ, flips, Holm-significant
    ones) and first shown against swapped (τ, flips, significant ones, of them between two
    candidates, the order test's p-values from the flips and from τ). An older ``rank``'s
    gold board, named ``people``, reads as :data:`GOLD` (:func:`read_gold`)."""
    lb = (
        read_gold(pl.read_csv(rank / "metrics" / "leaderboard.csv"))
        .filter(
            (pl.col("judge") == GOLD)
            | ((pl.col("strategy") == "single") & (pl.col("view") == "pooled"))
        )
        .with_columns(
            place=pl.col("rating")
            .rank("min", descending=True)
            .over("judge")
            .cast(pl.Int64)
        )
    )
    places = lb.with_columns(
        cell=pl.format("{} ({})", "place", pl.col("rating").round(0).cast(pl.Int64))
    ).pivot("model", index="judge", values="cell", sort_columns=True)
    fl = read_gold(pl.read_csv(rank / "metrics" / "rank_flips.csv")).filter(
        pl.col("strategy") == "single"
    )
    gold = fl.filter((pl.col("view") == "pooled") & (pl.col("judge_b") == GOLD))
    orders = fl.filter((pl.col("view") == "first") & (pl.col("view_b") == "swapped"))
    flips = gold.select(
        "judge", tau_gold="kendall_tau", flips_gold="flips", sig_gold="flips_significant"
    ).join(
        orders.select("judge", tau_order="kendall_tau", flips_order="flips",
                      sig_order="flips_significant", sig_cand="flips_significant_candidates",
                      flips_null="flips_null", flips_p="flips_p", tau_p="tau_p"),
        on="judge", how="full", coalesce=True,
    )  # fmt: skip
    return places.sort("judge"), flips.sort("judge")


def winrates(audit: Path) -> pl.DataFrame:
    """PRD's notebook's win rates (``compute_winrates``: per battle the winner 1, a tie ½,
    over the model's battles) from the audit's judgments: each reviewer's verdicts (a
    review a battle), all reviewers pooled, and the human votes (one battle per question and
    pair, the gold label, as the notebook's ``human_majority``). Long: ``judge, model, win_rate``."""
    j = pl.read_parquet(audit / "judgments.parquet",
                        columns=["judge", "question_id", "candidate", "reference", "chosen", "tie", "gold", "failed"])  # fmt: skip
    s = (
        pl.when(pl.col("tie") | pl.col("failed")).then(0.5)
        .when(pl.col("chosen") == pl.col("candidate")).then(1.0).otherwise(0.0)
    )  # fmt: skip
    rev = j.select("judge", "candidate", "reference", s=s)
    gold = (
        j.filter(pl.col("gold").is_not_null())
        .unique(["question_id", "candidate", "reference"])
        .select(judge=pl.lit(GOLD), candidate="candidate", reference="reference",
                s=pl.when(pl.col("gold") == pl.col("candidate")).then(1.0)
                .when(pl.col("gold") == pl.col("reference")).then(0.0).otherwise(0.5))
    )  # fmt: skip
    battles = pl.concat([rev, rev.with_columns(judge=pl.lit("all reviewers")), gold])
    both = pl.concat([
        battles.select("judge", model="candidate", s="s"),
        battles.select("judge", model="reference", s=1 - pl.col("s")),
    ])  # fmt: skip
    return both.group_by("judge", "model").agg(win_rate=pl.col("s").mean())


def notebook(path: Path) -> pl.DataFrame | None:
    """The win rates PRD's notebook prints (:data:`NB_CALLS`' cells' outputs, read as
    literals, never run); long: ``judge, model, published``. None: no notebook."""
    if not path.is_file():
        return None
    rows = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        call = "".join(cell.get("source", [])).strip()
        if call not in NB_CALLS:
            continue
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/plain", []))
            if text:
                for m, v in ast.literal_eval(text).items():
                    rows.append((NB_CALLS[call], NB_MODELS[m], float(v)))
    return pl.DataFrame(rows, schema=["judge", "model", "published"], orient="row")


def winrates_against_notebook(audit: Path, nb: Path) -> pl.DataFrame | None:
    """The notebook's win rates beside the audit's and their difference."""
    pub = notebook(nb)
    if pub is None:
        return None
    return (
        pub.join(winrates(audit), on=["judge", "model"], how="left")
        .with_columns(diff=pl.col("win_rate") - pl.col("published"))
        .sort("judge", "published", descending=[False, True])
    )


def _f(x, fmt: str = "{:.3f}") -> str:
    return "–" if x is None or x != x else fmt.format(x).replace("-", "−")


def boards_markdown(rank: Path) -> list[str]:
    """``docs/findings.md``'s table of PRD's boards (:func:`boards`): the human first, the
    models in the human order; the order test's p of the flips and of τ."""
    lb = (
        read_gold(pl.read_csv(rank / "metrics" / "leaderboard.csv"))
        .filter(
            (pl.col("judge") == GOLD)
            | ((pl.col("strategy") == "single") & (pl.col("view") == "pooled"))
        )
        .with_columns(
            place=pl.col("rating")
            .rank("min", descending=True)
            .over("judge")
            .cast(pl.Int64)
        )
    )
    models = (
        lb.filter(pl.col("judge") == GOLD)
        .sort("rating", descending=True)["model"]
        .to_list()
    )
    _, flips = boards(rank)
    fl = {r["judge"]: r for r in flips.iter_rows(named=True)}
    out = [
        "| board | " + " | ".join(models) + " | τ vs gold | flips vs gold (significant) | flips first vs swapped "
        "(significant; between candidates) | order-blind flips | τ first vs swapped | order test p (flips, τ) |",
        "|---" * (len(models) + 7) + "|",
    ]  # fmt: skip
    for judge in [GOLD, *sorted(set(lb["judge"]) - {GOLD})]:
        g = {
            r["model"]: r
            for r in lb.filter(pl.col("judge") == judge).iter_rows(named=True)
        }
        cells = [f"{g[m]['place']} ({g[m]['rating']:.0f})" for m in models]
        f = fl.get(judge)
        rest = ["", "", "", "", "", ""] if f is None else [
            _f(f["tau_gold"]), f"{f['flips_gold']} ({f['sig_gold']})",
            f"{f['flips_order']} ({f['sig_order']}; {f['sig_cand']})", _f(f["flips_null"], "{:.1f}"),
            _f(f["tau_order"]), f"{_f(f['flips_p'])}, {_f(f['tau_p'])}",
        ]  # fmt: skip
        out.append(f"| {judge} | " + " | ".join(cells + rest) + " |")
    return out


def mitigation_markdown(mit: Path) -> list[str]:
    """Per reviewer the accuracy against the people of its own verdicts (``single``), of
    swap-and-tie and of the gate (with the share it leaves undecided), from
    ``mitigation.csv``; the juries' rows after."""
    m = pl.read_csv(mit / "mitigation.csv")
    acc = {(r["strategy"], r["judge"]): r for r in m.iter_rows(named=True)}
    out = ["| reviewer | single | swap-tie | gate (undecided) |", "|---|---|---|---|"]
    for judge in sorted(m.filter(pl.col("strategy") == "single")["judge"]):
        s, t, g = (acc.get((k, judge)) for k in ("single", "swap-tie", "gate"))
        gate = (
            "–" if g is None else f"{_f(g['accuracy'])} ({100 * g['undecided']:.1f} %)"
        )
        swap = "–" if t is None else _f(t["accuracy"])
        out.append(f"| {judge} | {_f(s['accuracy'])} | {swap} | {gate} |")
    for r in (
        m.filter(pl.col("strategy").str.starts_with("jury"))
        .sort("strategy")
        .iter_rows(named=True)
    ):
        out.append(f"| {r['strategy']} ({r['judge']}) | {_f(r['accuracy'])} | | |")
    return out
