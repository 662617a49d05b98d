"""Like with like: judges compared only on the (question, pair, order) units they share.

A judge's *units* are the ordered comparisons it judged: (benchmark, task, question_id,
candidate, reference, side) of its pairwise judgments (``side``: 0 the candidate shown
first, 1 second; :func:`~voirdire.analysis.position.pairing.side`); repetitions of one unit
are the same unit. Per benchmark, the judges that can be ranked (those with a value of the
rank key) fall into **boards**:

- judges that judged both orders and those that judged one never share a board;
- judges linked by shared units form one board (the connected parts of "shares a unit
  with"); a board's judges are compared on the units **every one of them** has (their
  intersection). Judges sharing nothing (JudgeBench's pairs answered by GPT-4o and by
  Claude; two disjoint subsets) are separate boards, each named after the models its units
  alone have. Where the judges of a connected part share no unit at all, judges with the
  same units form the boards.

On a board the rank key (accuracy against the gold labels where the benchmark has them,
else PC: ``docs/metrics.md``, ``docs/gold-labels.md``) is recomputed on the shared units
from per-question sums, the figures' own ratios: PC = Σ consistent pairs / Σ valid pairs
(consistent, primacy or recency), accuracy = Σ correct orders / Σ asked orders. Its 95 %
interval is the percentile cluster bootstrap over questions (the project's clustering,
``docs/metrics.md``, *Intervals*). Two judges of a board are **tied** when the paired
cluster permutation test does not tell them apart (:func:`paired_test`; the size is
checked on simulated equal judges in ``tests/test_shared_units.py``).

A judge of two directories (``run``'s position-bias and repetition jobs) is read from the
directory where it has the most judgments (the one the judge table's figures come from).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from voirdire.analysis.position.pairing import PAIRWISE_MODES, judgment_pairs, side

__all__ = [
    "UNIT_KEYS",
    "SHARED_COLUMNS",
    "TIE_ALPHA",
    "Boards",
    "one_source_per_judge",
    "shared_boards",
    "paired_test",
]

#: a unit: one ordered comparison (the judge aside; repetitions are the same unit)
UNIT_KEYS = ["benchmark", "task", "question_id", "candidate", "reference", "side"]
#: the columns of :attr:`Boards.table`
SHARED_COLUMNS = [
    "benchmark", "judge", "board", "shared", "shared_lo", "shared_hi", "n_shared",
    "n_own", "board_judges",
]  # fmt: skip
#: the permutation test's level: a judge whose p-value against the pick is at least this is
#: tied with it
TIE_ALPHA = 0.05


@dataclass(frozen=True)
class Boards:
    """The judges' boards and their figures on the shared units.

    Attributes:
        table: one row per (benchmark, judge) placed on a board (:data:`SHARED_COLUMNS`):
            ``board`` (str: the benchmark's name, or ``"<benchmark> (<models>)"`` where
            the benchmark has several boards), ``shared`` (float: the rank key on the
            board's shared units, null where undefined), ``shared_lo``/``shared_hi``
            (float: its 95 % cluster-bootstrap interval), ``n_shared`` (int: the board's
            shared units, (question, pair, order)), ``n_own`` (int: the judge's own units),
            ``board_judges`` (int).
        sums: per (board, judge, question_id) the key's ``num`` and ``den`` (Int64) on the
            shared units: what :func:`paired_test` reads.
    """

    table: pl.DataFrame
    sums: pl.DataFrame


def one_source_per_judge(
    frames: list[pl.DataFrame],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pairwise judgments of several directories' judgment tables (JUDGMENT_SCHEMA),
    each (benchmark, judge) from one frame: the one holding the most judges of that
    benchmark (where the judges were measured alike: ``run``'s repetition job holds every
    judge of MT-Bench, its position-bias job three), then the one where the judge has the
    most rows, then the first. A judge of two directories is not counted twice.

    Returns:
        ``(judgments, own)``: the chosen rows, and per (benchmark, judge) ``n_own``
        (Int64: the judge's units over every frame).
    """
    parts = []
    for i, f in enumerate(frames):
        if f is None or not f.height or "mode" not in f.columns:
            continue
        f = f.filter(pl.col("mode").is_in(PAIRWISE_MODES))
        if f.height:
            parts.append(f.with_columns(_src=pl.lit(i, pl.Int64)))
    if not parts:
        return pl.DataFrame(), pl.DataFrame(
            schema={"benchmark": pl.String, "judge": pl.String, "n_own": pl.Int64}
        )
    j = pl.concat(parts, how="diagonal_relaxed")
    own = _units(j).group_by("benchmark", "judge").agg(n_own=pl.len().cast(pl.Int64))
    per = j.group_by("benchmark", "judge", "_src").len()
    best = (
        per.with_columns(_judges=pl.len().over("benchmark", "_src"))
        .sort(
            ["benchmark", "judge", "_judges", "len", "_src"],
            descending=[False, False, True, True, False],
        )
        .unique(["benchmark", "judge"], keep="first", maintain_order=True)
        .select("benchmark", "judge", "_src")
    )
    chosen = j.join(best, on=["benchmark", "judge", "_src"], how="semi").drop("_src")
    return chosen, own


def _units(j: pl.DataFrame) -> pl.DataFrame:
    """(benchmark, judge, _u): one row per unit of each judge, ``_u`` the unit's hash."""
    return j.select(
        "benchmark",
        "judge",
        _u=pl.struct(
            *(pl.col(c).cast(pl.String) for c in UNIT_KEYS if c != "side"),
            side(),
        ).hash(),
    ).unique()


def _components(sets: dict[str, set[int]]) -> list[list[str]]:
    """The judges linked by a shared unit (union-find), each part sorted, in name order."""
    parent = {j: j for j in sets}

    def root(j: str) -> str:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    owner: dict[int, str] = {}
    for j in sorted(sets):
        for u in sets[j]:
            o = owner.setdefault(u, j)
            if o != j:
                parent[root(j)] = root(o)
    parts: dict[str, list[str]] = {}
    for j in sorted(sets):
        parts.setdefault(root(j), []).append(j)
    return sorted(parts.values())


def _groups(
    sets: dict[str, set[int]], two: dict[str, bool]
) -> list[tuple[list[str], set[int]]]:
    """The boards of one benchmark: (judges, shared units)."""
    out = []
    for flag in (True, False):
        sub = {j: s for j, s in sets.items() if two[j] == flag}
        for part in _components(sub):
            common = set.intersection(*(sub[j] for j in part))
            if common:
                out.append((part, common))
                continue
            same: dict[frozenset, list[str]] = {}
            for j in part:
                same.setdefault(frozenset(sub[j]), []).append(j)
            out += [(js, set(s)) for s, js in same.items()]
    return out


def _key_sums(j: pl.DataFrame, key: str) -> pl.DataFrame:
    """Per (benchmark, judge, question_id): ``num``, ``den`` of the rank key."""
    if key == "accuracy":
        from voirdire.analysis.position.gold import gold_sums

        s = gold_sums(j, ["benchmark", "judge", "question_id"])
        return s.select(
            "benchmark", "judge", "question_id",
            num=(pl.col("correct1") + pl.col("correct2")).cast(pl.Int64),
            den=(pl.col("asked1") + pl.col("asked2")).cast(pl.Int64),
        )  # fmt: skip
    p = judgment_pairs(j)
    k = pl.col("klass")
    return p.group_by("benchmark", "judge", "question_id").agg(
        num=(k == "consistent").sum().cast(pl.Int64),
        den=k.is_in(["consistent", "primacy", "recency"]).sum().cast(pl.Int64),
    )


def _interval(num: np.ndarray, den: np.ndarray, replicates: int, seed: int) -> tuple:
    """95 % percentile cluster bootstrap of Σnum/Σden (rows: clusters)."""
    if den.sum() == 0:
        return None, None, None
    est = num.sum() / den.sum()
    if replicates < 2 or len(num) < 2:
        return est, None, None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num), size=(replicates, len(num)))
    d = den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num[idx].sum(axis=1) / d
    r = r[d > 0]
    if not len(r):
        return est, None, None
    lo, hi = np.quantile(r, [0.025, 0.975])
    return est, float(lo), float(hi)


