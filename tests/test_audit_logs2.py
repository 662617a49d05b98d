"""``voirdire audit`` for PRD's Vicuna-80 reviews and AlpacaEval's annotations: files built
here in each tool's exact layout from seeded draws (SYNTHETIC: nothing of the real logs is
committed), the order-shown rule checked against the reviewer's or annotator's raw output,
human gold labels by PRD's own rule, AlpacaEval's seeded switch recomputed independently
from the annotator's token log-probabilities, malformed files named by file, line or JSON
index and field, and audits through the engine (PRD both orders, AlpacaEval the order shown
only, no query missing)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import polars as pl
import pytest

import voirdire
from voirdire.benchmarks.logs.alpaca_eval import PREFERENCES, AlpacaEval
from voirdire.benchmarks.logs.prd import PRD, PRDOptions
from voirdire.benchmarks.logs.reading import RECORDED
from voirdire.core import ConfigError

MODELS = ("bard", "gpt4", "vicuna-13b")


def _recorded(bench) -> pl.DataFrame:
    return pl.read_parquet(Path(bench.data_dir) / RECORDED)


# ------------------------------------------------------------------ PRD's layout


def _review_text(rng, first_better: bool | None) -> tuple[str, int]:
    """A reviewer's output in PRD's three-class prompt's form: per-assistant scores in the
    order shown, then the choice alone on the last line (1, 2, or 3 = equivalent)."""
    s1, s2 = rng.randint(5, 9), rng.randint(5, 9)
    if first_better is None:
        s2, score = s1, 3
    elif first_better:
        s1, s2, score = max(s1, s2) + 1, min(s1, s2), 1
    else:
        s1, s2, score = min(s1, s2), max(s1, s2) + 1, 2
    text = (
        "Both assistants answered.\n\n"
        f"Assistant 1: {s1}/10\nAssistant 2: {s2}/10\n\n{score}"
    )
    return text, score


def write_prd(root: Path, reviewer: str, seed: int, n: int = 12, p_first: float = 0.3):
    """``ratings-<reviewer>/answer_<m1>-vs-answer_<m2>-<reviewer>-reviewer_threeclass.jsonl``
    for every ordered pair of MODELS, as eval_gpt_review.py writes them; the better model
    per (question, pair) drawn once, and with probability ``p_first`` the reviewer picks
    Assistant 1 whatever was shown. Returns {(question, m1, m2): score} for checking."""
    rng = random.Random(seed)
    d = root / f"ratings-{reviewer}"
    d.mkdir(parents=True, exist_ok=True)
    better = {(q, a, b): rng.choice((a, b, None)) for q in range(1, n + 1)
              for a in MODELS for b in MODELS if a < b}  # fmt: skip
    scores = {}
    for m1 in MODELS:
        for m2 in MODELS:
            if m1 == m2:
                continue
            lines = []
            for q in range(1, n + 1):
                best = better[(q, *sorted((m1, m2)))]
                first_better = None if best is None else best == m1
                if rng.random() < p_first:
                    first_better = True
                text, score = _review_text(rng, first_better)
                scores[(q, m1, m2)] = score
                lines.append({"review_id": f"r{q}", "question_id": q, "answer1_id": f"{m1}-{q}",
                              "answer2_id": f"{m2}-{q}", "reviewer_id": 1, "metadata": {},
                              "text": text, "score": score})  # fmt: skip
            name = f"answer_{m1}-vs-answer_{m2}-{reviewer}-reviewer_threeclass.jsonl"
            (d / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return scores


def write_people(root: Path, votes: dict[tuple[int, str, str], list[int]]) -> None:
    """``ratings-human/answer_<m1>-vs-answer_<m2>-human-reviewer_threeclass.jsonl``: one line
    per vote (``question_id``, ``text`` = the question, ``score``)."""
    d = root / "ratings-human"
    d.mkdir(parents=True, exist_ok=True)
    files: dict[tuple[str, str], list[str]] = {}
    for (q, m1, m2), vs in votes.items():
        for v in vs:
            files.setdefault((m1, m2), []).append(
                json.dumps({"question_id": q, "text": f"question {q}?", "score": v})
            )
    for (m1, m2), lines in files.items():
        name = f"answer_{m1}-vs-answer_{m2}-human-reviewer_threeclass.jsonl"
        (d / name).write_text("\n".join(lines) + "\n")


def test_prd_assistant_1_is_the_model_named_first(tmp_path):
    """The model named first in the file name is Assistant 1, shown first: the letter read
    from `score` is the reviewer's last line, and the model it names as the winner is the one
    whose "Assistant k: s/10" score in the text is higher (or a tie when equal)."""
    scores = write_prd(tmp_path, "gpt4", seed=3)
    bench = PRD([tmp_path / "ratings-gpt4"], data_dir=tmp_path / "copy")
    rec = _recorded(bench)
    assert rec.height == len(scores) == 12 * 6 and set(rec["judge"]) == {"gpt4"}
    assert bench.pairs.height == 12 * 3
    for row in rec.iter_rows(named=True):
        q = int(row["question_id"].split("|")[0])
        assert scores[(q, row["first"], row["second"])] == int(
            row["output"].split("\n")[-1]
        )
        s1, s2 = map(int, re.findall(r"Assistant [12]: (\d+)/10", row["output"]))
        want = row["first"] if s1 > s2 else row["second"] if s2 > s1 else "tie"
        won = {"A": row["first"], "B": row["second"], "C": "tie"}[row["choice"]]
        assert won == want
    # both orders of every pair, the pair's models sorted
    per = rec.group_by("question_id").agg(pl.col("first").n_unique())
    assert (per["first"] == 2).all()
    assert bench.pairs.filter(pl.col("model_a") > pl.col("model_b")).height == 0


def test_prd_human_gold_is_the_sign_of_the_mean_vote(tmp_path):
    """PRD's human_majority: votes -1/+1/0 (tie), averaged over the pair's votes from both
    files, mapped to the models; a mean of 0 is a tie; the question's text from the votes."""
    write_prd(tmp_path, "gpt4", seed=4, n=5)
    votes = {
        (1, "bard", "gpt4"): [1, 1, 3],  # bard, bard, tie -> bard
        (2, "gpt4", "bard"): [1, 2, 3],  # one each way and a tie -> tie
        (3, "gpt4", "bard"): [2, 3, 3],  # bard (model 2 of the file) -> bard
        (4, "bard", "gpt4"): [3],  # a tie
        (1, "vicuna-13b", "gpt4"): [1, 1],  # vicuna-13b
        (5, "bard", "gpt4"): [2],  # from one file ...
        (5, "gpt4", "bard"): [2, 2],  # ... and the other: bard 2, gpt4 1 -> bard
    }
    write_people(tmp_path, votes)
    bench = PRD(
        [tmp_path / "ratings-gpt4", tmp_path / "ratings-human"],
        data_dir=tmp_path / "copy",
    )
    gold = dict(zip(bench.pairs["question_id"], bench.pairs["gold"]))
    assert gold["1|bard|gpt4"] == "bard"
    assert gold["2|bard|gpt4"] == "tie"
    assert gold["3|bard|gpt4"] == "bard"
    assert gold["4|bard|gpt4"] == "tie"
    assert gold["1|gpt4|vicuna-13b"] == "vicuna-13b"
    assert gold["5|bard|gpt4"] == "bard"
    assert gold["2|bard|vicuna-13b"] is None  # no vote
    assert set(_recorded(bench)["judge"]) == {"gpt4"}  # people are not a judge
    text = dict(zip(bench.pairs["question_id"], bench.pairs["instruction"]))
    assert (
        text["3|bard|vicuna-13b"] == "question 3?"
        and text["1|bard|gpt4"] == "question 1?"
    )
    # read again from the copy alone: the gold labels are in it
    again = PRD(None, data_dir=bench.data_dir)
    assert again.pairs["gold"].to_list() == bench.pairs["gold"].to_list()


