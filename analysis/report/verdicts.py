"""The verdict viewer (``verdicts.html``): the judgment pairs whose verdict changes with the
order, opened one by one — the instruction, both orders' prompts and replies, the verdict
read from each order, and the flip.

:func:`flipped_pairs` selects them from a directory's judgments (a table, no I/O);
:func:`with_prompts` adds the instruction and the two prompts where the directory's
benchmark can rebuild them (the results store no prompt text: a prompt is the benchmark's
template filled with the shown answers, byte-identical to what was sent for an unperturbed
query); :func:`verdicts_page` renders the self-contained page
(``templates/verdicts.html.j2``: inline style and script, no network, every received text
escaped). :mod:`voirdire.analysis.build`'s ``verdicts`` stage computes, its writer writes.

A *flip* is a position-inconsistent pair (``docs/metrics.md``): its class is ``primacy``
or ``recency`` (:func:`~voirdire.analysis.position.pairing.pair_class`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.key_sort import sort_by_keys
from voirdire.analysis.position.pairing import (
    PAIR_KEYS,
    PAIRWISE_MODES,
    judgment_pairs,
    side,
)
from voirdire.analysis.report.rebuilt_prompts import question_text, rebuilt_prompt
from voirdire.analysis.report.views import render_template

if TYPE_CHECKING:
    from voirdire.analysis.report.list_verdicts import FlippedLists
    from voirdire.benchmarks.base import Benchmark

__all__ = [
    "PER_JUDGE",
    "MAX_PAIRS",
    "PAGE_SIZE",
    "FLIP_CLASSES",
    "DIRECTORY",
    "FlippedPairs",
    "flipped_pairs",
    "with_prompts",
    "verdicts_page",
]

#: at most this many flipped pairs per judge on the page
PER_JUDGE = 25
#: at most this many in all (the per-judge share shrinks with many judges)
MAX_PAIRS = 600
#: pairs per page of the viewer
PAGE_SIZE = 25
#: the pair classes whose verdict changes with the order
FLIP_CLASSES = ("primacy", "recency")
#: the optional column of a judgments table naming the directory a row comes from
DIRECTORY = "directory"

#: per order (1: candidate shown first, 2: shown second), the columns taken from its row
_PER_ORDER = ("mode", "shown", "permutation", "extracted", "output", "failure")


@dataclass(frozen=True)
class FlippedPairs:
    """The viewer's table and its counts.

    Attributes:
        pairs: one row per pair shown: :data:`~voirdire.analysis.position.pairing.PAIR_KEYS`,
            :data:`DIRECTORY` (null where the judgments had none), ``klass`` (``primacy`` | ``recency``), ``v1``/``v2`` (the verdicts from the
            candidate's side, candidate shown first / second), and per order ``1``/``2``:
            ``mode``, ``shown`` (models in slot order), ``permutation``, ``extracted`` (the letter
            read), ``output`` (the reply; null when not recorded), ``failure``.
        counts: per (benchmark, judge): ``pairs`` (judged in both orders, with a verdict
            in each), ``flipped`` (of them, position-inconsistent), ``shown`` (on the page).
        per_judge: the most pairs of one judge kept; max_pairs: the most in all.
        lists: the list-wise series that flipped
            (:func:`~voirdire.analysis.report.list_verdicts.flipped_lists`), shown on the
            same page; None where the judgments hold none.
    """

    pairs: pl.DataFrame
    counts: pl.DataFrame
    per_judge: int = PER_JUDGE
    max_pairs: int = MAX_PAIRS
    lists: FlippedLists | None = None

    @property
    def left_out(self) -> int:
        """Flipped pairs not on the page (the bounds)."""
        return int(self.counts.get_column("flipped").sum() - self.pairs.height)


def flipped_pairs(
    judgments: pl.DataFrame,
    *,
    per_judge: int = PER_JUDGE,
    max_pairs: int = MAX_PAIRS,
) -> FlippedPairs:
    """The position-inconsistent pairs of a judgments table (its unperturbed pairwise or
    score rows), at most ``per_judge`` per (benchmark, judge) and ``max_pairs`` in all:
    with ``n`` judges each keeps ``min(per_judge, max(1, max_pairs // n))``, taken round
    the tasks (the first question of each task, then the second, ...), then the first
    ``max_pairs``. Deterministic for a table. A :data:`DIRECTORY` column, where present,
    keeps the directories' queries apart (each pairs within its own directory); the
    counts are per (benchmark, judge) over them all.

    Raises:
        ValueError: ``per_judge`` or ``max_pairs`` below 1.
    """
    if per_judge < 1 or max_pairs < 1:
        raise ValueError("per_judge and max_pairs must be at least 1")
    rows = control_rows(judgments).filter(pl.col("mode").is_in(PAIRWISE_MODES))
    if DIRECTORY not in rows.columns:
        rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(DIRECTORY))
    keys = [*PAIR_KEYS, DIRECTORY]  # two directories' queries never pair
    judges = ["benchmark", "judge"]
    parts = rows.partition_by(DIRECTORY, as_dict=True, maintain_order=True)
    pairs = pl.concat(
        [judgment_pairs(part).with_columns(pl.lit(d, pl.String).alias(DIRECTORY))
         for (d,), part in parts.items()]
        or [judgment_pairs(rows).with_columns(pl.lit(None, pl.String).alias(DIRECTORY))]
    )  # fmt: skip
    decided = pairs.filter(pl.col("v1").is_not_null() & pl.col("v2").is_not_null())
    flips = decided.filter(pl.col("klass").is_in(FLIP_CLASSES))
    n_judges = max(1, decided.select(judges).unique().height)
    k = min(per_judge, max(1, max_pairs // n_judges))
    order = [
        *judges,
        "task",
        "question_id",
        "candidate",
        "repetition",
        "reference",
        DIRECTORY,
    ]
    picked = (
        sort_by_keys(flips, order, nulls_last=True)
        .with_columns(_turn=pl.int_range(pl.len()).over([*judges, "task"]))
        .pipe(
            sort_by_keys,
            [*judges, "_turn", "task", "question_id", "candidate", "repetition"],
        )
        .with_columns(_i=pl.int_range(pl.len()).over(judges))
        .filter(pl.col("_i") < k)
        .head(max_pairs)
        .drop("_turn", "_i")
    )
    per_order = rows.with_columns(side=side()).select(*keys, "side", *_PER_ORDER)
    per_order = per_order.unique([*keys, "side"], keep="first", maintain_order=True)
    for s, suffix in ((0, "1"), (1, "2")):
        one = per_order.filter(pl.col("side") == s).drop("side")
        picked = picked.join(
            one.rename({c: f"{c}{suffix}" for c in _PER_ORDER}),
            on=keys, how="left", nulls_equal=True,
        )  # fmt: skip
    picked = picked.select(
        *keys, "klass", "v1", "v2", *(f"{c}{s}" for s in "12" for c in _PER_ORDER)
    )
    shown = picked.group_by(judges).agg(shown=pl.len())
    counts = (
        decided.group_by(judges)
        .agg(pairs=pl.len(), flipped=pl.col("klass").is_in(FLIP_CLASSES).sum())
        .join(shown, on=judges, how="left")
        .with_columns(pl.col("shown").fill_null(0), pl.col("flipped").cast(pl.Int64))
        .sort(judges)
    )
    return FlippedPairs(picked, counts, k, max_pairs)


def with_prompts(pairs: pl.DataFrame, bench: Benchmark | None) -> pl.DataFrame:
    """``pairs`` (:attr:`FlippedPairs.pairs`) with ``instruction``, ``prompt1`` and
    ``prompt2`` (str | null): the question of the judged turn and each order's prompt as
    ``bench`` builds it (a system turn, where the benchmark has one, first); null where the
    benchmark cannot rebuild it (a recorded log without the answers, an unknown question)
    or ``bench`` is None."""

    def one(
        qid: str, shown: Sequence[str] | None, mode: str | None, option_mode: int
    ) -> Any:
        return rebuilt_prompt(bench, qid, shown, mode, option_mode)

    def question(qid: str) -> str | None:
        return question_text(bench, qid)

    cols = ("question_id", "option_mode", "mode1", "shown1", "shown2")
    rows = pairs.select(cols).rows()
    return pairs.with_columns(
        instruction=pl.Series([question(q) for q, *_ in rows], dtype=pl.String),
        prompt1=pl.Series([one(q, a, m, o) for q, o, m, a, _ in rows], dtype=pl.String),
        prompt2=pl.Series([one(q, b, m, o) for q, o, m, _, b in rows], dtype=pl.String),
    )


def _pair_view(r: dict[str, Any], n: int) -> dict[str, Any]:
    """One pair as the template shows it (text only; the template escapes it)."""
    flip = f"{r['v1']} shown first, {r['v2']} shown second: {r['klass']}"
    orders = [
        {
            "name": "candidate shown first" if s == "1" else "candidate shown second",
            "shown": " | ".join(r[f"shown{s}"] or []),
            "permutation": r[f"permutation{s}"],
            "letter": r[f"extracted{s}"],
            "verdict": r[f"v{s}"],
            "prompt": r.get(f"prompt{s}"),
            "reply": r[f"output{s}"],
        }
        for s in "12"
    ]
    instruction = r.get("instruction")
    search = " ".join(
        str(x)
        for x in (r["judge"], r["question_id"], r["task"], r["candidate"], instruction)
        if x
    ).lower()
    return {
        "id": f"p{n}", "benchmark": r["benchmark"], "judge": r["judge"], "task": r["task"],
        "question_id": r["question_id"], "candidate": r["candidate"], "reference": r["reference"],
        "repetition": r["repetition"], "instruction": instruction, "flip": flip,
        "klass": r["klass"], "orders": orders, "search": search,
    }  # fmt: skip


def verdicts_page(
    flips: FlippedPairs, title: str = "voirdire: flipped verdicts"
) -> str:
    """The viewer as one HTML string (``templates/verdicts.html.j2``): per pair the judge,
    question, instruction, both orders (prompt and reply collapsed), the verdicts read and
    the flip; per list-wise series (``flips.lists``) each permutation's order, the letter
    and candidate read, and the flip between them; paged (:data:`PAGE_SIZE`), searchable,
    ``#judge=NAME`` shows one judge (``&task=TASK``: on one task; ``#judge=A&judge=B``:
    two judges, an agreement cell's).
    ``flips.pairs`` may carry :func:`with_prompts`' columns (else the page says the
    prompts were not recorded)."""
    pairs = flips.pairs
    rows = pairs.iter_rows(named=True)
    counts = list(flips.counts.iter_rows(named=True))
    lists = (
        flips.lists if flips.lists is not None and flips.lists.counts.height else None
    )
    list_counts = list(lists.counts.iter_rows(named=True)) if lists else []
    return render_template(
        "verdicts.html.j2",
        title=title,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        pairs=[_pair_view(r, i) for i, r in enumerate(rows)],
        counts=counts,
        lists=lists.views() if lists else [],
        list_counts=list_counts,
        list_left_out=lists.left_out if lists else 0,
        list_per_judge=lists.per_judge if lists else 0,
        has_lists=lists is not None,
        left_out=flips.left_out,
        per_judge=flips.per_judge,
        max_pairs=flips.max_pairs,
        config={
            "page_size": PAGE_SIZE,
            "judges": sorted({c["judge"] for c in [*counts, *list_counts]}),
        },
    )
