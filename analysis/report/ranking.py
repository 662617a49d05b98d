"""The leaderboards of ``voirdire rank`` and of the report: the answer lines and sorted
boards (:mod:`~voirdire.analysis.report.leaderboard`) on the terminal, in Markdown and in
HTML (the report's page style, an interactive figure per judge,
:mod:`~voirdire.analysis.report.ranking_charts`, a model search), the rank flips' table, a
static figure per judge, and their files (:func:`write_ranking`:
``metrics/leaderboard.csv``, ``metrics/rank_flips.csv``,
``figures/ranking_<benchmark>_<judge>.png``, ``ranking.md``, ``ranking.html``;
``docs/ranking.md``). Computes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
from markupsafe import Markup
from rich.console import Console
from rich.table import Table

from voirdire.analysis.ranking.bt import CLIP, SCALE
from voirdire.analysis.ranking.gold import GOLD
from voirdire.analysis.ranking.rank import Ranking
from voirdire.analysis.report.files import file_part, write_csv, write_html, write_text
from voirdire.analysis.report.leaderboard import (
    BOARD_ROWS,
    answers,
    board_table,
    shown_boards,
    table_boards,
    view_title,
)
from voirdire.analysis.report.plotting import _save, plt
from voirdire.analysis.report.vega import MAX_LEGEND, vega_bundle
from voirdire.analysis.report.views import render_template, table_view
from voirdire.escape import cell, markdown, visible
from voirdire.file_set import FileSet
from voirdire.layout import RANKING_MANIFEST

__all__ = [
    "VIEW_ORDER",
    "ranking_figure",
    "print_ranking",
    "print_boards",
    "board_specs",
    "ranking_markdown",
    "ranking_html",
    "write_ranking",
]

#: the views left to right in the figure: raw orders, then each strategy's
VIEW_ORDER = ("first", "swapped", "pooled", "combined", GOLD)


def _boards(lb: pl.DataFrame) -> list[tuple[str, str]]:
    keys = lb.select("strategy", "view").unique().rows()
    order = {v: i for i, v in enumerate(VIEW_ORDER)}
    return sorted(keys, key=lambda k: (k[0] != "single", k[0], order.get(k[1], 9)))


def ranking_figure(lb: pl.DataFrame, path: str | os.PathLike, title: str = "") -> Path:
    """Ratings with their intervals, one column per board (strategy · view) of one judge
    (and the gold board when ``lb`` holds it), a line joining each model across columns.
    Drawn as a few collections whatever the number of models (points, bars, caps, lines);
    the legend names at most :data:`~voirdire.analysis.report.vega.MAX_LEGEND` models (the
    highest by mean rating; its title says of how many: every model is in
    ``metrics/leaderboard.csv``).

    Args:
        lb: leaderboard rows (:data:`~voirdire.analysis.ranking.boards.LEADERBOARD_COLUMNS`)
            of one benchmark and judge (plus the gold board, :data:`GOLD`).
        path: the PNG written (folder created).
        title: the figure's title.

    Returns:
        ``path``.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    boards = _boards(lb)
    models = (
        lb.group_by("model")
        .agg(pl.col("rating").mean())
        .sort(["rating", "model"], descending=[True, False])  # ties: by name, every run
        .get_column("model")
        .to_list()
    )
    fig, ax = plt.subplots(
        figsize=(1.2 + 1.1 * len(boards), 0.5 + 0.22 * len(models) + 2)
    )
    cmap = plt.get_cmap("tab20")
    colour = np.array([cmap(i % 20) for i in range(max(len(models), 1))])
    column = pl.DataFrame(
        {"strategy": [b[0] for b in boards], "view": [b[1] for b in boards],
         "x": np.arange(len(boards), dtype=np.int64)},
        schema={"strategy": lb.schema["strategy"], "view": lb.schema["view"], "x": pl.Int64},
    )  # fmt: skip
    order = pl.DataFrame(
        {"model": models, "mi": np.arange(len(models), dtype=np.int64)},
        schema={"model": lb.schema["model"], "mi": pl.Int64},
    )
    pts = (
        lb.select("model", "strategy", "view", "rating", "lo", "hi")
        .join(column, on=["strategy", "view"], how="left", maintain_order="left")
        .unique(["model", "x"], keep="first", maintain_order=True)  # the first of each
        .join(order, on="model", how="left", maintain_order="left")
        .sort("mi", "x")
    )
    mi, x = pts.get_column("mi").to_numpy(), pts.get_column("x").to_numpy()
    y = pts.get_column("rating").to_numpy().astype(float)
    # the anchor (NaN: fixed) and ends at the bound (±inf) get no bar there; a percentile
    # interval may leave out its own point estimate (few questions, a rating near the
    # bound): the bar then stops at the point on that side
    lo, hi = (pts.get_column(c).to_numpy().astype(float) for c in ("lo", "hi"))
    lo = np.minimum(np.where(np.isfinite(lo), lo, y), y)
    hi = np.maximum(np.where(np.isfinite(hi), hi, y), y)
    c = colour[mi] if len(mi) else np.zeros((0, 4))
    ax.vlines(x, lo, hi, colors=c, lw=0.8)
    ax.scatter(np.concatenate([x, x]), np.concatenate([lo, hi]), marker="_",
               s=16, c=np.concatenate([c, c]), linewidths=0.8)  # fmt: skip
    ax.scatter(x, y, s=9, c=c, zorder=3)
    starts = np.flatnonzero(np.r_[True, mi[1:] != mi[:-1]]) if len(mi) else []
    ends = np.r_[starts[1:], len(mi)] if len(mi) else []
    ax.add_collection(
        LineCollection(
            [np.column_stack([x[a:b], y[a:b]]) for a, b in zip(starts, ends)],
            colors=[colour[mi[a]] for a in starts],
            linewidths=0.7,
            alpha=0.7,
        )  # fmt: skip
    )
    ax.set_xlim(-0.5, len(boards) - 0.5)
    _limits(ax, lb, title)
    ax.set_xticks(range(len(boards)), [f"{s}\n{v}" for s, v in boards], fontsize=7)
    ax.set_ylabel("rating (Arena scale, 95% interval)")
    named = models[:MAX_LEGEND]
    more = len(models) - len(named)
    ax.legend(
        [Line2D([], [], color=colour[i], marker="o", ms=3, lw=0.7) for i in range(len(named))],
        named, fontsize=6, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5),
        frameon=False, title_fontsize=6,
        title=f"the {len(named)} highest of {len(models)} models" if more else None,
    )  # fmt: skip
    return _save(fig, path)


