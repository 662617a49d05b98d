"""List-wise judging: permutation schemes, candidate lists, prompts and verdicts, metrics
(docs/metrics.md, List-wise), streaming work-unit generation, and end-to-end jobs with
simulated judges of known bias."""

from __future__ import annotations

import itertools
import math
import random
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import chi2 as chi2_dist

import voirdire
from voirdire.analysis.position.cells import _pairwise_cell_metrics, cell_metrics
from voirdire.analysis.position.listwise import (
    listwise_cell_metrics,
    listwise_series,
    slot_shares,
)
from voirdire.analysis.position.metrics import judge_metrics
from voirdire.analysis.position.uncertainty import bootstrap_ci
from voirdire.core import ConfigError
from voirdire.engine.instances import draw_lists, instances
from voirdire.engine.permutations import (
    AllOrders,
    cyclic_orders,
    permutations_for,
    sampled_orders,
    scheme_size,
    unrank,
    williams_orders,
)
from voirdire.engine.spec import BenchmarkSpec, ComparisonSpec, parse_job
from voirdire.engine.units import count_units, iter_unit_batches
from voirdire.judges.extract import extract_verdicts

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------- schemes


@pytest.mark.parametrize("p", range(3, 9))
def test_cyclic_each_candidate_once_per_slot(p):
    orders = cyclic_orders(p)
    assert len(orders) == p == scheme_size("cyclic", p)
    assert [o[0] for o in orders] == list(range(p))  # order i puts candidate i first
    for slot in range(p):
        assert sorted(o[slot] for o in orders) == list(range(p))


@pytest.mark.parametrize("p", range(3, 9))
def test_latin_balanced(p):
    orders = williams_orders(p)
    reps = 1 if p % 2 == 0 else 2
    assert len(orders) == reps * p == scheme_size("latin", p)
    assert len(set(orders)) == len(orders)
    for slot in range(p):
        assert Counter(o[slot] for o in orders) == {c: reps for c in range(p)}
    pairs = Counter((o[k], o[k + 1]) for o in orders for k in range(p - 1))
    assert set(pairs) == {(x, y) for x in range(p) for y in range(p) if x != y}
    assert set(pairs.values()) == {reps}  # every ordered neighbour pair equally often


def test_all_orders_lazy_and_lexicographic():
    orders = AllOrders(8)
    assert len(orders) == 40_320 == scheme_size("all", 8)
    rng = random.Random(1)
    listed = list(itertools.permutations(range(5)))
    assert list(AllOrders(5)) == listed
    assert [unrank(k, 5) for k in range(120)] == listed
    for k in rng.sample(range(40_320), 50):
        assert orders[k] == unrank(k, 8)
    assert orders[-1] == (7, 6, 5, 4, 3, 2, 1, 0)
    with pytest.raises(IndexError):
        unrank(40_320, 8)


def test_sampled_orders_seeded_distinct():
    a = sampled_orders(6, 50, seed=3)
    assert len(set(a)) == 50 and a == sampled_orders(6, 50, seed=3)
    assert a != sampled_orders(6, 50, seed=4)
    assert sorted(sampled_orders(3, 6, seed=0)) == list(
        itertools.permutations(range(3))
    )
    assert (
        len(permutations_for("listwise", "sample:7", 4, 0))
        == 7
        == scheme_size("sample:7", 4)
    )


@pytest.mark.parametrize(
    ("scheme", "p", "match"),
    [
        ("sample:7", 3, "p!"),
        ("sample:0", 4, "positive"),
        ("sample:x", 4, "positive"),
        ("random", 4, "unknown"),
        ("cyclic", 9, "3 to 8"),
    ],
)
def test_bad_schemes(scheme, p, match):
    with pytest.raises(ConfigError, match=match):
        permutations_for("listwise", scheme, p, 0)


def test_comparison_spec_validation():
    ComparisonSpec(mode="listwise", list_size=3, permutations="latin", option_mode=4)
    with pytest.raises(ValueError, match="option_mode"):
        ComparisonSpec(
            mode="listwise", list_size=3, permutations="cyclic", option_mode=5
        )
    with pytest.raises(ValueError, match="p!"):
        ComparisonSpec(mode="listwise", list_size=3, permutations="sample:10")
    with pytest.raises(ValueError, match="unknown list-wise"):
        ComparisonSpec(mode="listwise", list_size=3, permutations="both")


# ---------------------------------------------------------------------------- instances, units


