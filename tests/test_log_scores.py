"""Arena-Hard's score with strong verdicts weighted (``show_result.py``'s ``load_judgments``,
``weight=3``) and FastChat's single-answer files (``*_single.jsonl``, ``display_result_single``):
files built here in each tool's exact format (SYNTHETIC), the figures recomputed by the
tools' own rules written out literally, malformed files one line naming file, line and field."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import polars as pl
import pytest

from tests.audit_logs import draws, write_arena_hard, write_fastchat
from tests.cli import voirdire as voirdire_cli
from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.benchmarks.logs.arena_hard import battle_scores, battles
from voirdire.benchmarks.logs.fastchat import read_single, single_scores
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _show_result_v2(files: list[Path], weight: int) -> dict[str, float]:
    """Arena-Hard v2's show_result.py ``load_judgments``, written out as it reads: each
    item's scores are game 2's list plus 1 - each of game 1's; an item with a null game or
    score dropped; the model's score the mean of all its scores."""
    label_to_score = {
        "A>B": [1], "A>>B": [1] * weight, "A=B": [0.5], "A<<B": [0] * weight, "A<B": [0],
        "B>A": [0], "B>>A": [0] * weight, "B=A": [0.5], "B<<A": [1] * weight, "B<A": [1],
    }  # fmt: skip
    scores: dict[str, list[float]] = {}
    for f in files:
        for line in f.read_text().splitlines():
            x = json.loads(line)
            g = x["games"]
            if (
                g[0] is None
                or g[1] is None
                or g[0]["score"] is None
                or g[1]["score"] is None
            ):
                continue
            s = label_to_score[g[1]["score"]] + [
                1 - s for s in label_to_score[g[0]["score"]]
            ]
            scores.setdefault(x["model"], []).extend(s)
    return {m: sum(v) / len(v) for m, v in scores.items()}


@pytest.mark.parametrize("weight", [3, 1])
def test_arena_hard_score_weights_strong_verdicts_as_show_result(tmp_path, weight):
    """Two model files with strong verdicts (about 30 %) and a failed game: the scores equal
    show_result's, and with weight 3 they differ from counting each verdict once."""
    d = tmp_path / "model_judgment" / "gpt-4.1"
    d.mkdir(parents=True)
    d1 = draws(80, 1, p_flip=0.2)
    d1[3] = (None, "first")
    write_arena_hard(d / "model-x.jsonl", d1, model="model-x", seed=3)
    write_arena_hard(d / "model-y.jsonl", draws(80, 2), model="model-y", seed=4)
    b = battles([d], weight=weight)
    got = {r["model"]: r["score"] for r in battle_scores(b).iter_rows(named=True)}
    want = _show_result_v2(sorted(d.glob("*.jsonl")), weight)
    assert got == pytest.approx(want, abs=1e-12)
    assert b.filter(pl.col("model") == "model-x")["uid"].n_unique() == 79
    strong = b["label"].str.contains(">>|<<")
    assert strong.any() and (b.filter(strong)["weight"] == weight).all()
    if weight == 3:
        once = _show_result_v2(sorted(d.glob("*.jsonl")), 1)
        assert got["model-x"] != pytest.approx(once["model-x"], abs=1e-6)


def test_arena_hard_unknown_label_names_file_line_and_field(tmp_path):
    f = tmp_path / "m.jsonl"
    write_arena_hard(f, draws(3, 5), model="m")
    lines = f.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["games"][1]["score"] = "A>>>B"
    lines[1] = json.dumps(rec)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ConfigError, match=r"m\.jsonl: line 2: field 'games\[1\]\.score' is 'A>>>B'"
    ):
        battles([f])


def write_single(
    path: Path, n: int, seed: int, models=("vicuna-13b", "gpt-4")
) -> list[dict]:
    """``<judge>_single.jsonl`` as play_a_match_single writes it: the rating in the judge's
    text as ``[[r]]``, -1 where none was read (every 9th answer)."""
    rng = random.Random(seed)
    rows = []
    for q in range(81, 81 + n):
        for m in models:
            for turn in (1, 2):
                score = -1 if rng.random() < 1 / 9 else rng.randint(1, 10)
                text = "no rating" if score == -1 else f"... Rating: [[{score}]]"
                rows.append({"question_id": q, "model": m, "judge": ["gpt-4", "single-v1"],
                             "user_prompt": "...", "judgment": text, "score": score,
                             "turn": turn, "tstamp": 1.0})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_fastchat_single_scores_are_display_result_single(tmp_path):
    """Per model and turn the mean of the scores other than -1, and over both turns; the
    score of each row agrees with the rating in the judge's text."""
    rows = write_single(tmp_path / "gpt-4_single.jsonl", 20, seed=1)
    s = read_single([tmp_path / "gpt-4_single.jsonl"])
    assert s.height == len(rows) and set(s["judge"]) == {"gpt-4"}
    rated = s.filter(pl.col("score") != -1)
    assert (
        rated["judgment"].str.extract(r"\[\[(\d+)\]\]").cast(pl.Float64)
        == rated["score"]
    ).all()
    table = single_scores(s)
    for m in ("vicuna-13b", "gpt-4"):
        for turn in (1, 2, None):
            vals = [r["score"] for r in rows if r["model"] == m and r["score"] != -1
                    and (turn is None or r["turn"] == turn)]  # fmt: skip
            row = table.filter(
                (pl.col("model") == m) & (pl.col("turn").eq_missing(turn))
            )
            assert row["score"][0] == pytest.approx(sum(vals) / len(vals))
            assert row["n"][0] == len(vals)


def test_fastchat_single_malformed_and_swapped_formats_are_one_line(tmp_path):
    """A missing score, a pair file given to read_single, and a single file audited as
    pairs: each one line naming the file, the line and the field; the CLI exits 2."""
    f = tmp_path / "gpt-4_single.jsonl"
    rows = write_single(f, 2, seed=2)
    del rows[2]["score"]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match=r"gpt-4_single\.jsonl: line 3: .*'score'"):
        read_single([f])
    pair = tmp_path / "gpt-4_pair.jsonl"
    write_fastchat(pair, draws(2, 1))
    with pytest.raises(
        ConfigError,
        match=r"gpt-4_pair\.jsonl: line 1: a pair judgment \(field 'model_1'\)",
    ):
        read_single([pair])
    write_single(f, 2, seed=2)
    r = voirdire_cli("audit", str(f), "--format", "fastchat",
                        "--out", str(tmp_path / "out"), cwd=ROOT)  # fmt: skip
    assert r.returncode == 2
    err = r.stderr.replace("\n", " ")
    assert re.search(r"gpt-4_single\.jsonl: line 1: a sing *le-answer judgment", err), (
        err
    )


def test_alpaca_eval_reference_against_itself_is_no_pair(tmp_path):
    """AlpacaEval's leaderboard holds the reference's own file (gpt4_1106_preview against
    itself, all draws): no pair to audit (showing one model twice stops the engine), so its
    rows are skipped and the other files' pairs are read as before."""
    ref = (
        tmp_path
        / "results/gpt4_1106_preview/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    )
    other = (
        tmp_path / "results/model-x/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    )
    write_alpaca_eval(ref, "gpt4_1106_preview", 6, seed=1)
    write_alpaca_eval(other, "model-x", 9, seed=2)
    bench = AlpacaEval([ref, other], data_dir=tmp_path / "copy")
    assert bench.pairs.height == 9
    assert (bench.pairs["model_a"] != bench.pairs["model_b"]).all()