def test_prd_names_and_reviewer(tmp_path):
    """The reviewer comes from ratings-<reviewer> (or the setting); hyphenated second-run
    names are skipped as PRD's notebook skips them; other names are refused."""
    write_prd(tmp_path, "vicuna-13b", seed=5, n=3)
    d = tmp_path / "ratings-vicuna-13b"
    first = sorted(d.iterdir())[0]
    (d / "answer-bard-vs-answer-gpt4-vicuna-13b-reviewer-threeclass.jsonl").write_text(
        first.read_text()
    )
    bench = PRD([d], data_dir=tmp_path / "copy")
    assert set(_recorded(bench)["judge"]) == {"vicuna-13b"}
    assert bench.pairs.height == 9  # model names with hyphens read whole
    assert set(bench.models) == set(MODELS)
    loose = tmp_path / "loose"
    loose.mkdir()
    f = loose / "answer_bard-vs-answer_gpt4-claude-reviewer_threeclass.jsonl"
    f.write_text(first.read_text())
    with pytest.raises(
        ConfigError, match=r"loose.*not in a ratings-<reviewer> directory"
    ):
        PRD([f], data_dir=tmp_path / "c2")
    assert set(
        _recorded(PRD([f], data_dir=tmp_path / "c3", log={"reviewer": "claude"}))[
            "judge"
        ]
    ) == {"claude"}
    bad = d / "reviews.jsonl"
    bad.write_text(first.read_text())
    with pytest.raises(
        ConfigError, match=r"reviews\.jsonl: the name is not answer_<model 1>"
    ):
        PRD([bad], data_dir=tmp_path / "c4")