def test_draw_lists_seeded_rule():
    pool = [f"m{i}" for i in range(6)]
    a = draw_lists(pool, 3, ["q1", "q2"], 4, seed=0)
    assert len(a) == 8
    assert a == draw_lists(pool, 3, ["q1", "q2"], 4, seed=0)
    assert a[4:] == draw_lists(
        pool, 3, ["q2"], 4, seed=0
    )  # independent of other questions
    assert a != draw_lists(pool, 3, ["q1", "q2"], 4, seed=1)
    for _q, lst in a:
        assert lst == sorted(lst, key=pool.index) and len(set(lst)) == 3  # pool order
    assert len({tuple(lst) for q, lst in a if q == "q1"}) == 4  # distinct per question
    with pytest.raises(ConfigError, match="C\\(4, 3\\)"):
        draw_lists(pool[:4], 3, ["q"], 5, seed=0)
    with pytest.raises(ConfigError, match="only 2"):
        draw_lists(pool[:2], 3, ["q"], 1, seed=0)


def test_listwise_instances_given_and_drawn(data_dir):
    from voirdire.benchmarks.registry import load_benchmark

    mt = load_benchmark("mtbench", data_dir)
    comp = ComparisonSpec(mode="listwise", permutations="cyclic")
    given = [["gpt-4", "claude-v1", "llama-13b"], ["alpaca-13b", "gpt-4", "koala-13b"]]
    inst = instances(
        mt, BenchmarkSpec(name="mtbench", lists=given, questions=["81", "82"]), comp
    )
    assert inst.height == 4
    assert inst["candidate"].null_count() == 4 and inst["reference"].null_count() == 4
    assert inst["candidates"].to_list() == given * 2
    assert inst["instance_id"][0] == "81;gpt-4;claude-v1;llama-13b"
    comp5 = ComparisonSpec(mode="listwise", list_size=5, permutations="sample:10")
    drawn = instances(
        mt, BenchmarkSpec(name="mtbench", lists_per_question=2, max_instances=30), comp5
    )
    assert drawn.height == 30 and set(drawn["candidates"].list.len().to_list()) == {5}
    assert count_units(drawn, comp5) == 300
    with pytest.raises(ConfigError, match="unknown model"):
        instances(
            mt,
            BenchmarkSpec(name="mtbench", lists=[["gpt-4", "nope", "llama-13b"]]),
            comp,
        )
    with pytest.raises(ConfigError, match="list_size"):
        instances(mt, BenchmarkSpec(name="mtbench"), comp)
    with pytest.raises(ConfigError, match="lengths"):
        instances(
            mt,
            BenchmarkSpec(
                name="mtbench",
                lists=[
                    ["gpt-4", "claude-v1", "llama-13b"],
                    ["gpt-4", "claude-v1", "llama-13b", "koala-13b"],
                ],
            ),
            comp,
        )


def test_p8_all_streams_in_bounded_batches(data_dir):
    """One instance of 8 candidates in all 40,320 orders: cut into batches of at most
    batch_size, every order once, and the count agrees."""
    from voirdire.benchmarks.registry import load_benchmark

    dev = load_benchmark("devbench", data_dir)
    comp = ComparisonSpec(mode="listwise", list_size=8, permutations="all")
    inst = instances(
        dev,
        BenchmarkSpec(
            name="devbench", candidates=list(dev.models[:8]), max_instances=1
        ),
        comp,
    )
    assert count_units(inst, comp) == 40_320
    sizes, perms, ids = [], set(), set()
    for b in iter_unit_batches(
        dev,
        inst,
        comp,
        judge="j",
        identity_hash="h",
        needs_prompt=False,
        batch_size=5000,
    ):
        sizes.append(len(b))
        perms.update(b.columns["permutation"])
        ids.update(b.columns["unit_id"])
        assert all(q.prompt is None for q in b.queries)
    assert max(sizes) <= 5000 and sum(sizes) == 40_320 == len(ids) == len(perms)


def test_small_instances_stay_whole(data_dir):
    from voirdire.benchmarks.registry import load_benchmark

    mt = load_benchmark("mtbench", data_dir)
    comp = ComparisonSpec(
        mode="listwise", list_size=3, permutations="latin", repetitions=2
    )  # 6 orders x 2
    inst = instances(
        mt,
        BenchmarkSpec(
            name="mtbench",
            candidates=["gpt-4", "claude-v1", "llama-13b", "koala-13b"],
            max_instances=10,
        ),
        comp,
    )
    batches = list(
        iter_unit_batches(
            mt,
            inst,
            comp,
            judge="j",
            identity_hash="h",
            needs_prompt=True,
            batch_size=30,
        )
    )
    assert sum(len(b) for b in batches) == count_units(inst, comp) == 120
    for b in batches:
        assert len(b) % 12 == 0  # whole instances
        assert all(
            q.prompt and q.option_mode == 4 and q.mode == "listwise" for q in b.queries
        )
        assert all(len(s) == 3 for s in b.columns["shown"])