def paired_test(
    a_num: np.ndarray,
    a_den: np.ndarray,
    b_num: np.ndarray,
    b_den: np.ndarray,
    replicates: int = 2000,
    seed: int = 0,
) -> float:
    """Two judges' key on the same clusters (questions), as a paired cluster permutation
    test: under H0 the two judges are exchangeable within each question, so the labels are
    swapped per question at random and ``|Σa_num/Σa_den − Σb_num/Σb_den|`` recomputed.

    Args:
        a_num, a_den, b_num, b_den: per question (the same order for both judges) the
            numerator and denominator of each judge's ratio (e.g. consistent and valid
            pairs).
        replicates: random relabellings.

    Returns:
        The Monte Carlo p-value ``(1 + #{T* ≥ T}) / (1 + replicates)`` (valid at every
        size: a p-value at most α with probability at most α under H0); 1.0 where a
        ratio is undefined.
    """
    a_num, a_den, b_num, b_den = (
        np.asarray(x, dtype=float) for x in (a_num, a_den, b_num, b_den)
    )
    if a_den.sum() == 0 or b_den.sum() == 0:
        return 1.0
    t = abs(a_num.sum() / a_den.sum() - b_num.sum() / b_den.sum())
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, size=(replicates, len(a_num))).astype(bool)
    an = np.where(s, b_num, a_num).sum(axis=1)
    ad = np.where(s, b_den, a_den).sum(axis=1)
    bn = np.where(s, a_num, b_num).sum(axis=1)
    bd = np.where(s, a_den, b_den).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = np.abs(an / ad - bn / bd)
    ts = np.nan_to_num(ts, nan=0.0)
    return float((1 + np.sum(ts >= t - 1e-12)) / (1 + replicates))


