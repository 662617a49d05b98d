"""Auto-J's figures for :mod:`perf.log_findings`, read from what ``voirdire audit`` wrote on
its pairwise test data and its two example prediction files (``metrics/cell_metrics.csv``:
one cell per scenario; ``judge_metrics.csv``; ``judgments.parquet``), pooled into the
scenario groups of Auto-J's ``codes/leaderboard/utils_constants.py`` (``scenario_group``,
read as a literal, never run), beside the table Auto-J's ``codes/leaderboard/README.md``
publishes for these files (``pairwise_eval.py``'s Agreement and Consistency, ``--type
pairwise`` and ``--type single``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl

__all__ = ["beyond", "groups", "published", "scenario_groups"]

OVERALL = "Overall"
_ROW = re.compile(r"^(?P<group>\S.*?)\s+(?P<agreement>\d+(?:\.\d+)?)\s+(?P<consistency>\d+(?:\.\d+)?|-)\s*$")  # fmt: skip


def scenario_groups(constants: Path) -> dict[str, str]:
    """``{scenario: group}`` from ``utils_constants.py``'s ``scenario_group`` assignment."""
    tree = ast.parse(constants.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "scenario_group" for t in node.targets
        ):
            groups = ast.literal_eval(node.value)
            return {s: g for g, ss in groups.items() for s in ss}
    raise ValueError(f"{constants}: no scenario_group")


def groups(audit: Path, constants: Path) -> pl.DataFrame:
    """Per scenario group and overall (Auto-J's order): pairs, Agreement (100 × pairs right in
    both orders), Consistency (100 × PC: the two orders agree), single Agreement (100 ×
    accuracy as shown), each pooled from the audit's per-scenario cells, rounded as
    ``pairwise_eval.py`` rounds (2 decimals)."""
    cells = pl.read_csv(audit / "metrics" / "cell_metrics.csv")
    group = scenario_groups(constants)
    order = list(dict.fromkeys(group.values())) + [OVERALL]
    c = cells.with_columns(group=pl.col("task").replace_strict(group, default=None))
    sums = [pl.col("n").sum().alias("pairs"), (pl.col("both_correct") * pl.col("n")).sum().alias("both"),
            pl.col("consistent").sum().alias("consistent"),
            (pl.col("accuracy_shown") * pl.col("n")).sum().alias("shown")]  # fmt: skip
    per = pl.concat([
        c.group_by("group").agg(sums),
        c.select(sums).with_columns(group=pl.lit(OVERALL)).select("group", "pairs", "both", "consistent", "shown"),
    ])  # fmt: skip
    return (
        per.with_columns(
            agreement=(100 * pl.col("both") / pl.col("pairs")).round(2),
            consistency=(100 * pl.col("consistent") / pl.col("pairs")).round(2),
            single=(100 * pl.col("shown") / pl.col("pairs")).round(2),
        )
        .with_columns(pl.col("group").cast(pl.Enum(order)))
        .sort("group")
        .select("group", "pairs", "agreement", "consistency", "single")
    )


def published(readme: Path) -> pl.DataFrame:
    """The README's two tables: per group ``agreement_pub``, ``consistency_pub`` (``--type
    pairwise``) and ``single_pub`` (``--type single``'s Agreement)."""
    blocks = re.findall(r"```text\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    tables = []
    for block in blocks[:2]:
        rows = [
            m.groupdict() for ln in block.splitlines() if (m := _ROW.match(ln.strip()))
        ]
        tables.append(pl.DataFrame(rows))
    pw, single = tables
    return pw.select(
        "group", agreement_pub=pl.col("agreement").cast(pl.Float64),
        consistency_pub=pl.col("consistency").cast(pl.Float64),
    ).join(single.select("group", single_pub=pl.col("agreement").cast(pl.Float64)), on="group")  # fmt: skip


def against_readme(audit: Path, root: Path) -> pl.DataFrame:
    """:func:`groups` beside :func:`published`, with the differences."""
    ours = groups(audit, root / "codes" / "leaderboard" / "utils_constants.py")
    pub = published(root / "codes" / "leaderboard" / "README.md")
    return (
        ours.with_columns(pl.col("group").cast(pl.String))
        .join(pub, on="group", how="left")
        .with_columns(
            d_agreement=pl.col("agreement") - pl.col("agreement_pub"),
            d_consistency=pl.col("consistency") - pl.col("consistency_pub"),
            d_single=pl.col("single") - pl.col("single_pub"),
        )
    )


def beyond(audit: Path) -> dict[str, float]:
    """What the README does not state: pairs whose verdict changes with the order, those
    leaning to the response shown first (primacy) and second (recency), PF, first-shown picks
    of the decided verdicts, κ between the orders with its interval, accuracy per verdict
    (as stored, swapped)."""
    cells = pl.read_csv(audit / "metrics" / "cell_metrics.csv")
    jm = pl.read_csv(audit / "metrics" / "judge_metrics.csv").row(0, named=True)
    j = pl.read_parquet(audit / "judgments.parquet", columns=["choice"])
    decided = j.filter(pl.col("choice").is_in(["A", "B"]))
    return {
        "pairs": int(cells["n"].sum()),
        "changed": int(cells["n"].sum() - cells["consistent"].sum()),
        "lean_first": int(cells["primacy"].sum()),
        "lean_second": int(cells["recency"].sum()),
        "pf": jm["pf"],
        "first_picks": float((decided["choice"] == "A").mean()),
        "kappa": jm["pass_kappa"], "kappa_lo": jm["pass_kappa_lo"], "kappa_hi": jm["pass_kappa_hi"],
        "accuracy": jm["accuracy"], "accuracy_shown": jm["accuracy_shown"],
        "accuracy_swapped": jm["accuracy_swapped"],
    }  # fmt: skip
