"""The list-wise half of the verdict viewer (``verdicts.html``): the series whose choice
changes with the order, opened one by one — the instruction, each permutation's order
(the candidates slot by slot) with its prompt and reply, the letter read and the candidate
it names, and the flip between the permutations.

A *series* is one judge's judgments of one instance (question + list of candidates) over
its permutations, in one repetition
(:func:`~voirdire.analysis.position.listwise.listwise_series`); it *flips* when it is
inconsistent: its class is ``primacy``, ``recency`` or ``balanced`` (``docs/metrics.md``,
*List-wise*). :func:`flipped_lists` selects them (a table, no I/O), :func:`with_list_prompts`
adds the instruction and each permutation's prompt where the benchmark rebuilds them;
:func:`~voirdire.analysis.report.verdicts.verdicts_page` renders them beside the pairwise
flips (one page, one search, one pager).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.position.listwise import SERIES_KEYS, listwise_series
from voirdire.analysis.report.rebuilt_prompts import question_text, rebuilt_prompt

if TYPE_CHECKING:
    from voirdire.benchmarks.base import Benchmark

__all__ = [
    "LIST_FLIPS",
    "LIST_DECIDED",
    "FlippedLists",
    "flipped_lists",
    "with_list_prompts",
]

#: the series classes whose choice changes with the order
LIST_FLIPS = ("primacy", "recency", "balanced")
#: the classes of series with a verdict in every permutation
LIST_DECIDED = ("consistent", *LIST_FLIPS)
#: the optional column naming the directory a row comes from (as the pairwise viewer's)
_DIRECTORY = "directory"
#: per permutation, the columns taken from its row
_PER_ORDER = ("permutation", "shown", "extracted", "chosen", "tie", "output", "failure")


@dataclass(frozen=True)
class FlippedLists:
    """The list-wise viewer's table and its counts.

    Attributes:
        series: one row per series shown: :data:`~voirdire.analysis.position.listwise.SERIES_KEYS`,
            ``directory`` (null where the judgments had none), ``klass``, ``s`` (the mean
            position score of its choices, −1 first slot … +1 last), ``p`` (list size) and
            ``orders``: a list of structs, one per permutation in its order (``permutation``,
            ``shown``: models in slot order, ``extracted``: the letter read, ``chosen``: the
            model it names, ``tie``, ``output``: the reply or null, ``failure``).
        counts: per (benchmark, judge): ``series`` (with a verdict in every permutation),
            ``flipped`` (of them, inconsistent), ``shown`` (on the page).
        per_judge, max_series: the bounds.
    """

    series: pl.DataFrame
    counts: pl.DataFrame
    per_judge: int
    max_series: int

    @property
    def left_out(self) -> int:
        """Flipped series not on the page (the bounds)."""
        return int(self.counts.get_column("flipped").sum() - self.series.height)

    def views(self) -> list[dict[str, Any]]:
        """Each series as the template shows it (text only; the template escapes it)."""
        return [
            _series_view(r, i) for i, r in enumerate(self.series.iter_rows(named=True))
        ]


def flipped_lists(
    judgments: pl.DataFrame, *, per_judge: int = 25, max_series: int = 600
) -> FlippedLists:
    """The inconsistent list-wise series of a judgments table (its unperturbed
    ``listwise`` rows), at most ``per_judge`` per (benchmark, judge) and ``max_series`` in
    all: with ``n`` judges each keeps ``min(per_judge, max(1, max_series // n))``, taken
    round the tasks, then the first ``max_series``. Deterministic for a table. A
    ``directory`` column, where present, keeps the directories' series apart.

    Raises:
        ValueError: ``per_judge`` or ``max_series`` below 1.
    """
    if per_judge < 1 or max_series < 1:
        raise ValueError("per_judge and max_series must be at least 1")
    rows = control_rows(judgments)
    rows = (
        rows.filter(pl.col("mode") == "listwise")
        if "mode" in rows.columns
        else rows.head(0)
    )
    if _DIRECTORY not in rows.columns:
        rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(_DIRECTORY))
    keys = [*SERIES_KEYS, _DIRECTORY]
    judges = ["benchmark", "judge"]
    parts = (
        rows.partition_by(_DIRECTORY, as_dict=True, maintain_order=True)
        if rows.height
        else {}
    )
    series = [
        listwise_series(part).with_columns(pl.lit(d, pl.String).alias(_DIRECTORY))
        for (d,), part in parts.items()
    ]
    if not series:
        empty = pl.DataFrame(schema={"benchmark": pl.String, "judge": pl.String, "series": pl.Int64,
                                     "flipped": pl.Int64, "shown": pl.Int64})  # fmt: skip
        return FlippedLists(pl.DataFrame(), empty, per_judge, max_series)
    all_series = pl.concat(series, how="diagonal_relaxed")
    decided = all_series.filter(pl.col("klass").is_in(LIST_DECIDED))
    flips = decided.filter(pl.col("klass").is_in(LIST_FLIPS))
    k = min(
        per_judge, max(1, max_series // max(1, decided.select(judges).unique().height))
    )
    order = [*judges, "task", "question_id", "repetition", _DIRECTORY]
    picked = (
        flips.sort(order, nulls_last=True)
        .with_columns(_turn=pl.int_range(pl.len()).over([*judges, "task"]))
        .sort([*judges, "_turn", "task", "question_id", "repetition"], nulls_last=True)
        .with_columns(_i=pl.int_range(pl.len()).over(judges))
        .filter(pl.col("_i") < k)
        .head(max_series)
        .drop("_turn", "_i")
    )
    # one key column for the join (the candidates are a list)
    joined = pl.col("candidates").list.join("\x1f").alias("_list")
    per_order = (
        rows.with_columns(joined)
        .sort("permutation")
        .group_by(
            [*(c for c in keys if c != "candidates"), "_list"], maintain_order=True
        )
        .agg(orders=pl.struct(*_PER_ORDER))
    )
    picked = (
        picked.with_columns(joined)
        .join(per_order, on=[*(c for c in keys if c != "candidates"), "_list"], how="left",
              nulls_equal=True)
        .select(*keys, "klass", "s", "p", "orders")
    )  # fmt: skip
    shown = picked.group_by(judges).agg(shown=pl.len())
    counts = (
        decided.group_by(judges)
        .agg(series=pl.len(), flipped=pl.col("klass").is_in(LIST_FLIPS).sum())
        .join(shown, on=judges, how="left")
        .with_columns(
            pl.col("shown").fill_null(0).cast(pl.Int64),
            pl.col("series").cast(pl.Int64),
            pl.col("flipped").cast(pl.Int64),
        )
        .sort(judges)
    )
    return FlippedLists(picked, counts, k, max_series)


def with_list_prompts(series: pl.DataFrame, bench: Benchmark | None) -> pl.DataFrame:
    """``series`` (:attr:`FlippedLists.series`) with ``instruction`` (str | null) and
    ``prompts`` (list[str | null], one per permutation in ``orders``' order): the question
    and each permutation's prompt as ``bench`` builds it (a system turn first where the
    benchmark has one); null where it cannot (a recorded log, an unknown question) or
    ``bench`` is None."""

    def prompt(qid: str, shown: list[str] | None, option_mode: int) -> str | None:
        return rebuilt_prompt(bench, qid, shown, "listwise", option_mode)

    def question(qid: str) -> str | None:
        return question_text(bench, qid)

    if not series.height:
        return series
    rows = series.select("question_id", "option_mode", "orders").rows()
    return series.with_columns(
        instruction=pl.Series([question(q) for q, _, _ in rows], dtype=pl.String),
        prompts=pl.Series(
            [[prompt(q, o["shown"], m) for o in orders or []] for q, m, orders in rows],
            dtype=pl.List(pl.String),
        ),
    )


def _read(o: dict[str, Any]) -> str:
    """What one permutation's verdict reads as: the candidate named, a tie, or nothing."""
    if o.get("failure"):
        return "no verdict (failed)"
    if o.get("tie"):
        return "tie"
    return o.get("chosen") or "no candidate"


def _series_view(r: dict[str, Any], n: int) -> dict[str, Any]:
    """One series as the template shows it."""
    orders, prompts = r["orders"] or [], r.get("prompts") or []
    letters = (
        [chr(ord("A") + i) for i in range(len(orders[0]["shown"] or []))]
        if orders
        else []
    )
    views = [
        {
            "name": f"permutation {o['permutation']}",
            "slots": [f"{letter} {m}" for letter, m in zip(letters, o["shown"] or [], strict=False)],
            "letter": o["extracted"],
            "read": _read(o),
            "prompt": prompts[i] if i < len(prompts) else None,
            "reply": o["output"],
        }
        for i, o in enumerate(orders)
    ]  # fmt: skip
    by: dict[str, list[str]] = {}
    for v, o in zip(views, orders, strict=True):
        by.setdefault(v["read"], []).append(str(o["permutation"]))
    flip = "; ".join(
        f"{read} in permutation{'s' if len(ps) > 1 else ''} {', '.join(ps)}"
        for read, ps in by.items()
    )
    s = r.get("s")
    lean = (
        f"{r['klass']}, mean position score {s:+.2f}" if s is not None else r["klass"]
    )
    instruction = r.get("instruction")
    candidates = list(r["candidates"] or [])
    search = " ".join(
        str(x)
        for x in (r["judge"], r["question_id"], r["task"], *candidates, instruction)
        if x
    ).lower()
    return {
        "id": f"l{n}", "benchmark": r["benchmark"], "judge": r["judge"], "task": r["task"],
        "question_id": r["question_id"], "candidates": candidates, "repetition": r["repetition"],
        "instruction": instruction, "flip": f"{flip} ({lean})", "klass": r["klass"],
        "orders": views, "search": search,
    }  # fmt: skip
