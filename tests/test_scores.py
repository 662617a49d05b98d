"""Score mode (Wang et al. 2023): prompts, score extraction, and BPC / MEC / BPDE with known
answers from the simulated judge, run through the real scheduler on a local Ray cluster."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import voirdire
from voirdire.analysis.mitigation import scores as sc
from voirdire.benchmarks.registry import load_benchmark
from voirdire.benchmarks.scoring import load_score_templates, score_patterns
from voirdire.core import ConfigError
from voirdire.engine.spec import parse_job
from voirdire.judges.extract import extract_scores
from voirdire.judges.simulated import latent_quality

# ---------------------------------------------------------------------- prompts


@pytest.mark.parametrize("name", ["mtbench", "devbench"])
@pytest.mark.parametrize("style", ["evidence_first", "scores_first"])
def test_score_prompt_shows_both_answers_and_asks_for_two_score_lines(
    data_dir, name, style
):
    b = load_benchmark(name, data_dir)
    q = b.question_ids[0]
    c = b.candidates[0]
    p = b.build_score_prompt(q, (c, b.reference), style)
    labels = load_score_templates()["labels"][b.name]
    ans_c = b.answers(q, c)[-1].strip()
    ans_r = b.answers(q, b.reference)[-1].strip()
    assert ans_c[:200] in p and ans_r[:200] in p
    assert p.index(ans_c[:200]) < p.index(ans_r[:200])  # slot A first
    assert f"Score of {labels[0]}: <score>\nScore of {labels[1]}: <score>" in p
    if style == "evidence_first":
        assert p.rstrip().endswith(f"Score of {labels[1]}: <score>")
    # the template's own format lines carry no number: extraction cannot read them as scores
    raw = pl.DataFrame(
        {"benchmark": [b.name], "mode": ["score"], "output": [p], "choice": [None]},
        schema_overrides={"choice": pl.String},
    )
    assert (
        extract_scores(raw, {b.name: score_patterns(b.name)})["slot_scores"][0] is None
    )
    swapped = b.build_score_prompt(q, (b.reference, c), style)
    assert swapped != p and swapped.index(ans_r[:200]) < swapped.index(ans_c[:200])


def test_score_prompt_rejects_bad_requests(data_dir):
    b = load_benchmark("mtbench", data_dir)
    q, c = b.question_ids[0], b.candidates[0]
    with pytest.raises(ValueError, match="unknown score style"):
        b.build_score_prompt(q, (c, b.reference), "stars")
    with pytest.raises(ValueError, match="shows 2 models"):
        b.build_score_prompt(q, (c, b.reference, b.candidates[1]))
    with pytest.raises(KeyError, match="unknown question"):
        b.build_score_prompt("nope", (c, b.reference))


# ---------------------------------------------------------------------- extraction


def test_extract_scores_reads_the_last_score_lines_and_derives_the_letter():
    pats = {"MTBench": score_patterns("MTBench")}
    outs = [
        "Score of Assistant A: 7\nScore of Assistant B: 9",  # B higher
        "Earlier I thought Score of Assistant A: 2.\n...\nScore of Assistant A: **8**\nScore of Assistant B: 6.5",  # last wins
        "Score of Assistant A: 5\nScore of Assistant B: 5",  # equal: tie
        "Score of Assistant A: 11\nScore of Assistant B: 5",  # out of range: no verdict
        "no scores at all",
        None,
    ]
    raw = pl.DataFrame(
        {
            "benchmark": ["MTBench"] * 7,
            "mode": ["score"] * 6 + ["pairwise"],
            "output": outs + ["[[A]]"],
            "choice": [None] * 7,
        },
        schema_overrides={"choice": pl.String},
    )
    got = extract_scores(raw, pats)
    assert got["slot_scores"].to_list() == [
        [7.0, 9.0],
        [8.0, 6.5],
        [5.0, 5.0],
        None,
        None,
        None,
        None,
    ]
    assert got["choice"].to_list() == [
        "B",
        "A",
        "C",
        None,
        None,
        None,
        None,
    ]  # pairwise rows keep their choice
    with pytest.raises(KeyError, match="no score patterns"):
        extract_scores(raw, {})


def test_score_mode_job_spec_is_validated(tmp_path, data_dir):
    base = {
        "name": "s", "output_dir": str(tmp_path / "o"),
        "benchmark": {"name": "mtbench", "data_dir": str(data_dir)},
        "judges": [{"name": "sim", "backend": "simulated"}],
    }  # fmt: skip
    with pytest.raises(ConfigError, match="option_mode 3"):
        parse_job({**base, "comparison": {"mode": "score", "option_mode": 2}})
    with pytest.raises(ConfigError, match="permutations"):
        parse_job({**base, "comparison": {"mode": "score", "permutations": "cyclic"}})
    with pytest.raises(ConfigError, match="score_style"):
        parse_job({**base, "comparison": {"mode": "score", "score_style": "stars"}})


# ---------------------------------------------------------------------- known answers


PRIMACY = 0.8  # the simulated judge adds 4 * (0.8 - 0.5) = 1.2 points to slot A
K = 3
QUESTION_NOISE, SCORE_NOISE = 0.5, 1.0


def _expected_accuracy(
    pairs: list[tuple[str, str]], draws: int = 400
) -> dict[str, float]:
    """P(final verdict == true winner) of each strategy under the simulated judge's score
    model (judges/simulated.py), by Monte Carlo with numpy, independently of the
    implementation: the true winner is the model of higher latent quality + question noise;
    a tie is never correct."""
    rng = np.random.default_rng(7)
    qc = np.array([latent_quality(c, None, 0) for c, _ in pairs])[:, None]
    qr = np.array([latent_quality(r, None, 0) for _, r in pairs])[:, None]
    n = len(pairs)
    vc = qc + rng.normal(0, QUESTION_NOISE, (n, draws))
    vr = qr + rng.normal(0, QUESTION_NOISE, (n, draws))
    truth = np.sign(vc - vr)
    lean = 4 * (PRIMACY - 0.5)

    def score(v, bonus, k):
        return np.clip(
            np.round(
                5.5
                + 1.5 * v[..., None]
                + bonus
                + rng.normal(0, SCORE_NOISE, (n, draws, k))
            ),
            1,
            10,
        )

    # order 0: candidate in slot A; order 1: reference in slot A
    c0, r0 = score(vc, lean, K), score(vr, -lean, K)
    c1, r1 = score(vc, -lean, K), score(vr, lean, K)
    out = {}
    for name, (orders, k) in sc.CALIBRATIONS.items():
        k = K if k is None else k
        d0 = c0[..., :k].mean(-1) - r0[..., :k].mean(
            -1
        )  # each answer's mean in its position
        d1 = c1[..., :k].mean(-1) - r1[..., :k].mean(-1)
        if orders == "both":  # the mean of the two positions' means
            out[name] = float((np.sign(d0 + d1) == truth).mean())
        else:  # a verdict per order, both orders counted
            out[name] = float(
                ((np.sign(d0) == truth).mean() + (np.sign(d1) == truth).mean()) / 2
            )
    return out


@pytest.fixture(scope="module")
def primacy_run(tmp_path_factory, data_dir, ray_local):
    out = tmp_path_factory.mktemp("score")
    job = parse_job(
        {
            "name": "score-known", "output_dir": str(out / "run"),
            "benchmark": {"name": "mtbench", "data_dir": str(data_dir)},
            "comparison": {"mode": "score", "permutations": "both", "repetitions": K},
            "sampling": {"temperature": 1.0},
            "judges": [{"name": "sim-primacy", "backend": "simulated", "primacy": PRIMACY,
                        "question_noise": QUESTION_NOISE, "score_noise": SCORE_NOISE}],
        }
    )  # fmt: skip
    return voirdire.run(job)


@pytest.mark.ray
def test_bpc_and_mec_remove_the_primacy_bonus_and_recover_the_true_winner(primacy_run):
    j = primacy_run.judgments
    assert j.height == 80 * 30 * 2 * K and j["failed"].sum() == 0
    assert j["slot_scores"].list.len().unique().to_list() == [2]
    # raw score verdicts read as a strongly primacy-biased judge
    jm = primacy_run.judge_metrics.row(0, named=True)
    assert jm["pf"] < -0.5, jm

    pairs = (
        sc.score_samples(j)
        .select("candidate", "reference", "question_id")
        .unique()
        .sort("question_id", "candidate")
    )
    expected = _expected_accuracy(list(zip(pairs["candidate"], pairs["reference"])))
    # truth per pair from the judge's own latent model: quality + the question's noise draw,
    # recomputed here from the simulated judge's definitions
    import random

    from voirdire.judges.simulated import _u

    def true_winner(row):
        rng = random.Random(_u("question", 0, row["question_id"]))
        noise = {
            m: rng.gauss(0.0, QUESTION_NOISE)
            for m in sorted((row["candidate"], row["reference"]))
        }
        vc = latent_quality(row["candidate"], None, 0) + noise[row["candidate"]]
        vr = latent_quality(row["reference"], None, 0) + noise[row["reference"]]
        return "win" if vc > vr else "loss"

    truth = pairs.with_columns(
        truth=pl.struct("question_id", "candidate", "reference").map_elements(
            true_winner, return_dtype=pl.String
        )
    )
    got = {}
    for name in sc.CALIBRATIONS:
        v = sc.strategy_verdicts(j, name).join(
            truth, on=["question_id", "candidate", "reference"]
        )
        assert v.height == 2400 * (
            1 if sc.CALIBRATIONS[name][0] == "both" else 2
        )  # per order: both orders
        got[name] = (v["verdict"] == v["truth"]).mean()
        se = math.sqrt(expected[name] * (1 - expected[name]) / v.height)
        assert abs(got[name] - expected[name]) < 4 * se + 0.01, (
            name,
            got[name],
            expected[name],
        )
        assert v["queries"].unique().to_list() == [
            {"score-single": 1, "bpc": 2, "mec": K, "mec+bpc": 2 * K}[name]
        ]
    # the calibrations help: BPC removes the slot bonus, MEC averages the sampling noise
    assert got["bpc"] > got["score-single"] + 0.03
    assert got["mec+bpc"] > got["bpc"]


@pytest.mark.ray
def test_bpde_of_the_2k_score_outcomes_ranks_disagreeing_pairs_first(primacy_run):
    from voirdire.analysis.mitigation import bpde as B
    from voirdire.analysis.mitigation import registry

    samples = sc.sample_verdicts(primacy_run.judgments)
    assert samples.height == 2400 * 2 * K and samples["queries"].sum() == samples.height
    e = B.bpde(samples)
    assert e.height == 2400 and e["outcomes"].unique().to_list() == [2 * K]
    assert 0.0 <= e["bpde"].min() and e["bpde"].max() <= math.log2(3) + 1e-12
    top = e.sort("bpde", descending=True).row(0, named=True)
    p = np.array([top["wins"], top["ties"], top["losses"]], dtype=float) / (2 * K)
    p = p[p > 0]
    assert top["bpde"] == pytest.approx(float(-(p * np.log2(p)).sum()))
    chosen = B.select_for_annotation(samples, 0.2)
    assert (
        chosen.height == 480
        and chosen["bpde"].min() >= e["bpde"].sort(descending=True)[479]
    )
    # registered strategies: the score strategies run through the mitigation registry
    both = registry.apply_strategies(
        primacy_run.judgments, ["score-single", "bpc", "mec", "mec+bpc"]
    )
    assert dict(
        both.group_by("strategy").agg(pl.col("queries").first()).iter_rows()
    ) == {
        "score-single": 1,
        "bpc": 2,
        "mec": K,
        "mec+bpc": 2 * K,
    }
    with pytest.raises(ConfigError, match="slot_scores"):
        registry.apply_strategies(
            primacy_run.judgments.with_columns(slot_scores=None), ["bpc"]
        )


def test_strategies_need_score_judgments_and_both_orders():
    pairwise = pl.DataFrame({"mode": ["pairwise"]})
    with pytest.raises(ValueError, match="no score-mode judgments"):
        sc.strategy_verdicts(pairwise, "bpc")
    with pytest.raises(ValueError, match="unknown score strategy"):
        sc.strategy_verdicts(pairwise, "magic")


# ---------------------------------------------------------------------- hand-made score tables


def _score_rows(scores, n_questions=1, candidate="x"):
    """Score judgments of one pair per question. ``scores(q, first, rep)`` -> (slot A, slot B)
    scores or None (a failed sample); ``first``: the candidate is in slot A (permutation 0)."""
    rows = []
    for q in range(n_questions):
        for first in (True, False):
            for rep in (1, 2, 3):
                got = scores(q, first, rep)
                if got == "absent":
                    continue
                shown = [candidate, "ref"] if first else ["ref", candidate]
                choice = (
                    None
                    if got is None
                    else ("A" if got[0] > got[1] else "B" if got[1] > got[0] else "C")
                )
                rows.append(dict(benchmark="B", judge="j", question_id=f"q{q}", task="t", candidate=candidate, reference="ref",
                                 shown=shown, permutation=0 if first else 1, repetition=rep, mode="score", option_mode=3,
                                 slot_scores=None if got is None else [float(x) for x in got], extracted=choice,
                                 failed=got is None, input_chars=1, output_chars=1, prompt_chars=1))  # fmt: skip
    return pl.DataFrame(
        rows,
        schema_overrides={"slot_scores": pl.List(pl.Float64), "extracted": pl.String},
    )


def test_per_order_score_strategies_read_a_pure_primacy_judge_like_single():
    """Answers of equal worth, slot A always scored 2 points higher: ``single``,
    ``score-single`` and ``mec`` give a verdict per order and read PC 0, PF −1, flip 1 (the
    judge's bias, not an order-invariant PC 1, PF 0, flip 0); BPC and MEC + BPC are
    order-invariant by construction and find the tie."""
    from voirdire.analysis.mitigation import evaluation as E
    from voirdire.analysis.mitigation import registry

    j = _score_rows(lambda q, first, rep: (7, 5), n_questions=20)
    v = registry.apply_strategies(
        j, ["single", "score-single", "mec", "bpc", "mec+bpc"]
    )
    t = {
        r["strategy"]: r
        for r in E.evaluate(v, None, replicates=50).iter_rows(named=True)
    }
    for name, cost in (("single", 1.0), ("score-single", 1.0), ("mec", 3.0)):
        r = t[name]
        assert (r["pc"], r["pf"], r["flip"], r["order_invariant"]) == (
            0.0,
            -1.0,
            1.0,
            False,
        ), name
        assert r["cost"] == cost and r["pairs"] == 20 * (
            3 if name == "single" else 1
        ), name
    for name in ("bpc", "mec+bpc"):
        assert t[name]["order_invariant"] and t[name]["pc"] == 1.0
        assert set(v.filter(pl.col("strategy") == name)["verdict"]) == {"tie"}
    per_order = sc.strategy_verdicts(j, "score-single")
    assert per_order.height == 40 and set(
        zip(per_order["side"], per_order["verdict"])
    ) == {(0, "win"), (1, "loss")}


def test_bpc_averages_each_answer_per_position_and_needs_both_orders():
    """Wang et al.'s BPC: each answer's mean over its valid samples within each order, then
    the mean of the two positions' means. q0: k = 3, the swapped order has one valid sample
    of three: per position the answers tie (7 vs 7; pooling all valid samples would read
    7.5 vs 6.5, a win). q1: the swapped order failed in every sample: undecided (not the
    biased one-order verdict 8 vs 6). q2: the swapped order was never asked: undecided.
    q3: all samples valid: the per-position mean equals the mean of all 2k samples."""

    def scores(q, first, rep):
        if first:  # the candidate in slot A gets the bonus
            return (8, 6) if q < 3 else (5 + rep, 4)
        if q == 0:
            return (8, 6) if rep == 1 else None  # the reference in slot A
        if q == 1:
            return None
        if q == 2:
            return "absent"
        return (6, 3 + rep)

    j = _score_rows(scores, n_questions=4)
    got = {
        r["question_id"]: r
        for r in sc.strategy_verdicts(j, "mec+bpc").iter_rows(named=True)
    }
    assert (
        got["q0"]["candidate_score"],
        got["q0"]["reference_score"],
        got["q0"]["verdict"],
    ) == (7.0, 7.0, "tie")
    assert (
        got["q1"]["verdict"] == "undecided"
        and got["q1"]["candidate_score"] is None
        and got["q1"]["queries"] == 6
    )
    assert got["q2"]["verdict"] == "undecided" and got["q2"]["queries"] == 3
    c = np.mean(
        [6, 7, 8] + [4, 5, 6]
    )  # candidate: slot A in order 0, slot B in order 1
    r = np.mean([4, 4, 4] + [6, 6, 6])
    assert (got["q3"]["candidate_score"], got["q3"]["reference_score"]) == (
        pytest.approx(c),
        pytest.approx(r),
    )
    assert got["q3"]["verdict"] == "win" and got["q3"]["side"] is None
    bpc = {
        r["question_id"]: r
        for r in sc.strategy_verdicts(j, "bpc").iter_rows(named=True)
    }
    assert (
        bpc["q0"]["candidate_score"],
        bpc["q0"]["reference_score"],
        bpc["q0"]["verdict"],
    ) == (7.0, 7.0, "tie")
    assert (
        bpc["q1"]["verdict"] == bpc["q2"]["verdict"] == "undecided"
        and bpc["q1"]["queries"] == 2
    )
    assert (bpc["q3"]["candidate_score"], bpc["q3"]["reference_score"]) == (
        5.0,
        5.0,
    )  # (6 + 4) / 2 and (4 + 6) / 2
    # MEC alone: a verdict per order from that order's valid samples; an order with none is undecided
    mec = {
        (r["question_id"], r["side"]): r["verdict"]
        for r in sc.strategy_verdicts(j, "mec").iter_rows(named=True)
    }
    assert (
        mec[("q0", 0)] == "win"
        and mec[("q0", 1)] == "loss"
        and mec[("q1", 1)] == "undecided"
        and ("q2", 1) not in mec
    )


@pytest.mark.ray
def test_a_score_mode_directory_passes_through_mitigation(primacy_run):
    """Score-mode judgments are not list-wise: `voirdire mitigate` (and the report, which
    runs it) evaluates BPC and MEC on them rather than refusing them as list-wise."""
    from voirdire.analysis.mitigation.evaluation import run_mitigation

    table, _, _ = run_mitigation(primacy_run.judgments, replicates=20)
    assert {"bpc", "mec"} <= set(table["strategy"].to_list())
