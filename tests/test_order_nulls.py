"""The order tests' two nulls (analysis/ranking/order_nulls.py, order_test.py): the draws,
their exactness under any common slot preference by enumerating every data set of a small
design, the p-values against exact enumeration by independent code, and a change no swap
can move (docs/ranking.md). Size by simulation: perf/bench_flip_test.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl

from voirdire.analysis.ranking.order_nulls import blind_swaps, common_swaps
from voirdire.analysis.ranking.order_test import order_test

OUTCOME = {
    1.0: (1.0, 0.0, 0.0),
    0.5: (0.0, 1.0, 0.0),
    0.0: (0.0, 0.0, 1.0),
}  # win, tie, loss


def _units(records: list[tuple[str, int, float, float]]) -> pl.DataFrame:
    """order_units rows of a star: (candidate, question, a's score first, a's score swapped)
    against the reference ``r``; a score 1 is a win, 0.5 a tie, 0 a loss."""
    rows = []
    for cand, q, *scores in records:
        for view, y in zip(("first", "swapped"), scores):
            rows.append(("sim", "sim", "single", f"q{q}", cand, "r", view, *OUTCOME[y]))
    cols = [
        "benchmark",
        "judge",
        "strategy",
        "question_id",
        "a",
        "b",
        "view",
        "win",
        "tie",
        "loss",
    ]
    return pl.DataFrame(rows, schema=cols, orient="row")


def test_the_common_preference_draws_keep_each_class_of_directions():
    score = np.array(
        [2.0, -2.0, 2.0, 1.0, -1.0, 0.0, 0.0]
    )  # |D| 2: two of three positive
    every = common_swaps(score, 24, np.random.default_rng(0))
    assert every.exact and every.count == 3 * 2 * 4
    rows = np.concatenate(list(every.chunks(5)))
    assert len({r.tobytes() for r in rows}) == 24 and any(not r.any() for r in rows)
    drawn = common_swaps(
        score, 23, np.random.default_rng(0)
    )  # fewer than 24: at random
    assert not drawn.exact
    for s in (rows, np.concatenate(list(drawn.chunks(7)))):
        new = np.sign(score) * (1 - 2 * s)  # a swapped unit's direction turns
        assert ((new[:, :3] > 0).sum(1) == 2).all() and (
            (new[:, 3:5] > 0).sum(1) == 1
        ).all()
    assert blind_swaps(3, 8, np.random.default_rng(0)).exact


def _logit_share(ys: list[float]) -> float:
    p = np.mean(ys)
    return np.inf if p == 1 else -np.inf if p == 0 else float(np.log(p / (1 - p)))


def _star_stats(records, cands, swap):
    """Flips and bounded changes of every pair of (cands..., r) after swapping the units
    ``swap``: in a star the Bradley–Terry difference of a candidate and the reference is the
    logit of its share (±inf undefeated or winless), independent code."""
    d = {}
    for view in (0, 1):
        x = {
            c: _logit_share(
                [rec[2 + (view ^ s)] for rec, s in zip(records, swap) if rec[0] == c]
            )
            for c in cands
        }
        x["r"] = 0.0
        d[view] = x
    names = [*cands, "r"]
    out = []
    for i, j in itertools.combinations(range(len(names)), 2):
        with np.errstate(invalid="ignore"):
            df, ds = d[0][names[i]] - d[0][names[j]], d[1][names[i]] - d[1][names[j]]
        sign = [0 if np.isnan(v) or abs(v) <= 1e-9 else np.sign(v) for v in (df, ds)]
        b = [0.0 if np.isnan(v) else float(np.clip(v, -25, 25)) for v in (df, ds)]
        out.append((sign[0] * sign[1] < 0, b[0] - b[1], "r" in (names[i], names[j])))
    return out


def _max_t_p(changes: np.ndarray, c0: np.ndarray, centre: bool) -> np.ndarray:
    m = changes.mean(0) if centre else np.zeros(c0.size)
    sd = np.sqrt(np.maximum((changes**2).mean(0) - m**2, 0))
    scale = np.where(sd > 1e-9, sd, np.inf)
    mx = (np.abs(changes - m) / scale).max(1)
    return (mx[:, None] >= (np.abs(c0 - m) / scale)[None] - 1e-12).mean(0)


RECORDS = [  # (candidate, question, first, swapped): a common lean to the first slot
    ("c0", 0, 1, 0), ("c0", 1, 1, 0), ("c0", 2, 1, 1), ("c0", 3, 0.5, 0),
    ("c1", 0, 1, 0), ("c1", 1, 0, 1), ("c1", 2, 1, 0), ("c1", 3, 0, 0),
    ("c2", 0, 0, 1), ("c2", 1, 1, 0.5), ("c2", 2, 1, 0), ("c2", 3, 0, 0.5),
]  # fmt: skip


def test_both_nulls_equal_exact_enumeration_by_independent_code():
    """Every swap of the order-blind null and every arrangement of the common-preference
    null, enumerated: flips, the order-blind mean and p-value, and each pair's max-T
    adjusted p-value (flips with the reference against order-blindness, flips between
    candidates against one common slot preference, Bonferroni over the two) equal the
    product's exact test."""
    cands = ["c0", "c1", "c2"]
    disc = [u for u, rec in enumerate(RECORDS) if rec[2] != rec[3]]
    score = {
        u: 2 * (RECORDS[u][2] - RECORDS[u][3]) for u in disc
    }  # (wins − losses) first − swapped

    def swaps(chosen):
        return [int(u in chosen) for u in range(len(RECORDS))]

    blind = [
        swaps({u for u, s in zip(disc, bits) if s})
        for bits in itertools.product([0, 1], repeat=len(disc))
    ]
    classes = {
        m: [u for u in disc if abs(score[u]) == m]
        for m in {abs(v) for v in score.values()}
    }
    per_class = []
    for units in classes.values():
        k = sum(
            score[u] > 0 for u in units
        )  # keep the positives' count, move them around
        per_class.append(
            [
                {u for u in units if (score[u] > 0) != (u in pos)}
                for pos in itertools.combinations(units, k)
            ]
        )
    common = [swaps(set().union(*combo)) for combo in itertools.product(*per_class)]
    assert len(common) == 21 * 3 and len(blind) == 2 ** len(disc)

    def table(configs):
        st = [_star_stats(RECORDS, cands, s) for s in configs]
        return np.array([[x[0] for x in row] for row in st]), np.array(
            [[x[1] for x in row] for row in st]
        )

    flips_b, ch_b = table(blind)
    _, ch_c = table(common)
    obs = _star_stats(RECORDS, cands, [0] * len(RECORDS))
    flip0, c0 = np.array([x[0] for x in obs]), np.array([x[1] for x in obs])
    ref = np.array([x[2] for x in obs])
    p = np.ones(ref.size)
    p[ref] = _max_t_p(ch_b[:, ref], c0[ref], centre=False)
    p[~ref] = _max_t_p(ch_c[:, ~ref], c0[~ref], centre=True)
    t = order_test(_units(RECORDS), permutations=len(blind))
    assert t.exact and t.common_exact and t.common_permutations == len(common)
    assert (
        t.models == [*cands, "r"] and t.between_candidates.tolist() == (~ref).tolist()
    )
    assert t.flipped.tolist() == flip0.tolist()
    assert abs(t.flips_null - flips_b.sum(1).mean()) < 1e-9
    assert abs(t.flips_p - (flips_b.sum(1) >= flip0.sum()).mean()) < 1e-9
    assert np.abs(t.p_adjusted - np.minimum(1, 2 * p)).max() < 1e-9


