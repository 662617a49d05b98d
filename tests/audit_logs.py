"""Judgment logs written in other tools' exact formats, from seeded random verdicts
(SYNTHETIC: nothing of the real logs is committed). Used by ``tests/test_audit.py`` and
``perf/bench_audit.py``.

Each writer draws, per item and order, the winner as the judge saw it ("first", "second" or
"tie") and writes it in the format's own fields (and in the judge's text, the way the tool's
prompt asks for it), so a test can recompute every figure from the draws alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

#: Arena-Hard's labels by (outcome as shown, strong)
AH_LABEL = {("first", False): "A>B", ("first", True): "A>>B", ("tie", False): "A=B",
            ("second", False): "B>A", ("second", True): "B>>A"}  # fmt: skip


def draws(n: int, seed: int, p_flip: float = 0.3) -> list[tuple[str, str]]:
    """``n`` pairs of outcomes as shown (game 1, game 2): each item has a better answer (the
    canonical first with probability 1/2); with probability ``p_flip`` the judge picks the
    answer shown first in both orders instead, 5 % of verdicts are ties."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        first_better = rng.random() < 0.5
        g1 = "first" if first_better else "second"
        g2 = "second" if first_better else "first"  # consistent: the same answer wins
        if rng.random() < p_flip:
            g1 = g2 = "first"
        if rng.random() < 0.05:
            g1 = "tie"
        out.append((g1, g2))
    return out


def write_arena_hard(path: Path, outcomes, *, model="model-x", baseline="gpt-4-0314",
                     judge="gpt-4-1106-preview", v2=True, seed=0) -> None:  # fmt: skip
    """``model_judgment/<judge>/<model>.jsonl`` as gen_judgment.py writes it (v2: ``uid``,
    ``baseline``, judgment ``{"answer": text}``; v0.1: ``question_id``, text judgment, no
    baseline field); game 1 shows the baseline as A. A game outcome ``None`` is a failed call."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i, games in enumerate(outcomes):
            rec = {"uid" if v2 else "question_id": f"q{i:05d}", "category": "hard_prompt",
                   "judge": judge, "model": model, "games": []}  # fmt: skip
            if v2:
                rec["baseline"] = baseline
            else:
                rec.pop("category")
            for g in games:
                if g is None:
                    rec["games"].append(None)
                    continue
                label = AH_LABEL[(g, g != "tie" and rng.random() < 0.3)]
                text = f"My own answer first.\n\nMy final verdict is: [[{label}]]"
                rec["games"].append({"score": label, "judgment": {"answer": text} if v2 else text,
                                     "prompt" if v2 else "user_prompt": "..."})  # fmt: skip
            fh.write(json.dumps(rec) + "\n")


def write_fastchat(path: Path, outcomes, *, models=("vicuna-13b", "gpt-3.5-turbo"),
                   judge="gpt-4", turn=1) -> None:  # fmt: skip
    """``<judge>_pair.jsonl`` as play_a_match_pair writes it: game 1 shows model_1 as A,
    game 2 model_2; winners mapped back to model_1/model_2/tie/error."""
    m1, m2 = models
    g1_map, g2_map = (
        {"first": "model_1", "second": "model_2"},
        {"first": "model_2", "second": "model_1"},
    )
    tag = {"first": "[[A]]", "second": "[[B]]", "tie": "[[C]]", "error": "no verdict"}
    with open(path, "w", encoding="utf-8") as fh:
        for i, (g1, g2) in enumerate(outcomes):
            rec = {"question_id": 81 + i, "model_1": m1, "model_2": m2,
                   "g1_winner": g1_map.get(g1, g1), "g2_winner": g2_map.get(g2, g2),
                   "judge": [judge, "pair-v2"], "g1_user_prompt": "...",
                   "g1_judgment": f"Assistant A ... {tag[g1]}", "g2_user_prompt": "...",
                   "g2_judgment": f"Assistant A ... {tag[g2]}", "turn": turn, "tstamp": 1.0}  # fmt: skip
            fh.write(json.dumps(rec) + "\n")


def write_judgebench(path: Path, outcomes, labels, *, judge_name="arena_hard",
                     judge_model="gpt-4o-2024-05-13", ids="p") -> None:  # fmt: skip
    """An outputs file as run_judge.py writes it: judgments[0] shows response_A first,
    judgments[1] response_B first, each decision as the judge saw it (an outcome ``None``:
    a failed call, a null judgment); pair ids ``f"{ids}{i}"``."""
    dec = {"first": "A>B", "second": "B>A", "tie": "A=B"}
    with open(path, "w", encoding="utf-8") as fh:
        for i, ((g1, g2), label) in enumerate(zip(outcomes, labels)):
            js = [None if g is None else
                  {"judgment": {"judge_model": judge_model, "prompt": "...",
                                "response": f"\nreasoning ... [[{dec[g]}]]"}, "decision": dec[g]}
                  for g in (g1, g2)]  # fmt: skip
            rec = {"pair_id": f"{ids}{i}", "original_id": str(i // 2), "source": "mmlu-pro-math",
                   "question": f"question {i}", "response_model": "gpt-4o-2024-05-13",
                   "response_A": f"answer A{i}", "response_B": f"answer B{i}", "label": label,
                   "judge_name": judge_name, "judgments": js}  # fmt: skip
            fh.write(json.dumps(rec) + "\n")
