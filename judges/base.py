"""The judge interface: a batch of queries in, raw outputs or recorded failures out.

Every backend (replay, OpenAI, Anthropic, OpenAI-compatible, vLLM, simulated) implements
:class:`JudgeBackend`. The scheduler hosts each backend instance inside a Ray actor
(:mod:`voirdire.engine.worker`) and calls :meth:`JudgeBackend.judge` with batches. A backend
never raises for a single query: a query that cannot be answered comes back as a
:class:`Result` with ``failure`` set to a :class:`FailureClass` value and a message. An
exception out of ``judge`` means the whole batch failed (the scheduler retries it on
another attempt, then records every unit of it as failed).

Backends register by name with :func:`register`; a job names them by that name, or by an
import path ``"module.path:ClassName"`` for a user's own backend.
"""

from __future__ import annotations

import abc
import importlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict

from voirdire.core import ConfigError, FailureClass, import_object


class Sampling(BaseModel):
    """Sampling settings shared by a job's judges (a judge may override them).

    ``temperature`` is the softmax temperature, ``max_tokens`` the cap on generated tokens,
    ``seed`` the provider's sampling seed where supported.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    top_p: float | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """One query sent to a judge.

    ``prompt`` is the full judge prompt (sent as one user message, as the release did), or
    ``None`` for backends with ``needs_prompt = False``; ``system`` the benchmark's system
    turn sent before it (a user's own pairs; ``None``: none), after a judge's own
    ``system_prompt`` where it has one (:func:`system_text`). ``shown`` lists the models in slot
    order; ``option_mode`` the number of options (letters) offered; ``repetition`` is
    1-based. ``query_id`` is equal for all repetitions of the same prompt, so a backend may
    answer them together (``n`` samples in one request). ``perturbation_kind`` and
    ``perturbation_param`` are the bias kind and parameter value of the unit's
    perturbation (the work unit's columns of the same names; ``None`` for the control; a
    rewriter's query carries those of the rewrite) and ``target_slot`` the position letter
    of the perturbation's target (``None`` without one); backends that read the prompt
    need none of them.
    ``control_query_id`` is the query id of the same prompt unperturbed (``None`` for the
    control): the simulated judge draws its noise from it, so a judge that ignores the
    perturbation answers the perturbed prompt exactly as the control.
    """

    unit_id: str
    query_id: str
    benchmark: str
    question_id: str
    shown: tuple[str, ...]
    repetition: int
    option_mode: int
    mode: str = "pairwise"
    prompt: str | None = None
    system: str | None = None
    perturbation_kind: str | None = None
    perturbation_param: str | None = None
    target_slot: str | None = None
    control_query_id: str | None = None


def system_text(judge_system: str | None, query_system: str | None) -> str | None:
    """The system turn sent with a query: the judge's ``system_prompt`` setting and the
    benchmark's system turn, joined by a blank line (either alone; ``None`` without both)."""
    parts = [x for x in (judge_system, query_system) if x]
    return "\n\n".join(parts) if parts else None


@dataclass(slots=True)
class Result:
    """What a judge returned for one query.

    Exactly one of ``output`` and ``failure`` is set, except for backends that decide the
    verdict themselves (structured or log-probability modes, a replay that reads its
    release's outputs by the release's own rules), which may set ``choice`` (a position
    letter, or ``""``: the backend read no verdict, the text is not read again) and
    ``option_probs`` (letter -> probability) next to ``output``.
    Units: ``latency_s`` seconds, tokens as counted by the provider, ``cost_usd`` USD.
    """

    unit_id: str
    output: str | None = None
    failure: str | None = None
    failure_message: str | None = None
    choice: str | None = None
    option_probs: dict[str, float] | None = None
    verdict_mode: str = "free"
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False

    @classmethod
    def failed(cls, unit_id: str, failure: FailureClass | str, message: str, **kw: Any) -> "Result":
        """A recorded failure with its class and a human-readable reason."""
        return cls(unit_id=unit_id, failure=FailureClass(failure).value, failure_message=message, **kw)

    def as_row(self) -> dict[str, Any]:
        """The result as a dict keyed by :data:`voirdire.engine.schema.RESULT_COLUMNS`."""
        return {
            "unit_id": self.unit_id,
            "output": self.output,
            "failure": self.failure,
            "failure_message": self.failure_message,
            "choice": self.choice,
            "option_probs": self.option_probs,
            "verdict_mode": self.verdict_mode,
            "latency_s": self.latency_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
        }


class JudgeSettings(BaseModel):
    """Base of every backend's settings model (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class JudgeContext:
    """What a backend may need to know about the job it serves.

    ``data_dir`` is the benchmark data location (a directory), ``benchmark`` the benchmark's
    name as in the units (``"MTBench"``), ``output_dir`` the job's output directory (for
    caches), ``sampling`` the effective sampling settings for this judge, ``driver_pid`` the
    process id of the driver that runs the job, ``concurrency`` the judge's resolved
    ``concurrency`` (requests in flight per worker, for backends that fan a batch out) and
    ``identity_hash`` the judge's identity hash (as in its unit ids). ``verdict_cue`` and
    ``verdict_closing`` are the benchmark's answer format around the verdict letter
    (:attr:`voirdire.benchmarks.base.Benchmark.verdict_cue`: MT-Bench ``"[["``/``"]]"``,
    DevBench ``"Choice: "``/``""``), for backends that write or constrain the verdict
    themselves; ``None`` when unknown.
    """

    judge: str
    benchmark: str
    data_dir: str | None
    output_dir: str | None
    sampling: Sampling = field(default_factory=Sampling)
    driver_pid: int | None = None
    concurrency: int | None = None
    identity_hash: str | None = None
    verdict_cue: str | None = None
    verdict_closing: str = ""


class JudgeBackend(abc.ABC):
    """A judge backend. Subclasses set ``name``, ``Settings`` and implement ``judge``.

    What a backend can do is said by its class attributes and classmethods, so the engine
    names no backend (``docs/contributing.md``):

    Class attributes:
        name: registry name used in job files (``backend = "replay"``); it enters the
            judge's identity.
        aliases: further names a job file may use for it.
        Settings: the pydantic model validating the judge's backend-specific keys.
        needs_prompt: whether queries must carry the prompt text (replay does not).
        can_judge: whether it may be a ``[[judges]]`` entry (rewriters only: False).
        is_recording: it answers from recorded outputs of the unperturbed prompts (replay),
            so it cannot answer a perturbation.
        rewrite_kinds: as a rewriter, the answer kinds it can rewrite (None: every one);
            whether it is one at all: :meth:`rewriter`.

    Classmethods: :meth:`identity`, :meth:`preflight`, :meth:`check_secrets`,
    :meth:`estimate`, :meth:`worker_options`, :meth:`workers`, :meth:`concurrency`,
    :meth:`rewriter` (the backend that rewrites answers for a ``[[rewriters]]`` entry
    naming this one), :meth:`expand` (one judge entry standing for several: replay's
    ``recorded = "*"``), :meth:`quality` and :meth:`quality_identity` (a quality source
    ``benchmark.quality = "<backend>:<argument>"``).
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    Settings: ClassVar[type[JudgeSettings]] = JudgeSettings
    needs_prompt: ClassVar[bool] = True
    can_judge: ClassVar[bool] = True
    is_recording: ClassVar[bool] = False
    rewrite_kinds: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, settings: JudgeSettings, context: JudgeContext) -> None:
        self.settings = settings
        self.context = context

    @classmethod
    def identity(cls, settings: JudgeSettings, sampling: Sampling) -> dict[str, Any]:
        """What makes this judge's answers what they are: enters every unit id.

        The default is the backend name, every setting except those listed in
        ``identity_exclude`` (connection details, concurrency), and the sampling settings.
        Settings named in ``identity_if_set`` (added after a release) enter only when they
        differ from their default, so judges that do not use them keep their unit ids.
        """
        data = settings.model_dump(mode="json", exclude=set(getattr(cls, "identity_exclude", ())))
        for key in getattr(cls, "identity_if_set", ()):
            if getattr(settings, key) == type(settings).model_fields[key].default:
                data.pop(key, None)
        return {"backend": cls.name, "settings": data, "sampling": sampling.model_dump(mode="json")}

    @classmethod
    def preflight(cls, settings: JudgeSettings, context: JudgeContext) -> None:
        """Checks run in the driver before anything is sent (keys present, files there).

        Raises:
            ConfigError: naming the judge and what is missing.
        """

    @classmethod
    def check_secrets(cls, settings: JudgeSettings, context: JudgeContext) -> None:
        """Checks of secrets (API keys in the environment) run in the driver before anything
        is sent; a dry run, which sends nothing, turns a failure into a warning.

        Raises:
            ConfigError: naming the judge and the missing variable.
        """

    @classmethod
    def estimate(cls, settings: JudgeSettings, sampling: Sampling, prompts: Any) -> dict[str, Any] | None:
        """Dry-run estimate of tokens and cost over an iterable of prompt strings, or ``None``
        when the backend costs nothing per query (see :meth:`APIJudge.estimate` for keys)."""
        return None

    @classmethod
    def comparison_mode(cls, settings: JudgeSettings) -> str | None:
        """The comparison mode this judge's units have when it is not the job's (a replayed
        judge that scored each answer: ``"score"``); ``None``: the job's ``comparison.mode``."""
        return None

    @classmethod
    def worker_options(cls, settings: JudgeSettings) -> dict[str, Any]:
        """Ray actor options for one worker (``num_cpus``, ``num_gpus``, ``resources``...)."""
        return {"num_cpus": 0.5}

    @classmethod
    def workers(cls, settings: JudgeSettings) -> int:
        """How many worker actors the judge's pool has."""
        return int(getattr(settings, "workers", 1) or 1)

    @classmethod
    def concurrency(cls, settings: JudgeSettings) -> int:
        """How many batches one worker may have in flight at once."""
        return int(getattr(settings, "concurrency", 2) or 2)

    @classmethod
    def rewriter(cls) -> "type[JudgeBackend] | None":
        """The backend that rewrites answers when a ``[[rewriters]]`` entry names this one:
        itself for a backend that generates free text, another for one that does not (the
        simulated judge: the simulated rewriter), None when it cannot rewrite (replay)."""
        return None

    @classmethod
    def expand(cls, settings: Mapping[str, Any], *, judge: str, benchmark: str, data_dir: str | os.PathLike[str],
               spec: Any = None) -> list[tuple[str, dict[str, Any]]] | None:
        """The judges one entry of this backend stands for (replay's ``recorded = "*"``: one
        per recorded output found), as ``(name, settings update)`` pairs; None: the entry is
        one judge. ``judge``: the entry's name; ``benchmark``: the release name
        (``MTBench``); ``spec``: the job's ``[benchmark]`` table.

        Raises:
            ConfigError: the entry stands for no judge at all (naming where it looked).
        """
        return None

    @classmethod
    def quality(cls, arg: str, inst: Any, *, bench: Any, judges: Mapping[str, Any], data_dir: str) -> Any:
        """As the quality source ``benchmark.quality = "<backend>:<arg>"``: ``inst`` (the
        instances, a polars DataFrame) with columns ``better`` and ``worst`` (str, null
        where unknown); ``judges``: the job's resolved judges by label.

        Raises:
            ConfigError: the backend is no quality source, or ``arg`` names nothing it knows.
        """
        raise ConfigError(f"judge backend {cls.name!r} is no quality source")

    @classmethod
    def quality_identity(cls, arg: str, judges: Mapping[str, Any]) -> str | None:
        """What the quality source ``<backend>:<arg>`` is, for ids, when the source string
        does not say it (a judge label standing for the judge's identity hash); None: the
        source string itself."""
        return None

    @abc.abstractmethod
    async def judge(self, queries: list[Query]) -> list[Result]:
        """Answer a batch: one :class:`Result` per query, in any order, none missing."""

    async def aclose(self) -> None:
        """Release clients, engines and files. Called when the worker is shut down."""