def _davidson(lam: float, nu: float) -> dict[float, float]:
    """P(win), P(tie), P(loss) of the answer with logit ``lam`` (Davidson 1970)."""
    z = np.exp(lam / 2) + nu + np.exp(-lam / 2)
    return {1.0: np.exp(lam / 2) / z, 0.5: nu / z, 0.0: np.exp(-lam / 2) / z}


def test_the_common_preference_draws_are_equally_likely_under_any_common_preference():
    """Every data set of three units (win, tie or loss in each order), each unit its own
    strength and tie propensity, one slot preference δ common to all: the data sets the
    exact draws reach from one data set (its units' outcomes changing orders) are all
    equally likely, for δ 0, 1 and 2 — so the observed one is uniform among them and the
    p-values are exact. The order-blind draws reach data sets of unequal chance once δ ≠ 0."""
    eta, nu = [0.4, -0.7, 1.2], [0.5, 1.0, 0.2]
    scores = (1.0, 0.5, 0.0)
    sets = itertools.product(itertools.product(scores, repeat=2), repeat=3)

    def prob(data, delta):
        return math.prod(
            _davidson(e + delta, v)[x] * _davidson(e - delta, v)[y]
            for (x, y), e, v in zip(data, eta, nu)
        )

    blind_spread, checked = 0.0, 0
    for data in sets:
        disc = [u for u, (x, y) in enumerate(data) if x != y]
        if len(disc) < 2:
            continue
        score = np.array(
            [2 * (data[u][0] - data[u][1]) for u in disc]
        )  # (wins − losses) first − swapped
        for draws, blind in ((common_swaps(score, 10**6, np.random.default_rng(0)), False),
                             (blind_swaps(len(disc), 10**6, np.random.default_rng(0)), True)):  # fmt: skip
            assert draws.exact
            reached = []
            for s in np.concatenate(list(draws.chunks(64))):
                new = list(data)
                for u, flip in zip(disc, s):
                    if flip:
                        new[u] = data[u][::-1]
                reached.append(tuple(new))
            assert len(set(reached)) == draws.count and tuple(data) in reached
            for delta in (0.0, 1.0, 2.0):
                p = np.array([prob(r, delta) for r in reached])
                if blind:
                    blind_spread = max(blind_spread, p.max() / p.min())
                else:
                    assert p.max() / p.min() - 1 < 1e-9, (data, delta)
        checked += 1
    assert checked > 300 and blind_spread > 10


