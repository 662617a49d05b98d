"""Cohen's kappa between the two passes (original and swapped order), the dual-pass gate
kappa ≥ 0.6, and where it is shown: judge metrics, the per-judge tables, the mitigation
table. Checked against statsmodels on tables counted by plain Python, on judges whose
answer is known (a pure-primacy judge, an order-free one), and by simulation (interval
coverage of a known population kappa)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from voirdire.analysis.mitigation.evaluation import evaluate
from voirdire.analysis.mitigation.pass_kappa import KAPPA_GATE, pass_kappa
from voirdire.analysis.mitigation.registry import apply_strategies
from voirdire.analysis.position.simulate import simulate_judgments
from voirdire.analysis.report.judge_table import judge_table_rows, markdown_judge_table
from voirdire.analysis.report.mitigation import mitigation_markdown
from voirdire.analysis.report.terminal import print_judge_table

CATS = ("win", "tie", "loss")
LETTER = {
    ("win", 0): "A",
    ("win", 1): "B",
    ("loss", 0): "B",
    ("loss", 1): "A",
    ("tie", 0): "C",
    ("tie", 1): "C",
}


def _rows(
    pairs: list[tuple[str, str, str, str]], judge: str = "j", bench: str = "B"
) -> pl.DataFrame:
    """Judgment rows from (question, candidate, verdict shown first, verdict shown second),
    verdicts from the candidate's side (``None``: a failed judgment)."""
    rows = []
    for q, cand, v1, v2 in pairs:
        for perm, v in ((0, v1), (1, v2)):
            shown = [cand, "ref"] if perm == 0 else ["ref", cand]
            rows.append({
                "benchmark": bench, "judge": judge, "question_id": q, "task": "t", "instance_id": f"{q};{cand}",
                "candidate": cand, "reference": "ref", "shown": shown, "permutation": perm, "repetition": 1,
                "mode": "pairwise", "option_mode": 3, "extracted": None if v is None else LETTER[(v, perm)],
                "failed": v is None,
            })  # fmt: skip
    return pl.DataFrame(rows)


def _random_pairs(
    rng: np.random.Generator, n_q: int, per_q: int, keep: float, probs=(0.45, 0.2, 0.35)
):
    """The second pass repeats the first with probability ``keep``, else draws anew from the
    same marginal: the population kappa is exactly ``keep`` (po = keep + (1 − keep)·pe)."""
    out = []
    for q in range(n_q):
        for c in range(per_q):
            v1 = CATS[rng.choice(3, p=probs)]
            v2 = v1 if rng.random() < keep else CATS[rng.choice(3, p=probs)]
            out.append((f"q{q}", f"c{c}", v1, v2))
    return out


def test_pass_kappa_is_statsmodels_on_the_table_of_the_two_orders():
    rng = np.random.default_rng(3)
    pairs = _random_pairs(rng, 30, 4, 0.5)
    pairs += [
        ("q0", "cx", None, "win"),
        ("q1", "cy", "tie", None),
    ]  # undecided orders: left out
    pk = pass_kappa(_rows(pairs), replicates=200).row(0, named=True)
    counts = Counter((a, b) for _, _, a, b in pairs if a is not None and b is not None)
    table = np.array([[counts[(a, b)] for b in CATS] for a in CATS], dtype=float)
    assert pk["pass_kappa"] == pytest.approx(
        float(cohens_kappa(table, return_results=False)), abs=1e-12
    )
    assert pk["pass_kappa_pairs"] == 120
    assert pk["pass_kappa_lo"] < pk["pass_kappa"] < pk["pass_kappa_hi"]
    assert pk["pass_kappa_gate"] == (
        "pass" if pk["pass_kappa"] >= KAPPA_GATE else "fail"
    )


def test_primacy_judge_fails_the_gate_and_an_order_free_judge_passes():
    # always slot A: first pass "win", second "loss" -> no agreement beyond chance
    primacy = _rows(
        [(f"q{q}", f"c{c}", "win", "loss") for q in range(10) for c in range(3)],
        judge="primacy",
    )
    # the same verdict in both orders, varied over pairs
    fair = _rows(
        [(f"q{q}", f"c{c}", v, v) for q in range(10) for c, v in enumerate(CATS)],
        judge="fair",
    )
    pk = {
        r["judge"]: r
        for r in pass_kappa(pl.concat([primacy, fair]), replicates=100).iter_rows(
            named=True
        )
    }
    assert (
        pk["primacy"]["pass_kappa"] == pytest.approx(0.0)
        and pk["primacy"]["pass_kappa_gate"] == "fail"
    )
    assert (
        pk["fair"]["pass_kappa"] == pytest.approx(1.0)
        and pk["fair"]["pass_kappa_gate"] == "pass"
    )
    # one category in both passes: chance agreement is 1, kappa undefined (null, no gate)
    one = pass_kappa(
        _rows([(f"q{q}", "c", "win", "win") for q in range(5)], judge="one"),
        replicates=50,
    ).row(0, named=True)
    assert one["pass_kappa"] is None and one["pass_kappa_gate"] is None


