"""Removing position bias from finished judgments: strategies that need no new query.

Source: ``docs/mitigation.md`` (Wang et al., "Large Language Models are not Fair
Evaluators", 2023: conflict rate, HITLC/BPDE; MT-Bench's conservative swap rule, Zheng et
al. 2023; practitioners' dual-pass gate and flip rate; PriDe-style logprob calibration,
Zheng et al. 2023, and the jury are ours).

Verdict tables
--------------
Every strategy maps a judgments table (``voirdire.engine.schema.JUDGMENT_SCHEMA``) to a
*verdict table* (:data:`VERDICT_COLUMNS`), one row per final verdict:

==============  ============  ==========================================================
benchmark       str
judge           str           the judge's label, or the panel's name (``panel-N``)
question_id     str
task            str
candidate       str
reference       str
verdict         str           ``win`` | ``tie`` | ``loss`` | ``undecided``, from the
                              candidate's side
queries         int           judge queries spent on this final verdict
permutation     int | null    0: the candidate was shown first, 1: second; null when the
                              verdict combines both orders (order-invariant by design)
repetition      int           1-based (1 when the strategy has no repetitions)
==============  ============  ==========================================================

The first eight columns are required of any strategy (e.g. the score-based BPC/MEC);
:func:`conform` fills the last two (null, 1) when absent. A strategy is a function
``judgments -> verdict table`` registered by name (:func:`register_strategy`); the steps
below are ``verdict table -> verdict table`` and compose (:func:`pipeline`), e.g. a jury
per order followed by swap-and-tie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import polars as pl
from voirdire.analysis.metrics import PAIRWISE_MODES, pairwise_pairs
from voirdire.analysis.scores import strategy_verdicts as score_strategy

from voirdire.core import ConfigError

__all__ = [
    "VERDICT_COLUMNS",
    "VERDICT_KEYS",
    "VERDICTS",
    "Strategy",
    "normalise",
    "conform",
    "flip_rate",
    "pair_orders",
    "flip_flags",
    "as_judgments",
    "swap_and_tie",
    "jury_vote",
    "judge_pc",
    "pipeline",
    "without_judges",
    "bpde",
    "select_for_annotation",
    "override",
    "with_labels",
    "register_strategy",
    "default_strategies",
    "strategy",
    "strategies",
    "apply_strategies",
]

VERDICTS = ("win", "tie", "loss", "undecided")
#: Keys of one judgment pair in a verdict table (the two orders share them).
VERDICT_KEYS = ["benchmark", "judge", "question_id", "task", "candidate", "reference", "repetition"]
VERDICT_SCHEMA = {
    "benchmark": pl.String,
    "judge": pl.String,
    "question_id": pl.String,
    "task": pl.String,
    "candidate": pl.String,
    "reference": pl.String,
    "verdict": pl.String,
    "queries": pl.Int64,
    "permutation": pl.Int64,
    "repetition": pl.Int64,
}
#: The columns of a verdict table, in order.
VERDICT_COLUMNS = list(VERDICT_SCHEMA)

Strategy = Callable[[pl.DataFrame], pl.DataFrame]
Step = Callable[[pl.DataFrame], pl.DataFrame]


# --------------------------------------------------------------------------------------
# Normalised verdicts and the flip rate
# --------------------------------------------------------------------------------------


def conform(verdicts: pl.DataFrame) -> pl.DataFrame:
    """A verdict table with exactly :data:`VERDICT_COLUMNS` and their types: ``permutation``
    (null) and ``repetition`` (1) added when absent.

    Raises:
        ConfigError: a required column is missing, or a verdict outside :data:`VERDICTS`.
    """
    missing = [c for c in VERDICT_COLUMNS[:8] if c not in verdicts.columns]
    if missing:
        raise ConfigError(f"verdict table lacks column(s) {', '.join(missing)}")
    v = verdicts
    if "permutation" not in v.columns:
        v = v.with_columns(permutation=pl.lit(None, dtype=pl.Int64))
    if "repetition" not in v.columns:
        v = v.with_columns(repetition=pl.lit(1, dtype=pl.Int64))
    v = v.select(VERDICT_COLUMNS).cast(VERDICT_SCHEMA)  # type: ignore[arg-type]
    bad = v.filter(~pl.col("verdict").is_in(VERDICTS)).get_column("verdict").unique().to_list()
    if bad:
        raise ConfigError(f"verdicts {bad} not in {list(VERDICTS)}")
    return v


def normalise(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per-order verdicts from the candidate's side (``docs/mitigation.md``, *Verdicts
    normalised to the candidate*): one row per pairwise judgment, ``queries`` 1.

    ``permutation`` here is the *side* of the order, read from ``shown`` (0: candidate in
    slot A, 1: in slot B), not the job's permutation index. Letters as in
    :func:`~voirdire.analysis.metrics.pairwise_pairs`: the candidate's slot → ``win``, the
    other slot → ``loss``, ``C`` in three-option mode → ``tie``; a failed judgment, a null
    letter or a letter outside the options → ``undecided``.
    """
    rows = judgments.filter(pl.col("mode").is_in(PAIRWISE_MODES)) if "mode" in judgments.columns else judgments
    first = (pl.col("shown").list.first() == pl.col("candidate")).fill_null(False)
    x = pl.col("extracted")
    no = pl.col("failed").fill_null(False) | x.is_null()
    cand_letter = pl.when(first).then(pl.lit("A")).otherwise(pl.lit("B"))
    ref_letter = pl.when(first).then(pl.lit("B")).otherwise(pl.lit("A"))
    verdict = (
        pl.when(no)
        .then(pl.lit("undecided"))
        .when(x == cand_letter)
        .then(pl.lit("win"))
        .when(x == ref_letter)
        .then(pl.lit("loss"))
        .when((x == "C") & (pl.col("option_mode") == 3))
        .then(pl.lit("tie"))
        .otherwise(pl.lit("undecided"))
    )
    return conform(
        rows.select(
            "benchmark", "judge", "question_id", "task", "candidate", "reference",
            verdict=verdict,
            queries=pl.lit(1, dtype=pl.Int64),
            permutation=pl.when(first).then(0).otherwise(1).cast(pl.Int64),
            repetition=pl.col("repetition").cast(pl.Int64),
        )  # fmt: skip
    )