def _limits(ax, lb: pl.DataFrame, title: str) -> None:
    """Y limits from the models with a finite rating; a model that wins (or loses) every
    decided comparison has an infinite (or, not ordered against the anchor, no) rating and
    is left off scale, said in the title."""
    ok = lb.filter((pl.col("win_rate") > 1e-9) & (pl.col("win_rate") < 1 - 1e-9))
    if ok.height == 0:
        ax.set_title(title, fontsize=9)
        return
    r, w = ok.item(0, "rating"), ok.item(0, "win_rate")
    anchor = r - SCALE * float(np.log(w / (1 - w)))
    lo, hi = anchor - SCALE * (CLIP - 0.5), anchor + SCALE * (CLIP - 0.5)
    vals = np.concatenate([ok.get_column(c).to_numpy() for c in ("rating", "lo", "hi")])
    vals = vals[(vals > lo) & (vals < hi)]
    ax.set_ylim(vals.min() - 50, vals.max() + 50)
    off = lb.height - ok.height
    ax.set_title(
        title
        + (
            f"\n({off} ratings off scale: undefeated or winless, no finite rating)"
            if off
            else ""
        ),
        fontsize=9,
    )


def print_ranking(summary: pl.DataFrame, console: Console | None = None) -> None:
    """The terminal table: per (benchmark, judge, strategy) the rank flips order alone
    causes (first vs swapped; ``–`` for an order-invariant strategy), the mean flips of an
    order-blind judge, the p-value of any order effect, the family-wise significant flips, τ
    and τ against the gold board."""
    console = console or Console(highlight=False)
    t = Table(
        title="Leaderboards: rank flips between the first and swapped orders (docs/ranking.md)"
    )
    for c in (
        "benchmark",
        "judge",
        "strategy",
        "models",
        "flips",
        "order-blind",
        "p",
        "significant",
        "τ first/swapped",
        "τ gold",
    ):
        t.add_column(
            c, justify="left" if c in ("benchmark", "judge", "strategy") else "right"
        )
    for row in _rows(summary):
        t.add_row(*map(cell, row))  # names as written, never markup (voirdire.escape)
    console.print(t)