def test_pass_kappa_interval_covers_the_population_kappa():
    """A judge whose second pass repeats the first with probability 0.55: kappa = 0.55
    exactly; the 95 % cluster-bootstrap interval holds it in most of 40 tables."""
    covered = 0
    for seed in range(40):
        pairs = _random_pairs(np.random.default_rng(seed), 40, 5, 0.55)
        r = pass_kappa(_rows(pairs), replicates=300, seed=seed).row(0, named=True)
        covered += r["pass_kappa_lo"] <= 0.55 <= r["pass_kappa_hi"]
    assert covered >= 34


def test_judge_metrics_tables_and_mitigation_show_the_inter_pass_kappa(tmp_path):
    from rich.console import Console

    from voirdire.analysis.outputs import JUDGE_METRIC_COLUMNS, with_pass_kappa
    from voirdire.analysis.position.metrics import judge_metrics

    j = simulate_judgments(
        {
            "steady": {"primacy": 0.5, "sensitivity": 4.0},
            "slot-a": {"primacy": 0.95, "sensitivity": 0.3},
        },
        n_questions=40,
        candidates=4,
        seed=1,
    )
    jm = with_pass_kappa(judge_metrics(j), j, replicates=200)
    assert set(JUDGE_METRIC_COLUMNS) <= set(
        jm.columns
    )  # the old columns kept, the new ones added
    assert JUDGE_METRIC_COLUMNS[:9] == [
        "benchmark",
        "judge",
        "pc",
        "pc_std",
        "pf",
        "pf_std",
        "error_rate",
        "rs",
        "rs_spread",
    ]
    by = {r["judge"]: r for r in jm.iter_rows(named=True)}
    assert (
        by["steady"]["pass_kappa_gate"] == "pass"
        and by["slot-a"]["pass_kappa_gate"] == "fail"
    )
    assert by["slot-a"]["pass_kappa"] < 0.3 < 0.6 < by["steady"]["pass_kappa"]
    md = markdown_judge_table(jm)
    assert (
        "κ passes" in md
        and "κ ≥ 0.6" in md
        and f"{by['steady']['pass_kappa']:.3f} [" in md
    )
    assert any("fail" in row for row in judge_table_rows(jm))
    console = Console(record=True, width=220)
    print_judge_table(jm, console=console)
    text = console.export_text()
    assert (
        "κ passes" in text
        and f"{by['slot-a']['pass_kappa']:.3f}" in text
        and "fail" in text
    )
    # the mitigation table: per strategy × judge where both orders exist; null for strategies
    # that combine the orders; kappa against a reference carries no gate any more
    table = evaluate(
        apply_strategies(j, ["single", "swap-tie", "jury"]), replicates=100
    )
    single = {
        r["judge"]: r
        for r in table.filter(pl.col("strategy") == "single").iter_rows(named=True)
    }
    for judge in ("steady", "slot-a"):
        assert single[judge]["pass_kappa"] == pytest.approx(
            by[judge]["pass_kappa"], abs=1e-12
        )
        assert single[judge]["pass_kappa_gate"] == by[judge]["pass_kappa_gate"]
    st = table.filter(pl.col("strategy") == "swap-tie")
    assert (
        st.get_column("pass_kappa").null_count() == st.height
        and st.get_column("pass_kappa_gate").null_count() == st.height
    )
    assert (
        table.filter(pl.col("strategy") == "jury").get_column("pass_kappa").null_count()
        == 0
    )
    assert "kappa_gate" not in table.columns
    assert "κ passes" in mitigation_markdown(table)