# ---------------------------------------------------------------------------- prompts, verdicts


def test_mtbench_listwise_prompt(data_dir):
    from voirdire.benchmarks.registry import load_benchmark

    mt = load_benchmark("mtbench", data_dir)
    shown = ("gpt-4", "claude-v1", "llama-13b", "koala-13b")
    p = mt.build_prompt("81", shown, 5, mode="listwise")
    assert "responses provided by four AI assistants" in p
    assert (
        '"[[A]]" if assistant A is the best, "[[B]]" if assistant B is the best, "[[C]]" if assistant C is the best, "[[D]]" if assistant D is the best, and "[[E]]" for a tie.'
        in p
    )
    for letter, m in zip("ABCD", shown):
        a1, a2 = mt.answers("81", m)
        block = f"<|The Start of Assistant {letter}'s Conversation with User|>\n\n### User:\n"
        assert p.count(block) == 1
        assert (
            f"### Assistant {letter}:\n{a1}\n\n" in p
            and f"### Assistant {letter}:\n{a2}\n\n<|The End of Assistant {letter}" in p
        )
    assert (
        p.index("Assistant A's Conv")
        < p.index("Assistant B's Conv")
        < p.index("Assistant D's Conv")
    )
    no_tie = mt.build_prompt("81", shown, 4, mode="listwise")
    assert (
        '"[[C]]" if assistant C is the best, or "[[D]]" if assistant D is the best.'
        in no_tie
        and "tie" not in no_tie.split("\n")[0]
    )
    math_q = mt.questions.filter(pl.col("task") == "math")["question_id"][0]
    pm = mt.build_prompt(math_q, shown[:3], 4, mode="listwise")
    assert (
        "the answers of assistant A, assistant B and assistant C" in pm
        and "<|The Start of Reference Answer|>" in pm
    )
    assert mt.output_chars("81", shown) == sum(
        len(t) for m in shown for t in mt.answers("81", m)
    )
    with pytest.raises(ValueError, match="option mode"):
        mt.build_prompt("81", shown, 3, mode="listwise")
    with pytest.raises(ValueError, match="3 to 8"):
        mt.build_prompt("81", mt.models[:9], 9, mode="listwise")


def test_devbench_listwise_prompt(data_dir):
    from voirdire.benchmarks.registry import load_benchmark

    dev = load_benchmark("devbench", data_dir)
    qid = dev.question_ids[0]
    shown = dev.models[1:4]
    p = dev.build_prompt(qid, shown, 3, mode="listwise")
    assert p.startswith(
        "\nPlease evaluate the three responses (Response 1, Response 2, Response 3) based on"
    )
    assert (
        "following 3 options based on the scoring criteria:\nA. Response 1 is the best.\nB. Response 2 is the best.\nC. Response 3 is the best.\n\n"
        in p
    )
    assert "Tie." not in p and "same attention to all responses" in p
    for k, m in enumerate(shown, start=1):
        assert (
            f"<Response {k} Start>\n\n {dev.answers(qid, m)[0]} \n\n<Response {k} End>"
            in p
        )
    assert "D. Tie.\n" in dev.build_prompt(qid, shown, 4, mode="listwise")
    assert dev.listwise_option_mode(3) == 3 and dev.listwise_option_mode(5) == 5


