"""The judge prompts of the tools whose logs voirdire reads, for a live judge that completes
a log (``docs/audit.md``, "Completing a log"): the missing order is asked with the prompt
of the tool that made the log, and its answer read by that tool's verdict rule.

The prompts are shipped in ``benchmarks/templates/log_tools.json`` (one entry per prompt:
``source`` (repository, commit and file), ``licence``, ``system`` and ``user`` turns as the
tool writes them, ``fields`` (the tool's placeholder -> voirdire's pair field:
``instruction``, ``output_1`` the answer shown first, ``output_2`` the second),
``verdict_pattern`` (regex, group 1 the tool's label) and ``verdict_labels`` (label ->
position letter A / B / C = tie)); their attribution and licences are in
``benchmarks/templates/NOTICE.txt``. A placeholder is filled in one pass (an answer that
contains ``{output_2}`` is not filled again), as the tools' ``str.format`` does.

Which prompt a format uses: its class's ``tool`` attribute, else :data:`TOOL_OF` by the
format's name; PRD picks its prompt by the question's category (``prd-<task>``, else
``prd-general``), as ``peer_rank/eval_gpt_review.py``'s ``gen_prompt`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["TOOL_OF", "ToolPrompt", "tool_prompt", "tool_prompts", "tool_weights"]

#: the shipped prompts
PROMPTS_FILE = Path(__file__).resolve().parent.parent / "templates" / "log_tools.json"

#: format name -> the key of its tool's prompt in :data:`PROMPTS_FILE`. JudgeBench's
#: ``arena_hard`` judge asks Arena-Hard's prompt (``utils/judges.py``, ``ArenaHard``;
#: JudgeBench carries no licence file, so its own copy is not shipped); a plain table
#: takes FastChat's pair-v2.
TOOL_OF = {
    "ArenaHard": "arena-hard",
    "JudgeBench": "arena-hard",
    "AlpacaEval": "alpaca-eval",
    "FastChat": "fastchat",
    "PRD": "prd-general",
    "LogTable": "fastchat",
}


@dataclass(frozen=True)
class ToolPrompt:
    """One tool's judge prompt (see the module docstring for the fields).

    Attributes:
        name: its key in :data:`PROMPTS_FILE` (``"arena-hard"``).
        source: repository, commit and file it was copied from.
        system: the system turn (``""``: none).
        user: the user turn, with the tool's placeholders.
        fields: the tool's placeholder -> ``instruction`` / ``output_1`` / ``output_2``.
        verdict_pattern: regex whose group 1 is the tool's verdict label.
        verdict_labels: label -> position letter (``A`` first shown, ``B``, ``C`` a tie).
    """

    name: str
    source: str
    system: str
    user: str
    fields: Mapping[str, str]
    verdict_pattern: str
    verdict_labels: Mapping[str, str]

    def render(self, values: Mapping[str, str]) -> tuple[str | None, str]:
        """``(system, user)`` with the placeholders filled from ``values`` (keys
        ``instruction``, ``output_1``, ``output_2``), one pass; system ``None`` when the
        tool sends none.

        Raises:
            KeyError: ``values`` lacks a field the prompt reads.
        """
        rx = _placeholders(tuple(self.fields))

        def fill(text: str) -> str:
            return rx.sub(lambda m: values[self.fields[m.group(1)]], text)

        return (fill(self.system) or None), fill(self.user)

    def user_chars(self, values: Mapping[str, str]) -> int:
        """``len(self.render(values)[1])`` without filling the user turn: its characters
        outside the placeholders plus, per placeholder found by the same one-pass rule, the
        length of its value (the count of a replay judge's ``prompt_chars``).

        Raises:
            KeyError: ``values`` lacks a field the user turn reads.
        """
        fixed, counts = _shape(self.user, tuple(self.fields))
        return fixed + sum(n * len(values[self.fields[k]]) for k, n in counts)

    def user_weights(self) -> tuple[int, int, int, int]:
        """``(fixed, instruction, output_1, output_2)``: the user turn's characters outside
        the placeholders and how many times each value is inserted, so that
        :meth:`user_chars` is ``fixed + instruction * len(values["instruction"]) + ...``
        (the count per query of a log audit, without a dict of values)."""
        fixed, counts = _shape(self.user, tuple(self.fields))
        n = dict.fromkeys(("instruction", "output_1", "output_2"), 0)
        for k, times in counts:
            n[self.fields[k]] += times
        return fixed, n["instruction"], n["output_1"], n["output_2"]


@cache
def _placeholders(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")


@cache
def _shape(
    text: str, names: tuple[str, ...]
) -> tuple[int, tuple[tuple[str, int], ...]]:
    """``text``'s characters outside the placeholders of ``names`` and each placeholder's
    number of occurrences (the matches :meth:`ToolPrompt.render` fills)."""
    found = [m.group(1) for m in _placeholders(names).finditer(text)]
    fixed = len(text) - sum(len(k) + 2 for k in found)
    return fixed, tuple((k, found.count(k)) for k in dict.fromkeys(found))


@cache
def tool_prompts() -> dict[str, ToolPrompt]:
    """Every shipped prompt by key (read once from :data:`PROMPTS_FILE`)."""
    data = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))
    return {
        k: ToolPrompt(
            name=k,
            source=v["source"],
            system=v.get("system", ""),
            user=v["user"],
            fields=dict(v["fields"]),
            verdict_pattern=v["verdict_pattern"],
            verdict_labels=dict(v["verdict_labels"]),
        )
        for k, v in data.items()
    }


def tool_prompt(
    fmt: str, task: str | None = None, tool: str | None = None
) -> ToolPrompt:
    """The prompt a format's tool asks (``tool``: the format class's own choice, else
    :data:`TOOL_OF`; FastChat's pair-v2 for a format not listed); a PRD question of
    category ``task`` gets PRD's prompt for it where there is one.

    Raises:
        KeyError: ``tool`` names no shipped prompt.
    """
    prompts = tool_prompts()
    key = tool or TOOL_OF.get(fmt, "fastchat")
    if key.startswith("prd-") and task and f"prd-{task}" in prompts:
        key = f"prd-{task}"
    return prompts[key]


@cache
def tool_weights(
    fmt: str, task: str | None = None, tool: str | None = None
) -> tuple[int, int, int, int]:
    """:meth:`ToolPrompt.user_weights` of :func:`tool_prompt` ``(fmt, task, tool)``, kept
    (asked once per query of a log audit).

    Raises:
        KeyError: ``tool`` names no shipped prompt.
    """
    return tool_prompt(fmt, task, tool).user_weights()
