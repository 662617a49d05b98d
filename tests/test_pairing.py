"""The one pairing (analysis/position/pairing.py): classes by exact enumeration, and the
two orders meeting in one place only."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from tests.test_metrics import pair, table
from voirdire.analysis.mitigation.verdicts import normalise
from voirdire.analysis.position.pairing import judgment_pairs, verdict_pairs

ROOT = Path(__file__).resolve().parents[1]

#: Shi et al.'s classes by letters (candidate first, candidate second), three-option mode
CLASSES = {
    **dict.fromkeys(["AB", "BA", "CC"], "consistent"),
    **dict.fromkeys(["AA", "AC", "CA"], "primacy"),
    **dict.fromkeys(["BB", "BC", "CB"], "recency"),
}


def _expected(spec: str, opt: int) -> str:
    if "-" in spec or "." in spec:
        return "error"
    if opt == 2 and "C" in spec:
        return "other"
    return CLASSES.get(spec, "other")


def test_every_letter_pair_is_classified_as_the_paper_says():
    letters = "ABCD-."
    rows, want = [], {}
    for k, (a, b) in enumerate(itertools.product(letters, letters)):
        if a == b == ".":
            continue
        for opt in (2, 3):
            q = f"q{k}-{opt}"
            rows.append(pair("m", a + b, q=q, opt=opt))
            want[q] = _expected(a + b, opt)
    j = table(*rows)
    got = dict(judgment_pairs(j).select("question_id", "klass").iter_rows())
    assert got == want
    # the verdict pairing of the same judgments: an undecided order is no verdict
    by_verdicts = dict(
        verdict_pairs(normalise(j)).select("question_id", "klass").iter_rows()
    )
    assert by_verdicts == {q: ("error" if k == "other" else k) for q, k in want.items()}


def test_wins_and_ties_read_from_both_orders():
    j = table(pair("m", "AB", q="w"), pair("m", "CC", q="t"), pair("m", "BA", q="l"))
    p = {r["question_id"]: r for r in judgment_pairs(j).iter_rows(named=True)}
    assert (p["w"]["candidate_wins"], p["w"]["v1"], p["w"]["v2"]) == (
        True,
        "win",
        "win",
    )
    assert (p["t"]["consistent_tie"], p["t"]["candidate_wins"]) == (True, False)
    assert (p["l"]["v1"], p["l"]["v2"], p["l"]["candidate_wins"]) == (
        "loss",
        "loss",
        False,
    )


def test_duplicate_rows_first_one_counts():
    j = table(pair("m", "AB"), pair("m", "B."))  # a second candidate-first row, ignored
    row = judgment_pairs(j).row(0, named=True)
    assert (row["c1"], row["c2"], row["klass"]) == ("A", "B", "consistent")


def _analysis_sources() -> list[Path]:
    return sorted((ROOT / "analysis").rglob("*.py"))


def test_candidate_shown_first_is_spelled_once():
    spelling = re.compile(r"list\.first\(\)\s*==\s*pl\.col\(\"candidate\"\)")
    where = [
        p.relative_to(ROOT).as_posix()
        for p in _analysis_sources()
        if spelling.search(p.read_text())
    ]
    assert where == ["analysis/position/pairing.py"]


def test_orders_meet_only_in_the_pairing():
    """No module but the pairing splits a group by the side (``filter(... == 0)`` on
    ``permutation``/``_first``) into its two orders, and no verdict is turned back into
    a fake judgment (``as_judgments``)."""
    meet = re.compile(
        r"filter\((~?pl\.col\(\"_first\"\)|pl\.col\(\"permutation\"\) == [01])\)\.first\(\)"
    )
    for p in _analysis_sources():
        text = p.read_text()
        assert "as_judgments" not in text, p
        if p.name != "pairing.py":
            assert not meet.search(text), p