def test_listwise_verdict_extraction(data_dir):
    """The list-wise verdict formats: ``[[X]]`` (MT-Bench) and ``Choice: X`` (DevBench),
    X in A..I; the letter after the last slot is the tie when offered; pairwise patterns
    are unchanged."""
    from voirdire.benchmarks.registry import load_benchmark

    mt, dev = load_benchmark("mtbench", data_dir), load_benchmark("devbench", data_dir)
    assert mt.verdict_pattern_for("pairwise") == r"\[\[([ABCD])\]\]"
    shown = ["m1", "m2", "m3", "m4", "m5"]
    outputs = ["... [[E]]", "[[F]]", "[[G]]", "Choice: B", None, "[[A]] [[C]]"]
    raw = pl.DataFrame(
        {
            "benchmark": [
                "MTBench",
                "MTBench",
                "MTBench",
                "DevBench",
                "MTBench",
                "MTBench",
            ],
            "shown": [shown] * 6,
            "option_mode": [6, 6, 6, 5, 6, 6],
            "output": outputs,
            "choice": [None] * 6,
        },
        schema_overrides={"output": pl.String, "choice": pl.String},
    )
    got = extract_verdicts(
        raw,
        {
            "MTBench": mt.verdict_pattern_for("listwise"),
            "DevBench": dev.verdict_pattern_for("listwise"),
        },
    )
    assert got["extracted"].to_list() == ["E", "F", "G", "B", None, "A"]
    assert got["chosen"].to_list() == ["m5", None, None, "m2", None, "m1"]
    assert got["tie"].to_list() == [False, True, False, False, False, False]
    assert got["failed"].to_list() == [False, False, False, False, True, False]


# ---------------------------------------------------------------------------- metrics


def _lw_rows(judge, q, cands, orders, letters, *, rep=1, task="t", opt=None, bench="B"):
    """Judgment rows of one series: order k shows ``cands`` permuted by ``orders[k]`` and
    extracts ``letters[k]`` (``-`` failed)."""
    p = len(cands)
    rows = []
    for k, (order, letter) in enumerate(zip(orders, letters)):
        shown = [cands[i] for i in order]
        failed = letter == "-"
        rows.append(
            {
                "benchmark": bench, "judge": judge, "question_id": q, "task": task,
                "candidate": None, "reference": None, "candidates": list(cands), "shown": shown,
                "permutation": k, "repetition": rep, "mode": "listwise", "option_mode": opt or p + 1,
                "query_id": f"{q};{';'.join(shown)}", "extracted": None if failed else letter,
                "failed": failed, "input_chars": 10, "output_chars": 20, "prompt_chars": 100,
            }
        )  # fmt: skip
    return rows


CYC3 = cyclic_orders(3)  # (0,1,2), (1,2,0), (2,0,1)
C3 = ["x", "y", "z"]


def test_series_classes_by_hand():
    # position scores at p = 3: A -1, B 0, C +1; s = mean over the non-tie choices
    rows = (
        _lw_rows("J", "q1", C3, CYC3, "ACB")  # x, x, x: consistent, winner x
        + _lw_rows("J", "q2", C3, CYC3, "DDD")  # all ties: consistent tie
        + _lw_rows("J", "q3", C3, CYC3, "AAA")  # x, y, z: s = -1: primacy
        + _lw_rows(
            "J", "q4", C3, CYC3, "CCB"
        )  # z, x, x: s = (1 + 1 + 0)/3 = 2/3: recency
        + _lw_rows("J", "q5", C3, CYC3, "ABD")  # x, z, tie: s = (-1 + 0)/2: primacy
        + _lw_rows("J", "q6", C3, CYC3, "A-A")  # failed: error
        + _lw_rows("J", "q7", C3, CYC3, "AEA")  # E is outside 4 options: other
        + _lw_rows("J", "q8", C3, CYC3[:2], "AC")  # an order missing: error
        + _lw_rows("J", "q9", C3, CYC3, "ABC")  # x, z, y: s = 0: balanced
        + _lw_rows(
            "J", "qa", C3, CYC3, "BBB"
        )  # y, z, x: always the middle slot: balanced
        + _lw_rows("J", "qb", C3, CYC3, "CDD")  # z, tie, tie: s = +1: recency
    )
    s = listwise_series(pl.DataFrame(rows)).sort("question_id")
    assert s["question_id"].to_list() == [
        "q1",
        "q2",
        "q3",
        "q4",
        "q5",
        "q6",
        "q7",
        "q8",
        "q9",
        "qa",
        "qb",
    ]
    assert s["klass"].to_list() == [
        "consistent", "consistent", "primacy", "recency", "primacy", "error", "other", "error", "balanced", "balanced", "recency",
    ]  # fmt: skip
    assert s["winner"].to_list() == ["x"] + [None] * 10
    assert s["all_tie"].to_list() == [False, True] + [False] * 9
    assert s["s"].to_list()[:5] == [0.0, 0.0, -1.0, pytest.approx(2 / 3), -0.5]
    assert s["s"].to_list()[5:] == [None, None, None, 0.0, 0.0, 1.0]


