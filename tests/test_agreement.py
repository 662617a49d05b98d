"""Agreement between judges, checked against hand computations of the formulas (Cohen
1960: κ = (p_o − p_e)/(1 − p_e); Fleiss 1971), not against our own output."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest

from voirdire.analysis.stats.agreement import (
    agreement_matrix,
    disagreement_histogram,
    fleiss_panel,
    majority_share,
    query_disagreement,
)

# three judges on eight queries (three-option mode: C is the tie); None = failed
CHOICES = {
    "j1": ["A", "A", "B", "C", "B", "A", "C", "B"],
    "j2": ["A", "B", "B", "C", "A", "A", None, "B"],
    "j3": ["B", "B", "B", "A", "A", "A", "C", "C"],
}


def _table(choices=CHOICES) -> pl.DataFrame:
    rows = []
    for judge, letters in choices.items():
        for q, c in enumerate(letters):
            rows.append(
                {
                    "benchmark": "B",
                    "judge": judge,
                    "query_id": f"q{q}",
                    "repetition": 1,
                    "extracted": c,
                    "failed": c is None,
                    "tie": c == "C",
                }
            )
    return pl.DataFrame(rows)


def _kappa_by_hand(a: list[str], b: list[str]) -> float:
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(a) | set(b)) / n**2
    return (po - pe) / (1 - pe)


def _shared(x: str, y: str) -> tuple[list[str], list[str]]:
    pairs = [
        (a, b)
        for a, b in zip(CHOICES[x], CHOICES[y])
        if a is not None and b is not None
    ]
    return [a for a, _ in pairs], [b for _, b in pairs]


@pytest.mark.parametrize("x,y", [("j1", "j2"), ("j1", "j3"), ("j2", "j3")])
def test_pairwise_agreement_and_cohen_kappa(x, y):
    m = agreement_matrix(_table())
    row = m.filter((pl.col("judge_a") == x) & (pl.col("judge_b") == y)).row(
        0, named=True
    )
    back = m.filter((pl.col("judge_a") == y) & (pl.col("judge_b") == x)).row(
        0, named=True
    )
    a, b = _shared(x, y)
    assert row["shared"] == len(a)
    assert row["agreement"] == pytest.approx(sum(p == q for p, q in zip(a, b)) / len(a))
    nt = [(p, q) for p, q in zip(a, b) if p != "C" and q != "C"]
    assert row["shared_no_tie"] == len(nt)
    assert row["agreement_no_tie"] == pytest.approx(
        sum(p == q for p, q in nt) / len(nt)
    )
    assert row["kappa"] == pytest.approx(_kappa_by_hand(a, b), abs=1e-12)
    assert back["kappa"] == row["kappa"] and back["agreement"] == row["agreement"]


def test_diagonal_is_one():
    m = agreement_matrix(_table())
    diag = m.filter(pl.col("judge_a") == pl.col("judge_b"))
    assert diag.height == 3 and (diag.get_column("agreement") == 1.0).all()


def test_fleiss_kappa_by_hand():
    # only queries every judge answered (j2 failed q6)
    complete = [q for q in range(8) if all(CHOICES[j][q] is not None for j in CHOICES)]
    cats = ["A", "B", "C"]
    n_ij = np.array(
        [[sum(CHOICES[j][q] == c for j in CHOICES) for c in cats] for q in complete],
        dtype=float,
    )
    n, r = n_ij.shape[0], 3
    p_j = n_ij.sum(0) / (n * r)
    p_i = ((n_ij**2).sum(1) - r) / (r * (r - 1))
    p_bar, pe = p_i.mean(), (p_j**2).sum()
    expected = (p_bar - pe) / (1 - pe)
    f = fleiss_panel(_table()).row(0, named=True)
    assert f["queries"] == len(complete) and f["judges"] == 3
    assert f["kappa"] == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_is_the_same_bytes_whatever_the_rows_order():
    """The panel's kappa, written as CSV, does not change in its last digit with the order
    of the judgments (group_by's order varies between runs: a report's fleiss_*.csv
    changed from one run to the next)."""
    import io

    rng = np.random.default_rng(3)
    letters = np.array(["A", "B", "C"])
    table = _table({f"j{k}": list(letters[rng.integers(0, 3, 300)]) for k in range(12)})

    def csv(df: pl.DataFrame) -> bytes:
        buf = io.BytesIO()
        fleiss_panel(df).write_csv(buf)
        return buf.getvalue()

    first = csv(table)
    assert all(
        csv(table.sample(fraction=1.0, shuffle=True, seed=s)) == first
        for s in range(12)
    )


def test_disagreement_histogram_and_majority():
    per_q = query_disagreement(_table())
    expected = {}
    for q in range(8):
        got = [CHOICES[j][q] for j in CHOICES if CHOICES[j][q] is not None]
        top = Counter(got).most_common(1)[0][1]
        expected[f"q{q}"] = (len(got) - top, top * 2 > len(got))
    assert {
        r["query_id"]: (r["disagreement"], r["majority"])
        for r in per_q.iter_rows(named=True)
    } == expected
    h = disagreement_histogram(per_q)
    levels = Counter(d for d, _ in expected.values())
    assert dict(zip(h["disagreement"], h["queries"])) == dict(levels)
    assert h.get_column("cumulative_share").to_list()[-1] == pytest.approx(1.0)
    ms = majority_share(per_q).row(0, named=True)
    assert ms["majority_share"] == pytest.approx(
        np.mean([m for _, m in expected.values()])
    )
    assert ms["unanimous_share"] == pytest.approx(
        np.mean([d == 0 for d, _ in expected.values()])
    )
