"""LLMBar's comparison prompts for live judges, and how LLMEvaluator reads a verdict
(:mod:`voirdire.benchmarks.llmbar`).

The release's single-stage comparison prompts ship as package data (``templates/llmbar/``,
MIT, see ``templates/NOTICE.txt``), one ChatML file each (:data:`PROMPTS`): read as a
system and a user turn (:func:`load_prompt`), or as a pair template of
:mod:`voirdire.benchmarks.own_pairs.prompts` (:func:`pair_template`). A verdict is read as
LLMEvaluator read it (:func:`read_verdict`): the first of a strategy's two rules
(:func:`verdict_rules`: :data:`LINE_RULES` or :data:`COT_RULES`) found anywhere in the
completion decides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from voirdire.benchmarks.data import TEMPLATE_DIR
from voirdire.core import ConfigError

#: Comparison prompts a live judge can be asked with (one stage, no auxiliary generation).
PROMPTS = ("Vanilla", "Vanilla_NoRules", "Vanilla_1shot", "Vanilla_2shot", "CoT")
PROMPT_DIR = TEMPLATE_DIR / "llmbar"

#: LLMEvaluator's verdict rules, as (position letter, regex) tried in order: the answer on a
#: line of its own (``Output (a)``), or the sentence a chain-of-thought prompt ends with.
LINE_RULES = (("A", r"(?:^|\n) ?Output \(a\)"), ("B", r"(?:^|\n) ?Output \(b\)"))
COT_RULES = (("A", r"Output \(a\) is better."), ("B", r"Output \(b\) is better."))


def verdict_rules(
    evaluator: str, strategy: str, stage: int = 0
) -> tuple[tuple[str, str], ...]:
    """The rules LLMEvaluator's config parsed a strategy's verdict with: ``Output (x) is
    better.`` for the CoT prompt (every evaluator but PaLM2, whose CoT config reads the line
    rule), for Swap's first round (stage 0) and for both rounds of Swap_CoT; the line rule
    otherwise (Vanilla*, Metrics, Reference, Metrics_Reference, Swap's synthesis round)."""
    if (
        strategy == "Swap_CoT"
        or (strategy == "Swap" and stage == 0)
        or (strategy == "CoT" and evaluator != "PaLM2")
    ):
        return COT_RULES
    return LINE_RULES


def read_verdict(text: str | None, rules: Sequence[tuple[str, str]]) -> str | None:
    """The position letter of a completion: the letter of the first rule whose regex occurs
    anywhere in it (``re.search``, LLMEvaluator's ``completion_with_parsing``), else None."""
    if text is None:
        return None
    text = text.strip()
    for letter, rx in rules:
        if re.search(rx, text):
            return letter
    return None


def chat_messages(chatml: str) -> list[dict[str, str]]:
    """ChatML text (``<|im_start|>role\\n...<|im_end|>``) as chat messages
    ``[{"role", "content"}]``, contents stripped, as LLMEvaluator's ``prompt_to_chatml`` reads
    the release's prompt files.

    Raises:
        ConfigError: the text does not start with ``<|im_start|>`` or end with ``<|im_end|>``.
    """
    text = chatml.strip()
    if not (text.startswith("<|im_start|>") and text.endswith("<|im_end|>")):
        raise ConfigError(
            "an LLMBar prompt must be ChatML text from <|im_start|> to <|im_end|>"
        )
    out = []
    for part in text.split("<|im_start|>")[1:]:
        role, _, rest = part.partition("\n")
        out.append(
            {
                "role": role.strip().split(" ")[0],
                "content": rest.split("<|im_end|>", 1)[0].strip(),
            }
        )
    return out


@functools.lru_cache(maxsize=32)
def load_prompt(name: str) -> tuple[str, str]:
    """``(system, user template)`` of a comparison prompt of :data:`PROMPTS` (the user turn
    has the fields ``{input}``, ``{output_1}``, ``{output_2}``).

    Raises:
        ConfigError: unknown prompt, or a file that is not system + user ChatML.
    """
    if name not in PROMPTS:
        raise ConfigError(
            f"LLMBar: unknown prompt {name!r} for live judges; known: {', '.join(PROMPTS)}"
        )
    path = PROMPT_DIR / "comparison" / f"{name}.txt"
    try:
        msgs = chat_messages(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"LLMBar prompt missing from the package: {path} ({exc})"
        ) from None
    if [m["role"] for m in msgs] != ["system", "user"]:
        raise ConfigError(
            f"{path}: expected a system and a user turn, got {[m['role'] for m in msgs]}"
        )
    return msgs[0]["content"], msgs[1]["content"]


def pair_template(prompt: str = "Vanilla") -> str:
    """A comparison prompt (:func:`load_prompt`) as a pair template of
    :mod:`voirdire.benchmarks.own_pairs.prompts` (the built-in template ``llmbar``): its system turn and
    its user turn, ``{input}``, ``{output_1}``, ``{output_2}`` written as the pair fields and
    the text kept verbatim (``{% raw %}``)."""
    import string

    system, user = load_prompt(prompt)
    names = {"input": "instruction", "output_1": "output_1", "output_2": "output_2"}
    parts = []
    for literal, field, _, _ in string.Formatter().parse(user):
        if literal:
            parts.append("{% raw %}" + literal + "{% endraw %}")
        if field:
            parts.append("{{ " + names[field] + " }}")
    return (
        "{% block system %}{% raw %}"
        + system
        + "{% endraw %}{% endblock %}{% block user %}"
        + "".join(parts)
        + "{% endblock %}"
    )


__all__ = [
    "COT_RULES",
    "LINE_RULES",
    "PROMPTS",
    "PROMPT_DIR",
    "chat_messages",
    "load_prompt",
    "pair_template",
    "read_verdict",
    "verdict_rules",
]