def test_a_change_no_swap_can_move_never_raises_the_others_threshold():
    """A candidate judged alike in both orders on every question: no swap moves its pair with
    the reference (the change's spread is the fits' rounding, ~1e-16). Its z is 0, so the
    other pairs' adjusted p-values are those of the table without it."""
    rng = np.random.default_rng(5)
    recs = [
        (f"c{c}", q, float(rng.random() < 0.7), float(rng.random() < 0.4))
        for c in range(4)
        for q in range(12)
    ]
    still = [("cz", q, y, y) for q, y in enumerate([1.0, 0.0, 1.0, 1.0, 0.0, 1.0] * 2)]
    a = order_test(_units(recs), permutations=300, seed=2)
    b = order_test(_units(recs + still), permutations=300, seed=2)
    assert not a.exact and a.permutations == b.permutations == 300
    ref_a = ~a.between_candidates
    names = [(x, y) for x, y in itertools.combinations(b.models, 2)]
    keep = [n for n, (x, y) in enumerate(names) if "cz" not in (x, y) and "r" in (x, y)]
    assert np.array_equal(a.p_adjusted[ref_a], b.p_adjusted[keep])
    assert (a.p_adjusted[ref_a] < 0.2).any()  # a threshold there is to raise
    cz = names.index(("cz", "r"))
    assert b.p_adjusted[cz] == 1.0 and not b.flipped[cz]


def test_common_draws_are_numpys_row_permutations_of_each_class():
    """The common null's random draws equal ``rng.permuted`` of every class, all its rows at
    once, the generator where it would be after: large classes are permuted row by row
    (``positive[rng.permutation(n)]``) and a one-way class only takes the draws; small and
    large, mixed and one-way classes, units with D = 0, two chunks."""
    rng = np.random.default_rng(12)
    score = np.r_[
        np.full(3000, 2.0), np.full(1500, -1.0), rng.choice([-3.0, 3.0], 2500),
        rng.choice([-4.0, 4.0], 40), np.zeros(30),
    ]  # fmt: skip
    rng.shuffle(score)
    got_rng, want_rng = np.random.default_rng(3), np.random.default_rng(3)
    got = np.concatenate(list(common_swaps(score, 9, got_rng).chunks(5)))
    positive = score > 0
    mag = np.abs(score)
    classes = [np.flatnonzero(mag == m) for m in np.unique(mag[mag > 0])]
    zero = np.flatnonzero(mag == 0)
    want = []
    for n in (5, 4):
        s = np.zeros((n, score.size))
        for c in classes:
            new = want_rng.permuted(np.broadcast_to(positive[c], (n, c.size)), axis=1)
            s[:, c] = new != positive[c]
        s[:, zero] = want_rng.random((n, zero.size)) < 0.5
        want.append(s)
    assert np.array_equal(got, np.concatenate(want))
    assert got[:, np.abs(score) == 3.0].any()  # a mixed large class moved
    assert got_rng.bit_generator.state == want_rng.bit_generator.state