def option_probabilities(logprobs: dict[str, float]) -> dict[str, float]:
    """Softmax of option log-probabilities: letter -> probability, summing to 1 (the
    ``option_probs`` of a log-probability verdict, vLLM's or an API's).

    Letters whose log-probability is ``-inf`` get 0 (all ``-inf``: uniform).

    Raises:
        ValueError: an empty dict.
    """
    if not logprobs:
        raise ValueError("no option log-probabilities")
    top = max(logprobs.values())
    if top == -math.inf:
        return {k: 1.0 / len(logprobs) for k in logprobs}
    w = {k: math.exp(v - top) for k, v in logprobs.items()}
    z = sum(w.values())
    return {k: v / z for k, v in w.items()}


_REGISTRY: dict[str, type[JudgeBackend]] = {}


class Builtin(NamedTuple):
    """A backend shipped with voirdire: its module under ``voirdire.judges`` and the
    optional dependency group (``pip install 'voirdire[<extra>]'``) it needs, if any."""

    module: str
    extra: str | None = None


#: Backends shipped with voirdire, imported on first use.
_BUILTIN = {
    "replay": Builtin("replay"),
    "simulated": Builtin("simulated"),
    "openai": Builtin("api.openai", "api"),
    "anthropic": Builtin("api.anthropic", "api"),
    "openai_compatible": Builtin("api.compatible", "api"),
    "vllm": Builtin("vllm_judge", "vllm"),
    "template_rewriter": Builtin("rewriters"),
    "template": Builtin("rewriters"),
    "simulated_rewriter": Builtin("rewriters"),
}