def test_cell_metrics_by_hand():
    rows = (
        _lw_rows("J", "q1", C3, CYC3, "ACB")  # consistent, x wins
        + _lw_rows("J", "q2", C3, CYC3, "DDD")  # consistent tie
        + _lw_rows("J", "q3", C3, CYC3, "AAA")  # primacy, s = -1
        + _lw_rows("J", "q4", C3, CYC3, "CCB")  # recency, s = 2/3
        + _lw_rows("J", "q9", C3, CYC3, "ABC")  # balanced, s = 0
        + _lw_rows("J", "q6", C3, CYC3, "A-A")  # error
    )
    u = cell_metrics(pl.DataFrame(rows))
    assert u["candidate"].to_list() == ["x", "y", "z"]
    x = u.row(0, named=True)
    # n = 6 series, ccn = 2, one primacy, one recency, one balanced: v = 5
    # pcn = 1, rcn = 2/3: PF = (2/3 - 1)/6 = -1/18
    assert (x["n"], x["consistent"], x["primacy"], x["recency"], x["balanced"]) == (
        6,
        2,
        1,
        1,
        1,
    )
    assert x["pcn"] == 1.0 and x["rcn"] == pytest.approx(2 / 3)
    assert x["pc"] == pytest.approx(2 / 5) and x["pf"] == pytest.approx(-1 / 18)
    # owr(x) = (C_w + (C_t + C_I)/3)/v = (1 + (1 + 3)/3)/5 = 7/15; y: (4/3)/5
    assert x["owr"] == pytest.approx(7 / 15) and x["quality_gap"] == pytest.approx(
        7 / 15 - 1 / 3
    )
    assert u.row(1, named=True)["owr"] == pytest.approx(4 / 15)
    jm = judge_metrics(pl.DataFrame(rows)).row(0, named=True)
    assert jm["pc"] == pytest.approx(2 / 5) and jm["error_rate"] == pytest.approx(
        1 / 18
    )
    assert jm["pf"] == pytest.approx(-1 / 18)


def _enumerated(
    weights: dict[str, int],
    orders: list[tuple[int, ...]],
    cands: list[str],
    *,
    judge: str = "J",
) -> pl.DataFrame:
    """Every outcome of a series, each repeated by its integer weight (so the table's cell
    metrics are exact expectations): ``weights`` maps a candidate (or ``"tie"``) to its
    weight of being chosen in any order, whatever the slot it is shown in (a judge without
    position bias)."""
    p = len(cands)
    outcomes = list(weights)
    rows, q = [], 0
    for combo in itertools.product(outcomes, repeat=len(orders)):
        letters = []
        for order, pick in zip(orders, combo):
            shown = [cands[i] for i in order]
            letters.append(LETTERS[p] if pick == "tie" else LETTERS[shown.index(pick)])
        for _ in range(math.prod(weights[c] for c in combo)):
            rows += _lw_rows(judge, f"q{q}", cands, orders, "".join(letters), opt=p + 1)
            q += 1
    return pl.DataFrame(rows)


LETTERS = "ABCDEFGHI"


@pytest.mark.parametrize(
    ("p", "scheme", "weights"),
    [
        (3, "cyclic", {"x": 1, "y": 1, "z": 1}),  # uniform, no tie
        (3, "cyclic", {"x": 1, "y": 1, "z": 1, "tie": 1}),  # uniform with ties
        (3, "cyclic", {"x": 5, "y": 3, "z": 1}),  # fixed preference, no tie
        (3, "cyclic", {"x": 4, "y": 2, "z": 1, "tie": 2}),  # fixed preference with ties
        (3, "all", {"x": 3, "y": 1, "z": 1, "tie": 1}),
        (4, "cyclic", {"w": 1, "x": 1, "y": 1, "z": 1}),
        (4, "cyclic", {"w": 3, "x": 2, "y": 1, "z": 1, "tie": 1}),
        (4, "latin", {"w": 2, "x": 1, "y": 1, "z": 1}),
        (5, "cyclic", {"v": 2, "w": 1, "x": 1, "y": 1, "z": 1, "tie": 1}),
    ],
)
@pytest.mark.slow
def test_position_independent_judge_reads_pf_zero_exactly(p, scheme, weights):
    """Enumeration: every outcome of a position-independent judge, weighted by its
    probability, gives PF = 0 in every cell under a balanced design, with or without ties
    (the earlier one-vs-all rule read PF ≈ +0.37 at p = 3 for a uniform judge)."""
    cands = [c for c in weights if c != "tie"]
    assert len(cands) == p
    orders = list(permutations_for("listwise", scheme, p, 0))
    df = _enumerated(weights, orders, cands)
    u = cell_metrics(df)
    assert u.height == p
    assert all(abs(pf) < 1e-12 for pf in u["pf"].to_list())
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(u["pcn"], u["rcn"]))
    assert (u["primacy"] > 0).all() and (u["recency"] > 0).all()
    assert abs(judge_metrics(df)["pf"][0]) < 1e-12
    # a fixed preference shows as owr, not as PF
    if len(set(weights[c] for c in cands)) > 1:
        best = max(cands, key=lambda c: weights[c])
        assert one(u, best)["owr"] == u["owr"].max() > 1 / p


