"""Optional capabilities of a judge backend: what only some backends can do.

The core interface (:class:`~voirdire.judges.base.JudgeBackend`) is what every backend
has. A backend that can do more derives from one of these small classes as well, and the
engine asks ``issubclass(backend, Capability)``, never for an attribute by name, and never
for a backend by name::

    @register
    class ReplayJudge(PromptFree, Recording, Expands, QualitySource, OwnComparisonMode[ReplaySettings],
                      JudgeBackend[ReplaySettings]): ...

- :class:`PromptFree`: its queries carry no prompt text (replay, simulated);
- :class:`AnswersRows`: it answers the scheduler's query rows without a ``Query`` each
  (replay);
- :class:`SharesWorkers`: its worker answers on its own CPU with no waiting, so judges take
  turns on a few workers (replay; simulated without latency);
- :class:`SharesEngine`: judges whose engine is the same take turns on one engine, each
  worker lending it to the next judge (vLLM);
- :class:`Recording`: it answers from recorded unperturbed outputs, so perturbations are
  refused, and on a judgment log it is asked only the units it has records of (replay);
- :class:`RecordedTable`: its recorded outputs are one table, which the engine joins with a
  job's units in the driver instead of asking workers (replay);
- :class:`Expands`: one ``[[judges]]`` entry becomes several (replay's ``recorded = "*"``);
- :class:`QualitySource`: ``benchmark.quality = "<backend>:<arg>"`` (replay, simulated);
- :class:`Rewrites`: a ``[[rewriters]]`` entry may name it (API backends, vLLM, simulated);
  :class:`RewriterOnly`: and it is refused as a judge (template, simulated_rewriter);
- :class:`Estimates`: a dry run's token and cost estimate (API backends);
- :class:`OwnComparisonMode`: its units' comparison mode when not the job's (a replayed
  judge that scored each answer);
- :class:`UsesKey`: it reads an API key from the environment (API backends);
- :class:`Counts`: its worker reports its counters (vLLM).
"""

from __future__ import annotations

import abc
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from voirdire.judges.base import JudgeSettings, Sampling

if TYPE_CHECKING:
    from voirdire.judges.base import JudgeBackend

S = TypeVar("S", bound=JudgeSettings)

__all__ = [
    "AnswersRows",
    "Counts",
    "Estimates",
    "Expands",
    "OwnComparisonMode",
    "PromptFree",
    "QualitySource",
    "RecordedTable",
    "Recording",
    "RewriterOnly",
    "Rewrites",
    "SharesEngine",
    "SharesWorkers",
    "UsesKey",
    "comparison_mode",
    "engine_key",
    "needs_prompt",
    "rewrite_biases",
    "shares_workers",
]


class PromptFree:
    """The backend answers without the prompt text: its queries carry ``prompt = None``
    (and no system turn), which saves rendering every prompt."""


class AnswersRows(abc.ABC):
    """The backend answers the rows the scheduler sends (``Query``'s fields in order,
    :attr:`~voirdire.engine.units.UnitBatch.query_rows`) without building a ``Query`` for
    each; the worker calls :meth:`judge_rows` instead of ``judge``."""

    @abc.abstractmethod
    async def judge_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[Any]:
        """The ``Result`` of each row, as ``judge`` gives for ``Query(*row)``."""


class SharesWorkers:
    """The backend's worker answers on its own CPU with no waiting (a lookup, a draw): one
    worker process serves such judges one after another as fast as side by side, so the
    scheduler opens their pools a few at a time (as many workers as the cluster has CPUs),
    each reusing the workers the last one released, rather than starting a process (about
    1 CPU-second) per judge at once. A backend whose worker may wait says so per settings."""

    @classmethod
    def shares_workers(cls, settings: Any) -> bool:
        """Whether a judge of these settings answers without waiting (default: yes)."""
        return True