def register(cls: type[JudgeBackend]) -> type[JudgeBackend]:
    """Class decorator: make a backend available under ``cls.name`` and its ``aliases``."""
    for name in (cls.name, *cls.aliases):
        _REGISTRY[name] = cls
    return cls


def known_backends() -> list[str]:
    """Names accepted as ``backend`` in a job file."""
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def get_backend(name: str) -> type[JudgeBackend]:
    """The backend class for a registry name or a ``"module:Class"`` import path.

    Raises:
        ConfigError: unknown name, a built-in backend whose optional dependency is missing
            (naming the extra to install), or an import path that does not name a
            JudgeBackend.
    """
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _BUILTIN:
        builtin = _BUILTIN[name]
        try:
            importlib.import_module(f"voirdire.judges.{builtin.module}")
        except ImportError as exc:
            how = f"; install it with: pip install 'voirdire[{builtin.extra}]'" if builtin.extra else ""
            raise ConfigError(
                f"judge backend {name!r} needs an optional dependency that is not installed ({exc}){how}"
            ) from exc
        if name in _REGISTRY:
            return _REGISTRY[name]
    if ":" in name:
        obj = import_object(name, "judge backend")
        if not (isinstance(obj, type) and issubclass(obj, JudgeBackend)):
            raise ConfigError(f"judge backend {name!r} is not a JudgeBackend subclass")
        return obj
    raise ConfigError(f"unknown judge backend {name!r}; known backends: {', '.join(known_backends())}")
