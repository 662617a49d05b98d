"""AlpacaEval's continuous preference kept as the verdict's probability: the weighted
annotator's ``preference`` (``2 − P(first)`` in the order shown, mapped back to
``output_1``/``output_2``) reaches the replayed verdict as ``option_probs`` (``A``: the output
shown first), recomputed here independently from the file and AlpacaEval's seeded switch."""

from __future__ import annotations

import random

import pytest

from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.judges.replay import as_result

ANN = "weighted_alpaca_eval_gpt4_turbo"


def _switched(instruction: str) -> bool:
    return random.Random(f"is_switched_outputs{instruction}0").choices(
        [False, True], k=1
    )[0]


def test_replayed_verdicts_carry_the_preference_as_probabilities(tmp_path):
    f = tmp_path / f"results/model-x/{ANN}/annotations.json"
    rows = write_alpaca_eval(f, "model-x", 40, seed=4, fail=3)
    rows[5]["preference"] = 0  # AlpacaEval's other draw: ½ each
    f.write_text(__import__("json").dumps(rows))
    bench = AlpacaEval([f], data_dir=tmp_path / "copy")
    path = AlpacaEval.recorded_file(bench.data_dir, "position_bias", ANN, "j")
    rec = AlpacaEval.read_recorded(path, ANN)
    assert len(rec) == 40
    for r in rows:
        sw = _switched(r["instruction"])
        first, second = (
            ("model-x", "gpt4_1106_preview") if sw else ("gpt4_1106_preview", "model-x")
        )
        qid = next(k for (k, _) in rec if k.endswith(f";{first};{second}") and
                   bench.question_text(k.split(";")[0]) == r["instruction"])  # fmt: skip
        got = rec[(qid, 1)]
        if r["preference"] is None:
            assert got.output is None and got.probs is None
            assert as_result("u", got).option_probs is None
            continue
        pref = 1.5 if r["preference"] == 0 else r["preference"]
        p_first = 2 - (3 - pref if sw else pref)  # P(the output shown first wins)
        assert got.probs["A"] == pytest.approx(p_first, abs=1e-12)
        assert got.probs["B"] == pytest.approx(1 - p_first, abs=1e-12)
        assert got.choice == ("A" if p_first > 0.5 else "B" if p_first < 0.5 else "C")
        res = as_result("u", got)
        assert res.option_probs == got.probs and res.verdict_mode == "replay"
