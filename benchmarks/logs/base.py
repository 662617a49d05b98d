"""The shared reader of judgment logs other tools wrote (``voirdire audit``, ``docs/audit.md``).

A log format is a registered benchmark kind (:class:`LogBenchmark`, one module per format in
this package). Its reader (:meth:`LogBenchmark.read`) turns one log file into normalised
rows (:class:`Rows`):

- one **pair** per instance: ``question_id`` (unique per pair of models per question),
  ``cluster`` (the question, the bootstrap's cluster), ``task``, ``instruction`` (``""``
  where the log has none), ``model_a``/``model_b`` (the pair in the format's canonical
  order: permutation 0 shows ``model_a`` first), ``output_a``/``output_b`` (the answers'
  text, ``""`` where absent) and ``gold`` (the better model's name, ``"tie"`` or null);
- one **verdict** per judge and order shown: the judge's raw text (null: the log records a
  failed call) and the letter read by the owning tool's own rule (``A`` = the answer shown
  first, ``B`` the second, ``C`` a tie, ``""`` none read).

The rows are kept as a **normalised copy**, the benchmark's data directory: by default
``<user cache>/voirdire/logs/<format>-<hash of the logs and settings>/`` (a job's
``data_dir`` names another), holding ``instances.parquet`` (the pairs), ``recorded.parquet``
(the verdicts) and ``source.json``. The replay judge reads the verdicts from it through the
kind's recorded hooks (:meth:`LogBenchmark.recorded_judges`, ``recorded_file``,
``read_recorded``), the analysis its clusters (:meth:`LogBenchmark.clusters`); loading the
benchmark again from that directory alone (``voirdire report``, ``rank``) needs no log.

Errors: a log that cannot be read (not JSON, a missing field, the wrong format named) is one
:class:`~voirdire.core.ConfigError` line naming the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
from pydantic import BaseModel

from voirdire.benchmarks.base import Benchmark
from voirdire.benchmarks.logs.once import check_once, distinct_logs, one_pair_each
from voirdire.benchmarks.logs.reading import (
    COPY_VERSION,
    FAILED_CALL,
    INSTANCES,
    LIMIT_KEYS,
    RECORDED,
    SOURCE,
    NoOptions,
    Rows,
    default_root,
    log_settings,
    prompt_keys,
    temp_name,
)
from voirdire.benchmarks.logs.tool_prompts import ToolPrompt, tool_prompt, tool_weights
from voirdire.benchmarks.recorded import Recorded, RecordKey
from voirdire.core import ConfigError, content_hash


class LogBenchmark(Benchmark):
    """A judgment log format as a benchmark (module docstring). A format subclasses it, sets
    :attr:`name` (its registry key is the name lower-cased: ``ArenaHard`` → ``arenahard``),
    :attr:`Options` (its ``[benchmark.log]`` settings) and :attr:`suffixes`, implements
    :meth:`read`, and registers with ``@BENCHMARKS.register``.

    Args:
        logs: log files or directories (their files ending in :attr:`suffixes`).
        data_dir: the normalised copy's directory; ``None``: under :func:`default_root`.
        log: the format's settings (validated by :attr:`Options`).

    Attributes (besides :class:`~voirdire.benchmarks.base.Benchmark`'s):
        pairs: the pairs (:data:`PAIR_SCHEMA`, one row per instance).
        settings: the validated :attr:`Options`.

    Raises:
        ConfigError: no logs, an unreadable log (file, line and field named), invalid
            settings, no pair in the logs, a verdict given twice.
    """

    release = None
    options: ClassVar[tuple[str, ...]] = ("logs", "log")
    comparison_modes = ("pairwise",)
    option_modes = (2, 3)
    default_option_mode = 3
    verdict_pattern = r"\[\[([ABC])\]\]"
    verdict_cue, verdict_closing = "[[", "]]"
    #: the format's ``[benchmark.log]`` settings
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: the file endings read when a directory is given
    suffixes: ClassVar[tuple[str, ...]] = (".jsonl",)
    #: a log's judge is asked exactly the (pair, order) units its own records hold: pairs
    #: it never judged (another judge's file) are not its failures, and a log holding one
    #: order per pair (AlpacaEval, Auto-J without an exchanged file) asks that order only
    asks_own_records: ClassVar[bool] = True
    #: the key of the tool's prompt (:mod:`~voirdire.benchmarks.logs.tool_prompts`); ``None``: by name
    tool: ClassVar[str | None] = None
    #: what one record of the format holds, for :meth:`owns`: alternative key sets (a
    #: record with every key of one of them is the format's); ``()``: it cannot tell
    record_keys: ClassVar[tuple[frozenset[str], ...]] = ()
    #: how its files hold records: ``"jsonl"`` (an object a line) or ``"json"`` (a document)
    layout: ClassVar[str] = "jsonl"

    @classmethod
    def owns(cls, path: str | os.PathLike) -> bool | None:
        """Whether the file ``path`` is a log of this format, from its first record: its
        :attr:`layout` and one of :attr:`record_keys`; None where the format cannot tell
        (no :attr:`record_keys`): :func:`~voirdire.benchmarks.logs.sniff.owns`."""
        from voirdire.benchmarks.logs.sniff import owns

        return owns(cls, path)

    def __init_subclass__(cls, **kw: Any) -> None:
        """A format reads a live judge's verdicts by its tool's rule (pattern and labels of
        :func:`~voirdire.benchmarks.logs.tool_prompts.tool_prompt`) unless it sets its own."""
        super().__init_subclass__(**kw)
        tp = tool_prompt(cls.name, None, cls.tool) if "name" in cls.__dict__ else None
        if tp is not None and "verdict_pattern" not in cls.__dict__:
            cls.verdict_pattern = tp.verdict_pattern
            cls.verdict_labels = dict(tp.verdict_labels)

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """Append the pairs and verdicts of one log file to ``rows`` (``options``: an
        :attr:`Options`).

        Raises:
            ConfigError: naming the file, the line and the field.
        """
        raise NotImplementedError

    def read_logs(self, files: list[Path], rows: Rows) -> None:
        """Append the pairs and verdicts of all ``files`` to ``rows``: each file by
        :meth:`read` (a format that joins files, a batch's requests and results, overrides it)."""
        for f in files:
            self.read(f, self.settings, rows)

    @classmethod
    def load(cls, data_dir: Any, sample: str = "full", **options: Any) -> LogBenchmark:
        """The logs of ``options["logs"]`` read into a normalised copy in ``data_dir``; without
        logs, the normalised copy ``data_dir`` holds (a finished audit's, read again).

        Raises:
            ConfigError: no logs and no normalised copy, a sample other than ``"full"``.
        """
        if sample != "full":
            raise ConfigError(
                f"{cls.name}: a log has only the sample 'full', not {sample!r}"
            )
        if not options.get("logs"):
            if data_dir and (Path(data_dir) / INSTANCES).is_file():
                return cls(None, data_dir=data_dir)
            raise ConfigError(
                f'benchmark "{cls.name}" reads judgment logs: give [benchmark] logs = ["file or directory", ...]'
            )
        return cls(options["logs"], data_dir=data_dir, log=options.get("log"))

    def __init__(
        self,
        logs: Sequence[str | os.PathLike[str]] | None,
        data_dir: str | os.PathLike[str] | None = None,
        log: dict[str, Any] | None = None,
    ) -> None:
        self.settings = log_settings(self.Options, log, self.name)
        self.sample = "full"
        if logs is None:  # a normalised copy read again
            self.data_dir = Path(data_dir)  # type: ignore[arg-type]
            self.path = self.data_dir / INSTANCES
            pairs = pl.read_parquet(self.path)
            keys = json.loads((self.data_dir / SOURCE).read_text("utf-8")).get("keys")
        else:
            files, hashes = distinct_logs(
                logs, self.suffixes, self.name, self.settings.max_bytes
            )  # each bounded before it is read
            digest = content_hash(
                COPY_VERSION, self.name,
                self.settings.model_dump(mode="json", exclude=set(LIMIT_KEYS)),
                [[str(f), h] for f, h in zip(files, hashes)],
            )  # fmt: skip
            self.path = files[0]
            self.data_dir = (
                Path(data_dir)
                if data_dir
                else default_root() / f"{self.name.lower()}-{digest[:20]}"
            )
            pairs, keys = self._copy(files, digest)
        self.pairs = pairs
        self._setup(pairs, keys)

    # ------------------------------------------------------------------ the normalised copy

    def _copy(
        self, files: list[Path], digest: str
    ) -> tuple[pl.DataFrame, dict[str, str]]:
        """The normalised copy of ``files`` in :attr:`data_dir` (read from there when it holds
        the copy of the same logs and settings, else written afresh): the pairs, and the
        prompt key of each question."""
        d = self.data_dir
        src = d / SOURCE
        try:
            have = json.loads(src.read_text("utf-8")) if src.is_file() else {}
        except (OSError, ValueError):
            have = {}
        if (
            have.get("hash") == digest
            and (d / INSTANCES).is_file()
            and (d / RECORDED).is_file()
        ):
            return pl.read_parquet(d / INSTANCES), have["keys"]
        rows = Rows()
        try:
            self.read_logs(files, rows)
        except ConfigError:
            from voirdire.benchmarks.logs.sniff import wrong_format

            hint = wrong_format(type(self), files)
            if hint:
                raise ConfigError(hint) from None
            raise
        pairs, verdicts = rows.frames()
        if not pairs.height:
            raise ConfigError(
                f"{self.name}: no judgments in {', '.join(map(str, files))}"
            )
        pairs = one_pair_each(pairs, rows.pair_where, self.name)
        check_once(verdicts, self.name)
        keys = prompt_keys(verdicts)
        d.mkdir(parents=True, exist_ok=True)
        for name, df in ((INSTANCES, pairs), (RECORDED, verdicts.drop("where"))):
            tmp = temp_name(d / name)
            df.write_parquet(tmp)
            os.replace(tmp, d / name)
        tmp = temp_name(src)
        tmp.write_text(
            json.dumps(
                {
                    "format": self.name,
                    "hash": digest,
                    "logs": [str(f) for f in files],
                    "keys": keys,
                }
            ),
            "utf-8",
        )
        os.replace(tmp, src)
        return pairs, keys

    def _setup(self, pairs: pl.DataFrame, keys: dict[str, str]) -> None:
        """The benchmark's tables from the pairs: questions, instances, answers, models."""
        ids = pairs["question_id"].to_list()
        self._keys = keys
        self._rows = dict(zip(ids, pairs["instruction"].to_list()))
        self._tasks = dict(zip(ids, pairs["task"].to_list()))
        ma, mb = pairs["model_a"].to_list(), pairs["model_b"].to_list()
        # (question, model) -> answer; a question is one pair (model_b's wins if a = b)
        self._answers = dict(zip(zip(ids, ma), pairs["output_a"].to_list()))
        self._answers.update(zip(zip(ids, mb), pairs["output_b"].to_list()))
        self.models = tuple(dict.fromkeys([*ma, *mb]))
        self.reference = ""
        self.questions = pairs.select(
            "question_id",
            "task",
            input_chars=pl.col("instruction").str.len_chars().cast(pl.Int64),
        )
        self._pairs = self.questions.with_columns(
            candidate=pairs["model_a"], reference=pairs["model_b"], gold=pairs["gold"]
        )

    # ------------------------------------------------------------------ the engine's hooks

    def fixed_instances(self) -> pl.DataFrame:
        """One instance per pair: ``question_id``, ``task``, ``input_chars``, ``candidate``
        (``model_a``, shown first in permutation 0), ``reference`` (``model_b``), ``gold``."""
        return self._pairs

    def prompt_key(self, question_id: str) -> str:
        """H(the question's recorded verdicts, every judge and order): enters the query ids,
        so an edited log is read again, never answered from old results."""
        return self._keys.get(question_id, "")

    def question_text(self, question_id: str) -> str:
        """The instruction as the log gives it (``""`` where it gives none)."""
        return self._rows[question_id]

    def _build_pairwise(
        self, qid: str, a: str, b: str, option_mode: int, answers=None
    ) -> str:
        """The user turn of the log's tool prompt (:func:`~.tool_prompts.tool_prompt`), ``a``'s
        answer first: what a live judge completing the log is asked (a replay judge: none)."""
        return self._tool(qid).render(self._values(qid, a, b, answers)[0])[1]

    def _values(self, qid: str, a: str, b: str, answers=None) -> tuple[dict, int]:
        """The tool prompt's fields, ``a``'s answer first, and the answers' characters."""
        oa = (answers or {}).get(a) or self.answers(qid, a)
        ob = (answers or {}).get(b) or self.answers(qid, b)
        values = {"instruction": self._rows[qid], "output_1": oa[0], "output_2": ob[0]}
        return values, sum(map(len, oa)) + sum(map(len, ob))

    def query_lengths(
        self, question_id: str, shown: Sequence[str], option_mode: int, mode: str
    ) -> tuple[int, int]:
        """``(prompt_chars, output_chars)`` of a control query, its prompt not built
        (:meth:`~voirdire.benchmarks.logs.tool_prompts.ToolPrompt.user_chars`; the optional hook of
        :class:`~voirdire.engine.prompts.PromptCache`). Raises as :meth:`build_prompt`."""
        self.check_request(question_id, shown, option_mode, mode)
        fixed, w_in, w_1, w_2 = tool_weights(
            self.name, self._tasks.get(question_id), self.tool
        )
        first, second = shown  # pairwise: checked
        oa, ob = self.answers(question_id, first), self.answers(question_id, second)
        chars = fixed + w_in * len(self._rows[question_id])
        chars += w_1 * len(oa[0]) + w_2 * len(ob[0])
        return chars, sum(map(len, oa)) + sum(map(len, ob))

    def system_prompt(
        self, question_id: str, shown: Sequence[str], option_mode: int
    ) -> str | None:
        """The tool's system turn (``None`` where it sends none)."""
        return self._tool(question_id).system or None

    def _tool(self, qid: str) -> ToolPrompt:
        return tool_prompt(self.name, self._tasks.get(qid), self.tool)

    # ------------------------------------------------------------------ class-level hooks

    @classmethod
    def clusters(cls, data_dir: str | os.PathLike[str] | None = None) -> pl.DataFrame:
        """``question_id`` -> ``cluster`` (the question the format names) from the normalised
        copy in ``data_dir``.

        Raises:
            ConfigError: no normalised copy there (deleted since: audit the logs again).
        """
        path = Path(data_dir or ".") / INSTANCES
        if not data_dir or not path.is_file():
            raise ConfigError(
                f"{cls.name}: no normalised log copy {path} to read the questions from; audit the logs again"
            )
        return pl.read_parquet(path, columns=["question_id", "cluster"])

    @classmethod
    def recorded_judges(
        cls, data_dir: str | Path, study: str, subsets: Sequence[str] | None = None
    ) -> list[str]:
        """The judges the logs hold (sorted; empty without a normalised copy)."""
        path = Path(data_dir) / RECORDED
        if study != "position_bias" or not path.is_file():
            return []
        return sorted(
            pl.read_parquet(path, columns=["judge"])["judge"].unique().to_list()
        )

    @classmethod
    def recorded_file(
        cls, data_dir: str | Path, study: str, recorded: str, judge: str
    ) -> Path:
        """The normalised copy's ``recorded.parquet``.

        Raises:
            ConfigError: no copy, or no verdict of ``recorded`` in it (the judges it has are listed).
        """
        path = Path(data_dir) / RECORDED
        have = cls.recorded_judges(data_dir, study)
        if recorded not in have:
            raise ConfigError(
                f"judge {judge!r}: the {cls.name} logs hold no verdicts of {recorded!r}"
                + (
                    f"; judges in them: {', '.join(have)}"
                    if have
                    else f" ({path} missing)"
                )
            )
        return path

    @classmethod
    def recorded_keys(cls, path: Path, recorded: str) -> set[RecordKey]:
        """The (pair, order) units judge ``recorded``'s records hold (a failed call's too):
        ``("<question id>;<first>;<second>", 1)``, read without the texts."""
        df = (
            pl.scan_parquet(path)
            .filter(pl.col("judge") == recorded)
            .select(k=pl.concat_str("question_id", "first", "second", separator=";"))
            .collect()
        )
        return {(k, 1) for k in df["k"].to_list()}

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """Judge ``recorded``'s verdicts: ``("<question id>;<first>;<second>", 1) ->
        Recorded(raw text, letter)`` (a null text: a failed call)."""
        df = pl.scan_parquet(path).filter(pl.col("judge") == recorded).collect()
        return {
            (f"{q};{a};{b}", 1): Recorded(o, c)
            if o is not None
            else Recorded(None, c, FAILED_CALL)
            for q, a, b, o, c in df.select(
                "question_id", "first", "second", "output", "choice"
            ).iter_rows()
        }


__all__ = ["LogBenchmark"]