def test_prd_malformed_names_file_line_and_field(tmp_path):
    write_prd(tmp_path, "claude", seed=6, n=3)
    d = tmp_path / "ratings-claude"
    f = sorted(d.iterdir())[1]
    lines = f.read_text().splitlines()
    obj = json.loads(lines[1])
    del obj["score"]
    f.write_text("\n".join([lines[0], json.dumps(obj), lines[2]]) + "\n")
    with pytest.raises(
        ConfigError,
        match=rf"{re.escape(f.name)}: line 2: no field 'score' \(is this a PRD log\?\)",
    ) as e:
        PRD([d], data_dir=tmp_path / "c")
    assert "\n" not in str(e.value)
    f.write_text(lines[0] + "\n" + lines[1][:30])
    with pytest.raises(
        ConfigError, match=rf"{re.escape(f.name)}: line 2: not valid JSON"
    ):
        PRD([d], data_dir=tmp_path / "c")
    write_people(tmp_path, {(1, "bard", "gpt4"): [7]})
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ConfigError,
        match=r"human-reviewer_threeclass\.jsonl: line 1: field 'score' is 7",
    ):
        PRD([d, tmp_path / "ratings-human"], data_dir=tmp_path / "c")


# ------------------------------------------------------------------ AlpacaEval's layout


def _tok(token, lp):
    return {"token": token, "bytes": list(token.encode()), "logprob": lp}


