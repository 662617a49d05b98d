"""Like with like (issue 40, item 2): judges are ranked on the units they share, the shared
n is said, the pick's interval shown, judges not distinguishable from it named as tied, and
judges measured on different data are separate boards. The tie test's size is checked on
simulated equal judges."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from tests.test_metrics import pair, table
from voirdire.analysis.choice import choose_judges
from voirdire.analysis.position.metrics import judge_metrics
from voirdire.analysis.shared_units import one_source_per_judge
from voirdire.analysis.stats import tie_test
from voirdire.analysis.stats.tie_test import TIE_ALPHA, paired_test, ratio_interval


def _judge(name: str, questions: range, consistent: int, per_q: int = 4, **kw) -> list:
    """``per_q`` pairs per question; the first ``consistent`` pairs (counted over the whole
    range, question by question) consistent (``AB``: the candidate wins in both orders),
    the others primacy (``AA``)."""
    rows, k = [], 0
    for q in questions:
        for c in range(per_q):
            rows += pair(
                f"m{c}", "AB" if k < consistent else "AA", q=f"q{q}", judge=name, **kw
            )
            k += 1
    return rows


def _subset_judges() -> pl.DataFrame:
    """``wide`` on 50 questions, ``narrow`` on the first 10 only. On those 10 (40 pairs)
    wide is consistent on 38, narrow on 34; on the other 40 questions wide is consistent on
    96 of 160. Own figures: wide 134/200 = 0.67 < narrow 0.85; shared: wide 0.95 > 0.85."""
    wide = _judge("wide", range(10), 38) + _judge("wide", range(10, 50), 96)
    return table(wide, _judge("narrow", range(10), 34))


def test_pick_is_made_on_shared_units_and_says_n():
    j = _subset_judges()
    jm = judge_metrics(j)
    own = dict(jm.select("judge", "pc").iter_rows())
    assert math.isclose(own["wide"], 0.67) and math.isclose(own["narrow"], 0.85)
    c = choose_judges(jm, judgments=j)
    t = c.table.sort("rank")
    assert t.get_column("judge").to_list() == ["wide", "narrow"]
    shared = dict(t.select("judge", "shared").iter_rows())
    assert math.isclose(shared["wide"], 0.95) and math.isclose(shared["narrow"], 0.85)
    # the shared figure is the project's own PC on the shared rows
    sub = judge_metrics(
        j.filter(pl.col("question_id").is_in([f"q{i}" for i in range(10)]))
    )
    assert math.isclose(sub.filter(pl.col("judge") == "wide")["pc"][0], 0.95)
    n = dict(t.select("judge", "n_own").iter_rows())
    assert n == {"wide": 400, "narrow": 80}
    assert t.get_column("n_shared").to_list() == [80, 80]
    line = c.lines["MTBench"]
    assert "wide (PC 0.950 [" in line
    assert "80 (question, pair, order) units all 2 judges share" in line
    assert "up to 400" in line
    lo, hi = t.row(0, named=True)["shared_lo"], t.row(0, named=True)["shared_hi"]
    assert lo < 0.95 < hi
    # without the judgments the old ranking (own figures) stands
    assert choose_judges(jm).table.sort("rank")["judge"].to_list() == ["narrow", "wide"]


def test_equal_judges_are_named_tied_and_different_ones_not():
    j = table(
        _judge("a", range(30), 100),
        _judge("b", range(30), 98),
        _judge("c", range(30), 40),
    )
    c = choose_judges(judge_metrics(j), judgments=j)
    t = c.table.sort("rank")
    assert t["judge"].to_list() == ["a", "b", "c"]
    tied = dict(t.select("judge", "tied").iter_rows())
    assert tied == {"a": None, "b": True, "c": False}
    line = c.lines["MTBench"]
    assert "so tied with it: b." in line and "c" not in line.split("tied with it:")[1]


def test_disjoint_data_are_separate_boards():
    """JudgeBench's two response models: judges of one share no pair with the other's."""
    gpt = _judge("g1", range(10), 30, bench="JudgeBench") + _judge(
        "g2", range(10), 20, bench="JudgeBench"
    )
    claude = [
        dict(r, candidate=r["candidate"].replace("m", "claude-"))
        | {
            "shown": [
                x.replace("m", "claude-") if x.startswith("m") else x
                for x in r["shown"]
            ]
        }
        for r in _judge("h", range(10), 40, bench="JudgeBench")
    ]
    j = table(gpt, claude)
    c = choose_judges(judge_metrics(j), judgments=j)
    boards = sorted(c.lines)
    assert len(boards) == 2 and all(b.startswith("JudgeBench (") for b in boards)
    by = dict(c.table.select("judge", "board").iter_rows())
    assert by["g1"] == by["g2"] != by["h"]
    assert "claude-0" in by["h"]
    ranks = dict(c.table.select("judge", "rank").iter_rows())
    assert ranks["h"] == 1 and ranks["g1"] == 1 and ranks["g2"] == 2


def test_a_judge_of_two_directories_is_read_where_the_others_are():
    """``run``'s position-bias job (3 judges' own data) and repetition job (every judge):
    the judge of both is compared from the directory holding every judge."""
    full = table(_judge("x", range(20), 40))
    reps = table(_judge("x", range(5), 20, rep=2), _judge("y", range(5), 10, rep=2))
    chosen, own = one_source_per_judge([full, reps])
    assert set(chosen.filter(pl.col("judge") == "x")["repetition"].to_list()) == {2}
    assert dict(own.select("judge", "n_own").iter_rows()) == {"x": 160, "y": 40}


def _equal_or_not(rng, p_a: float, p_b: float, q: int = 30, k: int = 3) -> tuple:
    """Per question, ``k`` pairs; each valid with probability 0.9, consistent with
    ``p_a`` / ``p_b`` when valid."""
    den_a, den_b = rng.binomial(k, 0.9, q), rng.binomial(k, 0.9, q)
    return rng.binomial(den_a, p_a), den_a, rng.binomial(den_b, p_b), den_b


def test_tie_test_size_on_simulated_equal_judges():
    """Equal judges are called different at most at the nominal rate (within binomial
    error: 2.58 standard errors over 400 simulated boards), and judges 0.6 vs 0.9 apart
    are told apart most of the time (the test can fail)."""
    rng = np.random.default_rng(7)
    m = 400
    rejected = sum(
        paired_test(*_equal_or_not(rng, 0.8, 0.8), replicates=199, seed=i) < TIE_ALPHA
        for i in range(m)
    )
    bound = TIE_ALPHA + 2.58 * math.sqrt(TIE_ALPHA * (1 - TIE_ALPHA) / m)
    assert rejected / m <= bound, (rejected, m)
    power = sum(
        paired_test(*_equal_or_not(rng, 0.6, 0.9), replicates=199, seed=i) < TIE_ALPHA
        for i in range(100)
    )
    assert power >= 80


def test_the_table_reads_back_from_its_csv(tmp_path):
    """``report`` prints the summary from ``metrics/choice.csv``: an all-empty column (one
    judge: no test against the pick) reads back as text and must not break it."""
    import io

    from rich.console import Console

    from voirdire.analysis.choice import choice_from_table
    from voirdire.analysis.report.summary import print_choice, summary_view

    for j in (table(_judge("solo", range(5), 10)), _subset_judges()):
        c = choose_judges(judge_metrics(j), judgments=j)
        c.table.write_csv(tmp_path / "choice.csv")
        back = choice_from_table(
            pl.read_csv(tmp_path / "choice.csv", infer_schema_length=None)
        )
        assert back.lines == c.lines
        buf = io.StringIO()
        print_choice(back, Console(file=buf, width=160))
        assert c.lines["MTBench"].split(".")[0] in " ".join(buf.getvalue().split())
        assert summary_view(back)[0]["line"] == c.lines["MTBench"]


def test_ratio_interval_in_blocks_is_the_one_draw_interval(monkeypatch):
    """The bootstrap drawn in blocks of replicates (bounded memory at 10⁶ questions) gives
    the interval of the single (replicates, clusters) draw, bit for bit."""
    rng = np.random.default_rng(3)
    num = rng.integers(0, 3, size=37)
    den = num + rng.integers(0, 2, size=37)
    den[:5] = 0
    idx = np.random.default_rng(11).integers(0, 37, size=(50, 37))
    d = den[idx].sum(axis=1)
    r = (num[idx].sum(axis=1) / d)[d > 0]
    want = (num.sum() / den.sum(), *np.quantile(r, [0.025, 0.975]))
    monkeypatch.setattr(tie_test, "_BLOCK", 37 * 3)  # blocks of 3 replicates, one of 2
    assert ratio_interval(num, den, 50, 11) == want
    monkeypatch.setattr(tie_test, "_BLOCK", 1)  # one replicate a block
    assert ratio_interval(num, den, 50, 11) == want


def test_ratio_interval_drawn_in_blocks_is_the_one_draw_interval():
    """20,000 clusters × 200 replicates: drawn in blocks of 52 replicates; the interval is
    the one a single (replicates × clusters) draw of the same seed gives."""
    rng = np.random.default_rng(3)
    n, reps = 20_000, 200
    den = rng.integers(0, 3, n)
    num = rng.binomial(den, 0.7)
    est, lo, hi = ratio_interval(num, den, reps, seed=11)
    idx = np.random.default_rng(11).integers(0, n, size=(reps, n))
    r = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    assert est == num.sum() / den.sum()
    assert [lo, hi] == np.quantile(r, [0.025, 0.975]).tolist()
    assert lo < est < hi
