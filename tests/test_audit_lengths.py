"""A replay audit counts ``prompt_chars`` without building the prompts: the count equals the
length of the prompt the tool would send, for every shipped tool prompt and in both orders."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.audit_logs import write_judgebench
from voirdire.benchmarks.logs.judgebench import JudgeBench
from voirdire.benchmarks.logs.tool_prompts import TOOL_OF, tool_prompts
from voirdire.engine.prompts import PromptCache

#: values that a one-pass fill must not fill again, braces, non-ASCII, empty
TRICKY = ["", "plain answer", "{output_2}", "{instruction} and {output_1}", "{", "}{}",
          "héllo ✓ 𝔘", "{{output_1}}", "x" * 5000]  # fmt: skip


@pytest.mark.parametrize("name", sorted(tool_prompts()))
def test_user_chars_equals_the_rendered_length(name):
    tp = tool_prompts()[name]
    assert tp.fields, name
    for ins, a, b in itertools.product(TRICKY, repeat=3):
        values = {"instruction": ins, "output_1": a, "output_2": b}
        assert tp.user_chars(values) == len(tp.render(values)[1]), (name, ins, a, b)


def _bench(tmp_path, tricky: bool) -> JudgeBench:
    log = tmp_path / "judge_name=arena_hard,judge_model=gpt-4o.jsonl"
    write_judgebench(log, [("first", "second"), ("tie", "first")], ["A>B", "B>A"])
    if tricky:  # answers and a question that hold the prompt's own placeholders
        recs = [json.loads(line) for line in log.read_text().splitlines()]
        recs[0]["question"] = "{output_1} é"
        recs[0]["response_A"] = "{output_2}{instruction}"
        recs[1]["response_B"] = ""
        log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return JudgeBench([log], data_dir=tmp_path / "copy")


@pytest.mark.parametrize("tricky", [False, True])
def test_prompt_free_lengths_equal_the_built_prompts(tmp_path, tricky):
    bench = _bench(tmp_path, tricky)
    assert TOOL_OF[bench.name] == "arena-hard"
    cache = PromptCache(bench)
    inst = bench.fixed_instances()
    for q, a, b in inst.select("question_id", "candidate", "reference").iter_rows():
        for shown in ((a, b), (b, a)):
            prompt = bench.build_prompt(q, shown, 3)
            want = (len(prompt), bench.output_chars(q, shown))
            assert cache.lengths(q, shown, 3, "pairwise") == want
            assert cache.lengths(q, shown, 3, "pairwise") == want  # cached
            # a judge that sends the prompt gets the same text and count
            assert cache.get(q, shown, 3, "pairwise") == (prompt, want[1])


def test_prompt_free_lengths_check_the_request(tmp_path):
    bench = _bench(tmp_path, False)
    q = bench.fixed_instances()["question_id"][0]
    with pytest.raises(KeyError, match="unknown model"):
        PromptCache(bench).lengths(q, ("nobody", "else"), 3, "pairwise")