def write_alpaca_eval(path: Path, model: str, n: int, seed: int, *, annotator_seed=0,
                      bias: float = 1.0, fail: int = -1) -> list[dict]:  # fmt: skip
    """``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json`` as AlpacaEval
    writes it: the annotator saw the outputs in the order AlpacaEval's seeded switch gives
    (drawn here with its own code path: sha-free ``random.Random`` on the string), answered
    with log-probabilities of ``m`` (the first slot) and ``M``, and the preference was
    mapped back to output_1/output_2. ``bias`` > 1 multiplies the odds of ``m``."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        ins = f"Instruction {i}: {rng.random():.6f}"
        switched = random.Random(f"is_switched_outputs{ins}{annotator_seed}").choices(
            [False, True], k=1
        )[0]
        quality = rng.gauss(0, 1.5)  # > 0: the model's output (output_2) is better
        shown_first_is_model = switched
        logit = (quality if shown_first_is_model else -quality) + math.log(bias)
        p_m = 1 / (1 + math.exp(-logit))
        lm, lM = math.log(max(p_m, 1e-12)), math.log(max(1 - p_m, 1e-12))
        raw = {"finish_reason": "length", "index": 0, "logprobs": {"content": [{
            "token": "m" if lm > lM else "M", "bytes": [109], "logprob": max(lm, lM),
            "top_logprobs": sorted([_tok("m", lm), _tok("M", lM), _tok("The", -15.0)],
                                   key=lambda t: -t["logprob"])}]},
            "message": {"content": "m" if lm > lM else "M", "role": "assistant"}, "text": "m"}  # fmt: skip
        pref_shown = 2 - p_m  # logprob_parser, is_binarize false
        pref = 3 - pref_shown if switched else pref_shown
        rows.append({"instruction": ins, "output_1": f"reference answer {i}",
                     "generator_1": "gpt4_1106_preview", "dataset": "helpful_base",
                     "output_2": f"{model} answer {i}", "generator_2": model,
                     "annotator": "weighted_alpaca_eval_gpt4_turbo",
                     "preference": None if i == fail else pref, "price_per_example": 0.008,
                     "time_per_example": 0.4, "raw_completion": None if i == fail else raw})  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=2))
    return rows


def _p_m(raw_text: str) -> float:
    """P(m) / (P(m) + P(M)) from the raw completion's top log-probabilities."""
    top = json.loads(raw_text)["logprobs"]["content"][0]["top_logprobs"]
    lp = {t["token"]: t["logprob"] for t in top}
    return math.exp(lp["m"]) / (math.exp(lp["m"]) + math.exp(lp["M"]))


def test_alpaca_eval_order_shown_from_the_seeded_switch(tmp_path):
    """The output shown first is the one the raw completion's first-slot token `m` stands
    for: where the annotator's P(m) > 1/2 the letter is A and the winner (mapped back by the
    format) is the output AlpacaEval's preference favours. p_first equals P(m) exactly."""
    f = tmp_path / "results/model-x/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    rows = write_alpaca_eval(f, "model-x", 60, seed=1, fail=7)
    bench = AlpacaEval([f], data_dir=tmp_path / "copy")
    rec = _recorded(bench)
    prefs = pl.read_parquet(Path(bench.data_dir) / PREFERENCES)
    assert rec.height == prefs.height == 60 and bench.pairs.height == 60
    by_q = {r["question_id"]: r for r in rec.iter_rows(named=True)}
    shown_first_model = 0
    for row, p in zip(rows, prefs.iter_rows(named=True)):
        r = by_q[p["question_id"]]
        if row["preference"] is None:
            assert r["output"] is None and p["p_first"] is None
            continue
        pm = _p_m(r["output"])
        assert p["p_first"] == pytest.approx(pm, abs=1e-9)
        assert r["choice"] == ("A" if pm > 0.5 else "B")
        won = r["first"] if r["choice"] == "A" else r["second"]
        assert won == (
            row["generator_2"] if row["preference"] > 1.5 else row["generator_1"]
        )
        shown_first_model += r["first"] == "model-x"
    # AlpacaEval's switch is balanced: about half the rows show the model first
    assert 15 <= shown_first_model <= 45
    # another seed gives another order, and disagrees with the raw tokens on about half
    other = AlpacaEval([f], data_dir=tmp_path / "c2", log={"seed": 123})
    rec2 = _recorded(other).join(rec, on="question_id", suffix="_0")
    assert 0 < rec2.filter(pl.col("first") != pl.col("first_0")).height < 60
    pairs = bench.pairs.row(0, named=True)
    assert pairs["output_a"].startswith(
        "reference" if pairs["model_a"] != "model-x" else "model-x"
    )


