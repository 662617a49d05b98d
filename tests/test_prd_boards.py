"""``voirdire rank`` on a PRD audit: the gold board from the people's votes (PRD's rule),
on files built in PRD's exact layout from seeded draws (SYNTHETIC), checked against an
independent fit; each reviewer's pooled board compared with it."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

import voirdire
from tests.test_audit_logs2 import MODELS, write_people, write_prd


def test_prd_gold_board_is_the_people_votes_fit(tmp_path, ray_local, monkeypatch):
    """``rank`` on a PRD audit: the gold board is the Bradley–Terry fit of the people's
    votes by PRD's rule (the sign of the mean vote per question and pair; a tie half a win
    and half a loss), checked against statsmodels' Logit on the expanded design (a win as
    two wins, a tie as one each way); every reviewer's pooled board is compared with it
    (Kendall τ-b of the ratings, scipy's)."""
    import statsmodels.api as sm
    from scipy.stats import kendalltau

    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "prd"
    write_prd(root, "gpt4", seed=10, n=10)
    write_prd(root, "claude", seed=11, n=10)
    rng = random.Random(12)
    strength = {"bard": 0.0, "gpt4": 1.0, "vicuna-13b": 0.4}
    votes = {}
    for q in range(1, 11):
        for a in MODELS:
            for b in MODELS:
                if a < b and rng.random() < 0.9:
                    m1, m2 = (a, b) if rng.random() < 0.5 else (b, a)
                    p1 = 1 / (1 + math.exp(strength[m2] - strength[m1]))
                    votes[(q, m1, m2)] = [rng.choice((1, 1, 3)) if rng.random() < p1
                                          else rng.choice((2, 2, 3)) for _ in range(3)]  # fmt: skip
    write_people(root, votes)
    dirs = [root / "ratings-gpt4", root / "ratings-claude", root / "ratings-human"]
    voirdire.audit(dirs, "prd", out=tmp_path / "a")
    ranking, _ = voirdire.rank([tmp_path / "a"], strategies=[], replicates=20)
    lb = ranking.leaderboard
    gold = lb.filter(pl.col("judge") == "gold")
    assert gold.height == 3 and not gold["bounded"].any()
    # the expected fit, from the votes alone
    design, y = [], []
    col = {"gpt4": 0, "vicuna-13b": 1}  # bard is the reference (θ = 0)
    for (_q, m1, m2), vs in votes.items():
        mean = sum({1: -1, 2: 1, 3: 0}[v] for v in vs) / len(vs)  # +: m2 better
        x = [0.0, 0.0]
        for m, s in ((m1, 1.0), (m2, -1.0)):
            if m in col:
                x[col[m]] += s
        outcome = [1, 1] if mean < 0 else [0, 0] if mean > 0 else [1, 0]
        design += [x, x]
        y += outcome
    beta = sm.Logit(y, design).fit(disp=0).params
    rating = dict(zip(gold["model"], gold["rating"]))
    scale = 400 / math.log(10)
    for m, j in col.items():
        assert rating[m] - rating["bard"] == pytest.approx(scale * beta[j], abs=1e-4)
    assert gold["n"].to_list() == [
        sum(1 for k, vs in votes.items() if m in k[1:]) for m in gold["model"]
    ]
    for judge in ("gpt4", "claude"):
        row = ranking.flips.filter(
            (pl.col("judge") == judge) & (pl.col("view") == "pooled")
            & (pl.col("judge_b") == "gold")
        )  # fmt: skip
        assert row.height == 1
        board = lb.filter((pl.col("judge") == judge) & (pl.col("view") == "pooled"))
        mine = dict(zip(board["model"], board["rating"]))
        # τ-b with a rating difference below 1e-6 points a tie (flips' 1e-9 on θ)
        tau = kendalltau([round(mine[m], 6) for m in MODELS],
                         [round(rating[m], 6) for m in MODELS])[0]  # fmt: skip
        assert row["kendall_tau"][0] == pytest.approx(tau)
