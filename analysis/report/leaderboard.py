"""The boards as ``voirdire rank`` and the report show them first: per judge and order view
the answer (the top model, its rating and interval, the models tied with it), then the
board itself (model, rating, 95 % interval, rank set, win rate, LC win rate where computed,
comparisons), sorted by rating. Formats what :func:`~voirdire.analysis.ranking.rank.rank_judgments`
computed; computes nothing, escapes nothing (each writer escapes for its output).

The boards shown are each judge's own verdicts (strategy ``single``; a panel's first
strategy) in its order views (first, swapped, pooled) and the gold board; the table is
the pooled view's (both orders together) and the gold board. Every other board (the
mitigation strategies') is in ``metrics/leaderboard.csv`` and in the page's figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from voirdire.analysis.ranking.gold import GOLD
from voirdire.analysis.ranking.rank import Ranking

__all__ = [
    "BOARD_ROWS",
    "BOARD_HEAD",
    "Answer",
    "shown_boards",
    "table_boards",
    "answers",
    "board_table",
    "view_title",
]

#: the most rows of a board the terminal prints (the rest: in the CSV)
BOARD_ROWS = 10
#: the views in the order they are read
_VIEWS = ("first", "swapped", "pooled", "combined", GOLD)
_KEYS = ["benchmark", "judge", "strategy", "view"]


@dataclass(frozen=True)
class Answer:
    """One board's answer: its key, the top model (best rating, ties by name), its rating
    and interval as text, and the other models whose rank set holds 1 (by rating)."""

    benchmark: str
    judge: str
    strategy: str
    view: str
    top: str
    rating: str
    interval: str
    tied: tuple[str, ...]

    def words(self) -> tuple[str, str]:
        """``(board, answer)`` as text, names raw (the caller escapes them)."""
        tied = (
            "tied with it (rank set holds 1): " + ", ".join(self.tied)
            if self.tied
            else "no other model's rank set holds 1"
        )
        return (
            f"{self.benchmark} · {view_title(self.judge, self.strategy, self.view)}",
            f"top {self.top}, rating {self.rating} {self.interval}; {tied}",
        )


def view_title(judge: str, strategy: str, view: str) -> str:
    """``judge · view`` (``judge · strategy · view`` beyond the judge's own verdicts)."""
    if judge == GOLD:
        return "gold board"
    return " · ".join([judge, *([] if strategy == "single" else [strategy]), view])


def shown_boards(lb: pl.DataFrame) -> list[tuple[str, str, str, str]]:
    """The boards read first, as (benchmark, judge, strategy, view) keys: per judge its
    own verdicts' strategy (``single``; else the first by name, a panel's ``jury``) in
    the order views it has, then each benchmark's gold board."""
    keys = lb.select(_KEYS).unique().rows()
    own: dict[tuple[str, str], str] = {}
    for b, j, s, _ in sorted(keys, key=lambda k: (k[2] != "single", k[2])):
        own.setdefault((b, j), s)
    order = {v: i for i, v in enumerate(_VIEWS)}
    shown = [k for k in keys if own[(k[0], k[1])] == k[2]]
    return sorted(
        shown,
        key=lambda k: (k[0], k[1] == GOLD, k[1], order.get(k[3], len(order))),
    )


def table_boards(lb: pl.DataFrame) -> list[tuple[str, str, str, str]]:
    """The boards tabled: of :func:`shown_boards`, per judge the pooled view (else its
    last view), and the gold board."""
    last: dict[tuple[str, str], tuple] = {}
    for k in shown_boards(lb):
        if last.get((k[0], k[1]), (None,) * 4)[3] != "pooled":
            last[(k[0], k[1])] = k
    return list(last.values())


def _board(lb: pl.DataFrame, key: tuple) -> pl.DataFrame:
    """One board's rows by rating, best first (NaN: undefined, last), ties by name."""
    b, j, s, v = key
    rows = lb.filter(
        (pl.col("benchmark") == b)
        & (pl.col("judge") == j)
        & (pl.col("strategy") == s)
        & (pl.col("view") == v)
    )
    return rows.with_columns(_r=pl.col("rating").fill_nan(None)).sort(
        ["_r", "model"], descending=[True, False], nulls_last=True
    )


def number(x: float | None, digits: int = 0) -> str:
    """A rating as text: ``+∞``/``−∞``, ``–`` for none (undefined)."""
    if x is None or math.isnan(x):
        return "–"
    if math.isinf(x):
        return "+∞" if x > 0 else "−∞"
    return f"{x:.{digits}f}"


def interval(lo: float | None, hi: float | None) -> str:
    """``[lo, hi]``; the anchor's (no interval: its rating is fixed) ``(anchor)``."""
    if lo is None or hi is None or (math.isnan(lo) and math.isnan(hi)):
        return "(anchor)"
    return f"[{number(lo)}, {number(hi)}]"


def answers(ranking: Ranking) -> list[Answer]:
    """One :class:`Answer` per board of :func:`shown_boards`."""
    lb, out = ranking.leaderboard, []
    for key in shown_boards(lb):
        rows = _board(lb, key).to_dicts()
        if not rows:
            continue
        top = rows[0]
        tied = tuple(r["model"] for r in rows[1:] if r["rank_lo"] == 1)
        out.append(Answer(*key, top["model"], number(top["rating"]),
                          interval(top["lo"], top["hi"]), tied))  # fmt: skip
    return out


#: the board table's columns (``style`` and ``LC win rate`` only where computed)
BOARD_HEAD = ["model", "rating", "95% interval", "rank set", "win rate vs anchor",
              "style-controlled", "LC win rate", "n"]  # fmt: skip


def board_table(ranking: Ranking, key: tuple) -> tuple[list[str], list[list[str]]]:
    """One board as text: the :data:`BOARD_HEAD` columns it has and a row per model (by
    rating, best first). ``rank set``: ``rank_lo–rank_hi`` (one number when equal);
    ``win rate vs anchor``: the fitted probability of beating the anchor;
    ``style-controlled``: the style-controlled rating (``--style``); ``LC win rate``: the
    length-controlled win rate against the anchor (``--style``); ``n``: decided comparisons."""
    rows = _board(ranking.leaderboard, key)
    on = dict(zip(_KEYS, key))
    style = (
        ranking.style.filter(*(pl.col(c) == x for c, x in on.items())).select(
            model="term", style="rating"
        )
        if ranking.style is not None
        else None
    )
    length = (
        ranking.length.filter(*(pl.col(c) == x for c, x in on.items())).select(
            "model", "lc_win_rate"
        )
        if ranking.length is not None
        else None
    )
    has_style = style is not None and style.height > 0
    has_lc = length is not None and length.height > 0
    if has_style:
        rows = rows.join(style, on="model", how="left", maintain_order="left")
    if has_lc:
        rows = rows.join(length, on="model", how="left", maintain_order="left")
    head = [
        h
        for h in BOARD_HEAD
        if (h != "style-controlled" or has_style) and (h != "LC win rate" or has_lc)
    ]
    body = []
    for r in rows.iter_rows(named=True):
        ranks = (
            str(r["rank_lo"])
            if r["rank_lo"] == r["rank_hi"]
            else f"{r['rank_lo']}–{r['rank_hi']}"
        )
        row = [r["model"], number(r["rating"]), interval(r["lo"], r["hi"]), ranks,
               number(r["win_rate"], 3)]  # fmt: skip
        if has_style:
            row.append(number(r.get("style")))
        if has_lc:
            row.append(number(r.get("lc_win_rate"), 3))
        body.append([*row, f"{r['n']:,}"])
    return head, body