def pair_orders(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per pair key: ``v1``/``v2`` the verdict with the candidate first/second (null when
    that order is absent; first row if duplicated) and ``queries`` summed."""
    v = verdicts.filter(pl.col("permutation").is_not_null())
    return v.group_by(VERDICT_KEYS).agg(
        v1=pl.col("verdict").filter(pl.col("permutation") == 0).first(),
        v2=pl.col("verdict").filter(pl.col("permutation") == 1).first(),
        queries=pl.col("queries").sum(),
    )


def flip_flags(pairs: pl.DataFrame) -> pl.DataFrame:
    """:func:`pair_orders` rows plus ``pair_ok`` (bool: a decided verdict in both orders)
    and ``flip`` (bool: (win, loss) or (loss, win))."""
    v1, v2 = pl.col("v1"), pl.col("v2")
    ok = v1.is_in(["win", "tie", "loss"]) & v2.is_in(["win", "tie", "loss"])
    flip = ok & (((v1 == "win") & (v2 == "loss")) | ((v1 == "loss") & (v2 == "win")))
    return pairs.with_columns(pair_ok=ok.fill_null(False), flip=flip.fill_null(False))


def flip_rate(verdicts: pl.DataFrame) -> pl.DataFrame:
    """The practitioners' flip rate per (benchmark, judge) (``docs/mitigation.md``, *Flip
    rate*; Wang et al.'s *conflict rate*).

    ``flip = #pairs whose two normalised verdicts differ, neither a tie / #pairs``, over
    pairs with a verdict in both orders; pairs with an undecided (failed) or missing order
    are left out and counted in ``failed_pairs``. Not ``1 − PC``: (win, tie) counts against
    PC but is no flip.

    Returns: ``benchmark``, ``judge`` (str), ``pairs``, ``failed_pairs``, ``flips`` (int),
    ``flip_rate`` (float, null without pairs). Verdicts without ``permutation`` (combined
    orders) have no pairs.
    """
    return (
        flip_flags(pair_orders(conform(verdicts)))
        .group_by("benchmark", "judge")
        .agg(
            pairs=pl.col("pair_ok").sum().cast(pl.Int64),
            failed_pairs=(~pl.col("pair_ok")).sum().cast(pl.Int64),
            flips=pl.col("flip").sum().cast(pl.Int64),
        )
        .with_columns(flip_rate=pl.when(pl.col("pairs") > 0).then(pl.col("flips") / pl.col("pairs")))
        .sort("benchmark", "judge")
    )


def as_judgments(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per-order verdicts back as pairwise judgment rows (three-option letters), so that
    :func:`~voirdire.analysis.metrics.pairwise_pairs` classifies them: the candidate's slot
    letter for ``win``, the other for ``loss``, ``C`` for ``tie``, null (failed) for
    ``undecided``. Rows without ``permutation`` are dropped. Lengths are 0."""
    v = conform(verdicts).filter(pl.col("permutation").is_not_null())
    first = pl.col("permutation") == 0
    letter = (
        pl.when(pl.col("verdict") == "tie")
        .then(pl.lit("C"))
        .when(pl.col("verdict") == "win")
        .then(pl.when(first).then(pl.lit("A")).otherwise(pl.lit("B")))
        .when(pl.col("verdict") == "loss")
        .then(pl.when(first).then(pl.lit("B")).otherwise(pl.lit("A")))
    )
    return v.with_columns(
        extracted=letter,
        failed=pl.col("verdict") == "undecided",
        shown=pl.when(first)
        .then(pl.concat_list("candidate", "reference"))
        .otherwise(pl.concat_list("reference", "candidate")),
        mode=pl.lit("pairwise"),
        option_mode=pl.lit(3, dtype=pl.Int32),
        input_chars=pl.lit(0),
        output_chars=pl.lit(0),
        prompt_chars=pl.lit(0),
    )


# --------------------------------------------------------------------------------------
# Steps: verdict table -> verdict table
# --------------------------------------------------------------------------------------


def swap_and_tie(verdicts: pl.DataFrame, on_conflict: str = "tie") -> pl.DataFrame:
    """Dual-pass gate / swap-and-tie (``docs/mitigation.md``): one verdict per pair from its
    two orders.

    The common verdict when both orders agree; when they disagree, ``on_conflict``:
    ``"tie"`` (MT-Bench's conservative rule) or ``"undecided"`` (the gate: escalate to a
    stronger judge or a person). A pair with an undecided or missing order is
    ``undecided``. ``queries`` is the sum over both orders (2 for an ordinary pair);
    ``permutation`` null. Rows already without ``permutation`` pass through.

    Raises:
        ValueError: ``on_conflict`` not ``"tie"`` or ``"undecided"``.
    """
    if on_conflict not in ("tie", "undecided"):
        raise ValueError(f"on_conflict must be 'tie' or 'undecided', not {on_conflict!r}")
    v = conform(verdicts)
    v1, v2 = pl.col("v1"), pl.col("v2")
    decided = v1.is_in(["win", "tie", "loss"]) & v2.is_in(["win", "tie", "loss"])
    final = (
        pl.when(~decided.fill_null(False))
        .then(pl.lit("undecided"))
        .when(v1 == v2)
        .then(v1)
        .otherwise(pl.lit(on_conflict))
    )
    combined = pair_orders(v).select(
        *VERDICT_KEYS[:-1], verdict=final, queries="queries", permutation=pl.lit(None, dtype=pl.Int64), repetition="repetition"
    )
    return pl.concat([conform(combined), v.filter(pl.col("permutation").is_null())]).sort(VERDICT_KEYS)


def judge_pc(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Pooled position consistency per (benchmark, judge) of per-order verdicts:
    ``Σ consistent / Σ (consistent + primacy + recency)`` (``docs/metrics.md``). Columns
    ``benchmark``, ``judge``, ``pc`` (float; 0 without classified pairs)."""
    k = pl.col("klass")
    return (
        pairwise_pairs(as_judgments(verdicts))
        .group_by("benchmark", "judge")
        .agg(c=(k == "consistent").sum(), v=k.is_in(["consistent", "primacy", "recency"]).sum())
        .select("benchmark", "judge", pc=pl.when(pl.col("v") > 0).then(pl.col("c") / pl.col("v")).otherwise(0.0))
    )


def jury_vote(verdicts: pl.DataFrame, *, weights: pl.DataFrame | None = None, name: str | None = None) -> pl.DataFrame:
    """A panel's verdict from its judges' verdicts (``docs/mitigation.md``, *Jury*, ours).

    Per (benchmark, question, task, candidate, reference, permutation, repetition), each
    judge's decided verdict is a vote (weight 1, or the judge's ``weight`` from
    ``weights``: columns ``benchmark``, ``judge``, ``weight``, e.g. :func:`judge_pc`'s
    ``pc``); the verdict with the largest total wins, and a tie for the largest total gives
    ``tie``. No vote: ``undecided``. ``queries`` sums the members' queries (failed ones
    included). The panel is named ``name`` (default ``panel-N``, N judges in the
    benchmark). Votes per order keep ``permutation``, so the panel has its own PC, PF and
    flip rate.
    """
    v = conform(verdicts)
    keys = ["benchmark", "question_id", "task", "candidate", "reference", "permutation", "repetition"]
    if weights is not None:
        v = v.join(weights.select("benchmark", "judge", "weight"), on=["benchmark", "judge"], how="left").with_columns(
            pl.col("weight").fill_null(0.0)
        )
    else:
        v = v.with_columns(weight=pl.lit(1.0))
    size = v.group_by("benchmark").agg(_n=pl.col("judge").n_unique())
    cost = v.group_by(keys).agg(queries=pl.col("queries").sum())
    tally = (
        v.filter(pl.col("verdict") != "undecided")
        .group_by([*keys, "verdict"])
        .agg(w=pl.col("weight").sum())
        .with_columns(top=pl.col("w").max().over(keys))
        .filter((pl.col("w") == pl.col("top")) & (pl.col("top") > 0))
        .group_by(keys)
        .agg(n_top=pl.len(), best=pl.col("verdict").first())
        .select(*keys, verdict=pl.when(pl.col("n_top") > 1).then(pl.lit("tie")).otherwise(pl.col("best")))
    )
    out = (
        cost.join(tally, on=keys, how="left", nulls_equal=True)
        .join(size, on="benchmark")
        .with_columns(
            verdict=pl.col("verdict").fill_null("undecided"),
            judge=pl.lit(name) if name else pl.format("panel-{}", pl.col("_n")),
        )
    )
    return conform(out).sort([*VERDICT_KEYS, "permutation"], nulls_last=True)


def pipeline(*steps: Step) -> Strategy:
    """The composition ``steps[-1](...steps[1](steps[0](judgments)))``, e.g.
    ``pipeline(normalise, jury_vote, swap_and_tie)``."""

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        out = judgments
        for step in steps:
            out = step(out)
        return conform(out)

    return run


def without_judges(strategy: Strategy, judges: Iterable[str]) -> Strategy:
    """``strategy`` applied to the judgments of the other judges (e.g. a jury without the
    reference judge, so that agreement with the reference is not inflated)."""
    drop = list(judges)

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        return strategy(judgments.filter(~pl.col("judge").is_in(drop)))

    return run


# --------------------------------------------------------------------------------------
# BPDE selection for people (Wang et al., HITLC)
# --------------------------------------------------------------------------------------


def bpde(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Balanced position diversity entropy per pair (``docs/mitigation.md``, *HITLC /
    BPDE*; Wang et al. 2023, sec. 3.3).

    Per (benchmark, judge, question, task, candidate, reference), the decided outcomes over
    both orders and every repetition (with MEC+BPC the 2k sampled outcomes) give a
    distribution over {win, tie, loss}; BPDE is its entropy in bits (0: every outcome the
    same; log2 3 at most). Columns: those keys, ``outcomes`` (int: decided outcomes),
    ``wins``, ``ties``, ``losses`` (int), ``bpde`` (float; 0 without outcomes).
    """
    keys = VERDICT_KEYS[:-1]
    counts = (
        conform(verdicts)
        .group_by(keys)
        .agg(
            wins=(pl.col("verdict") == "win").sum().cast(pl.Int64),
            ties=(pl.col("verdict") == "tie").sum().cast(pl.Int64),
            losses=(pl.col("verdict") == "loss").sum().cast(pl.Int64),
        )
        .with_columns(outcomes=pl.col("wins") + pl.col("ties") + pl.col("losses"))
    )

    def term(c: str) -> pl.Expr:
        p = pl.col(c) / pl.col("outcomes")
        return pl.when(pl.col(c) > 0).then(-p * p.log(2)).otherwise(0.0)

    ent = pl.when(pl.col("outcomes") > 0).then(term("wins") + term("ties") + term("losses")).otherwise(0.0)
    return counts.with_columns(bpde=ent).select(*keys, "outcomes", "wins", "ties", "losses", "bpde").sort(keys)