def test_alpaca_eval_malformed_names_file_index_and_field(tmp_path):
    f = tmp_path / "annotations.json"
    rows = write_alpaca_eval(f, "m", 4, seed=2)
    del rows[2]["generator_2"]
    f.write_text(json.dumps(rows))
    with pytest.raises(
        ConfigError,
        match=r"annotations\.json: \[2\]: no field 'generator_2' \(is this a AlpacaEval log\?\)",
    ):
        AlpacaEval([f], data_dir=tmp_path / "c")
    rows[2]["generator_2"] = "m"
    rows[1]["preference"] = 3.5
    f.write_text(json.dumps(rows))
    with pytest.raises(ConfigError, match=r"\[1\]: field 'preference' is 3\.5"):
        AlpacaEval([f], data_dir=tmp_path / "c")
    f.write_text(json.dumps(rows, indent=1)[:200])
    with pytest.raises(
        ConfigError, match=r"annotations\.json: line \d+: not valid JSON"
    ) as e:
        AlpacaEval([f], data_dir=tmp_path / "c")
    assert "\n" not in str(e.value)
    arena = tmp_path / "model-x.jsonl"
    arena.write_text('{"uid": "q1", "model": "m", "judge": "j", "games": []}\n')
    # the wrong format named, and the one the file reads as (issue 40: "not valid JSON"
    # for valid JSON Lines of another format)
    wrong = r"model-x\.jsonl: not a log of the AlpacaEval format: it reads as arenahard \(give --format arenahard\)"
    with pytest.raises(ConfigError, match=wrong):
        AlpacaEval([arena], data_dir=tmp_path / "c")
    arena.write_text(arena.read_text() * 2)
    with pytest.raises(ConfigError, match=wrong):
        AlpacaEval([arena], data_dir=tmp_path / "c")


# ------------------------------------------------------------------ through the engine


def test_audits_through_the_engine(tmp_path, ray_local, monkeypatch):
    """PRD: both orders, PC from the reviews; AlpacaEval: the order shown only (its records'),
    nothing missing, the first-shown win share recomputed from the draws."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    scores = write_prd(tmp_path / "prd", "gpt4", seed=8, n=8)
    res = voirdire.audit(
        [tmp_path / "prd" / "ratings-gpt4"], "prd", out=tmp_path / "a1"
    )
    consistent = 0
    for q in range(1, 9):
        for a in MODELS:
            for b in MODELS:
                if a < b:
                    s1, s2 = scores[(q, a, b)], scores[(q, b, a)]
                    consistent += (s1, s2) in {(1, 2), (2, 1), (3, 3)}
    jm = res.judge_metrics.row(0, named=True)
    assert jm["judge"] == "gpt4" and jm["pc"] == pytest.approx(consistent / 24)
    assert res.judgments.height == 48
    f = tmp_path / "ae/results/model-x/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    rows = write_alpaca_eval(f, "model-x", 40, seed=9, bias=3.0)
    job = voirdire.api.audit_job([f], "alpacaeval", out=tmp_path / "a2")
    # both orders planned: the judge asks the order its records hold
    assert job.comparison.permutations == "both"
    res2 = voirdire.audit([f], "alpacaeval", out=tmp_path / "a2")
    j = res2.judgments
    assert j.height == 40 and res2.stats.queries == 40
    assert "failure_class" not in j.columns or j["failure_class"].is_null().all()
    rec = pl.read_parquet(Path(res2.job["data_dir"]) / RECORDED)
    first_wins = (rec["choice"] == "A").sum()
    want = sum(
        (r["preference"] < 1.5) != random.Random(f"is_switched_outputs{r['instruction']}0").choices([False, True], k=1)[0]
        for r in rows
    )  # fmt: skip
    assert first_wins == want


def test_prd_human_reviewer_is_read_under_its_former_name_too():
    """``[benchmark.log] human_reviewer`` names the reviewer whose files are human votes;
    ``people``, its former name, still reads into it; anything else is refused."""
    assert PRDOptions().human_reviewer == "human"
    assert (
        PRDOptions.model_validate({"human_reviewer": "crowd"}).human_reviewer == "crowd"
    )
    assert PRDOptions.model_validate({"people": "crowd"}).human_reviewer == "crowd"
    with pytest.raises(ValueError, match="humans"):
        PRDOptions.model_validate({"humans": "crowd"})
