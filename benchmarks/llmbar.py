"""LLMBar (Zeng et al., ICLR 2024): pairs of outputs with a gold label, and the release's prompts.

Data: the converted release (:mod:`voirdire.benchmarks.releases.llmbar`, ``pairs.parquet``),
found by :func:`voirdire.benchmarks.releases.catalogue.locate` (a job's ``data_dir``,
``$VOIRDIRE_LLMBAR_DATA``, what ``voirdire data fetch llmbar`` wrote, or a local copy of the
release beside the checkout, converted once).

Instances: one per item of the chosen ``subsets`` (the release's folders under ``Dataset/``;
default :data:`DEFAULT_SUBSETS`, the 419 pairs of LLMBar proper). ``question_id`` is
``"<subset>/<item>"`` (the 0-based index in its ``dataset.json``), ``task`` the subset.
The two candidates are named after the dataset's fields: ``output_1`` is the candidate and
``output_2`` the reference of the pairwise design, so permutation 0 shows them as the
dataset lists them (the release's ``swap = False``) and permutation 1 swapped
(``swap = True``). ``gold`` is the output the item's ``label`` names (1 -> ``output_1``,
2 -> ``output_2``).

Prompts for live judges: the release's single-stage comparison prompts (package data
``templates/llmbar/``, MIT, see ``templates/NOTICE.txt``), chosen by ``[benchmark] prompt``
(:data:`PROMPTS`; default ``Vanilla``). Each is ChatML text, read as a system turn
(:meth:`LLMBar.system_prompt`) and a user turn (:meth:`LLMBar.build_prompt`); both together
by :meth:`LLMBar.messages`. Multi-stage strategies (Metrics, Reference, Swap, Rating) are
replayed from the release, not asked live. The verdict is read as LLMEvaluator read it
(:func:`read_verdict`): the first of the strategy's two rules, ``Output (a)`` then
``Output (b)``, found anywhere in the completion decides.

Replay (:mod:`voirdire.judges.replay`, through this class's hooks): the release ships the
outputs of six evaluators under up to fifteen prompting strategies (``outputs.parquet``);
a recorded judge is named ``"<evaluator>/<strategy>"`` (``"GPT-4/Vanilla"``). Permutation 0
replays ``swap = False`` (the outputs as the dataset lists them), permutation 1
``swap = True``. A comparison strategy's completion is the output, its verdict letter read
here by the rule LLMEvaluator's config used for that strategy (:func:`verdict_rules`), so the
benchmark's own pattern is not applied again (a completion in which the release read no
verdict has ``choice = ""``, a failed judgment). A rating strategy (``Rating*``: each output
scored alone, 0-9) has two readings (:data:`RATING_TIES`), named by the recorded name:

- ``"GPT-4/Rating"``, the default, ``rating_ties = "release"``: the verdict the release
  itself recorded, by LLMEvaluator's rule (:func:`release_rating_winner`: the higher rating
  wins; equal ratings go to the output shown second, unreadable ones to the output shown
  first). A pairwise judge whose letter is given (``choice``), its output the two ratings
  as text; with it voirdire's own accuracy counts (per order, both orders) equal the
  published ``statistics.json`` in all 499 cells.
- ``"GPT-4/Rating@tie"``, ``rating_ties = "tie"``: voirdire's reading, a score-mode judge:
  the two ratings are replayed as one output, ``Score of Output (a): <rating>`` and
  ``Score of Output (b): <rating>`` in slot order, read by the score-mode extraction into
  ``slot_scores`` (0-9): equal ratings are a tie (consistent, correct against no gold
  label), unreadable or off-scale ones a failed judgment. Its PC is 1 by construction.

The release's own statistics (``statistics.json``) count a pair as
:meth:`LLMBar.release_readings` reads it.

Modules: the prompts and verdict rules are :mod:`voirdire.benchmarks.llmbar_prompts`
(:data:`PROMPTS`, :func:`load_prompt`, :func:`verdict_rules`, :func:`read_verdict`), the
recorded names and the release's rating rule are here (:data:`RATING_TIES`,
:func:`split_recorded`, :func:`release_rating_winner`) with the benchmark and its replay
hooks that read them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.llmbar_prompts import (
    COT_RULES,
    LINE_RULES,
    load_prompt,
    pair_template,
    read_verdict,
    verdict_rules,
)
from voirdire.benchmarks.recorded import Recorded, RecordKey, record_key
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.benchmarks.releases.llmbar import LLMBAR
from voirdire.core import ConfigError

#: The readings of a replayed rating strategy's equal ratings: the release's (the output
#: shown second wins; the default, recorded name ``"GPT-4/Rating"``) and voirdire's (a tie;
#: recorded name ``"GPT-4/Rating@tie"``).
RATING_TIES = ("release", "tie")
TIE_SUFFIX = "@tie"


def split_recorded(recorded: str) -> tuple[str, str, str]:
    """``(evaluator, strategy, rating_ties)`` of a recorded name: ``"GPT-4/Rating"`` ->
    ``("GPT-4", "Rating", "release")``, ``"GPT-4/Rating@tie"`` -> ``(..., "tie")``; a
    comparison strategy's reading is ``"release"``.

    Raises:
        ConfigError: a suffix other than ``@tie``, or ``@tie`` on a strategy that rates no
            outputs (only ``Rating*`` strategies have ties to read).
    """
    name, at, reading = recorded.partition("@")
    evaluator, _, strategy = name.partition("/")
    if at and (reading != "tie" or not strategy.startswith("Rating")):
        raise ConfigError(
            f"recorded LLMBar judge {recorded!r}: only a rating strategy takes a reading, "
            f"and only {TIE_SUFFIX!r} (equal ratings as a tie; without it, the release's reading)"
        )
    return evaluator, strategy, "tie" if at else "release"


def release_rating_winner(score_1: str | None, score_2: str | None, swap: bool) -> str:
    """The winner (``"1"``/``"2"``, the dataset's numbering) LLMEvaluator's ``evaluate.py``
    records for a rating strategy (its ``Rating`` branch): both ratings read with Python's
    ``int()``; in the order shown (``swap`` False) ``"1" if s1 > s2 else "2"``, swapped
    ``"2" if s2 > s1 else "1"``, so equal ratings go to the output shown second; when
    either rating is unreadable, the output shown first (``"1"``, swapped ``"2"``)."""
    try:
        s1, s2 = int(score_1), int(score_2)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "2" if swap else "1"
    if swap:
        return "2" if s2 > s1 else "1"
    return "1" if s1 > s2 else "2"


#: The default subsets: LLMBar Natural and its four adversarial sets (419 pairs).
DEFAULT_SUBSETS = (
    "LLMBar/Natural",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
    "LLMBar/Adversarial/Neighbor",
)
CANDIDATE, REFERENCE = "output_1", "output_2"


@BENCHMARKS.register
class LLMBar(Benchmark):
    """LLMBar's pairwise datasets with gold labels (see the module docstring).

    Args:
        data_dir: the converted release; ``None``: :func:`~voirdire.benchmarks.releases.catalogue.locate`.
        sample: ``"full"`` only.
        subsets: release folders to load (default :data:`DEFAULT_SUBSETS`).
        prompt: the comparison prompt for live judges (:data:`PROMPTS`).

    ``questions`` columns: ``question_id`` (str), ``task`` (str, the subset),
    ``input_chars`` (i64), ``gold`` (str: ``output_1`` or ``output_2``).

    Raises:
        ConfigError: no data, an unknown subset (the known ones are listed), sample other
            than ``"full"``, an unknown prompt.
    """

    name = "LLMBar"
    release = LLMBAR
    options = ("subsets", "prompt")
    #: own pairs' template ``"llmbar"``: the Vanilla comparison prompt, verdict Output (a)/(b)
    pair_prompt = (
        staticmethod(lambda: pair_template()),
        r"Output \((a|b)\)",
        ("a", "b"),
    )
    reference = REFERENCE
    default_option_mode = 2
    option_modes = (2,)
    comparison_modes = ("pairwise", "score")
    named_models = (
        False  # output_1/output_2 are anonymous answers, not models: no leaderboard
    )
    verdict_cue = "Output ("
    verdict_closing = ")"
    instruction_anchor = "\n\n# Instruction:"

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        sample: str = "full",
        subsets: Sequence[str] | None = None,
        prompt: str | None = None,
    ) -> None:
        if sample != "full":
            raise ConfigError(
                f"LLMBar: unknown sample {sample!r} (LLMBar has only 'full')"
            )
        self.sample = sample
        if not data_dir:
            data_dir = self.locate(None)
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / "pairs.parquet"
        self.prompt = prompt or "Vanilla"
        self._system, self._user = load_prompt(self.prompt)
        self.verdict_pattern = LINE_RULES if self.prompt != "CoT" else COT_RULES  # type: ignore[assignment]
        try:
            pairs = pl.read_parquet(self.path)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise ConfigError(
                f"LLMBar: cannot read {self.path}: {exc}; run `voirdire data fetch llmbar`"
            ) from None
        known = pairs["subset"].unique(maintain_order=True).to_list()
        self.subsets = tuple(subsets or DEFAULT_SUBSETS)
        unknown = [s for s in self.subsets if s not in known]
        if unknown:
            raise ConfigError(
                f"LLMBar: unknown subset {unknown[0]!r}; the release has: {', '.join(sorted(known))}"
            )
        pairs = pairs.filter(pl.col("subset").is_in(list(self.subsets))).sort(
            pl.col("subset").replace_strict(
                {s: i for i, s in enumerate(self.subsets)}, return_dtype=pl.Int32
            ),
            "item",
        )
        qid = pl.col("subset") + "/" + pl.col("item").cast(pl.String)
        self.questions = pairs.select(
            question_id=qid,
            task=pl.col("subset"),
            input_chars=pl.col("input").str.len_chars().cast(pl.Int64),
            gold=pl.when(pl.col("label") == 1)
            .then(pl.lit(CANDIDATE))
            .otherwise(pl.lit(REFERENCE)),
        )
        self.models = (CANDIDATE, REFERENCE)
        self._rows = dict(zip(self.questions["question_id"], pairs["input"]))
        self._answers = {}
        for q, o1, o2 in zip(
            self.questions["question_id"], pairs["output_1"], pairs["output_2"]
        ):
            self._answers[(q, CANDIDATE)] = o1
            self._answers[(q, REFERENCE)] = o2

    def slot_label(self, i: int) -> str:
        """``Output (a)``, ``Output (b)``: the prompts' names of the slots."""
        return f"Output ({'ab'[i]})"

    def question_text(self, question_id: str) -> str:
        """The instruction."""
        return self._rows[question_id]

    def system_prompt(
        self, question_id: str, shown: Sequence[str], option_mode: int
    ) -> str | None:
        """The prompt's system turn (the same for every query of a prompt)."""
        return self._system

    def messages(self, question_id: str, shown: Sequence[str]) -> list[dict[str, str]]:
        """The query as chat messages: the system turn and the user turn
        (:meth:`build_prompt`)."""
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": self.build_prompt(question_id, shown, 2)},
        ]

    def _build_pairwise(
        self, qid: str, a: str, b: str, option_mode: int, answers=None
    ) -> str:
        """The prompt's user turn with ``a``'s output as Output (a), ``b``'s as Output (b)
        (``str.format_map`` of the fields, as LLMEvaluator fills it)."""
        out_a = answers[a][0] if answers and a in answers else self._answers[(qid, a)]
        out_b = answers[b][0] if answers and b in answers else self._answers[(qid, b)]
        return self._user.format_map(
            {"input": self._rows[qid], "output_1": out_a, "output_2": out_b}
        )

    def score_material(self, question_id: str, shown: Sequence[str]) -> str:
        """Score-mode body: the instruction and the two outputs under their slot labels."""
        parts = [f"# Instruction:\n{self._rows[question_id]}"]
        for i, m in enumerate(shown):
            parts.append(f"# {self.slot_label(i)}:\n{self._answers[(question_id, m)]}")
        return "\n\n".join(parts)

    def verdict_pattern_for(self, mode: str):  # type: ignore[override]
        """The verdict rules (a list of ``[letter, regex]``: the first that occurs decides;
        see :func:`voirdire.judges.extract.extract_verdicts`)."""
        if mode not in ("pairwise", "score"):
            raise ValueError(f"{self.name}: comparison mode {mode!r} is not offered")
        return [list(r) for r in self.verdict_pattern]

    # ------------------------------------------------------------------ the release's recorded outputs

    @classmethod
    def recorded_judges(
        cls, data_dir: str | Path, study: str, subsets: Sequence[str] | None = None
    ) -> list[str]:
        """Every recorded ``evaluator/strategy`` with outputs on one of ``subsets`` (None:
        :data:`DEFAULT_SUBSETS`; ``[]``: all), sorted; the release has one study."""
        path = Path(data_dir) / "outputs.parquet"
        if not path.is_file():
            return []
        lf = pl.scan_parquet(path)
        subsets = DEFAULT_SUBSETS if subsets is None else subsets
        if subsets:
            lf = lf.filter(pl.col("subset").is_in(list(subsets)))
        got = (
            lf.select((pl.col("evaluator") + "/" + pl.col("strategy")).alias("j"))
            .unique()
            .collect()
        )
        return sorted(got["j"].to_list())

    @classmethod
    def recorded_file(
        cls, data_dir: str | Path, study: str, recorded: str, judge: str
    ) -> Path:
        """``outputs.parquet`` of the converted release.

        Raises:
            ConfigError: ``recorded`` is no recorded ``evaluator/strategy`` (those there are
                listed; a rating strategy may carry ``@tie``, :func:`split_recorded`).
        """
        evaluator, strategy, _ = split_recorded(recorded)
        have = cls.recorded_judges(data_dir, study, [])
        if f"{evaluator}/{strategy}" not in have:
            raise ConfigError(
                f"judge {judge!r}: no recorded outputs of {recorded!r} in {data_dir}"
                + (
                    f"; recorded there (evaluator/strategy): {', '.join(have)}"
                    if have
                    else ""
                )
            )
        return Path(data_dir) / "outputs.parquet"

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """The outputs of one ``evaluator/strategy`` (first repetition only; see the module
        docstring): a comparison strategy's completion with the letter the release read, a
        rating strategy's two ratings as one output, with the release's letter
        (:func:`release_rating_winner`) or, read ``@tie``, as a score-mode output.

        Raises:
            ConfigError: nothing recorded for it.
        """
        evaluator, strategy, ties = split_recorded(recorded)
        df = pl.read_parquet(path).filter(
            (pl.col("evaluator") == evaluator) & (pl.col("strategy") == strategy)
        )
        if df.height == 0:
            raise ConfigError(
                f"no recorded outputs of {recorded!r} in {path} (recorded names are evaluator/strategy)"
            )
        out: dict[RecordKey, Recorded] = {}
        rating = strategy.startswith("Rating")
        for r in df.iter_rows(named=True):
            shown = (
                (CANDIDATE, REFERENCE) if r["order"] == 0 else (REFERENCE, CANDIDATE)
            )
            key = record_key(f"{r['subset']}/{r['item']}", shown)
            if rating:
                a, b = (
                    (r["score_1"], r["score_2"])
                    if r["order"] == 0
                    else (r["score_2"], r["score_1"])
                )
                text = f"Score of Output (a): {(a or '').strip()}\nScore of Output (b): {(b or '').strip()}"
                if ties == "tie":
                    out[key] = Recorded(text)  # score mode: read by voirdire
                else:  # the release's winner, as a letter of the slots shown
                    won = release_rating_winner(
                        r["score_1"], r["score_2"], r["order"] == 1
                    )
                    first = "1" if r["order"] == 0 else "2"
                    out[key] = Recorded(text, choice="A" if won == first else "B")
            elif r["completion"] is None:
                out[key] = Recorded(
                    None, why="the recorded call failed (no completion)"
                )
            else:
                letter = read_verdict(
                    r["completion"], verdict_rules(evaluator, strategy, r["stage"])
                )
                out[key] = Recorded(r["completion"], choice=letter or "")
        return out

    @classmethod
    def recorded_mode(cls, recorded: str) -> str | None:
        """``"score"`` for a rating strategy read ``@tie`` (``evaluator/Rating*@tie``: each
        output scored alone, equal ratings a tie); None otherwise (the release's reading of
        a rating strategy is a pairwise verdict). A malformed reading is refused when the
        recorded outputs are read (:meth:`recorded_file`)."""
        try:
            _, strategy, ties = split_recorded(recorded)
        except ConfigError:
            return None
        return "score" if strategy.startswith("Rating") and ties == "tie" else None

    @classmethod
    def release_readings(cls, pairs: pl.DataFrame) -> pl.DataFrame:
        """The winners LLMEvaluator's ``evaluate.py`` counts in ``statistics.json``: a
        comparison's winner (the release's reading of a rating strategy included), a tie or
        failure counted as none; a rating pair read ``@tie`` (score mode) from the two
        ratings (``int()`` of each: ``"1" if s1 > s2 else "2"`` shown, ``"2" if s2 > s1 else
        "1"`` swapped; equal ratings go to the output shown second, unreadable ones to the
        output shown first), read from the replayed output's ``Score of Output (a|b)`` lines."""
        cand, ref = pl.col("candidate"), pl.col("reference")
        s_c = (
            pl.col("_out")
            .str.extract(r"(?m)^Score of Output \(a\): *([+-]?\d+) *$", 1)
            .cast(pl.Int64, strict=False)
        )
        s_r = (
            pl.col("_out")
            .str.extract(r"(?m)^Score of Output \(b\): *([+-]?\d+) *$", 1)
            .cast(pl.Int64, strict=False)
        )
        read = s_c.is_not_null() & s_r.is_not_null()
        rating1 = (
            pl.when(read & (s_c > s_r)).then(cand).when(read).then(ref).otherwise(cand)
        )
        rating2 = (
            pl.when(read & (s_r > s_c)).then(ref).when(read).then(cand).otherwise(ref)
        )
        return pairs.with_columns(
            r1=pl.when(pl.col("score"))
            .then(rating1)
            .otherwise(pl.when(pl.col("w1") != "tie").then(pl.col("w1"))),
            r2=pl.when(pl.col("score"))
            .then(rating2)
            .otherwise(pl.when(pl.col("w2") != "tie").then(pl.col("w2"))),
        )


__all__ = [
    "DEFAULT_SUBSETS",
    "LLMBar",
    "RATING_TIES",
    "TIE_SUFFIX",
    "release_rating_winner",
    "split_recorded",
]