def lc_source_lines(length: pl.DataFrame) -> list[str]:
    """Per (benchmark, judge) of the raw pooled LC win rates (``metrics/lc_win_rate.csv``)
    with a v1 row, one rich-markup line naming the formulas and where v1's instruction
    difficulty came from (``release``: fitted once on the whole release; ``audited``: on
    the audited models); names escaped (:func:`~voirdire.escape.terminal`)."""
    from voirdire.escape import terminal

    raw = length.filter((pl.col("strategy") == "single") & (pl.col("view") == "pooled"))
    out = []
    for (b, j), g in raw.group_by("benchmark", "judge", maintain_order=True):
        if "v1" not in g.get_column("formula").to_list():
            continue
        parts = []
        for (f, d), h in g.group_by("formula", "difficulty", maintain_order=True):
            src = {"release": ", instruction difficulty fitted on the whole release",
                   "audited": ", instruction difficulty fitted on the audited models"}.get(d, "")  # fmt: skip
            parts.append(f"{h.height} models {f}{src}")
        out.append(f"LC win rate of {terminal(b)} / {terminal(j)}: " + "; ".join(parts))
    return out


def _rows(summary: pl.DataFrame) -> list[list[str]]:
    out = []
    for r in summary.iter_rows(named=True):

        def f(x, p="{:.3f}"):
            return "–" if x is None else p.format(x)

        out.append([r["benchmark"], r["judge"], r["strategy"], str(r["models"]), f(r["order_flips"], "{}"),
                    f(r.get("order_flips_null"), "{:.1f}"), f(r.get("order_flips_p")),
                    f(r["order_flips_significant"], "{}"), f(r["order_tau"]), f(r["gold_tau"])])  # fmt: skip
    return out


_HEAD = [
    "benchmark",
    "judge",
    "strategy",
    "models",
    "order flips",
    "order-blind flips",
    "p (any order effect)",
    "significant (family-wise)",
    "τ first/swapped",
    "τ gold",
]


def _answer_lines(ranking: Ranking, esc) -> list[str]:
    return [f"{esc(b)}: {esc(a)}" for b, a in (x.words() for x in answers(ranking))]


def print_boards(
    ranking: Ranking,
    console: Console | None = None,
    csv: str = "metrics/leaderboard.csv",
    rows: int = BOARD_ROWS,
) -> None:
    """The terminal's answer: one line per judge and order view (the top model, its rating
    and interval, the models tied with it), then each judge's pooled board (and the
    gold board) sorted by rating, at most ``rows`` rows (the rest: "… N more in ``csv``").
    Names are printed as text, never markup (:func:`voirdire.escape.cell`)."""
    console = console or Console(highlight=False)
    for line in _answer_lines(ranking, str):
        console.print(cell(line), soft_wrap=True)
    for key in table_boards(ranking.leaderboard):
        head, body = board_table(ranking, key)
        more = len(body) - rows
        t = Table(
            title=cell(f"{key[0]} · {view_title(*key[1:])}: the board by rating"),
            caption=cell(f"… {more} more in {csv}") if more > 0 else None,
        )
        for h in head:
            t.add_column(h, justify="left" if h == "model" else "right",
                         **({"overflow": "fold", "min_width": 14} if h == "model" else {"no_wrap": True}))  # fmt: skip
        for r in body[:rows]:
            t.add_row(*map(cell, r))
        console.print(t)