def one(u: pl.DataFrame, cand: str) -> dict:
    return u.filter(pl.col("candidate") == cand).row(0, named=True)


@pytest.mark.parametrize("p", [3, 4, 5])
@pytest.mark.parametrize("ties", [False, True])
def test_always_first_last_middle_slot(p, ties):
    """Always slot 1: PF = -1 and PC = 0; always the last slot: PF = +1; always a middle
    slot (p odd): PF = 0 (balanced series), which the slot shares and their chi-square
    test show. A tie in one order per series changes none of it."""
    cands = [f"m{i}" for i in range(p)]
    orders = cyclic_orders(p)
    tie = LETTERS[p]

    def judge(name: str, slot: int) -> list[dict]:
        out = []
        for q in range(6):
            letters = [LETTERS[slot]] * p
            if ties:
                letters[q % p] = tie
            out += _lw_rows(name, f"q{q}", cands, orders, "".join(letters))
        return out

    mid = (p - 1) // 2
    df = pl.DataFrame(judge("first", 0) + judge("last", p - 1) + judge("middle", mid))
    jm = {r["judge"]: r for r in judge_metrics(df).iter_rows(named=True)}
    assert jm["first"]["pf"] == -1.0 and jm["first"]["pc"] == 0.0
    assert jm["last"]["pf"] == 1.0 and jm["last"]["pc"] == 0.0
    u = cell_metrics(df)
    assert set(u.filter(pl.col("judge") == "first")["pf"]) == {-1.0}
    assert set(u.filter(pl.col("judge") == "last")["pf"]) == {1.0}
    shares = slot_shares(df)
    chi = {
        r["judge"]: r
        for r in shares.filter(pl.col("position") == 1).iter_rows(named=True)
    }
    n_choices = 6 * (p - 1 if ties else p)
    for j in (
        "first",
        "last",
        "middle",
    ):  # all choices in one slot: Pearson's χ² = n (p - 1)
        assert chi[j]["pearson_chi2"] == pytest.approx(n_choices * (p - 1))
        # clustered: d_i is the same vector for each of the 6 questions, so W = 6 (the most
        # 6 clusters can show: too few questions to reject at 0.05 with p - 1 dof > 2)
        assert chi[j]["chi2"] == pytest.approx(6.0) and chi[j]["clusters"] == 6
        assert chi[j]["chi2_dof"] == p - 1 and chi[j]["chi2_p"] == pytest.approx(
            chi2_dist.sf(6.0, p - 1)
        )
    middle = u.filter(pl.col("judge") == "middle")
    if p % 2:  # an exact middle slot: position score 0
        assert jm["middle"]["pf"] == 0.0
        assert set(middle["balanced"]) == {6} and set(middle["primacy"]) == {0}
        mid_share = shares.filter(
            (pl.col("judge") == "middle") & (pl.col("position") == mid + 1)
        )
        assert mid_share["share"].to_list() == [1.0]
    else:  # the slot just before the middle leans to primacy
        assert -1.0 < jm["middle"]["pf"] < 0.0