def select_for_annotation(verdicts: pl.DataFrame, beta: float = 0.2) -> pl.DataFrame:
    """The top-β share of pairs by BPDE, per (benchmark, judge), for people to label
    (Wang et al.: β = 20 %). ``ceil(β · pairs)`` pairs each; ties in BPDE broken by the
    pair keys (deterministic). Columns: :func:`bpde`'s plus ``rank`` (int, 1 = most
    diverse) and an empty ``winner`` (str) for the annotator: ``candidate``,
    ``reference`` or ``tie`` (read back with
    :func:`voirdire.analysis.reference.labels_reference`).

    Raises:
        ValueError: ``beta`` outside (0, 1].
    """
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must be in (0, 1], not {beta}")
    keys = VERDICT_KEYS[:-1]
    scored = bpde(verdicts).sort(["benchmark", "judge", "bpde", *keys[2:]], descending=[False, False, True] + [False] * 4)
    scored = scored.with_columns(rank=pl.int_range(1, pl.len() + 1).over("benchmark", "judge").cast(pl.Int64))
    keep = pl.col("rank") <= (pl.len().over("benchmark", "judge") * beta).ceil()
    return scored.filter(keep).with_columns(winner=pl.lit(None, dtype=pl.String))


def override(verdicts: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Replace the final verdicts of labelled pairs by the label (people's verdicts for the
    pairs :func:`select_for_annotation` chose). ``labels``: ``question_id``,
    ``candidate``, ``reference``, ``ref_verdict`` (win/tie/loss) and optionally
    ``benchmark`` (as :mod:`voirdire.analysis.reference` returns). Queries unchanged."""
    on = ["question_id", "candidate", "reference"] + (["benchmark"] if "benchmark" in labels.columns and labels.get_column("benchmark").null_count() == 0 else [])
    lab = labels.select(*on, "ref_verdict").unique(on, keep="first")
    v = conform(verdicts).join(lab, on=on, how="left")
    return conform(v.with_columns(verdict=pl.coalesce("ref_verdict", "verdict")).drop("ref_verdict"))


def with_labels(strategy: Strategy, labels: pl.DataFrame) -> Strategy:
    """``strategy`` whose final verdicts of the labelled pairs are people's (:func:`override`):
    the human-in-the-loop step after :func:`select_for_annotation`."""

    def run(judgments: pl.DataFrame) -> pl.DataFrame:
        return override(strategy(judgments), labels)

    return run


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Registered:
    """A named strategy: ``fn`` (judgments -> verdict table), ``needs`` (judgment columns
    that must hold values, e.g. ``option_probs``), ``doc`` (one line)."""

    name: str
    fn: Strategy
    needs: tuple[str, ...] = ()
    doc: str = ""


_REGISTRY: dict[str, Registered] = {}


def register_strategy(name: str, fn: Strategy, *, needs: Sequence[str] = (), doc: str = "") -> None:
    """Register ``fn`` (judgments -> verdict table) under ``name``; ``needs`` names the
    judgment columns it requires (checked by :func:`strategy` before it runs)."""
    _REGISTRY[name] = Registered(name, fn, tuple(needs), doc)


def strategies() -> dict[str, Registered]:
    """The registered strategies by name (a copy)."""
    return dict(_REGISTRY)


def strategy(name: str) -> Registered:
    """The registered strategy ``name``.

    Raises:
        ConfigError: unknown name (the known ones listed).
    """
    if name not in _REGISTRY:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def check_needs(reg: Registered, judgments: pl.DataFrame) -> None:
    """Raise ConfigError when ``judgments`` lack a column ``reg`` needs, or it is all null."""
    for col in reg.needs:
        if col not in judgments.columns or judgments.get_column(col).null_count() == judgments.height:
            raise ConfigError(
                f"strategy {reg.name!r} needs {col!r} in the judgments, and this job has none "
                f"(e.g. run the judge in logprob mode for option_probs, or score mode for scores)"
            )


def apply_strategies(judgments: pl.DataFrame, names: Sequence[str] | Mapping[str, Strategy]) -> pl.DataFrame:
    """Run strategies on ``judgments``: registered names (their needs checked first, all
    before any runs) or a mapping name -> function. Returns the verdict tables stacked with
    a leading ``strategy`` column (str).

    Raises:
        ConfigError: an unknown name or a missing need, naming the strategy.
    """
    if isinstance(names, Mapping):
        regs = [Registered(n, f) for n, f in names.items()]
    else:
        regs = [strategy(n) for n in names]
    for reg in regs:
        check_needs(reg, judgments)
    frames = [conform(reg.fn(judgments)).select(pl.lit(reg.name).alias("strategy"), pl.all()) for reg in regs]
    return pl.concat(frames) if frames else pl.DataFrame(schema={"strategy": pl.String, **VERDICT_SCHEMA})


def _pc_weighted_jury(judgments: pl.DataFrame) -> pl.DataFrame:
    v = normalise(judgments)
    return jury_vote(v, weights=judge_pc(v).rename({"pc": "weight"}))


register_strategy("single", normalise, doc="each order's verdict on its own (1 query per verdict; the baseline)")
register_strategy("swap-tie", pipeline(normalise, swap_and_tie), doc="both orders; disagreement -> tie (MT-Bench)")
register_strategy(
    "gate", pipeline(normalise, lambda v: swap_and_tie(v, "undecided")), doc="both orders; disagreement -> undecided (escalate)"
)
register_strategy("jury", pipeline(normalise, jury_vote), doc="majority vote over the judges, per order")
register_strategy("jury-pc", _pc_weighted_jury, doc="vote weighted by each judge's PC, per order")
register_strategy("jury+swap-tie", pipeline(normalise, jury_vote, swap_and_tie), doc="jury per order, then swap-and-tie")

for _name, _doc in {
    "score-single": "score mode, one sample per order, a verdict per order (no calibration; 1 query per verdict)",
    "bpc": "score mode, both orders: each answer's mean score over its positions (Wang et al.; 2 queries)",
    "mec": "score mode, k evidence samples averaged within each order, a verdict per order (Wang et al.; k queries)",
    "mec+bpc": "score mode, k samples per order averaged, then the two positions' means (Wang et al.; 2k queries)",
}.items():
    register_strategy(
        _name, partial(score_strategy, strategy={"score-single": "score", "mec+bpc": "mec_bpc"}.get(_name, _name)),
        needs=("slot_scores",), doc=_doc,
    )  # fmt: skip

#: The strategies that need no new query and only pairwise letters (the CLI's default).
DEFAULT_STRATEGIES = ["single", "swap-tie", "gate", "jury", "jury-pc", "jury+swap-tie"]

#: Score-mode strategies (Wang et al. 2023), run by default on judgments with scores.
SCORE_STRATEGIES = ["score-single", "bpc", "mec", "mec+bpc"]


def default_strategies(judgments: pl.DataFrame) -> list[str]:
    """The strategies run when none are named: :data:`DEFAULT_STRATEGIES`, plus the score
    strategies (:data:`SCORE_STRATEGIES`) when the judgments hold scores (score mode)."""
    scored = "slot_scores" in judgments.columns and judgments.get_column("slot_scores").null_count() < judgments.height
    return DEFAULT_STRATEGIES + (SCORE_STRATEGIES if scored else [])
