"""The gate: a harness's pairwise judge request recognised, its swapped twin built, the two
orders' verdicts read by the tool's own rule and combined into one reply in the harness's
format (``docs/serve.md``). Pure code: no Ray, no HTTP, no judge.

**Recognised.** A request whose messages are one system turn and one user turn, the system
turn the template's own and the user turn the template's with its placeholders filled
(:mod:`voirdire.benchmarks.logs.tool_prompts`, ``benchmarks/templates/log_tools.json``), for
each template of :data:`REPLIES`: Arena-Hard's (JudgeBench asks it too), FastChat's pair-v2
and PRD's three. The values are read back so that filling the template again gives the turn
byte for byte; a turn two readings fit (an answer that quotes the template's delimiters) is
not recognised. AlpacaEval's weighted annotator (one token, log-probabilities) is not gated
yet. Anything else is passed through unchanged (:func:`recognise` returns the reason).

**Read and combined.** Each order's reply is read as the analysis reads a verdict
(:func:`voirdire.judges.extract.extract_verdicts` with the template's ``verdict_pattern`` and
``verdict_labels``; a backend's own ``choice`` first): a position letter ``A``, ``B`` or
``C`` (tie). The swapped order's letter is turned back into the request's slots. Both
orders preferring the same answer (or both a tie): that verdict (``agree``). Otherwise the
strategy's answer; ``tie``, the practitioners' rule, is the one built (``disagree``). An
order whose reply holds no verdict leaves the exchange without one (``unread``): the reply
then carries no label, and the harness does what it does with an unreadable judgment.

**Replied.** The content carries exactly one label, the harness's: Arena-Hard ``[[A>B]]``,
``[[B>A]]``, ``[[A=B]]`` (an agreed verdict keeps the strength the judge gave in the order
the harness sent, ``[[A>>B]]``); FastChat ``[[A]]``, ``[[B]]``, ``[[C]]``; PRD a last line
``1``, ``2`` or ``3``. Per-order verdicts and the outcome are in :meth:`Outcome.as_dict`,
which the server puts beside the message, never in it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from voirdire.benchmarks.logs.tool_prompts import ToolPrompt, tool_prompts
from voirdire.core import ConfigError

__all__ = [
    "REPLIES",
    "STRATEGIES",
    "Outcome",
    "Pair",
    "ReplyFormat",
    "combine",
    "read_letter",
    "read_letters",
    "recognise",
    "reply_text",
]


@dataclass(frozen=True)
class ReplyFormat:
    """How a template's harness reads a verdict back.

    Attributes:
        labels: position letter (``A`` the answer shown first, ``B``, ``C`` a tie) -> the
            label written.
        keep: labels the judge may have given that are written as read when the two orders
            agree (Arena-Hard's ``A>>B``: the strength kept).
        line: the line holding the label (``{label}`` filled).
    """

    labels: Mapping[str, str]
    keep: frozenset[str]
    line: str


_ARENA = ReplyFormat(
    {"A": "A>B", "B": "B>A", "C": "A=B"},
    frozenset({"A>>B", "A>B", "A=B", "B>A", "B>>A"}),
    "My final verdict is: [[{label}]]",
)
_FASTCHAT = ReplyFormat(
    {"A": "A", "B": "B", "C": "C"}, frozenset(), "My final verdict is: [[{label}]]"
)
_PRD = ReplyFormat({"A": "1", "B": "2", "C": "3"}, frozenset(), "{label}")

#: template key (``log_tools.json``) -> its reply format: the templates the gate recognises
REPLIES: dict[str, ReplyFormat] = {
    "arena-hard": _ARENA,
    "fastchat": _FASTCHAT,
    "prd-general": _PRD,
    "prd-coding": _PRD,
    "prd-math": _PRD,
}

#: what a disagreement gives: ``tie`` (the one built)
STRATEGIES = ("tie",)

#: the swapped order's letter in the request's slots
_BACK = {"A": "B", "B": "A", "C": "C"}


@dataclass(frozen=True)
class Pair:
    """A recognised request: the template and the values read from its user turn.

    ``output_1`` is the answer the request shows first (slot ``A``), ``output_2`` second.
    """

    template: str
    system: str | None = field(repr=False)
    instruction: str
    output_1: str
    output_2: str

    @property
    def prompt(self) -> ToolPrompt:
        """The template's :class:`~voirdire.benchmarks.logs.tool_prompts.ToolPrompt`."""
        return tool_prompts()[self.template]

    def user(self, swapped: bool = False) -> str:
        """The user turn in the request's order (``swapped``: its twin, the two answers
        exchanged), filled as the tool fills it."""
        first, second = (
            (self.output_2, self.output_1)
            if swapped
            else (self.output_1, self.output_2)
        )
        return self.prompt.render(
            {"instruction": self.instruction, "output_1": first, "output_2": second}
        )[1]


@cache
def _user_rx(template: str, lazy: bool) -> re.Pattern[str]:
    """The template's user turn as a regex, each placeholder a named group (first use:
    the group, later uses: a backreference)."""
    tp = tool_prompts()[template]
    names = "|".join(map(re.escape, tp.fields))
    parts, seen, at = [], set(), 0
    for m in re.finditer(r"\{(" + names + r")\}", tp.user):
        parts.append(re.escape(tp.user[at : m.start()]))
        key = tp.fields[m.group(1)]
        parts.append(
            f"(?P={key})" if key in seen else f"(?P<{key}>.*{'?' if lazy else ''})"
        )
        seen.add(key)
        at = m.end()
    parts.append(re.escape(tp.user[at:]))
    return re.compile("".join(parts), re.DOTALL)


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or a list of text parts joined; ``None``
    for any other part (an image)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict)
        and p.get("type") == "text"
        and isinstance(p.get("text"), str)
        for p in content
    ):
        return "".join(p["text"] for p in content)
    return None


