"""Score mode's prompt material (Wang et al. 2023, "Large Language Models are not Fair
Evaluators", Section 3): the templates, the regexes that read each slot's score and the
valid score range of a benchmark."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from voirdire.benchmarks.data import package_templates
from voirdire.core import ConfigError

#: Score-mode prompt styles (``templates/score.json``): explanation first, or scores first.
SCORE_STYLES = ("evidence_first", "scores_first")
#: Score mode offers three outcomes (A higher, B higher, equal = tie ``C``).
SCORE_OPTION_MODE = 3


@functools.lru_cache(maxsize=1)
def load_score_templates() -> dict:
    """voirdire's score-mode templates (package data ``templates/score.json``).

    Keys: ``labels`` (benchmark name -> the two slot labels), ``score_line``
    (``"Score of {label}: "``), ``styles`` (``evidence_first`` / ``scores_first`` ->
    ``head``, ``tail``). Method: Wang et al. (2023), "Large Language Models are not Fair
    Evaluators", Section 3 (scores 1-10, evidence first); the wording is ours.

    Raises:
        ConfigError: the package data is missing (a broken install).
    """
    return package_templates("score.json")


def score_patterns(benchmark: str) -> tuple[str, str]:
    """Regexes whose group 1 is the score of slot A and of slot B in a score-mode output
    (the last such line wins where a judge repeats it: see :func:`voirdire.judges.extract`).

    Raises:
        ConfigError: a benchmark without score labels.
    """
    t = load_score_templates()
    labels = t["labels"].get(benchmark)
    if labels is None:
        raise ConfigError(f"{benchmark}: no score-mode labels in templates/score.json")
    out = []
    for lab in labels:
        line = t["score_line"].format(label=lab).strip()
        if not re.fullmatch(r"[A-Za-z0-9 :()]+", line):
            raise ConfigError(
                f"{benchmark}: score line {line!r} must be letters, digits, spaces, '(', ')' and ':'"
            )
        out.append(
            line.replace("(", r"\(").replace(")", r"\)") + r"\s*\**\s*(\d+(?:\.\d+)?)"
        )
    return out[0], out[1]


def score_range(benchmark: str) -> tuple[int, int]:
    """The lowest and highest valid score of a benchmark's score-mode outputs
    (``templates/score.json`` ``ranges``; default 1 to 10; a benchmark may rate 0 to 9)."""
    lo, hi = load_score_templates().get("ranges", {}).get(benchmark, (1, 10))
    return int(lo), int(hi)


def score_prompt(benchmark: str, material: str, style: str = "evidence_first") -> str:
    """A score-mode prompt of ``benchmark``: the style's head, ``material`` (the question(s)
    and both answers under their slot labels) and the style's tail, joined by blank lines,
    with the benchmark's slot labels filled in (``templates/score.json``).

    Raises:
        KeyError: unknown style.
        ValueError: a benchmark without score labels.
    """
    t = load_score_templates()
    labels = t["labels"].get(benchmark)
    if labels is None:
        raise ValueError(f"{benchmark}: score mode is not offered")
    fields = {"label_1": labels[0], "label_2": labels[1]}
    st = t["styles"][style]
    return "\n\n".join(
        (st["head"].format(**fields), material, st["tail"].format(**fields))
    )


class ScoreMode:
    """A benchmark's score mode (Wang et al. 2023, Section 3), mixed into
    :class:`~voirdire.benchmarks.base.Benchmark`: the prompt's material
    (:meth:`score_material`, overridden by a benchmark that offers score mode) and the
    whole prompt (:meth:`build_score_prompt`, checked by the host's ``check_request``)."""

    name: str

    def score_material(self, question_id: str, shown: Sequence[str]) -> str:
        """The question(s), both answers under their slot labels and, where the benchmark
        shows one, the reference answer: the body of a score-mode prompt, without
        instructions. Subclasses that offer score mode override it.

        Raises:
            ValueError: the benchmark offers no score mode.
        """
        raise ValueError(f"{self.name}: score mode is not offered")

    def build_score_prompt(
        self, question_id: str, shown: Sequence[str], style: str = "evidence_first"
    ) -> str:
        """A score-mode prompt (Wang et al. 2023, Section 3): the judge scores ``shown[0]``
        (slot A) and ``shown[1]`` (slot B) from 1 to 10, explanation first
        (``evidence_first``) or scores first (``scores_first``); instructions from
        ``templates/score.json``, material from :meth:`score_material`.

        Raises:
            ValueError: unknown style, not two models, a model shown twice, or a benchmark
                without score mode.
            KeyError: unknown question or model.
        """
        if style not in SCORE_STYLES:
            raise ValueError(
                f"{self.name}: unknown score style {style!r} (known: {', '.join(SCORE_STYLES)})"
            )
        self.check_request(question_id, shown, SCORE_OPTION_MODE, "score")
        return score_prompt(self.name, self.score_material(question_id, shown), style)
