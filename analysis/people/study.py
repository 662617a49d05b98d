"""One call from judgments and human labels to human boards and selective judges
(``voirdire people``; ``docs/people.md``).

Every refusal is one :class:`~voirdire.core.ConfigError` line raised before any estimate:
labels on pairs a judge never judged; fewer labels than the agreement guarantee can use
(:func:`~voirdire.analysis.people.selective.min_labels`); a model with fewer than
:data:`MIN_MODEL_LABELS` labelled pairs (no interval); an unknown judge in the cascade.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from voirdire.analysis.people.boards import BOARD_COLUMNS, UNITS, people_boards
from voirdire.analysis.people.cascade import CASCADE_COLUMNS, HUMAN, run_cascade
from voirdire.analysis.people.pairs import (
    LABELLED_KEYS,
    check_labels,
    hide,
    judge_pairs,
    with_confidence,
    with_labels,
)
from voirdire.analysis.people.selective import (
    CURVE_COLUMNS,
    LOW_SHARE,
    certifiable_agreement,
    labels_needed,
    min_labels,
    selective_curve,
)
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

__all__ = [
    "MIN_MODEL_LABELS",
    "PeopleStudy",
    "SELECTIVE_COLUMNS",
    "check_settings",
    "people_study",
]

#: the fewest labelled pairs a model needs for an interval (a variance needs two)
MIN_MODEL_LABELS = 2
SELECTIVE_COLUMNS = [
    "benchmark", "judge", "confidence", "pairs", "labels", "alpha", "delta", "target_agreement", "threshold",
    "share_kept", "kept", "agreement_labelled", "agreement_all_labelled", "kept_unlabelled", "guarantee",
    "certifiable_agreement", "labels_needed", "note",
]  # fmt: skip


@dataclass
class PeopleStudy:
    """What :func:`people_study` computes.

    Attributes:
        pairs: per (benchmark, judge, pair) the :mod:`~voirdire.analysis.people.pairs`
            columns plus ``kept`` (bool: the judge alone keeps its verdict).
        boards: ``benchmark``, ``judge`` and :data:`~voirdire.analysis.people.boards.BOARD_COLUMNS`.
        selective: :data:`SELECTIVE_COLUMNS`, per (benchmark, judge): the judge alone as a
            selective judge (``threshold`` null: it keeps nothing; ``agreement_labelled`` on
            the labelled pairs it keeps: the calibration slice, not what the guarantee is
            about, and optimistic; ``agreement_all_labelled`` on all labelled pairs;
            ``kept_unlabelled`` the unlabelled pairs it keeps; ``guarantee`` (str) what is
            guaranteed: agreement ≥ 1 − α on the pairs it keeps *without a label*, with
            probability ≥ 1 − δ; where it keeps less than :data:`~voirdire.analysis.people.selective.LOW_SHARE`:
            ``certifiable_agreement`` (the highest agreement it certifies keeping that
            share, :func:`~voirdire.analysis.people.selective.certifiable_agreement`),
            ``labels_needed`` (about how many labels would certify 1 − α there,
            :func:`~voirdire.analysis.people.selective.labels_needed`; null: none would) and
            ``note`` (str, the two in words); null otherwise).
        curve: ``benchmark``, ``judge`` and :data:`~voirdire.analysis.people.selective.CURVE_COLUMNS`.
        cascade: :data:`~voirdire.analysis.people.cascade.CASCADE_COLUMNS` per benchmark.
        to_label: the pairs no judge of the cascade keeps and people have not labelled:
            ``benchmark``, ``question_id``, ``candidate``, ``reference``.
        settings: the settings used (level, alpha, delta, confidence, labels, share, rows, seed).
        refused: one line per benchmark whose pairs are two anonymous answers (LLMBar's
            ``output_1``/``output_2``): no board is built for it, as ``voirdire rank``
            refuses it (:func:`anonymous_line`); its selective judges are computed.
    """

    pairs: pl.DataFrame
    boards: pl.DataFrame
    selective: pl.DataFrame
    curve: pl.DataFrame
    cascade: pl.DataFrame
    to_label: pl.DataFrame
    settings: dict = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def anonymous_line(benchmark: str) -> str:
    """The one line saying why a benchmark has no human board."""
    return (
        f"{benchmark}: no human board: its pairs are two anonymous answers, not named models "
        "(as voirdire rank refuses them); its selective judges are computed"
    )


def _with_clusters(pairs: pl.DataFrame, clusters: pl.DataFrame | None) -> pl.DataFrame:
    """``pairs`` with ``cluster`` (str): the question each pair's ``question_id`` belongs to
    (``clusters``' where it lists it, else the ``question_id`` itself)."""
    if clusters is None or clusters.height == 0:
        return pairs.with_columns(cluster=pl.col("question_id"))
    c = clusters.select("benchmark", "question_id", cluster="cluster").unique(
        ["benchmark", "question_id"]
    )
    return pairs.join(c, on=["benchmark", "question_id"], how="left", maintain_order="left").with_columns(
        cluster=pl.coalesce("cluster", "question_id")
    )  # fmt: skip


def _low_share(
    lab: pl.DataFrame, share: float | None, alpha: float, delta: float
) -> dict:
    """``certifiable_agreement``, ``labels_needed`` and ``note`` for a judge keeping less than
    :data:`LOW_SHARE` of the pairs (all null otherwise)."""
    if share is not None and share >= LOW_SHARE:
        return {"certifiable_agreement": None, "labels_needed": None, "note": None}
    conf, agree = lab["confidence"].to_numpy(), lab["agree"].to_numpy()
    cert = certifiable_agreement(conf, agree, delta, LOW_SHARE)
    need = labels_needed(conf, agree, alpha, delta, LOW_SHARE)
    kept = f"keeps {100 * (share or 0):.1f} % of the pairs (< {100 * LOW_SHARE:g} %)"
    can = (
        f"keeping {100 * LOW_SHARE:g} % it can certify agreement >= {cert:.2f}"
        if cert is not None
        else f"no agreement can be certified keeping {100 * LOW_SHARE:g} %"
    )
    more = (
        f"about {need} labels would certify {1 - alpha:g} there if its agreement on them held"
        if need is not None
        else f"its most confident {100 * LOW_SHARE:g} % agree with people less than {1 - alpha:g}: more labels would not help"
    )
    return {"certifiable_agreement": cert, "labels_needed": need, "note": f"{kept}; {can}; {more}"}  # fmt: skip


def _named(benchmark: str) -> bool:
    cls = BENCHMARKS.find(benchmark)
    return cls is None or cls.named_models


def _auto_confidence(pairs: pl.DataFrame) -> str:
    """``orders`` where judges have several verdicts per pair, ``jury`` where a benchmark
    has several judges, both joined by ``+``; ``orders`` when neither (one verdict per pair:
    a constant confidence, the judge keeps every pair or none)."""
    parts = []
    if pairs["votes"].mean() >= 1.5:
        parts.append("orders")
    if pairs.group_by("benchmark").agg(k=pl.col("judge").n_unique())["k"].min() >= 2:
        parts.append("jury")
    return "+".join(parts) or "orders"


def _check_counts(
    pairs: pl.DataFrame, alpha: float, delta: float, need_models: bool
) -> None:
    """Enough labels for the guarantee and for every model's interval (module docstring)."""
    need = min_labels(alpha, delta)
    lab = pairs.filter(pl.col("label").is_not_null())
    for (bench, judge), g in pairs.group_by("benchmark", "judge", maintain_order=True):
        n = lab.filter(
            (pl.col("benchmark") == bench) & (pl.col("judge") == judge)
        ).height
        if n < need:
            raise ConfigError(
                f"{bench} / {judge}: {n} labelled pair(s) cannot certify agreement >= {1 - alpha:g} with "
                f"probability >= {1 - delta:g}: at least {need} needed (label more pairs or raise alpha or delta)"
            )
        if not need_models:
            continue
        mine = lab.filter((pl.col("benchmark") == bench) & (pl.col("judge") == judge))
        per = (
            pl.concat([mine.select(m="candidate"), mine.select(m="reference")])
            .group_by("m")
            .len()
        )
        models = set(g["candidate"]) | set(g["reference"])
        counts = {m: 0 for m in models} | dict(per.iter_rows())
        few = sorted((c, m) for m, c in counts.items() if c < MIN_MODEL_LABELS)
        if few:
            c, m = few[0]
            raise ConfigError(
                f"{bench} / {judge}: model {m!r} has {c} labelled pair(s); an interval needs at least "
                f"{MIN_MODEL_LABELS} (label more pairs)"
            )


def _costs(
    judgments: pl.DataFrame, pairs: pl.DataFrame
) -> dict[str, tuple[float | None, float]]:
    """judge -> (mean USD per pair or None, mean queries per pair)."""
    n = pairs.group_by("judge").agg(pairs=pl.len(), queries=pl.col("votes").mean())
    usd = (
        judgments.group_by("judge").agg(usd=pl.col("cost_usd").sum(), known=pl.col("cost_usd").is_not_null().any())
        if "cost_usd" in judgments.columns
        else pl.DataFrame({"judge": [], "usd": [], "known": []}, schema={"judge": pl.String, "usd": pl.Float64, "known": pl.Boolean})
    )  # fmt: skip
    t = n.join(usd, on="judge", how="left")
    return {
        j: ((u / p) if k else None, q)
        for j, p, q, u, k in t.select(
            "judge", "pairs", "queries", "usd", "known"
        ).iter_rows()
    }


def _order(judges: list[str], costs: dict, cascade: Sequence[str] | None) -> list[str]:
    if cascade:
        unknown = [j for j in cascade if j not in judges]
        if unknown:
            raise ConfigError(
                f"cascade judge {unknown[0]!r} is not a judge of these judgments; judges: {', '.join(judges)}"
            )
        return list(dict.fromkeys(cascade))
    return sorted(judges, key=lambda j: (costs[j][0] is None, costs[j][0] or 0.0, j))


def check_settings(
    *, level: float, alpha: float, delta: float, share: float | None, rows: int | None
) -> None:
    """The settings alone, before any data is read.

    Raises:
        ConfigError: a level, alpha or delta outside (0, 1); a share outside (0, 1]; rows
            below 1; both a share and rows.
    """
    for name, v in (("level", level), ("alpha", alpha), ("delta", delta)):
        if not 0.0 < v < 1.0:
            raise ConfigError(f"{name} must be in (0, 1), not {v}")
    if share is not None and rows is not None:
        raise ConfigError(
            "give the labelled share or the number of labelled rows, not both"
        )
    if share is not None and not 0.0 < share <= 1.0:
        raise ConfigError(f"labelled share must be in (0, 1], not {share}")
    if rows is not None and rows < 1:
        raise ConfigError(f"labelled rows must be at least 1, not {rows}")


def _check_anchor(
    pairs: pl.DataFrame, named: dict[str, bool], anchor: str | None
) -> None:
    """Raises ConfigError: ``anchor`` is not a model of a benchmark with named models."""
    if anchor is None:
        return
    for b in (b for b, ok in named.items() if ok):
        here = pairs.filter(pl.col("benchmark") == b)
        if anchor not in set(here["candidate"]) | set(here["reference"]):
            raise ConfigError(f"anchor {anchor!r} is not a model of {b}")


def _cascades(
    pairs: pl.DataFrame,
    benchmarks: Sequence[str],
    costs: dict,
    cascade: Sequence[str] | None,
    alpha: float,
    delta: float,
) -> tuple[list[pl.DataFrame], list[pl.DataFrame]]:
    """Per benchmark the cascade's stages (:func:`run_cascade`, judges in ``cascade``'s
    order or by cost) and the unlabelled pairs it routes to people (``LABELLED_KEYS``)."""
    stages, routed = [], []
    for bench in benchmarks:
        here = pairs.filter(pl.col("benchmark") == bench)
        judges = set(here["judge"])
        order = [j for j in _order(sorted(judges), costs, cascade) if j in judges]
        st, r = run_cascade(here, order, alpha=alpha, delta=delta, costs=costs)
        stages.append(st)
        to_people = (pl.col("decided_by") == HUMAN) & pl.col("label").is_null()
        routed.append(r.filter(to_people).select(LABELLED_KEYS))
    return stages, routed


def people_study(
    judgments: pl.DataFrame,
    labels: pl.DataFrame,
    *,
    share: float | None = None,
    rows: int | None = None,
    level: float = 0.9,
    alpha: float = 0.1,
    delta: float = 0.1,
    confidence: str = "auto",
    cascade: Sequence[str] | None = None,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    seed: int = 0,
    unit: str = "question",
    clusters: pl.DataFrame | None = None,
) -> PeopleStudy:
    """Human boards (PPI++, labels alone, the judge alone), rank sets, selective judges
    and their cascade from ``judgments`` and the human ``labels``.

    Args:
        judgments: ``JUDGMENT_SCHEMA`` rows (pairwise control rows are read).
        labels: a grading table (:data:`~voirdire.analysis.mitigation.grading.GRADING_COLUMNS`).
        share, rows: keep a random share or number of the labels (:func:`~voirdire.analysis.people.pairs.hide`,
            ``seed``): what a study with that many labels would get.
        level: the intervals' and rank sets' coverage; alpha, delta: agreement ≥ 1 − α on the
            kept pairs with probability ≥ 1 − δ.
        confidence: :func:`~voirdire.analysis.people.pairs.with_confidence`'s source, or
            ``auto`` (orders where judges have several verdicts per pair, jury where several judges).
        cascade: judge names in the cascade's order (default: by USD per pair, then name).
        anchor, anchor_rating: the board's fixed model and its rating.
        unit: the intervals' resampling unit (:data:`~voirdire.analysis.people.boards.UNITS`):
            ``question`` (default) clusters the variances by question, ``pair`` does not.
        clusters: the questions a benchmark declares (``benchmark``, ``question_id``,
            ``cluster``: :func:`~voirdire.analysis.position.clusters.benchmark_clusters`,
            e.g. PandaLM's items grouped by instruction); a question it does not list is its
            own (the ``question_id``).

    Raises:
        ConfigError: module docstring; a level, alpha or delta outside (0, 1); an unknown unit.
    """
    check_settings(level=level, alpha=alpha, delta=delta, share=share, rows=rows)
    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    labels = hide(labels, share=share, rows=rows, seed=seed)
    pairs = judge_pairs(judgments)
    check_labels(pairs, labels)
    pairs = with_labels(pairs, labels)
    pairs = _with_clusters(pairs, clusters)
    named, anonymous = _checked(pairs, alpha, delta, anchor)
    source = _auto_confidence(pairs) if confidence == "auto" else confidence
    pairs = with_confidence(pairs, judgments, source)
    costs = _costs(judgments, pairs)
    boards, sel, curves, kept = [], [], [], []
    for (bench, judge), g in pairs.group_by("benchmark", "judge", maintain_order=True):
        who = {"benchmark": bench, "judge": judge}
        if named[bench]:  # anonymous answers (output_1/output_2): no board (`refused`)
            boards.append(people_boards(g, level=level, anchor=anchor, anchor_rating=anchor_rating,
                                        board=True, unit=unit).with_columns(**{k: pl.lit(v) for k, v in who.items()}))  # fmt: skip
        lab = g.filter(pl.col("label").is_not_null())
        curves.append(selective_curve(lab["confidence"].to_numpy(), lab["agree"].to_numpy(), alpha, delta)
                      .with_columns(**{k: pl.lit(v) for k, v in who.items()}))  # fmt: skip
        one, r = run_cascade(g, [judge], alpha=alpha, delta=delta, costs=costs)
        st = one.row(0, named=True)
        kept.append(
            r.filter(pl.col("decided_by") == judge).select(
                *LABELLED_KEYS, judge=pl.lit(judge), kept=pl.lit(True)
            )
        )
        sel.append({**who, **_low_share(lab, st["share_kept"], alpha, delta),
                    "kept_unlabelled": st["kept"] - (st["labelled_kept"] or 0),
                    "guarantee": f"agreement >= {1 - alpha:g} on the unlabelled pairs kept, with probability >= {1 - delta:g}",
                    "confidence": source, "pairs": g.height, "labels": lab.height, "alpha": alpha,
                    "delta": delta, "target_agreement": 1 - alpha, "threshold": st["threshold"],
                    "share_kept": st["share_kept"], "kept": st["kept"], "agreement_labelled": st["agreement_labelled"],
                    "agreement_all_labelled": lab["agree"].mean()})  # fmt: skip
    stages, routed = _cascades(pairs, sorted(named), costs, cascade, alpha, delta)
    pairs = pairs.join(
        pl.concat(kept), on=[*LABELLED_KEYS, "judge"], how="left"
    ).with_columns(kept=pl.col("kept").fill_null(False))
    front = ["benchmark", "judge"]
    return PeopleStudy(
        pairs=pairs,
        boards=_boards_table(boards),
        selective=pl.DataFrame(sel, infer_schema_length=None).select(SELECTIVE_COLUMNS),
        curve=pl.concat(curves, how="vertical_relaxed").select(*front, *CURVE_COLUMNS),
        cascade=pl.concat(stages, how="vertical_relaxed").select(CASCADE_COLUMNS),
        to_label=pl.concat(routed).sort(LABELLED_KEYS),
        settings={"level": level, "alpha": alpha, "delta": delta, "confidence": source, "share": share,
                  "rows": rows, "seed": seed, "labels": labels.height, "unit": unit},
        refused=[anonymous_line(b) for b in anonymous],
    )  # fmt: skip


def _checked(
    pairs: pl.DataFrame, alpha: float, delta: float, anchor: str | None
) -> tuple[dict[str, bool], list[str]]:
    """The labels' counts and the anchor checked (:func:`_check_counts`: every model's
    interval only where the benchmark's models are named); returns whether each benchmark's
    models are named, and the benchmarks of anonymous answers, sorted."""
    named = {b: _named(b) for b in pairs["benchmark"].unique().to_list()}
    anonymous = sorted(b for b, ok in named.items() if not ok)
    is_named = pl.col("benchmark").is_in(anonymous).not_()
    _check_counts(pairs.filter(is_named), alpha, delta, need_models=True)
    _check_counts(pairs.filter(~is_named), alpha, delta, need_models=False)
    _check_anchor(pairs, named, anchor)
    return named, anonymous


def _boards_table(boards: list[pl.DataFrame]) -> pl.DataFrame:
    """The boards built, one table (typed as a built one when none was: every benchmark
    anonymous)."""
    front = ["benchmark", "judge"]
    if boards:
        return pl.concat(boards, how="vertical_relaxed").select(*front, *BOARD_COLUMNS)
    text = {"benchmark", "judge", "kind", "estimator", "model"}
    whole = {"rank", "rank_lo", "rank_hi", "n_labels", "n_pairs"}
    return pl.DataFrame(
        schema={
            c: pl.String if c in text else pl.Int64 if c in whole else pl.Float64
            for c in (*front, *BOARD_COLUMNS)
        }
    )