def recognise(messages: Sequence[Mapping[str, Any]]) -> Pair | str:
    """The request's :class:`Pair` when it is a template of :data:`REPLIES`, else the
    reason it is not (a short sentence, recorded with the passed-through exchange).

    Args:
        messages: the request's ``messages`` (dicts with ``role`` and ``content``).
    """
    roles = [m.get("role") for m in messages]
    if roles != ["system", "user"]:
        return "not one system turn and one user turn"
    system, user = (_text(m.get("content")) for m in messages)
    if system is None or user is None:
        return "a turn that is not text"
    for key in REPLIES:
        tp = tool_prompts()[key]
        if system.strip() != tp.system.strip():
            continue
        found = [_user_rx(key, lazy).fullmatch(user) for lazy in (False, True)]
        if found[0] is None or found[1] is None:
            continue
        values = [m.groupdict() for m in found]
        if values[0] != values[1]:
            return (
                f"the {key} template, read two ways (an answer quotes its delimiters)"
            )
        v = values[0]
        pair = Pair(key, system, v["instruction"], v["output_1"], v["output_2"])
        if pair.user() != user:  # not expected: the regex is the template
            return f"the {key} template, not filled back byte for byte"
        return pair
    return "no known judge template"


def read_letters(
    template: str, replies: Sequence[tuple[str | None, str | None]]
) -> list[str | None]:
    """Each reply's verdict as the analysis reads it, in one pass: the backend's
    ``choice`` if set, else the template's pattern and labels on the output
    (:func:`voirdire.judges.extract.extract_verdicts`). Each is ``A``, ``B``, ``C`` or
    ``None`` (no verdict; a label outside the template's is none either).

    Args:
        template: the template key.
        replies: ``(output, choice)`` per reply.
    """
    import polars as pl

    from voirdire.judges.extract import extract_verdicts

    tp = tool_prompts()[template]
    n = len(replies)
    raw = pl.DataFrame(
        {
            "benchmark": [template] * n,
            "shown": [["1", "2"]] * n,
            "option_mode": [3] * n,
            "output": [r[0] for r in replies],
            "choice": [r[1] for r in replies],
        },
        schema={
            "benchmark": pl.String,
            "shown": pl.List(pl.String),
            "option_mode": pl.Int64,
            "output": pl.String,
            "choice": pl.String,
        },
    )
    got = extract_verdicts(
        raw, {template: tp.verdict_pattern}, {template: dict(tp.verdict_labels)}
    )["extracted"].to_list()
    return [x if x in ("A", "B", "C") else None for x in got]


