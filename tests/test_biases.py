"""The bias suite's metrics (RR, CR, accuracy, error rates, the directional effect Δ) on
tables with known answers: enumerated verdict pairs, hand-built tables checked against a
plain-Python computation, and simulated judges of known susceptibility; self-enhancement on
hand-built tables and on the replayed MT-Bench release (checked against an independent
computation)."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from scipy.stats import binomtest

from tests.bias_simulate import simulate_bias_judgments
from voirdire.analysis.biases.effects import bias_effects
from voirdire.analysis.biases.perturbed import (
    consistency_rate,
    control_rows,
    has_perturbations,
    paired,
)
from voirdire.analysis.biases.self_enhancement import (
    self_enhancement,
    win_rate_deviations,
)
from voirdire.analysis.stats.bootstrap import cluster_bootstrap

LETTER_SLOT = {"A": 0, "B": 1}


def _row(
    judge,
    q,
    cand,
    perm,
    rep,
    letter,
    pert="control",
    kind="control",
    param=None,
    target=None,
    rule=None,
    better=None,
    ref="ref",
):
    shown = [cand, ref] if perm == 0 else [ref, cand]
    chosen = shown[LETTER_SLOT[letter]] if letter in LETTER_SLOT else None
    tslot = None if target is None else "AB"[shown.index(target)]
    return {
        "benchmark": "B",
        "judge": judge,
        "question_id": q,
        "task": "t",
        "instance_id": f"{q};{cand};{ref}",
        "candidate": cand,
        "reference": ref,
        "candidates": [cand, ref],
        "shown": shown,
        "permutation": perm,
        "repetition": rep,
        "mode": "pairwise",
        "option_mode": 3,
        "extracted": letter,
        "chosen": chosen,
        "tie": letter == "C",
        "failed": letter is None,
        "perturbation": pert,
        "perturbation_kind": kind,
        "perturbation_param": param,
        "target": target,
        "target_rule": rule,
        "target_slot": tslot,
        "better": better,
        "input_chars": 10,
        "output_chars": 10,
        "prompt_chars": 20,
    }


def test_exchangeable_verdicts_give_delta_exactly_zero():
    """Enumeration: every (control, perturbed) pair of verdicts in proportion p_i·p_j (the
    perturbed verdict distributed as the control's, independently) gives Δ = 0 exactly,
    as many flips toward the target as away, McNemar p = 1 and RR = Σ p_i²."""
    w = {"A": 3, "B": 2, "C": 1}
    rows, i = [], 0
    for (l1, w1), (l2, w2) in itertools.product(w.items(), w.items()):
        for perm in (0, 1):
            for _ in range(w1 * w2):
                q = f"q{i}"
                i += 1
                rows.append(_row("j", q, "x", perm, 1, l1))
                rows.append(
                    _row(
                        "j",
                        q,
                        "x",
                        perm,
                        1,
                        l2,
                        "bw",
                        "bandwagon",
                        "80",
                        "x",
                        "candidate",
                    )
                )
    e = bias_effects(pl.DataFrame(rows), replicates=200)
    for r in e.iter_rows(named=True):
        assert r["delta"] == 0.0
        assert r["toward"] == r["away"] > 0
        assert r["p_value"] == 1.0
        assert r["delta_lo"] <= 0.0 <= r["delta_hi"]
    allrow = e.filter(pl.col("slot") == "all").row(0, named=True)
    assert allrow["n"] == 2 * 36
    assert allrow["rr"] == pytest.approx((9 + 4 + 1) / 36)
    assert allrow["cr"] is None  # one repetition: no noise floor


def _independent_effects(df: pl.DataFrame) -> dict:
    """Plain-Python RR, Δ, toward/away and p per (judge, perturbation), all slots."""
    ctrl = {}
    for r in df.filter(pl.col("perturbation") == "control").iter_rows(named=True):
        ctrl[(r["judge"], r["instance_id"], r["permutation"], r["repetition"])] = r

    def verdict(r):
        if r["failed"]:
            return None
        return "<tie>" if r["tie"] else r["chosen"]

    def score(v, t):
        return 0.5 if v == "<tie>" else float(v == t)

    acc = defaultdict(lambda: {"n": 0, "same": 0, "d": 0.0, "up": 0, "down": 0})
    for r in df.filter(pl.col("perturbation") != "control").iter_rows(named=True):
        c = ctrl.get((r["judge"], r["instance_id"], r["permutation"], r["repetition"]))
        if c is None or verdict(c) is None or verdict(r) is None:
            continue
        a = acc[(r["judge"], r["perturbation"])]
        sc, sp = score(verdict(c), r["target"]), score(verdict(r), r["target"])
        a["n"] += 1
        a["same"] += verdict(c) == verdict(r)
        a["d"] += sp - sc
        a["up"] += sp > sc
        a["down"] += sp < sc
    return acc


def test_metrics_match_a_plain_computation_on_a_hand_built_table():
    rng = np.random.default_rng(3)
    rows = []
    for q in range(30):
        for cand in ("x", "y"):
            for perm in (0, 1):
                for rep in (1, 2):
                    rows.append(
                        _row("j", f"q{q}", cand, perm, rep, rng.choice(["A", "B", "C"]))
                    )
                    letter = rng.choice(["A", "B", "C", None], p=[0.5, 0.3, 0.1, 0.1])
                    rows.append(
                        _row(
                            "j",
                            f"q{q}",
                            cand,
                            perm,
                            rep,
                            letter,
                            "dist",
                            "distraction",
                            None,
                            "ref",
                            "reference",
                        )
                    )
    df = pl.DataFrame(rows)
    assert has_perturbations(df)
    e = (
        bias_effects(df, replicates=300)
        .filter(pl.col("slot") == "all")
        .row(0, named=True)
    )
    ind = _independent_effects(df)[("j", "dist")]
    assert e["n"] == ind["n"]
    assert e["n_failed"] == 240 - ind["n"]
    assert e["rr"] == pytest.approx(ind["same"] / ind["n"])
    assert e["delta"] == pytest.approx(ind["d"] / ind["n"])
    assert (e["toward"], e["away"]) == (ind["up"], ind["down"])
    assert e["p_value"] == pytest.approx(
        binomtest(ind["up"], ind["up"] + ind["down"], 0.5).pvalue
    )
    assert e["delta_lo"] < e["delta"] < e["delta_hi"]
    # CR: the control's repetition 1 against 2, per (instance, order)
    c = {}
    for r in rows:
        if r["perturbation"] == "control":
            c.setdefault((r["instance_id"], r["permutation"]), {})[r["repetition"]] = r[
                "extracted"
            ]
    same = [v[1] == v[2] for v in c.values()]
    assert consistency_rate(df).get_column("cr")[0] == pytest.approx(
        sum(same) / len(same)
    )
    assert e["cr"] == pytest.approx(sum(same) / len(same))


def test_the_target_slot_splits_first_and_last():
    df = simulate_bias_judgments(
        {"j": ({}, {})},
        [("bw", "bandwagon", "80", "candidate")],
        n_questions=10,
        repetitions=1,
    )
    p = paired(df)
    assert p.filter(pl.col("permutation") == 0).get_column(
        "slot"
    ).unique().to_list() == ["first"]
    assert p.filter(pl.col("permutation") == 1).get_column(
        "slot"
    ).unique().to_list() == ["last"]
    assert control_rows(df).height == df.height // 2 and set(
        control_rows(df).get_column("perturbation")
    ) == {"control"}
    assert control_rows(df.drop("perturbation")).height == df.height
    e = bias_effects(df, replicates=50)
    n = dict(zip(e.get_column("slot"), e.get_column("n")))
    assert n["first"] + n["last"] == n["all"] == 10 * 4 * 2


VARIANTS = [
    ("bandwagon-80-worse", "bandwagon", "80", "worse"),
    ("verbosity-2.0-worse", "verbosity", "2.0", "worse"),
    ("authority-url-candidate", "authority", "url", "candidate"),
]


def test_zero_susceptibility_reads_delta_within_its_ci_of_zero():
    """A judge that ignores the perturbation: over 30 independent tables its 95 % intervals
    hold 0 about 95 % of the time, McNemar rejects at 5 % about 5 % of the time, and its RR
    sits at its CR (the noise floor)."""
    covered, rejected, total, rr_gap = 0, 0, 0, []
    for seed in range(30):
        df = simulate_bias_judgments(
            {"fair": ({"repetition_noise": 0.4, "tie_rate": 0.2}, {})},
            VARIANTS,
            n_questions=60,
            seed=seed,
        )
        e = bias_effects(df, replicates=300, seed=seed).filter(pl.col("slot") == "all")
        covered += e.filter(
            (pl.col("delta_lo") <= 0) & (pl.col("delta_hi") >= 0)
        ).height
        rejected += e.filter(pl.col("p_value") < 0.05).height
        total += e.height
        rr_gap += (e.get_column("rr") - e.get_column("cr")).to_list()
    assert covered / total >= 0.85
    assert rejected / total <= 0.12
    assert abs(float(np.mean(rr_gap))) < 0.01


def test_positive_susceptibility_is_detected_and_recovered():
    sus = {"bandwagon": 0.3, "verbosity": 0.15, "authority": 0.0}
    df = simulate_bias_judgments(
        {
            "swayed": ({"repetition_noise": 0.2}, sus),
            "fair": ({"repetition_noise": 0.2}, {}),
        },
        VARIANTS,
        n_questions=200,
        seed=11,
    )
    e = bias_effects(df, replicates=500)
    for r in e.filter(pl.col("judge") == "swayed").iter_rows(named=True):
        beta = sus[r["perturbation_kind"]]
        assert r["susceptibility_lo"] <= beta <= r["susceptibility_hi"], r
        if beta > 0:
            assert r["delta"] > 0 and r["delta_lo"] > 0 and r["p_value"] < 0.01, r
            assert r["toward"] > r["away"]
            assert r["rr"] < r["cr"]
    for r in e.filter(pl.col("judge") == "fair").iter_rows(named=True):
        assert r["susceptibility_lo"] <= 0.0 <= r["susceptibility_hi"], r


def test_fallacy_accuracy_and_refinement_error_rate():
    variants = [
        ("fallacy", "fallacy", None, "better"),
        ("cot", "cot", None, "better"),
        ("refined", "refinement_aware", None, "candidate"),
    ]
    df = simulate_bias_judgments(
        {"j": ({}, {"fallacy": -0.4, "refinement_aware": 0.2})},
        variants,
        n_questions=150,
        repetitions=1,
        seed=5,
    )
    e = bias_effects(df, replicates=200).filter(pl.col("slot") == "all")
    by = {r["perturbation"]: r for r in e.iter_rows(named=True)}

    # plain computation: accuracy = share choosing the better (ties half); after a fallacy
    # injection the other response is the correct one
    def acc(rows: pl.DataFrame, other: bool) -> float:
        s = rows.select(
            pl.when(pl.col("tie"))
            .then(0.5)
            .otherwise(
                (pl.col("chosen") != pl.col("better"))
                if other
                else (pl.col("chosen") == pl.col("better")).cast(pl.Float64)
            )
        ).to_series()
        return float(s.cast(pl.Float64).mean())

    ctrl = df.filter(pl.col("perturbation") == "control")
    assert by["fallacy"]["accuracy_control"] == pytest.approx(acc(ctrl, False))
    assert by["fallacy"]["accuracy_perturbed"] == pytest.approx(
        acc(df.filter(pl.col("perturbation") == "fallacy"), True)
    )
    assert by["cot"]["accuracy_perturbed"] == pytest.approx(
        acc(df.filter(pl.col("perturbation") == "cot"), False)
    )
    # the simulated judge moves away from the fallacious (better) answer: the *correct* move
    assert (
        by["fallacy"]["delta"] < 0
        and by["fallacy"]["accuracy_perturbed"] > 1 - by["fallacy"]["accuracy_control"]
    )
    r = by["refined"]
    assert r["error_rate"] == pytest.approx(
        abs(r["p_perturbed"] - r["p_control"]) / r["p_control"]
    )
    assert by["cot"]["error_rate"] is None and by["refined"]["accuracy_control"] is None


def test_cluster_bootstrap_estimate_and_degenerate_interval():
    rows = pl.DataFrame(
        {
            "benchmark": ["b"] * 6,
            "question_id": ["q1", "q1", "q2", "q2", "q3", "q3"],
            "u": ["a", "b"] * 3,
            "x": [1.0, 0, 1, 1, 0, 1],
            "n": [1.0] * 6,
        }
    )
    ci = cluster_bootstrap(
        rows, ["x", "n"], lambda s: {"m": s["x"] / s["n"]}, cells=["u"], replicates=200
    )
    est = dict(zip(ci.get_column("u"), ci.get_column("estimate")))
    assert est == pytest.approx({"a": 2 / 3, "b": 2 / 3})
    one = cluster_bootstrap(
        rows.filter(pl.col("question_id") == "q2"),
        ["x", "n"],
        lambda s: {"m": s["x"] / s["n"]},
        cells=["u"],
        replicates=50,
    )
    assert (
        one.get_column("lo").to_list() == one.get_column("hi").to_list() == [1.0, 1.0]
    )


# ------------------------------------------------------------------ self-enhancement


def _lenient_panel(own_extra: int) -> pl.DataFrame:
    """Three judges, three candidates, 8 questions: k1, k2 give each candidate 4 wins of 8,
    judge ``j`` 6 of 8 (lenient to everyone) and ``own_extra`` more to its own model c1."""
    rows = []
    for q in range(8):
        for cand in ("c1", "c2", "c3"):
            for judge in ("j", "k1", "k2"):
                wins = 4 if judge != "j" else 6 + (own_extra if cand == "c1" else 0)
                win = q < wins
                for perm in (0, 1):
                    letter = (
                        ("A" if perm == 0 else "B")
                        if win
                        else ("B" if perm == 0 else "A")
                    )
                    rows.append(_row(judge, f"q{q}", cand, perm, 1, letter))
    return pl.DataFrame(rows)


def test_a_lenient_judge_is_not_self_biased_by_the_difference_in_differences():
    se = self_enhancement(_lenient_panel(0), {"j": "c1"}, replicates=200).row(
        0, named=True
    )
    assert se["raw"] == pytest.approx(0.25) and se["did"] == pytest.approx(0.0)
    assert (
        0 <= se["raw_lo"] < 0.25 < se["raw_hi"] and se["did_lo"] == se["did_hi"] == 0.0
    )  # every replicate: no self-preference
    assert se["other_judges"] == "k1,k2" and se["n_pairs"] == 8
    se = self_enhancement(_lenient_panel(1), {"j": "c1"}, replicates=200).row(
        0, named=True
    )
    assert se["raw"] == pytest.approx(0.375) and se["did"] == pytest.approx(0.125)
    assert se["error_rate"] == pytest.approx(0.375 / 0.5)
    # nothing to compare against: an empty table, no error (compute_dir calls it on any job)
    one = _lenient_panel(0).filter(pl.col("judge") == "j")
    assert self_enhancement(one, {"j": "c1"}).height == 0
    assert (
        self_enhancement(
            _lenient_panel(0)
            .filter(pl.col("judge") != "k2")
            .with_columns(failed=pl.col("judge") == "k1"),
            {"j": "c1"},
        ).height
        == 0
    )


def _independent_self_enhancement(
    j: pl.DataFrame, judge: str, own: str
) -> tuple[float, float]:
    """Plain Python over the rows: owr per judge and candidate on the pairs all judges
    classified; raw = own deviation, did = own deviation − mean deviation over the others."""
    letters = defaultdict(dict)
    for r in j.select(
        "judge", "question_id", "candidate", "shown", "extracted", "failed"
    ).iter_rows(named=True):
        first = r["shown"][0] == r["candidate"]
        letters[(r["judge"], r["question_id"], r["candidate"])][first] = (
            None if r["failed"] else r["extracted"]
        )
    score = {}
    for key, v in letters.items():
        c1, c2 = v.get(True), v.get(False)
        if c1 is None or c2 is None or c1 not in "ABC" or c2 not in "ABC":
            continue
        if (c1, c2) == ("A", "B"):
            score[key] = 1.0
        elif (c1, c2) == ("B", "A"):
            score[key] = 0.0
        else:
            score[key] = 0.5
    judges = sorted({k[0] for k in score})
    pairs = {(q, c) for (_, q, c) in score}
    common = {p for p in pairs if all((jj, *p) in score for jj in judges)}
    cands = sorted({c for _, c in common})
    owr = {
        (jj, c): np.mean([score[(jj, q, cc)] for q, cc in common if cc == c])
        for jj in judges
        for c in cands
    }
    dev = {
        c: owr[(judge, c)] - np.mean([owr[(k, c)] for k in judges if k != judge])
        for c in cands
    }
    return dev[own], dev[own] - np.mean([dev[c] for c in cands if c != own])


@pytest.mark.ray
def test_self_enhancement_on_the_replayed_mtbench_release(
    data_dir, ray_local, tmp_path
):
    import voirdire
    from voirdire.analysis.results_dir import load_judgments

    voirdire.run("examples/mtbench_position_bias.toml", output_dir=str(tmp_path / "pb"))
    j = load_judgments(tmp_path / "pb")
    se = self_enhancement(j, replicates=2000, seed=0)
    assert se.get_column("judge").to_list() == ["gpt-3.5-turbo-1106", "gpt-4-0613"]
    for judge, own in (
        ("gpt-4-0613", "gpt-4"),
        ("gpt-3.5-turbo-1106", "gpt-3.5-turbo"),
    ):
        r = se.filter(pl.col("judge") == judge).row(0, named=True)
        raw, did = _independent_self_enhancement(j, judge, own)
        assert r["raw"] == pytest.approx(raw) and r["did"] == pytest.approx(did)
        assert (
            r["raw_lo"] < r["raw"] < r["raw_hi"]
            and r["did_lo"] < r["did"] < r["did_hi"]
        )
    # the figures quoted in README.md and docs/bias-metrics.md
    g4 = se.filter(pl.col("judge") == "gpt-4-0613").row(0, named=True)
    g35 = se.filter(pl.col("judge") == "gpt-3.5-turbo-1106").row(0, named=True)
    assert (round(g4["raw"], 3), round(g4["did"], 3)) == (0.206, 0.215)
    assert (round(g35["raw"], 3), round(g35["did"], 3)) == (-0.092, -0.108)
    assert g4["did_lo"] > 0 and g35["did_hi"] < 0
    # strength-adjusted (issue 15: GPT-4-0613's deviation grows with strength, slope ≈ +0.27)
    assert (round(g4["adj"], 3), round(g4["slope"], 2), round(g35["adj"], 3)) == (
        0.129,
        0.27,
        -0.085,
    )
    assert g4["adj_lo"] > 0 and g4["adj"] < g4["did"] and g35["adj_hi"] < 0
    assert (g4["adj_lo"], g4["adj_hi"]) == pytest.approx((0.060, 0.206), abs=0.0015)
    assert (
        0 < g4["error_rate_null"] < g4["error_rate_null_hi"] < g4["error_rate_lo"]
    )  # CALM's error rate beyond its null reference
    quoted = {
        "gpt-4-0613": (0.141, 0.269, 0.153, 0.275),
        "gpt-3.5-turbo-1106": (-0.160, -0.028, -0.180, -0.043),
    }
    for r in se.iter_rows(named=True):
        assert (r["raw_lo"], r["raw_hi"], r["did_lo"], r["did_hi"]) == pytest.approx(
            quoted[r["judge"]], abs=0.0015
        )
    dev = win_rate_deviations(j, replicates=100)
    assert dev.filter(pl.col("metric") == "did").height == 3 * 30
    # the run (voirdire.api.analyze) wrote the table, and the report shows it
    csv = pl.read_csv(tmp_path / "pb" / "metrics" / "self_enhancement.csv")
    assert csv.get_column("raw").to_list() == pytest.approx(
        se.get_column("raw").to_list()
    )
    assert not (
        tmp_path / "pb" / "metrics" / "bias_effects.csv"
    ).exists()  # no perturbation in this job
    from voirdire.analysis.build import build_report

    page = build_report([tmp_path / "pb"], tmp_path / "rep", replicates=200).read_text()
    assert "Self-enhancement" in page and "gpt-4-0613" in page and 'id="biases"' in page
    # the inter-pass kappa and its gate: in the Judges table and in the mitigation section
    assert (
        "κ passes" in page and "κ ≥ 0.6" in page and "<th>pass_kappa_gate</th>" in page
    )
    assert "strength-adjusted" in page or "same strength" in page


def test_bias_section_of_the_report(tmp_path):
    from types import SimpleNamespace

    from voirdire.analysis.report.bias import bias_view
    from voirdire.analysis.report.files import write_bias
    from voirdire.analysis.report.views import render_template

    df = simulate_bias_judgments(
        {"a": ({"repetition_noise": 0.2}, {"bandwagon": 0.3}), "b": ({}, {})},
        VARIANTS,
        n_questions=40,
    )
    (tmp_path / "m").mkdir()
    from voirdire.analysis.biases.effects import bias_effects

    written = write_bias(
        [
            SimpleNamespace(
                name="sim job",
                bias_effects=bias_effects(df, replicates=100),
                self_enhancement=None,
            )
        ],
        tmp_path / "m",
        tmp_path / "f",
    )
    assert set(written["tables"]) == {"bias_effects_sim_job"}
    assert (
        list(written["figures"]) == ["bias:sim_job:SimBench"]
        and written["figures"]["bias:sim_job:SimBench"].stat().st_size > 5000
    )
    page = render_template("bias.html.j2", bias=bias_view(written))
    assert (
        page.count("<table") == 2
        and "data:image/png;base64," in page
        and "bandwagon-80-worse" in page
    )
    assert (
        bias_view({"tables": {}, "figures": {}}) is None
        and render_template("bias.html.j2", bias=None).strip() == ""
    )


def test_tables_of_several_chunks_are_read():
    """Judgments concatenated from many raw files arrive in several chunks (polars 2.1
    panicked on the pairing plan over such string columns before paired() rechunked)."""
    df = simulate_bias_judgments(
        {"fair": ({"repetition_noise": 0.4, "tie_rate": 0.2}, {})},
        VARIANTS,
        n_questions=60,
        seed=0,
    )
    chunked = pl.concat([df.head(1000), df.tail(df.height - 1000)], rechunk=False)
    assert chunked.n_chunks() > 1
    assert bias_effects(chunked, replicates=50).equals(bias_effects(df, replicates=50))


def _strength_panel(
    self_preference: float, n_q: int = 400, seed: int = 0
) -> pl.DataFrame:
    """Judges j, k1, k2 and eight candidates of strength s (k1, k2 give c exactly
    round(s·n_q) consistent wins); judge j is kinder the stronger the answer,
    s + 0.25·(s − 0.15), plus ``self_preference`` for its own model c7, the strongest."""
    rng = np.random.default_rng(seed)
    strengths = np.linspace(0.15, 0.7, 8)
    rows = []
    for i, s in enumerate(strengths):
        cand = f"c{i}"
        for judge in ("j", "k1", "k2"):
            p = (
                s
                if judge != "j"
                else s + 0.25 * (s - 0.15) + (self_preference if cand == "c7" else 0.0)
            )
            wins = set(rng.choice(n_q, size=round(p * n_q), replace=False).tolist())
            for q in range(n_q):
                for perm in (0, 1):
                    letter = (
                        ("A" if perm == 0 else "B")
                        if q in wins
                        else ("B" if perm == 0 else "A")
                    )
                    shown = [cand, "ref"] if perm == 0 else ["ref", cand]
                    rows.append((judge, f"q{q}", cand, shown, perm, letter))
    return pl.DataFrame(rows, schema=["judge", "question_id", "candidate", "shown", "permutation", "extracted"], orient="row").with_columns(
        benchmark=pl.lit("B"), task=pl.lit("t"), reference=pl.lit("ref"), repetition=pl.lit(1), mode=pl.lit("pairwise"),
        option_mode=pl.lit(3), failed=pl.lit(False), input_chars=pl.lit(10), output_chars=pl.lit(10), prompt_chars=pl.lit(20),
    )  # fmt: skip


def test_strength_adjusted_self_enhancement_removes_leniency_that_grows_with_strength():
    """Leniency growing with strength and no self-preference: DiD reads > 0 (the own model
    is the strongest), the strength-adjusted estimate ≈ 0 with 0 in its interval; a true
    self-preference of 0.12 on top is read back by the adjusted estimate. raw and did
    keep their definitions."""
    null = self_enhancement(_strength_panel(0.0), {"j": "c7"}, replicates=300).row(
        0, named=True
    )
    assert null["did"] > 0.05 and null["did_lo"] > 0
    assert abs(null["adj"]) < 0.015 and null["adj_lo"] < 0 < null["adj_hi"]
    assert (
        null["slope"] == pytest.approx(0.25, abs=0.03)
        and null["slope_lo"] < 0.25 < null["slope_hi"]
    )
    own = self_enhancement(_strength_panel(0.12), {"j": "c7"}, replicates=300).row(
        0, named=True
    )
    assert (
        own["adj"] == pytest.approx(0.12, abs=0.015)
        and own["adj_lo"] < 0.12 < own["adj_hi"]
        and own["adj_lo"] > 0
    )
    # the adjusted figure by hand: least squares of j's deviation on the others' win rate over c0..c6
    dev = win_rate_deviations(_strength_panel(0.12), replicates=10)
    d = (
        dev.filter((pl.col("judge") == "j") & (pl.col("metric") == "raw"))
        .sort("candidate")
        .get_column("estimate")
        .to_numpy()
    )
    x = (
        dev.filter((pl.col("judge") == "j") & (pl.col("metric") == "owr_others"))
        .sort("candidate")
        .get_column("estimate")
        .to_numpy()
    )
    b, a = np.polyfit(x[:7], d[:7], 1)
    assert own["adj"] == pytest.approx(d[7] - (a + b * x[7]), abs=1e-9)
    assert own["raw"] == pytest.approx(d[7]) and own["did"] == pytest.approx(
        d[7] - d[:7].mean()
    )