def test_reduces_to_pairwise_at_p2():
    """The list-wise builder on two-candidate series gives the pairwise cell metrics (the
    same formulas, and the position score is ±1 at p = 2)."""
    rng = random.Random(7)
    rows_pw, rows_lw = [], []
    for i in range(300):
        cand = f"m{i % 3}"
        for order in ((0, 1), (1, 0)):
            letter = rng.choice("ABC" * 5 + "-D")
            shown = [[cand, "ref"][k] for k in order]
            base = {
                "benchmark": "B", "judge": "J", "question_id": f"q{i}", "task": f"t{i % 2}", "shown": shown,
                "repetition": 1, "option_mode": 3, "query_id": f"q{i};{order}", "extracted": None if letter == "-" else letter,
                "failed": letter == "-", "input_chars": i, "output_chars": 2 * i, "prompt_chars": 3 * i, "permutation": order[0],
            }  # fmt: skip
            rows_pw.append(
                {
                    **base,
                    "mode": "pairwise",
                    "candidate": cand,
                    "reference": "ref",
                    "candidates": [cand, "ref"],
                }
            )
            rows_lw.append(
                {
                    **base,
                    "mode": "listwise",
                    "candidate": None,
                    "reference": None,
                    "candidates": [cand, "ref"],
                }
            )
    pw = _pairwise_cell_metrics(pl.DataFrame(rows_pw))
    lw = listwise_cell_metrics(pl.DataFrame(rows_lw)).filter(
        pl.col("candidate") != "ref"
    )
    cols = [
        "candidate",
        "task",
        "n",
        "consistent",
        "primacy",
        "recency",
        "balanced",
        "pcn",
        "rcn",
        "pc",
        "pf",
        "owr",
        "quality_gap",
        "input_chars",
    ]
    assert (
        pw.select(cols)
        .sort("candidate", "task")
        .equals(lw.select(cols).sort("candidate", "task"))
    )
    assert set(lw["balanced"]) == {0} and (lw["pf"] != 0).any()


def test_slot_shares_every_slot():
    rows = _lw_rows("J", "q1", C3, CYC3, "AAD") + _lw_rows("J", "q2", C3, CYC3, "AB-")
    s = slot_shares(pl.DataFrame(rows))
    assert s["slot"].to_list() == ["A", "B", "C"]
    assert s["choices"].to_list() == [3, 1, 0] and set(s["n_choices"]) == {4}
    assert s["share"].to_list() == [0.75, 0.25, 0.0]
    assert s["expected"][0] == pytest.approx(1 / 3) and s["tie_share"][
        0
    ] == pytest.approx(1 / 5)
    # Pearson's chi-square against uniform: expected 4/3 per slot
    stat = sum((c - 4 / 3) ** 2 / (4 / 3) for c in (3, 1, 0))
    assert s["pearson_chi2"].to_list() == [pytest.approx(stat)] * 3 and set(
        s["chi2_dof"]
    ) == {2}
    # clustered by question: d_q1 = (2, 0, 0) - 2/3, d_q2 = (1, 1, 0) - 2/3 over slots A, B
    d = np.array([[4 / 3, -2 / 3], [1 / 3, 1 / 3]])
    w = d.sum(0) @ np.linalg.inv(d.T @ d) @ d.sum(0)
    assert s["chi2"].to_list() == [pytest.approx(w)] * 3 and set(s["clusters"]) == {2}
    assert s["chi2_p"][0] == pytest.approx(
        math.exp(-w / 2)
    )  # chi-square survival at 2 dof


@pytest.mark.parametrize("repetitions, noise", [(1, 0.0), (3, 0.0), (3, 0.5)])
def test_slot_test_size_holds_with_repetitions(repetitions, noise):
    """A judge without position bias (p = 3 cyclic, 100 questions), 300 simulated tables:
    the clustered slot test rejects at α = 0.05 in about 5 % of tables with one
    repetition, three identical ones and three partly correlated ones (repetition_noise
    0.5); Pearson's χ² over judgments as if independent is conservative with one
    repetition and rejects far too often with three (the audit's 27 %). perf/bench_listwise_size.py
    gives the figure with more tables, list sizes and questions."""
    from tests.listwise_simulate import simulate_listwise_tables, slot_test_size
    from voirdire.judges.simulated import SimulatedSettings

    s = SimulatedSettings(primacy=1 / 3, sensitivity=1.0, repetition_noise=noise)
    df = simulate_listwise_tables(
        s, tables=300, n_questions=100, p=3, repetitions=repetitions, seed=11
    )
    size = slot_test_size(df)
    assert size["tables"] == 300
    assert 0.02 <= size["clustered"] <= 0.09, size
    if repetitions == 3 and noise == 0.0:
        assert size["pearson"] > 0.15, size