def _kappa_tables(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """``n`` random k × k tables of integer counts: dense, sparse (whole rows and columns
    empty, one category only, no counts at all) and large counts."""
    dense = rng.integers(0, 50, size=(n, k, k))
    mask = rng.random((n, k, k)) < rng.random((n, 1, 1))  # sparsity varies per table
    big = rng.integers(0, 2_000_000, size=(n, k, k))
    tables = np.concatenate([dense, dense * mask, big * mask]).astype(float)
    tables[:k] = 0
    for i in range(k):  # one category used by both raters
        tables[i, i, i] = 7
    return tables


def test_kappa_rows_is_bit_identical_to_statsmodels_on_integer_tables():
    """The vectorised kappa of the bootstrap equals statsmodels' ``cohens_kappa`` (after
    dropping unused categories, as :func:`cohen_kappa` does) to the last bit, NaN where it
    is undefined, on 9,000 random tables of 2 to 7 categories."""
    from voirdire.analysis.stats.agreement import cohen_kappa, kappa_rows

    rng = np.random.default_rng(11)
    for k in (2, 3, 4, 7):
        tables = _kappa_tables(rng, 750, k)
        got = kappa_rows(tables)
        want = np.array([cohen_kappa(t) for t in tables])
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.isnan(want).sum() >= k + 1  # the undefined cases were exercised
        ok = ~np.isnan(want)
        assert got[ok].tobytes() == want[ok].tobytes()
    with pytest.raises(ValueError, match="R, k, k"):
        kappa_rows(np.zeros((2, 3, 4)))


def test_pass_kappa_interval_is_the_statsmodels_bootstraps():
    """The vectorised statistic gives the estimate and interval of a statsmodels call per
    replicate (:func:`cohen_kappa`), bit for bit, from the same draws."""
    from voirdire.analysis.mitigation.pass_kappa import PASS_CONF, pass_confusion
    from voirdire.analysis.mitigation.verdicts import normalise
    from voirdire.analysis.position.pairing import verdict_pairs
    from voirdire.analysis.stats.agreement import cohen_kappa
    from voirdire.analysis.stats.bootstrap import cluster_bootstrap

    def per_replicate(s):
        t = np.stack([s[c].sum(1) for c in PASS_CONF], axis=1).reshape(-1, 3, 3)
        return np.array([cohen_kappa(x) for x in t])

    rows = pl.concat([
        _rows(_random_pairs(np.random.default_rng(5), 25, 3, 0.4), judge="a"),
        _rows(_random_pairs(np.random.default_rng(6), 25, 3, 0.8), judge="b"),
    ])  # fmt: skip
    sums = pass_confusion(verdict_pairs(normalise(rows)))
    ci = cluster_bootstrap(sums, PASS_CONF, {"pass_kappa": per_replicate},
                           groups=["judge"], replicates=400, seed=2).sort("judge")  # fmt: skip
    pk = pass_kappa(rows, replicates=400, seed=2).sort("judge")
    assert pk["pass_kappa"].to_list() == ci["estimate"].to_list()
    assert pk["pass_kappa_lo"].to_list() == ci["lo"].to_list()
    assert pk["pass_kappa_hi"].to_list() == ci["hi"].to_list()


def test_the_gate_in_words_is_the_gate_applied(monkeypatch):
    """Every report text of the gate (Markdown judge table and reading, mitigation table,
    terminal caption, HTML judges' table) renders the value ``pass_kappa_gate`` applies,
    :data:`KAPPA_GATE`: moved to 0.75, a judge at 0.6 ≤ κ < 0.75 fails and no text says 0.6."""
    from rich.console import Console

    from voirdire.analysis.mitigation import pass_kappa as pk
    from voirdire.analysis.outputs import with_pass_kappa
    from voirdire.analysis.position.metrics import judge_metrics
    from voirdire.analysis.report.html import _panel_view

    monkeypatch.setattr(pk, "KAPPA_GATE", 0.75)
    j = simulate_judgments(
        {"steady": {"primacy": 0.5, "sensitivity": 4.0}},
        n_questions=30,
        candidates=4,
        seed=1,
    )
    jm = with_pass_kappa(judge_metrics(j), j, replicates=20)
    k = jm.get_column("pass_kappa").to_list()
    assert jm.get_column("pass_kappa_gate").to_list() == [
        "pass" if x >= 0.75 else "fail" for x in k
    ]
    md = markdown_judge_table(jm)
    console = Console(record=True, width=300)
    print_judge_table(jm, console=console)
    table = evaluate(apply_strategies(j, ["single"]), replicates=20)
    mit = mitigation_markdown(table)
    names = _panel_view(jm.with_columns(pl.lit(None).alias("flag")))
    for text in (md, console.export_text(), mit, str(names)):
        assert "0.75" in text and "≥ 0.6" not in text, text[:300]
    assert "κ passes ≥ 0.75" in mit and "gate κ ≥ 0.75" in mit
