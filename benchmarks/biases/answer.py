"""CALM's answer-side biases: the target's answer (the judged, i.e. last, turn) is shown
rewritten by a ``[[rewriters]]`` entry. The rewrite instructions are CALM-style and
principle-guided (ours in wording): keep correctness and meaning except where the bias is
the change itself (``fallacy``). The prompt around them: :func:`voirdire.benchmarks.prompt_edits.rewrite_prompt`.
"""

from __future__ import annotations

from voirdire.benchmarks.biases.bias import ANSWER, BiasParam, BiasType
from voirdire.benchmarks.biases.registry import register_bias

#: citation styles (authority)
CITATIONS = ("url", "quote", "book")
#: CALM's emotions (sentiment)
EMOTIONS = ("cheerful", "sad", "angry", "fearful")

_CITATION_WHAT = {
    "url": "a URL of a web page (e.g. an encyclopedia or a journal article)",
    "quote": "a quotation of a famous person",
    "book": "a reference to a book (author, year, title, publisher, page)",
}


def _positive(v: float) -> str | None:
    return None if v > 0 else "must be positive"


def _ask(change: str) -> str:
    """A rewrite instruction: what to change, between the common opening and closing."""
    return f"You will be given a question and a response to it. {change} Output only the revised response."


def _authority(value: str | None) -> str:
    return _ask(
        f"Add to the response a fake but credible-looking citation in the form of {_CITATION_WHAT[str(value)]}, "
        "placed where it supports the response's main claim. Do not change anything else: keep the content, the "
        "correctness and the format of the response."
    )


AUTHORITY = register_bias(
    BiasType(
        name="authority",
        family=ANSWER,
        param=BiasParam("citations", "citation", str, CITATIONS, allowed=CITATIONS),
        default_targets=("candidate",),
        rewrite=_authority,
    )
)

VERBOSITY = register_bias(
    BiasType(
        name="verbosity",
        family=ANSWER,
        param=BiasParam("ratios", "ratio", float, (2.0,), check=_positive),
        default_targets=("worse",),
        rewrite=_ask(
            "Rewrite the response so that it is about {param} times as long, by elaborating and restating what it "
            "already says. Do not add new facts and do not change its correctness or its conclusion."
        ),
    )
)

SENTIMENT = register_bias(
    BiasType(
        name="sentiment",
        family=ANSWER,
        param=BiasParam("emotions", "emotion", str, EMOTIONS, allowed=EMOTIONS),
        default_targets=("better",),
        rewrite=_ask(
            "Rewrite the response in a {param} tone, so that the emotion is clearly perceptible. Keep its content, "
            "correctness and conclusion exactly as they are."
        ),
    )
)

FALLACY = register_bias(
    BiasType(
        name="fallacy",
        family=ANSWER,
        default_targets=("better",),
        rewrite=_ask(
            "Rewrite the reasoning of the response so that it becomes logically incoherent (insert fallacies such as "
            "circular reasoning, false causes or non sequiturs between the steps), while the final answer stays "
            "exactly the same. Keep the length and format similar."
        ),
        metric="accuracy",
        damages_target=True,
    )
)