def read_letter(
    template: str, output: str | None, choice: str | None = None
) -> str | None:
    """One reply's verdict (:func:`read_letters` of one)."""
    return read_letters(template, [(output, choice)])[0]


def read_label(template: str, output: str | None) -> str | None:
    """The label the template's pattern reads in ``output`` as written (``A>>B``), or
    ``None``."""
    if output is None:
        return None
    m = re.search(tool_prompts()[template].verdict_pattern, output)
    return m.group(1).strip() if m else None


#: an answer's name in the outcome: slot letter in the request's order -> which answer
_PREFERS = {"A": "output_1", "B": "output_2", "C": "tie"}


@dataclass(frozen=True)
class Outcome:
    """The gate's reading of one exchange.

    Attributes:
        template: the template key.
        outcome: ``agree``, ``disagree`` (the strategy answered) or ``unread``.
        strategy: what a disagreement gives (``tie``).
        letter: the verdict in the request's slots (``A``, ``B``, ``C``), ``None`` when
            ``unread``.
        label: the label written back (``None`` when ``unread``).
        orders: per order (the request's, then its twin): ``shown`` (``output_1`` first or
            ``output_2`` first), ``letter`` (as that order's reply reads), ``prefers``
            (``output_1``, ``output_2``, ``tie`` or ``None``) and ``label`` as read.
    """

    template: str
    outcome: str
    strategy: str
    letter: str | None
    label: str | None
    orders: tuple[dict[str, Any], dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data (the response's ``voirdire`` field)."""
        return {
            "gated": True,
            "template": self.template,
            "outcome": self.outcome,
            "strategy": self.strategy,
            "verdict": _PREFERS.get(self.letter or ""),
            "label": self.label,
            "orders": [dict(o) for o in self.orders],
        }


def combine(
    template: str,
    first: tuple[str | None, str | None],
    second: tuple[str | None, str | None],
    strategy: str = "tie",
) -> Outcome:
    """The two orders' verdicts combined.

    Args:
        template: the template key (:data:`REPLIES`).
        first: ``(output, choice)`` of the request's order.
        second: ``(output, choice)`` of the swapped twin.
        strategy: what a disagreement gives (:data:`STRATEGIES`).

    Raises:
        ConfigError: an unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ConfigError(
            f"gate strategy {strategy!r}: known {', '.join(STRATEGIES)} (swap-tie, gate and "
            "probability averaging are not built yet)"
        )
    fmt = REPLIES[template]
    a, b_raw = read_letters(template, [first, second])
    b = _BACK[b_raw] if b_raw else None
    orders = (
        {
            "shown": "output_1 first",
            "letter": a,
            "prefers": _PREFERS.get(a or ""),
            "label": read_label(template, first[0]),
        },
        {
            "shown": "output_2 first",
            "letter": b_raw,
            "prefers": _PREFERS.get(b or ""),
            "label": read_label(template, second[0]),
        },
    )
    if a is None or b is None:
        return Outcome(template, "unread", strategy, None, None, orders)
    if a == b:
        as_read = orders[0]["label"]
        keep = (
            as_read in fmt.keep
            and tool_prompts()[template].verdict_labels.get(as_read) == a
        )
        return Outcome(
            template, "agree", strategy, a, as_read if keep else fmt.labels[a], orders
        )
    return Outcome(template, "disagree", strategy, "C", fmt.labels["C"], orders)


_SAYS = {
    "agree": "Both orders of the two answers give this verdict.",
    "disagree": "The two orders of the answers disagree: a tie.",
    "unread": "No verdict could be read in one of the two orders of the answers.",
}


def reply_text(outcome: Outcome) -> str:
    """The reply's content: one sentence and, unless ``unread``, the one label in the
    harness's format (its last line)."""
    says = _SAYS[outcome.outcome]
    if outcome.label is None:
        return says
    return says + "\n" + REPLIES[outcome.template].line.format(label=outcome.label)