class SharesEngine(abc.ABC):
    """Judges of one engine (one model loaded the same way: a vLLM engine takes tens of
    seconds to start and holds the model's memory) take turns on it: the scheduler opens
    such judges one after another on the workers the last one released, and a worker
    moving from one judge to the next lends it its engine (:meth:`lend_engine`) instead of
    shutting it down and starting another. Judges whose keys differ never share."""

    @classmethod
    @abc.abstractmethod
    def engine_key(cls, settings: Any, context: Any) -> str | None:
        """What makes the engine of a judge of these settings (a string: equal strings, one
        engine), or ``None`` (this judge keeps an engine of its own); ``context``: a
        :class:`~voirdire.judges.base.JudgeContext`."""

    @abc.abstractmethod
    def lend_engine(self) -> None:
        """Keep the engine running past ``aclose`` for the next backend of the same key
        built in this process (which takes it; another key shuts it down)."""


class Recording(abc.ABC):
    """The backend answers from recorded outputs of the unperturbed prompts, so it cannot
    answer a perturbation (a job with ``[[perturbations]]`` is refused); on a benchmark
    whose kind :attr:`~voirdire.benchmarks.kind.BenchmarkKind.asks_own_records` (a judgment
    log) it is asked exactly the units :meth:`recorded_keys` names."""

    @classmethod
    @abc.abstractmethod
    def recorded_keys(cls, settings: Any, context: Any) -> set[tuple[str, int]]:
        """The keys of the recorded outputs a judge of these settings answers from
        (``(";".join((question id, *shown)), repetition)``), as its worker loads them;
        ``context``: a :class:`~voirdire.judges.base.JudgeContext`.

        Raises:
            ConfigError: nothing recorded for that judge.
        """


class RecordedTable(Recording):
    """A :class:`Recording` backend whose recorded outputs are read as one table: its answer
    to a unit depends on the unit's record key alone (no waiting, no state), so the engine
    answers a job of such judges by joining the planned units with :meth:`recorded_table`
    in the driver (:mod:`voirdire.engine.recorded`), the same rows its worker would give,
    without starting Ray."""

    @classmethod
    @abc.abstractmethod
    def recorded_table(cls, settings: Any, context: Any) -> Any:
        """The recorded outputs a judge of these settings answers from, one row per record
        key, as a polars DataFrame: ``key`` (str, ``";".join((question id, *shown))``),
        ``repetition`` (Int64, 1..), ``output`` (str; null: the recorded call failed),
        ``choice`` (str, the verdict letter the recording read, ``""`` none, null: read it
        from ``output``), ``why`` (str, the failure message where ``output`` is null),
        ``verdict_mode`` (str, a row answered with its output: ``Result.verdict_mode``) and
        ``probs`` (list of struct ``{key: str, value: f64}``, the letters' probabilities,
        or null). ``context``: a :class:`~voirdire.judges.base.JudgeContext`.

        Raises:
            ConfigError: nothing recorded for that judge.
        """


class Expands(abc.ABC):
    """One ``[[judges]]`` entry of this backend may stand for several judges."""

    @classmethod
    @abc.abstractmethod
    def expand(
        cls,
        settings: Mapping[str, Any],
        *,
        judge: str,
        benchmark: str,
        data_dir: str | os.PathLike[str],
        spec: Any = None,
    ) -> list[tuple[str, dict[str, Any]]] | None:
        """The judges one entry stands for (replay's ``recorded = "*"``: one per recorded
        output found), as ``(name, settings update)`` pairs; None: the entry is one judge.
        ``settings``: the entry's backend keys as written; ``judge``: the entry's name;
        ``benchmark``: the release name (``MTBench``); ``spec``: the job's ``[benchmark]``
        table.

        Raises:
            ConfigError: the entry stands for no judge at all (naming where it looked).
        """


