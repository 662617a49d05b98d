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
cluster permutation test does not tell them apart (:func:`~voirdire.analysis.stats.tie_test.paired_test`; the size is
checked on simulated equal judges in ``tests/test_shared_units.py``).

A judge of two directories (``run``'s position-bias and repetition jobs) is read from the
directory where it has the most judgments (the one the judge table's figures come from).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from voirdire.analysis.position.pairing import PAIRWISE_MODES, judgment_pairs, side
from voirdire.analysis.settings import AnalysisSettings
from voirdire.analysis.stats.tie_test import ratio_interval

__all__ = [
    "UNIT_KEYS",
    "SHARED_COLUMNS",
    "Boards",
    "one_source_per_judge",
    "shared_boards",
    "like_with_like",
]

#: a unit: one ordered comparison (the judge aside; repetitions are the same unit)
UNIT_KEYS = ["benchmark", "task", "question_id", "candidate", "reference", "side"]
#: the columns of :attr:`Boards.table`
SHARED_COLUMNS = [
    "benchmark", "judge", "board", "shared", "shared_lo", "shared_hi", "n_shared",
    "n_own", "board_judges",
]  # fmt: skip

#: the judgments' columns the boards read (units, pairs, gold labels); the others (texts,
#: ids: most of the 2 × 10⁶-verdict audit's judgments table) are left out before any copy
_READ = [
    "benchmark", "judge", "mode", "task", "question_id", "candidate", "reference",
    "shown", "repetition", "option_mode", "extracted", "failed", "tie", "chosen", "gold",
    "input_chars", "output_chars", "prompt_chars",
]  # fmt: skip


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
            shared units: what :func:`~voirdire.analysis.stats.tie_test.paired_test` reads.
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
        pairwise = pl.col("mode").is_in(PAIRWISE_MODES)
        if not f.select(pairwise.fill_null(False).all()).item():
            f = f.filter(pairwise)
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
    if best.height == per.height:  # each judge in one frame: every row chosen
        return j.drop("_src"), own
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
    if len(sets) == 1:
        return [list(sets)]
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


def _label(benchmark: str, models: list[set[str]], i: int) -> str:
    if len(models) == 1:
        return benchmark
    others = set().union(*(m for k, m in enumerate(models) if k != i))
    own = sorted(models[i] - others)
    if not own:
        return f"{benchmark} (set {i + 1})"
    return f"{benchmark} ({', '.join(own[:2])}{', …' if len(own) > 2 else ''})"


def _board_figures(
    b: str,
    jb: pl.DataFrame,
    groups: list[tuple[list[str], set[int]]],
    key: str,
    n_own: dict,
    sets: dict[str, set[int]],
    replicates: int,
    seed: int,
) -> tuple[list[tuple], list[pl.DataFrame]]:
    """One benchmark's boards: per judge its :data:`SHARED_COLUMNS` row and its
    per-question sums on the board's shared units (``jb``: the benchmark's judgments with
    their unit hash ``_u``)."""
    subs = [
        jb
        if set(judges) == set(sets)
        and all(len(sets[jn]) == len(common) for jn in judges)
        else jb.filter(pl.col("judge").is_in(judges) & pl.col("_u").is_in(list(common)))
        for judges, common in groups
    ]  # a board of every judge on all its units: the benchmark's rows, not a copy
    models = [
        set(sub.get_column("candidate").drop_nulls().unique().to_list())
        | set(sub.get_column("reference").drop_nulls().unique().to_list())
        for sub in subs
    ]
    rows, sums = [], []
    for i, ((judges, common), sub) in enumerate(zip(groups, subs)):
        label = _label(b, models, i)
        s = _key_sums(sub.drop("_u"), key)
        qids = (
            s.get_column("question_id").unique().sort()
        )  # as sorted(): UTF-8 byte order is code-point order
        for jn in judges:
            sj = (
                qids.to_frame()
                .join(s.filter(pl.col("judge") == jn).select("question_id", "num", "den"),
                      on="question_id", how="left")
                .fill_null(0)
            )  # fmt: skip
            num = sj.get_column("num").to_numpy()
            den = sj.get_column("den").to_numpy()
            est, lo, hi = ratio_interval(num, den, replicates, seed)
            n = max(n_own.get((b, jn), 0), len(sets[jn]))
            rows.append((b, jn, label, est, lo, hi, len(common), n, len(judges)))
            sums.append(sj.with_columns(board=pl.lit(label), judge=pl.lit(jn)))
    return rows, sums


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
    placed = rankable.select("benchmark", "judge")
    if (
        judgments.select("benchmark", "judge")
        .unique()
        .join(placed, on=["benchmark", "judge"], how="anti")
        .height
    ):
        j = judgments.join(placed, on=["benchmark", "judge"], how="semi")
    else:  # every judge placed: no copy
        j = judgments
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
        jb = (
            j if j["benchmark"].n_unique() == 1 else j.filter(pl.col("benchmark") == b)
        ).with_columns(
            _u=pl.struct(
                *(pl.col(c).cast(pl.String) for c in UNIT_KEYS if c != "side"), side()
            ).hash()
        )
        r, sm = _board_figures(b, jb, groups, keys[b], n_own, sets, replicates, seed)
        rows += r
        sums += sm
    table = pl.DataFrame(rows, schema=empty.table.schema, orient="row")
    s = (
        pl.concat(sums, how="diagonal_relaxed").select(
            "board", "judge", "question_id", "num", "den"
        )
        if sums
        else empty.sums
    )
    return Boards(table, s)


def like_with_like(
    t: pl.DataFrame,
    judgments: pl.DataFrame | list[pl.DataFrame],
    settings: AnalysisSettings,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The judge rows of :func:`~voirdire.analysis.choice.choose_judges` (``benchmark``,
    ``judge``, ``pc``, ``_key``: the rank key, ``gold``: bool) joined with their boards'
    figures on the shared units (:func:`shared_boards`, :data:`SHARED_COLUMNS`), ``_key``
    taken from there where defined; and the boards' per-question sums (None without a
    board). ``judgments``: one table per directory (:func:`one_source_per_judge`)."""
    frames = judgments if isinstance(judgments, list) else [judgments]
    j, own = one_source_per_judge(
        [
            f.select(c for c in _READ if c in f.columns) if f is not None else f
            for f in frames
        ]  # fmt: skip
    )
    keys = {
        b: "accuracy" if g else "pc"
        for b, g in t.select("benchmark", "gold").unique().iter_rows()
    }
    rankable = t.filter(pl.col("_key").is_not_null()).select(
        "benchmark", "judge", two_orders=pl.col("pc").is_not_null()
    )
    boards = shared_boards(
        j,
        keys,
        rankable,
        own=own,
        replicates=min(settings.replicates, settings.report_replicates),
    )
    if not boards.table.height:
        return t, None
    t = t.join(boards.table, on=["benchmark", "judge"], how="left").with_columns(
        board=pl.coalesce("board", "benchmark"),
        _key=pl.when(pl.col("shared").is_not_null()).then("shared").otherwise("_key"),
    )
    return t, boards.sums
