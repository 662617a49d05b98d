"""The people's boards and selective judges in files (``voirdire people``): the tables as
CSV and Parquet, a Markdown section, one figure per (benchmark, judge), the terminal table.

The report (``report.html``, ``report.md``) shows the same section, read back from these
files (:mod:`voirdire.analysis.report.people_files`, :mod:`voirdire.analysis.report.people_section`):
:func:`people_markdown` takes a :class:`~voirdire.analysis.report.people_files.PeopleTables`,
which a fresh study and the files both give. Text from received files (judge, model and
benchmark names) is escaped where it is shown, by :mod:`voirdire.escape`
(:func:`~voirdire.escape.markdown` in the Markdown, :func:`~voirdire.escape.cell` in the
terminal's table).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from voirdire.analysis.people.study import PeopleStudy
from voirdire.analysis.report.files import file_part, write_csv, write_text
from voirdire.analysis.report.people_files import (
    PeopleTables,
    few_labels,
    judge_summary,
    people_tables,
    settings_table,
)
from voirdire.escape import cell, markdown, markdown_code
from voirdire.file_set import FileSet
from voirdire.layout import PEOPLE_MANIFEST

__all__ = ["PEOPLE_FILES", "people_markdown", "people_figure", "write_people", "print_people"]  # fmt: skip

#: the files :func:`write_people` writes at the top of the directory (metrics/*.csv and
#: figures/*.png besides)
PEOPLE_FILES = ("people.md", "people_pairs.parquet", "people_to_label.csv")


def _f(v: object, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{nd}f}" if isinstance(v, float) else str(v)


def _board_table(boards: pl.DataFrame, kind: str) -> list[str]:
    """Markdown rows: per model the three estimators' estimate [lo, hi] and rank set."""
    b = boards.filter(pl.col("kind") == kind)
    value = "rating" if kind == "bt" else "estimate"
    lo, hi = ("rating_lo", "rating_hi") if kind == "bt" else ("lo", "hi")
    nd = 0 if kind == "bt" else 3
    out = ["| model | PPI++ | ranks | labels only | ranks | judge only | ranks | labels | λ | effective labels |",
           "|---|---|---|---|---|---|---|---:|---:|---:|"]  # fmt: skip
    ppi = b.filter(pl.col("estimator") == "ppi").sort("rank", "model")
    for r in ppi.iter_rows(named=True):
        cells = [markdown(r["model"])]
        for e in ("ppi", "classical", "judge"):
            x = b.filter(
                (pl.col("estimator") == e) & (pl.col("model") == r["model"])
            ).row(0, named=True)
            cells += [f"{_f(x[value], nd)} [{_f(x[lo], nd)}, {_f(x[hi], nd)}]", f"{x['rank']} [{x['rank_lo']}–{x['rank_hi']}]"]  # fmt: skip
        cells += [str(r["n_labels"]), _f(r["lam"], 2), _f(r["n_eff"], 0)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def people_markdown(tables: PeopleTables, figures: dict[str, str] | None = None) -> str:
    """The section "Human boards from a few labels" (module docstring) as Markdown: the
    three boards side by side per (benchmark, judge), the selective judges, the cascade.

    Args:
        tables: :func:`~voirdire.analysis.report.people_files.people_tables` of a study, or
            :func:`~voirdire.analysis.report.people_files.read_people` of its files.
            Its ``figures`` are shown under the settings.
    """
    s = tables.settings
    lines = [
        "## Human boards from a few labels",
        "",
        f"Labels used: {s['labels']} pairs; intervals and rank sets at {s['level']:.0%} (PPI++, Angelopoulos et al. "
        "2023; rank sets, Chatzi et al. 2024); selective judges keep verdicts whose agreement with people is "
        f"at least {1 - s['alpha']:g} with probability at least {1 - s['delta']:g} (fixed-sequence testing, Jung "
        f"et al. 2025; confidence: {markdown(s['confidence'])}). The judge-only columns are what the judge's own "
        "board claims: their intervals ignore its errors. `docs/people.md` explains every column.",
        "",
        _unit_line(s.get("unit")),
    ]  # fmt: skip
    if tables.source:
        lines += ["", f"From `voirdire people`'s files in {markdown_code(tables.source + '/')}."]  # fmt: skip
    for caption, path in tables.figures.items():
        lines += ["", f"![{markdown(caption)}]({path})"]
    few = {(b, j): text for b, j, text in few_labels(tables)}
    for (bench, judge), g in tables.boards.group_by(
        "benchmark", "judge", maintain_order=True
    ):
        lines += ["", f"### {markdown(bench)} / {markdown(judge)}", ""]
        if (bench, judge) in few:
            lines += [f"**Few labels.** {markdown(few[bench, judge])}.", ""]
        lines += ["Win rates (ties half):", ""]
        lines += _board_table(g, "win_rate")
        if g.filter(pl.col("kind") == "bt").height:
            lines += ["", "Bradley–Terry ratings (Arena scale):", ""]
            lines += _board_table(g, "bt")
    lines += ["", "### Selective judges", "",
              "| benchmark | judge | labels | threshold | share kept | agreement on the labelled pairs kept (calibration) | agreement on all labelled |",
              "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in tables.selective.iter_rows(named=True):
        lines.append(f"| {markdown(r['benchmark'])} | {markdown(r['judge'])} | {r['labels']} | {_f(r['threshold'], 3)} | "
                     f"{_f(r['share_kept'])} | {_f(r['agreement_labelled'])} | {_f(r['agreement_all_labelled'])} |")  # fmt: skip
    if tables.selective.height:
        g = tables.selective.row(0, named=True).get("guarantee")
        if g:
            lines += ["", f"The guarantee: {markdown(g)}. The agreement on the labelled pairs kept is the "
                      "calibration slice the threshold was chosen on: optimistic, not the guaranteed quantity."]  # fmt: skip
        for r in tables.selective.filter(pl.col("note").is_not_null()).iter_rows(
            named=True
        ):
            lines.append(
                f"- {markdown(r['benchmark'])} / {markdown(r['judge'])}: {markdown(r['note'])}"
            )
    lines += ["", "### Cascade (cheapest first, then people)", "",
              "| benchmark | stage | judge | threshold | reached | kept | share kept | USD | queries |",
              "|---|---:|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in tables.cascade.iter_rows(named=True):
        lines.append(f"| {markdown(r['benchmark'])} | {r['stage']} | {markdown(r['judge'])} | {_f(r['threshold'])} | {r['reached']} | "
                     f"{r['kept']} | {_f(r['share_kept'])} | {_f(r['cost_usd'], 4)} | {_f(r['queries'], 0)} |")  # fmt: skip
    lines += ["", f"Pairs to send to people: {tables.to_label} (`people_to_label.csv`).", ""]  # fmt: skip
    return "\n".join(lines)


def people_figure(
    boards: pl.DataFrame,
    curve: pl.DataFrame,
    path: str | os.PathLike,
    title: str,
    target: float | None = None,
) -> Path:
    """One (benchmark, judge)'s figure: its win rates by the three estimators side by side
    (a marker and the interval per model) and the selective-judging curve (agreement with
    people against the share of labelled pairs kept, certified thresholds filled). PNG at
    ``path``."""  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from voirdire.analysis.report.plotting import LITERAL, literal_texts

    b = boards.filter(pl.col("kind") == "win_rate")
    order = b.filter(pl.col("estimator") == "ppi").sort("estimate")["model"].to_list()
    fig, (ax, cx) = plt.subplots(
        1, 2, figsize=(11, 0.4 * len(order) + 2.5), width_ratios=[3, 2]
    )
    for off, (e, colour) in zip(
        (-0.2, 0.0, 0.2),
        (("classical", "tab:gray"), ("ppi", "tab:blue"), ("judge", "tab:orange")),
    ):
        g = b.filter(pl.col("estimator") == e)
        for i, m in enumerate(order):
            x = g.filter(pl.col("model") == m).row(0, named=True)
            ax.errorbar(x["estimate"], i + off, xerr=[[x["estimate"] - x["lo"]], [x["hi"] - x["estimate"]]],
                        fmt="o", color=colour, label=e if i == 0 else None, ms=4, capsize=2)  # fmt: skip
    ax.set_yticks(range(len(order)), [m[:40] for m in order])
    ax.set_xlabel("win rate against human labels (ties half)")
    ax.legend(loc="lower right", fontsize=8)
    if curve.height:
        cx.plot(curve["share_kept"], curve["agreement"], "-", color="tab:blue")
        cert = curve.filter(pl.col("certified"))
        cx.plot(
            cert["share_kept"],
            cert["agreement"],
            "o",
            color="tab:blue",
            label="certified threshold",
        )
        cx.plot(curve.filter(~pl.col("certified"))["share_kept"], curve.filter(~pl.col("certified"))["agreement"],
                "o", mfc="white", color="tab:blue", label="not certified")  # fmt: skip
    if target is not None:
        cx.axhline(target, ls="--", color="gray", lw=1, label="agreement asked")
    if curve.height or target is not None:
        cx.legend(loc="lower left", fontsize=8)
    cx.set_xlabel("share of labelled pairs kept")
    cx.set_ylabel("agreement with people")
    fig.suptitle(title[:120], fontsize=10)
    literal_texts(fig)  # names drawn as written: no mathtext, no control characters
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with LITERAL:
        fig.tight_layout()
        fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write_people(
    study: PeopleStudy, out: str | os.PathLike, label_columns: list[str] | None = None
) -> dict[str, Path]:
    """Write ``metrics/people_boards.csv``, ``people_selective.csv``, ``people_curve.csv``,
    ``people_cascade.csv``, ``people_settings.csv`` (one row: what a report reads back,
    :mod:`~voirdire.analysis.report.people_files`), ``people_pairs.parquet`` (the pairs table), ``people_to_label.csv``
    (the pairs for people, in the labels' columns ``label_columns`` with an empty ``winner``;
    default ``benchmark, question_id, candidate, reference, winner``: what ``--labels`` and
    ``mitigate --reference`` read), ``people.md`` and ``figures/people_*.png`` under ``out``;
    returns the paths by name."""  # fmt: skip
    d = Path(out)
    # the old set's manifest removed first, each file staged then renamed, the manifest last
    with FileSet(d, PEOPLE_MANIFEST, "voirdire people") as s:
        paths = {}
        for name, table in (("boards", study.boards), ("selective", study.selective), ("curve", study.curve),
                            ("cascade", study.cascade), ("settings", settings_table(study.settings))):  # fmt: skip
            f = d / "metrics" / f"people_{name}.csv"
            paths[name] = s.add(write_csv(table, f))
        study.pairs.write_parquet(s.staged(d / "people_pairs.parquet"))
        paths["pairs"] = s.add(d / "people_pairs.parquet")
        cols = label_columns or [
            "benchmark",
            "question_id",
            "candidate",
            "reference",
            "winner",
        ]
        t = study.to_label
        to_label = t.select(
            [
                pl.col(c) if c in t.columns else pl.lit(None, dtype=pl.String).alias(c)
                for c in cols
            ]
        )
        paths["to_label"] = s.add(write_csv(to_label, d / "people_to_label.csv"))
        paths["markdown"] = s.add(
            write_text(
                d / "people.md",
                "# Human boards and selective judges\n\n"
                + "".join(f"{markdown(line)}.\n\n" for line in study.refused)
                + people_markdown(people_tables(study)),
            )
        )
        for n, ((bench, judge), g) in enumerate(
            study.boards.group_by("benchmark", "judge", maintain_order=True)
        ):
            c = study.curve.filter(
                (pl.col("benchmark") == bench) & (pl.col("judge") == judge)
            )
            f = (
                d
                / "figures"
                / f"people_{n:02d}_{file_part(bench)}_{file_part(judge)}.png"
            )
            people_figure(
                g, c, s.staged(f), f"{bench} / {judge}", 1 - study.settings["alpha"]
            )
            paths[f"figure:{bench}/{judge}"] = s.add(f)
    paths["manifest"] = s.written  # the set, last
    return paths


def _unit_line(unit: str | None) -> str:
    """What the intervals are about, by their resampling unit."""
    if unit == "pair":
        return ("Intervals treat the pairs as independent (`--unit pair`): pairs sharing a question make them "
                "too narrow for a study with new questions.")  # fmt: skip
    return ("Intervals are clustered by question (`--unit question`): they are about human preference on "
            "questions drawn like these, the pairs of one question resampled together.")  # fmt: skip


def print_people(study: PeopleStudy, console: Console | None = None) -> None:
    """The terminal summary: per (benchmark, judge) the PPI++ board's interval widths
    against labels alone, its effective labels, and the selective judge."""
    console = console or Console(highlight=False)
    for line in study.refused:  # one line per benchmark of anonymous answers
        console.print(cell(line) + ".", soft_wrap=True)
    t = Table(title="Human boards from a few labels (docs/people.md)")
    for c in ("benchmark", "judge", "labels", "width PPI++ / labels alone", "effective labels", "kept", "agreement, labelled kept"):  # fmt: skip
        t.add_column(c, justify="left" if c in ("benchmark", "judge") else "right")
    for r in judge_summary(people_tables(study)).iter_rows(named=True):
        t.add_row(cell(r["benchmark"]), cell(r["judge"]), str(r["labels"]), _f(r["width_ratio"], 2), _f(r["n_eff"], 0),
                  _f(r["share_kept"]), _f(r["agreement_labelled"]))  # fmt: skip
    console.print(t)
    for *_, text in few_labels(people_tables(study)):
        console.print(cell(text) + ".", soft_wrap=True)