class QualitySource(abc.ABC):
    """The backend knows which candidate of an instance is truly better:
    ``benchmark.quality = "<backend>:<argument>"``."""

    @classmethod
    @abc.abstractmethod
    def quality(
        cls,
        arg: str,
        inst: Any,
        *,
        bench: Any,
        judges: Mapping[str, Any],
        data_dir: str,
    ) -> Any:
        """``inst`` (the instances, a polars DataFrame) with columns ``better`` and
        ``worst`` (str, null where unknown); ``judges``: the job's resolved judges by label.

        Raises:
            ConfigError: ``arg`` names nothing the backend knows.
        """

    @classmethod
    def quality_identity(cls, arg: str, judges: Mapping[str, Any]) -> str | None:
        """What the source ``<backend>:<arg>`` is, for ids, when the source string does not
        say it (a judge label standing for the judge's identity hash); None (the default):
        the source string itself."""
        return None


class Rewrites:
    """A ``[[rewriters]]`` entry may name this backend: it generates free text, or names
    the backend that rewrites for it.

    ``rewrite_biases``: as the rewriter, the answer biases it can rewrite (None: every one).
    """

    rewrite_biases: ClassVar[tuple[str, ...] | None] = None

    @classmethod
    def rewriter(cls) -> type[JudgeBackend[Any]]:
        """The backend that rewrites answers for an entry naming this one: itself by
        default (a model answers a rewrite prompt as it is); another for one that does not
        generate text (the simulated judge: the simulated rewriter)."""
        return cls  # type: ignore[return-value]  # a capability is mixed into a JudgeBackend


class RewriterOnly(Rewrites):
    """The backend only rewrites answers: refused as a ``[[judges]]`` entry."""


class Estimates(abc.ABC, Generic[S]):
    """The backend costs something per query, and says how much before a run."""

    @classmethod
    @abc.abstractmethod
    def estimate(
        cls, settings: S, sampling: Sampling, prompts: Iterable[str]
    ) -> dict[str, Any]:
        """Dry-run estimate of tokens and cost over the prompt strings to be sent (see
        :meth:`voirdire.judges.api.preflight.APIPreflight.estimate` for the keys)."""


class OwnComparisonMode(abc.ABC, Generic[S]):
    """The judge's units may have a comparison mode other than the job's."""

    @classmethod
    @abc.abstractmethod
    def comparison_mode(cls, settings: S) -> str | None:
        """The comparison mode of this judge's units (a replayed judge that scored each
        answer: ``"score"``); ``None``: the job's ``comparison.mode``."""


class UsesKey(abc.ABC, Generic[S]):
    """The backend reads a secret (an API key) from an environment variable, whose value is
    kept out of everything voirdire writes (:mod:`voirdire.engine.secrets`)."""

    @classmethod
    @abc.abstractmethod
    def key_env(cls, settings: S) -> str | None:
        """The environment variable holding the key (``None``: none is needed)."""


class Counts:
    """The backend keeps counters of its own (``stats``: name -> number, e.g. the vLLM
    judge's requests and prompt tokens), which its worker reports."""

    stats: dict[str, int]


def needs_prompt(backend: type) -> bool:
    """Whether the backend's queries must carry the prompt text (not :class:`PromptFree`)."""
    return not issubclass(backend, PromptFree)


def shares_workers(backend: type, settings: Any) -> bool:
    """Whether judges of ``backend`` with ``settings`` take turns on shared workers
    (:class:`SharesWorkers`)."""
    return issubclass(backend, SharesWorkers) and backend.shares_workers(settings)


def engine_key(backend: type, settings: Any, context: Any) -> str | None:
    """The engine a judge of ``backend`` with ``settings`` shares with judges of the same
    key (:class:`SharesEngine`), or ``None``."""
    if not issubclass(backend, SharesEngine):
        return None
    return backend.engine_key(settings, context)


def rewrite_biases(backend: type) -> tuple[str, ...] | None:
    """The answer biases ``backend`` can rewrite (None: every one, or not a rewriter)."""
    return backend.rewrite_biases if issubclass(backend, Rewrites) else None


def comparison_mode(backend: type, settings: JudgeSettings) -> str | None:
    """The comparison mode of a judge's units when its backend sets one
    (:class:`OwnComparisonMode`), else ``None`` (the job's)."""
    return (
        backend.comparison_mode(settings)
        if issubclass(backend, OwnComparisonMode)
        else None
    )