def ranking_markdown(ranking: Ranking, figures: dict[str, Path] | None = None) -> str:
    """The Markdown section: the answer lines, each judge's board (every row), the flips
    table and the figures' links; names Markdown-escaped."""
    lines = ["## Leaderboards", ""]
    lines += [f"- {line}" for line in _answer_lines(ranking, markdown)]
    for key in table_boards(ranking.leaderboard):
        head, body = board_table(ranking, key)
        lines += ["", f"### {markdown(key[0])} · {markdown(view_title(*key[1:]))}", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]  # fmt: skip
        lines += ["| " + " | ".join(markdown(c) for c in r) + " |" for r in body]
    lines += ["", "### Rank flips between the first and swapped orders", "",
              "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]  # fmt: skip
    lines += [  # benchmark, judge, strategy: names, escaped; the rest are figures
        "| " + " | ".join(markdown(c) if i < 3 else c for i, c in enumerate(r)) + " |"
        for r in _rows(ranking.summary())
    ]
    lines += ["", "Rank flips: model pairs ordered differently by the first-order and swapped-order leaderboards "
              "against an order-blind judge on the same verdicts (orders swapped at random within pairs): its mean flips, the "
              "permutation p-value of the count, and the flips significant with the family-wise error held at 5 % "
              "(max-T; flips with the reference against an order-blind judge, flips between candidates against one slot "
              "preference common to every model). See docs/ranking.md.", ""]  # fmt: skip
    for name, p in (figures or {}).items():
        lines.append(
            f"![{markdown(name)}]({p.name if p.parent.name != 'figures' else 'figures/' + p.name})"
        )
    return "\n".join(lines) + "\n"


def board_specs(ranking: Ranking) -> dict[str, dict]:
    """Per ``benchmark/judge`` the Vega-Lite specification of its leaderboard figure
    (:func:`~voirdire.analysis.report.ranking_charts.board_chart`: its order views and the
    gold board)."""
    from voirdire.analysis.report.ranking_charts import board_chart

    lb = ranking.leaderboard
    shown = shown_boards(lb)
    golds = [k for k in shown if k[1] == GOLD]
    out = {}
    for b, j in dict.fromkeys((k[0], k[1]) for k in shown if k[1] != GOLD):
        keys = [k for k in shown if k[:2] == (b, j)] + [k for k in golds if k[0] == b]
        views = [k[3] if k[1] != GOLD else GOLD for k in keys]
        parts = [lb.filter((pl.col("benchmark") == k[0]) & (pl.col("judge") == k[1]) & (pl.col("strategy") == k[2])
                           & (pl.col("view") == k[3])).with_columns(shown=pl.lit(v)) for k, v in zip(keys, views)]  # fmt: skip
        # the models sorted by the pooled view (else the judge's last)
        own = [v for k, v in zip(keys, views) if k[1] != GOLD]
        sort_by = "pooled" if "pooled" in own else own[-1]
        ordered = [v for v in views if v != sort_by] + [sort_by]
        out[f"{b}/{j}"] = board_chart(pl.concat(parts), ordered, f"{b} · {j}")
    return out


def ranking_html(ranking: Ranking, specs: dict[str, dict] | None = None) -> str:
    """The "Leaderboards" section (``templates/leaderboards.html.j2``; autoescaped, control
    characters as visible escapes, :func:`voirdire.escape.visible`): the
    answer lines, per judge its figure (``specs``: :func:`board_specs`) and its sorted
    board, the flips table. Figure ids ``lb1``, ``lb2``…: unique beside the report's."""
    specs = board_specs(ranking) if specs is None else specs
    boards = []
    for i, key in enumerate(table_boards(ranking.leaderboard), start=1):
        head, body = board_table(ranking, key)
        name = f"{key[0]}/{key[1]}"
        chart = (
            {"id": f"lb{i}", "spec": specs[name], "key": f"leaderboard:{name}"}
            if name in specs
            else None
        )
        boards.append({"title": visible(f"{key[0]} · {view_title(*key[1:])}"), "board": visible(view_title(*key[1:])),
                       "head": head, "rows": [[visible(c) for c in r] for r in body], "chart": chart})  # fmt: skip
    flips = [[visible(c) for c in r] for r in _rows(ranking.summary())]
    flips = table_view(pl.DataFrame(flips, schema=_HEAD, orient="row"))
    anchors = visible(
        ", ".join(f"{m} ({b})" for b, m in sorted(ranking.boards.anchors.items()))
    )
    return render_template(
        "leaderboards.html.j2",
        answers=[{"board": visible(b), "answer": visible(a)} for b, a in (x.words() for x in answers(ranking))],
        boards=boards, flips=flips, replicates=ranking.replicates, anchors=anchors,
    )  # fmt: skip


def write_ranking(
    ranking: Ranking, out: str | os.PathLike, into: FileSet | None = None
) -> dict[str, Path]:
    """Write the ranking's files under ``out`` (created) as one set
    (:mod:`voirdire.file_set`): into the set ``into`` (a report's) or, without it, its own,
    ``ranking_manifest.json`` written last.

    Returns:
        Paths by name: ``leaderboard``, ``rank_flips``, ``markdown``, ``html``, one
        ``figure:<benchmark>/<judge>`` per judge, ``style`` and ``lc_win_rate`` with
        ``--style``, and ``manifest`` when the set is its own.
    """
    out = Path(out)
    if into is None:
        with FileSet(out, RANKING_MANIFEST, "voirdire rank") as s:
            paths = write_ranking(ranking, out, into=s)
        return paths | {"manifest": s.written}
    s = into
    m = out / "metrics"
    paths = {
        "leaderboard": s.add(write_csv(ranking.leaderboard, m / "leaderboard.csv")),
        "rank_flips": s.add(write_csv(ranking.flips, m / "rank_flips.csv")),
    }
    if ranking.style is not None and ranking.length is not None:
        paths["style"] = s.add(write_csv(ranking.style, m / "leaderboard_style.csv"))
        paths["lc_win_rate"] = s.add(write_csv(ranking.length, m / "lc_win_rate.csv"))
    lb = ranking.leaderboard
    figs: dict[str, Path] = {}
    for (bench, judge), part in lb.filter(pl.col("judge") != GOLD).group_by(
        ["benchmark", "judge"], maintain_order=True
    ):
        rows = pl.concat(
            [
                part,
                lb.filter((pl.col("benchmark") == bench) & (pl.col("judge") == GOLD)),
            ]
        )
        f = out / "figures" / f"ranking_{file_part(bench)}_{file_part(judge)}.png"
        ranking_figure(rows, s.staged(f), title=f"{bench} · {judge}")
        figs[f"{bench}/{judge}"] = s.add(f)
    paths["markdown"] = s.add(
        write_text(out / "ranking.md", ranking_markdown(ranking, figs))
    )
    page = render_template(
        "ranking.html.j2", title="voirdire rank",
        section=Markup(ranking_html(ranking)), vega=Markup(vega_bundle()),
    )  # fmt: skip
    paths["html"] = s.add(write_html(out / "ranking.html", page))
    return paths | {f"figure:{k}": v for k, v in figs.items()}