def test_clustered_slot_test_ignores_identical_repetitions_and_detects_primacy():
    """Three identical repetitions leave the clustered statistic unchanged (D and V scale
    by 3 and 9) and triple Pearson's; a judge leaning to slot A is rejected."""
    from tests.listwise_simulate import simulate_listwise_tables, slot_test_size
    from voirdire.judges.simulated import SimulatedSettings

    s = SimulatedSettings(primacy=1 / 3, sensitivity=1.0)
    table = simulate_listwise_tables(s, tables=5, n_questions=50, seed=3)
    copies = pl.concat(
        [table.with_columns(repetition=pl.lit(r, dtype=pl.Int64)) for r in (1, 2, 3)]
    )
    one = slot_shares(table).filter(pl.col("position") == 1).sort("judge")
    three = slot_shares(copies).filter(pl.col("position") == 1).sort("judge")
    assert three["chi2"].to_list() == pytest.approx(one["chi2"].to_list())
    assert three["pearson_chi2"].to_list() == pytest.approx(
        [3 * x for x in one["pearson_chi2"]]
    )
    assert set(three["clusters"]) == {50}
    biased = SimulatedSettings(primacy=0.6, sensitivity=1.0)
    assert (
        slot_test_size(
            simulate_listwise_tables(biased, tables=50, n_questions=100, seed=4)
        )["clustered"]
        > 0.8
    )


# ---------------------------------------------------------------------------- end to end


def _load_example(name: str, out: Path) -> object:
    data = tomllib.loads((ROOT / "examples" / name).read_text())
    data["output_dir"] = str(out)
    return parse_job(data, name)


@pytest.mark.ray
@pytest.mark.parametrize(
    ("example", "p"),
    [("mtbench_listwise_p3_cyclic.toml", 3), ("mtbench_listwise_p5_all.toml", 5)],
)
def test_example_jobs_recover_simulated_bias(data_dir, ray_local, tmp_path, example, p):
    """The list-wise examples: the position-independent judge reads |PF| within its
    bootstrap interval of 0 (p = 3 cyclic and p = 5 all orders), the always-slot-A judge PF
    = -1 and PC = 0, the primacy judge a clearly negative PF."""
    job = _load_example(example, tmp_path / "out")
    outcome = voirdire.run(job)
    orders = 3 if p == 3 else 120
    assert outcome.stats.queries == 3 * 80 * orders and outcome.stats.failures == 0
    jm = {r["judge"]: r for r in outcome.judge_metrics.iter_rows(named=True)}
    biased, fair, always_a = (
        jm["simulated-primacy-0.8"],
        jm["simulated-fair"],
        jm["simulated-always-a"],
    )
    ci = bootstrap_ci(outcome.judgments, replicates=400).filter(
        pl.col("metric") == "pf"
    )
    pf_ci = {
        r["judge"]: (r["lo"], r["estimate"], r["hi"]) for r in ci.iter_rows(named=True)
    }
    lo, est, hi = pf_ci["simulated-fair"]
    assert est == pytest.approx(fair["pf"])
    assert (
        lo <= 0.0 <= hi and abs(fair["pf"]) < 0.05
    )  # no position bias: 0 in its interval
    assert always_a["pf"] == -1.0 and always_a["pc"] == 0.0
    assert (
        biased["pf"] < -0.2 and pf_ci["simulated-primacy-0.8"][2] < 0.0
    )  # clearly primacy
    shares = pl.read_csv(tmp_path / "out" / "metrics" / "slot_shares.csv")
    a = {
        r["judge"]: r
        for r in shares.filter(pl.col("slot") == "A").iter_rows(named=True)
    }
    assert (
        a["simulated-primacy-0.8"]["share"] > 1 / p + 0.2
        and a["simulated-primacy-0.8"]["chi2_p"] < 1e-6
    )
    assert a["simulated-always-a"]["share"] == 1.0
    fair_shares = shares.filter(pl.col("judge") == "simulated-fair")["share"].to_list()
    assert len(fair_shares) == p and all(abs(s - 1 / p) < 0.06 for s in fair_shares)
    report = (tmp_path / "out" / "report.md").read_text()
    for section in (
        "## List-wise: slot choice shares",
        "## List-wise: series",
        "## List-wise: candidates",
    ):
        assert section in report
    if (
        p == 3
    ):  # the same 3 candidates in every series: their owr sum to 1 per (judge, task)
        cm = outcome.cell_metrics
        sums = cm.group_by("judge", "task").agg(pl.col("owr").sum())["owr"].to_list()
        assert all(math.isclose(x, 1.0) for x in sums)
        # mitigation pairs the two orders of one comparison: a list-wise directory is
        # refused in one line (it stopped with polars' "estimate_pc not found" traceback)
        from voirdire.analysis.mitigation.evaluation import run_mitigation

        with pytest.raises(
            ConfigError, match="no pairwise or score judgments to mitigate"
        ):
            run_mitigation(outcome.judgments)
