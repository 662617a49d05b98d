"""PandaLM's human-annotated test set (Wang et al., ICLR 2024): 999 pairs of answers by five
instruction-tuned 7B models, each labelled by three annotators.

Data: the converted release (:mod:`voirdire.benchmarks.releases.pandalm`, ``pairs.parquet``),
found by :func:`voirdire.benchmarks.releases.catalogue.locate` (a job's ``data_dir``,
``$VOIRDIRE_PANDALM_DATA``, or what ``voirdire data fetch pandalm`` wrote).

Instances: one per item (``question_id`` = the item's ``idx`` as text, ``task`` its
``motivation_app``). The candidate is the model of ``response1`` and the reference the model
of ``response2`` (the two halves of ``cmp_key``), so permutation 0 shows the pair as the
release lists it and the models keep their names: every pair of the five models appears,
and a leaderboard of the five can be built from any job. ``gold`` is the annotators'
majority: the better model's name, or ``"tie"``.

Bootstrap clusters (:meth:`PandaLM.clusters`): the question, i.e. the distinct (instruction,
input) the release's ``prompt`` column numbers (170 questions, up to 10 items each; an item is
not a question because a model's answer differs between pairings), so intervals resample the
170 questions, not the 999 items.

Recorded judges (:meth:`PandaLM.recorded_judges`): the release's own evaluation of its judge
PandaLM-7B and of GPT-3.5 on the test set (``recorded.parquet``), one verdict per item in the
order the release lists the pair (permutation 0), replayed by the replay judge
(``examples/pandalm_replay.toml``: ``permutations = "original"``, ``option_mode = 3``): ``1``
→ A, ``2`` → B, ``0`` or ``Tie`` → C (a tie), anything else (``garbage``) no verdict.

Prompts for live judges: a built-in pair template of own pairs
(:mod:`voirdire.benchmarks.own_pairs.prompts`), chosen by ``[benchmark] prompt``: ``"mtbench"``
(default: FastChat's ``pair-v2``, verdicts ``[[A]]``/``[[B]]``/``[[C]]``, tie offered, option
mode 3) or a template another benchmark lends (its registry key, e.g. LLMBar's Vanilla prompt,
no tie). PandaLM's own prompt is the input format
of its fine-tuned judge (written in its Python code, with no instruction on the answer
format a general judge could follow); it is not shipped. The question shown is the
instruction, then the item's input after a blank line when it has one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from voirdire.benchmarks.own_pairs.benchmark import OwnPairs, PairColumns, PairsSpec
from voirdire.benchmarks.own_pairs.prompts import is_builtin, known_templates
from voirdire.benchmarks.recorded import Recorded, RecordKey, record_key
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.benchmarks.releases.catalogue import locate
from voirdire.benchmarks.releases.pandalm import PANDALM
from voirdire.core import ConfigError

#: the built-in pair templates a live judge can be asked with
COLUMNS = PairColumns(
    id="id",
    instruction="question",
    output_a="response1",
    output_b="response2",
    model_a="model_1",
    model_b="model_2",
    gold="gold",
    task="task",
)


@BENCHMARKS.register
class PandaLM(OwnPairs):
    """PandaLM's test set as a benchmark (see the module docstring): a user's own pairs read
    from the converted release with a fixed column mapping.

    Args:
        data_dir: the converted release; ``None``: :func:`~voirdire.benchmarks.releases.catalogue.locate`.
        sample: ``"full"`` only.
        prompt: the pair template for live judges: a built-in or lent one
            (:func:`~voirdire.benchmarks.own_pairs.prompts.is_builtin`; default ``"mtbench"``).

    ``questions`` columns: ``question_id`` (str), ``task`` (str), ``input_chars`` (i64);
    :meth:`fixed_instances` adds ``candidate``, ``reference`` (str: model names) and ``gold``
    (str: a model name or ``"tie"``).

    Raises:
        ConfigError: no data, an unreadable table, a sample other than ``"full"``, an unknown
            prompt.
    """

    name = "PandaLM"
    #: the release it reads (``voirdire data fetch pandalm``), and the ``[benchmark]`` settings
    #: it takes besides data_dir and sample
    release = PANDALM
    options = ("prompt",)

    @classmethod
    def load(cls, data_dir: Any, sample: str = "full", **options: Any) -> PandaLM:
        """``PandaLM(data_dir, sample, prompt=...)`` (not a user's ``[benchmark.pairs]``)."""
        return cls(data_dir=data_dir, sample=sample, prompt=options.get("prompt"))

    @classmethod
    def clusters(cls, data_dir: str | os.PathLike[str] | None = None) -> pl.DataFrame:
        """``question_id`` (str: the item) -> ``cluster`` (str: ``"q"`` + the release's
        ``prompt``, the index of the item's (instruction, input)); ``data_dir``: the converted
        release (None, or one without ``pairs.parquet``: :func:`~voirdire.benchmarks.releases.catalogue.locate`).

        Raises:
            ConfigError: no converted release found.
        """
        path = Path(data_dir or ".") / "pairs.parquet"
        if (
            not data_dir or not path.is_file()
        ):  # e.g. a job's recorded data directory, since moved
            path = Path(locate(PANDALM)) / "pairs.parquet"
        if not path.is_file():
            raise ConfigError(
                f"PandaLM: no {path} to read the items' questions from; "
                "run `voirdire data fetch pandalm`"
            )
        pairs = pl.read_parquet(path, columns=["id", "prompt"])
        return pairs.select(question_id="id", cluster=pl.format("q{}", "prompt"))

    @classmethod
    def recorded_judges(
        cls, data_dir: str | Path, study: str, subsets: Sequence[str] | None = None
    ) -> list[str]:
        """The judges in the converted release's ``recorded.parquet`` (sorted; empty when
        there is none: a release fetched before it was read)."""
        path = Path(data_dir) / "recorded.parquet"
        if not path.is_file():
            return []
        return sorted(
            pl.read_parquet(path, columns=["judge"])["judge"].unique().to_list()
        )

    @classmethod
    def recorded_file(
        cls, data_dir: str | Path, study: str, recorded: str, judge: str
    ) -> Path:
        """``recorded.parquet`` of the converted release.

        Raises:
            ConfigError: no verdict recorded for ``recorded`` there (those recorded named).
        """
        have = cls.recorded_judges(data_dir, study)
        if recorded not in have:
            raise ConfigError(
                f"judge {judge!r}: no recorded verdicts of {recorded!r} in {data_dir}"
                + (
                    f"; recorded there: {', '.join(have)}"
                    if have
                    else "; run `voirdire data fetch pandalm` again"
                )
            )
        return Path(data_dir) / "recorded.parquet"

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """One judge's verdicts, keyed by the item and the order the release shows it in
        (``model_1`` first), with the letter read (module docstring) and the judge's reason
        as its text.

        Raises:
            ConfigError: nothing recorded for it.
        """
        rec = pl.read_parquet(path).filter(pl.col("judge") == recorded)
        if rec.height == 0:
            raise ConfigError(f"no recorded verdicts of {recorded!r} in {path}")
        pairs = pl.read_parquet(
            path.parent / "pairs.parquet", columns=["idx", "id", "model_1", "model_2"]
        )
        letters = {"1": "A", "2": "B", "0": "C", "tie": "C"}
        out: dict[RecordKey, Recorded] = {}
        for r in rec.join(pairs, on="idx").iter_rows(named=True):
            letter = letters.get(r["result"].strip().lower(), "")
            text = r["reason"] if r["reason"] is not None else r["result"]
            out[record_key(r["id"], (r["model_1"], r["model_2"]))] = Recorded(
                output=text, choice=letter
            )
        return out

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        sample: str = "full",
        prompt: str | None = None,
    ) -> None:
        if sample != "full":
            raise ConfigError(
                f"PandaLM: unknown sample {sample!r} (PandaLM has only 'full')"
            )
        if prompt is not None and not is_builtin(prompt):
            raise ConfigError(
                f"PandaLM: unknown prompt {prompt!r} for live judges; known: {', '.join(known_templates())}"
            )
        if not data_dir:
            data_dir = locate(PANDALM)
        path = Path(data_dir) / "pairs.parquet"
        if not path.is_file():
            raise ConfigError(f"PandaLM: no {path}; run `voirdire data fetch pandalm`")
        self.prompt = prompt or "mtbench"
        super().__init__(
            PairsSpec(
                path=str(path), label=self.name, columns=COLUMNS, template=self.prompt
            )
        )


__all__ = ["COLUMNS", "PandaLM"]
