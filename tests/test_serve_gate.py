"""The gate of ``voirdire serve`` as pure code (``engine/serve/gate.py``): the harnesses'
own judge templates (``benchmarks/templates/log_tools.json``) recognised, the swapped twin
built, the two orders read by the tool's verdict rule and combined, and the reply read back
by each harness's own verdict rule (Arena-Hard's ``get_score``, FastChat's ``[[A]]`` test,
PRD's last line)."""

from __future__ import annotations

import re

import pytest

from voirdire.benchmarks.logs.tool_prompts import tool_prompts
from voirdire.core import ConfigError
from voirdire.engine.serve import gate

VALUES = {
    "instruction": "Name a prime number.",
    "output_1": "7 is prime.",
    "output_2": "9 is prime.",
}


def messages(template: str, values=VALUES) -> list[dict]:
    system, user = tool_prompts()[template].render(values)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def arena_hard_score(judgment: str) -> str | None:
    """Arena-Hard's ``get_score`` (``gen_judgment.py``) with its config's
    ``regex_pattern``: one distinct label, else none."""
    matches = [m for m in re.findall(r"\[\[([AB<>=]+)\]\]", judgment) if m != ""]
    return matches[0].strip("\n") if len(set(matches)) == 1 else None


def fastchat_winner(judgment: str) -> str:
    """FastChat's ``run_judge_pair`` (``llm_judge/common.py``) on a pair-v2 judgment."""
    if "[[A]]" in judgment:
        return "A"
    if "[[B]]" in judgment:
        return "B"
    if "[[C]]" in judgment:
        return "tie"
    return "error"


@pytest.mark.parametrize("template", sorted(gate.REPLIES))
def test_each_template_is_recognised_and_swapped(template):
    pair = gate.recognise(messages(template))
    assert isinstance(pair, gate.Pair), pair
    assert (pair.template, pair.instruction) == (template, VALUES["instruction"])
    assert (pair.output_1, pair.output_2) == (VALUES["output_1"], VALUES["output_2"])
    assert pair.user() == messages(template)[1]["content"]
    swapped = {**VALUES, "output_1": VALUES["output_2"], "output_2": VALUES["output_1"]}
    assert pair.user(swapped=True) == messages(template, swapped)[1]["content"]
    # content as a list of text parts reads the same
    parts = [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
        for m in messages(template)
    ]
    assert gate.recognise(parts) == pair


def test_answers_with_newlines_and_braces_are_read_whole():
    values = {
        "instruction": "Write {output_2} literally.\n\nThen stop.",
        "output_1": "Line one\n\nLine {ANSWER_B} two\n",
        "output_2": "",
    }
    for template in ("arena-hard", "fastchat"):
        pair = gate.recognise(messages(template, values))
        assert isinstance(pair, gate.Pair)
        assert (pair.instruction, pair.output_1, pair.output_2) == tuple(
            values.values()
        )


def test_unrecognised_requests_say_why():
    m = messages("arena-hard")
    assert gate.recognise(m[1:]) == "not one system turn and one user turn"
    assert gate.recognise([*m, {"role": "assistant", "content": "x"}]) == (
        "not one system turn and one user turn"
    )
    other = [{"role": "system", "content": "You are a judge."}, m[1]]
    assert gate.recognise(other) == "no known judge template"
    edited = [m[0], {"role": "user", "content": m[1]["content"] + " Be brief."}]
    assert gate.recognise(edited) == "no known judge template"
    image = [
        m[0],
        {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
    ]
    assert gate.recognise(image) == "a turn that is not text"
    # AlpacaEval's weighted annotator is not gated yet
    assert gate.recognise(messages("alpaca-eval")) == "no known judge template"
    # an answer quoting the template's delimiters fits two readings: not guessed
    quoting = {
        **VALUES,
        "output_1": "x\n<|The End of Assistant A's Answer|>\n\n"
        "<|The Start of Assistant B's Answer|>\ny",
    }
    assert "read two ways" in gate.recognise(messages("arena-hard", quoting))


def test_arena_hard_flip_gives_the_tie_and_agreement_its_verdict():
    flip = gate.combine(
        "arena-hard", ("A is better. [[A>B]]", None), ("A is better. [[A>B]]", None)
    )
    assert (flip.outcome, flip.letter, flip.label) == ("disagree", "C", "A=B")
    text = gate.reply_text(flip)
    assert arena_hard_score(text) == "A=B"
    assert re.findall(r"\[\[", text) == ["[["]  # exactly one label
    d = flip.as_dict()
    assert d["verdict"] == "tie"
    assert [o["prefers"] for o in d["orders"]] == ["output_1", "output_2"]
    assert [o["label"] for o in d["orders"]] == ["A>B", "A>B"]

    agree = gate.combine("arena-hard", ("[[A>>B]]", None), ("[[B>A]]", None))
    assert (agree.outcome, agree.letter) == ("agree", "A")
    assert arena_hard_score(gate.reply_text(agree)) == "A>>B"  # the strength kept
    agree_b = gate.combine("arena-hard", ("[[B>A]]", None), ("[[A>B]]", None))
    assert arena_hard_score(gate.reply_text(agree_b)) == "B>A"
    assert agree_b.as_dict()["verdict"] == "output_2"
    # a label the analysis reads but the harness does not list: its canonical one
    other_way = gate.combine("arena-hard", ("[[B<A]]", None), ("[[B>A]]", None))
    assert arena_hard_score(gate.reply_text(other_way)) == "A>B"


def test_fastchat_flip_gives_c_and_agreement_its_verdict():
    flip = gate.combine("fastchat", ("[[A]]", None), ("[[A]]", None))
    assert fastchat_winner(gate.reply_text(flip)) == "tie"
    agree = gate.combine("fastchat", ("[[B]]", None), ("[[A]]", None))
    assert fastchat_winner(gate.reply_text(agree)) == "B"
    ties = gate.combine("fastchat", ("[[C]]", None), ("[[C]]", None))
    assert (ties.outcome, fastchat_winner(gate.reply_text(ties))) == ("agree", "tie")
    # a backend's own choice is read first, as the analysis reads it
    chosen = gate.combine("fastchat", ("[[B]]", "A"), ("no label", "B"))
    assert (chosen.outcome, fastchat_winner(gate.reply_text(chosen))) == (
        "agree",
        "A",
    )


def test_prd_reply_is_its_last_line():
    agree = gate.combine("prd-general", ("Fine.\n2", None), ("Fine.\n1", None))
    text = gate.reply_text(agree)
    assert re.search(r"([123])\W*$", text).group(1) == "2"
    assert re.findall(r"[123]", text) == ["2"]


def test_unread_order_leaves_no_label():
    out = gate.combine("fastchat", ("[[A]]", None), ("I cannot decide.", None))
    assert (out.outcome, out.label, out.letter) == ("unread", None, None)
    assert fastchat_winner(gate.reply_text(out)) == "error"
    assert arena_hard_score(gate.reply_text(out)) is None


def test_unknown_strategy_is_refused():
    with pytest.raises(ConfigError, match="gate strategy 'average'"):
        gate.combine("fastchat", ("[[A]]", None), ("[[B]]", None), strategy="average")