def _label(benchmark: str, models: list[set[str]], i: int) -> str:
    if len(models) == 1:
        return benchmark
    others = set().union(*(m for k, m in enumerate(models) if k != i))
    own = sorted(models[i] - others)
    if not own:
        return f"{benchmark} (set {i + 1})"
    return f"{benchmark} ({', '.join(own[:2])}{', …' if len(own) > 2 else ''})"


def shared_boards(
    judgments: pl.DataFrame,
    keys: dict[str, str],
    rankable: pl.DataFrame,
    replicates: int = 200,
    seed: int = 0,
    own: pl.DataFrame | None = None,
) -> Boards:
    """The boards of each benchmark and the rank key on their shared units (module
    docstring).

    Args:
        judgments: pairwise judgments (JUDGMENT_SCHEMA; one source per judge:
            :func:`one_source_per_judge`).
        keys: per benchmark ``"accuracy"`` or ``"pc"``.
        rankable: (benchmark, judge, two_orders: bool) of the judges to place: those with
            a value of the key, and whether they judged both orders.
        replicates: bootstrap replicates of the intervals.
        own: per (benchmark, judge) ``n_own``, the judge's units over every directory
            (:func:`one_source_per_judge`); default: its units in ``judgments``.

    Returns:
        :class:`Boards`; empty tables without judgments.
    """
    empty = Boards(
        pl.DataFrame(schema={c: pl.Float64 if c.startswith("shared") else pl.Int64 for c in SHARED_COLUMNS}
                     | {"benchmark": pl.String, "judge": pl.String, "board": pl.String}),
        pl.DataFrame(schema={"board": pl.String, "judge": pl.String, "question_id": pl.String,
                             "num": pl.Int64, "den": pl.Int64}),
    )  # fmt: skip
    if not judgments.height or not rankable.height:
        return empty
    j = judgments.join(
        rankable.select("benchmark", "judge"), on=["benchmark", "judge"], how="semi"
    )
    if not j.height:
        return empty
    units = _units(j)
    n_own = {
        (b, jn): n
        for b, jn, n in (
            own
            if own is not None
            else units.group_by("benchmark", "judge").agg(n_own=pl.len())
        )
        .select("benchmark", "judge", "n_own")
        .iter_rows()
    }
    rows, sums = [], []
    for (b,), ub in units.group_by("benchmark", maintain_order=True):
        if b not in keys:
            continue
        sets = {
            jn: set(g.get_column("_u").to_list())
            for (jn,), g in ub.group_by("judge", maintain_order=True)
        }
        two = {
            r["judge"]: bool(r["two_orders"])
            for r in rankable.filter(pl.col("benchmark") == b).iter_rows(named=True)
        }
        groups = _groups(sets, {jn: two.get(jn, True) for jn in sets})
        jb = j.filter(pl.col("benchmark") == b).with_columns(
            _u=pl.struct(
                *(pl.col(c).cast(pl.String) for c in UNIT_KEYS if c != "side"), side()
            ).hash()
        )
        models = []
        for judges, common in groups:
            sub = jb.filter(
                pl.col("judge").is_in(judges) & pl.col("_u").is_in(list(common))
            )
            models.append(
                set(sub.get_column("candidate").drop_nulls().to_list())
                | set(sub.get_column("reference").drop_nulls().to_list())
            )
        for i, (judges, common) in enumerate(groups):
            label = _label(b, models, i)
            sub = jb.filter(
                pl.col("judge").is_in(judges) & pl.col("_u").is_in(list(common))
            ).drop("_u")
            s = _key_sums(sub, keys[b])
            qids = sorted(set(s.get_column("question_id").to_list()))
            for jn in judges:
                sj = (
                    pl.DataFrame({"question_id": qids})
                    .join(s.filter(pl.col("judge") == jn).select("question_id", "num", "den"),
                          on="question_id", how="left")
                    .fill_null(0)
                )  # fmt: skip
                num = sj.get_column("num").to_numpy()
                den = sj.get_column("den").to_numpy()
                est, lo, hi = _interval(num, den, replicates, seed)
                n = max(n_own.get((b, jn), 0), len(sets[jn]))
                rows.append((b, jn, label, est, lo, hi, len(common), n, len(judges)))
                sums.append(sj.with_columns(board=pl.lit(label), judge=pl.lit(jn)))
    table = pl.DataFrame(rows, schema=empty.table.schema, orient="row")
    s = (
        pl.concat(sums, how="diagonal_relaxed").select(
            "board", "judge", "question_id", "num", "den"
        )
        if sums
        else empty.sums
    )
    return Boards(table, s)
