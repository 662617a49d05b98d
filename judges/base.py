"""The judge interface: a batch of queries in, raw outputs or recorded failures out.

Every backend (replay, OpenAI, Anthropic, OpenAI-compatible, vLLM, simulated) implements
:class:`JudgeBackend`. The scheduler hosts each backend instance inside a Ray actor
(:mod:`voirdire.engine.worker`) and calls :meth:`JudgeBackend.judge` with batches. A backend
never raises for a single query: a query that cannot be answered comes back as a
:class:`Result` with ``failure`` set to a :class:`FailureClass` value and a message. An
exception out of ``judge`` means the whole batch failed (the scheduler retries it on
another attempt, then records every unit of it as failed).

Backends register by name in :data:`BACKENDS` (``@register``, one decorator); a job names
them by that name, or by an import path ``"module.path:ClassName"`` for a user's own
backend. What only some backends can do is a capability: :mod:`voirdire.judges.capabilities`.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from voirdire.core import FailureClass
from voirdire.import_paths import describe
from voirdire.registry import Registry


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
    ``None`` for :class:`~voirdire.judges.capabilities.PromptFree` backends; ``system`` the benchmark's system
    turn sent before it (a user's own pairs; ``None``: none), after a judge's own
    ``system_prompt`` where it has one (:func:`system_text`). ``shown`` lists the models in slot
    order; ``option_mode`` the number of options (letters) offered; ``repetition`` is
    1-based. ``query_id`` is equal for all repetitions of the same prompt, so a backend may
    answer them together (``n`` samples in one request). ``perturbation_kind`` and
    ``perturbation_param`` are the bias type and parameter value of the unit's
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
    def failed(
        cls, unit_id: str, failure: FailureClass | str, message: str, **kw: Any
    ) -> Result:
        """A recorded failure with its class and a human-readable reason."""
        return cls(
            unit_id=unit_id,
            failure=FailureClass(failure).value,
            failure_message=message,
            **kw,
        )

    def as_row(self) -> dict[str, Any]:
        """The result as a dict keyed by :data:`voirdire.schema.RESULT_COLUMNS`."""
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


S = TypeVar("S", bound=JudgeSettings)
B = TypeVar("B", bound="JudgeBackend[Any]")


class JudgeBackend(abc.ABC, Generic[S]):
    """A judge backend, generic over its settings model ``S``: a subclass names it
    (``class OpenAIJudge(JudgeBackend[APISettings])``), sets ``name`` and ``Settings``
    and implements :meth:`judge`; ``@register`` (:data:`BACKENDS`) makes it a job's
    ``backend = "<name>"``.

    This is the whole interface the engine needs of every backend. What only some backends
    can do (answer without the prompt, replay recordings, expand one entry into several
    judges, serve as a quality source, rewrite answers, estimate costs, set their own
    comparison mode) is an optional capability: a small class of
    :mod:`voirdire.judges.capabilities` the backend also derives from, which the engine
    tests with ``issubclass`` (``docs/contributing.md``).

    Class attributes:
        name: registry name used in job files (``backend = "replay"``); it enters the
            judge's identity.
        aliases: further names a job file may use for it.
        Settings: the pydantic model (``S``) validating the judge's backend-specific keys.
        identity_exclude: settings that do not change what the judge answers (connection
            details, concurrency), left out of :meth:`identity`.
        identity_if_set: settings added after a release, in :meth:`identity` only when they
            differ from their default (judges that do not use them keep their unit ids).

    Classmethods: :meth:`identity`, :meth:`preflight`, :meth:`check_secrets`,
    :meth:`worker_options`, :meth:`workers`, :meth:`concurrency`; methods :meth:`judge`,
    :meth:`aclose`.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    Settings: type[S]
    identity_exclude: ClassVar[tuple[str, ...]] = ()
    identity_if_set: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: S, context: JudgeContext) -> None:
        self.settings: S = settings
        self.context = context

    @classmethod
    def identity(cls, settings: S, sampling: Sampling) -> dict[str, Any]:
        """What makes this judge's answers what they are: enters every unit id.

        The default is the backend name, every setting except those listed in
        ``identity_exclude``, and the sampling settings. Settings named in
        ``identity_if_set`` enter only when they differ from their default.
        """
        data = settings.model_dump(mode="json", exclude=set(cls.identity_exclude))
        for key in cls.identity_if_set:
            if getattr(settings, key) == type(settings).model_fields[key].default:
                data.pop(key, None)
        return {
            "backend": cls.name,
            "settings": data,
            "sampling": sampling.model_dump(mode="json"),
        }

    @classmethod
    def preflight(cls, settings: S, context: JudgeContext) -> None:
        """Checks run in the driver before anything is sent (keys present, files there).

        Raises:
            ConfigError: naming the judge and what is missing.
        """

    @classmethod
    def check_secrets(cls, settings: S, context: JudgeContext) -> None:
        """Checks of secrets (API keys in the environment) run in the driver before anything
        is sent; a dry run, which sends nothing, turns a failure into a warning.

        Raises:
            ConfigError: naming the judge and the missing variable.
        """

    @classmethod
    def worker_options(cls, settings: S) -> dict[str, Any]:
        """Ray actor options for one worker (``num_cpus``, ``num_gpus``, ``resources``...)."""
        return {"num_cpus": 0.5}

    @classmethod
    def workers(cls, settings: S) -> int:
        """How many worker actors the judge's pool has."""
        return int(getattr(settings, "workers", 1) or 1)

    @classmethod
    def concurrency(cls, settings: S) -> int:
        """How many batches one worker may have in flight at once."""
        return int(getattr(settings, "concurrency", 2) or 2)

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


def _check_backend(obj: Any) -> None:
    """Refuse anything but a :class:`JudgeBackend` subclass with a name and a ``Settings``
    model (``TypeError``)."""
    if not (isinstance(obj, type) and issubclass(obj, JudgeBackend)):
        raise TypeError(f"{describe(obj)} is not a JudgeBackend subclass")
    if not isinstance(getattr(obj, "name", None), str):
        raise TypeError(f"{obj.__name__} has no name")
    settings = getattr(obj, "Settings", None)
    if not (isinstance(settings, type) and issubclass(settings, JudgeSettings)):
        raise TypeError(f"{obj.__name__}.Settings is not a JudgeSettings subclass")


def _name_of(cls: type[JudgeBackend]) -> str:
    return cls.name


#: The judge backends: a job's ``backend = "<name>"`` (or ``"module:Class"``) looked up here.
#: A backend registers with ``@BACKENDS.register`` (its ``name``; ``aliases`` as further
#: names); the built-in ones are imported on first use, each naming the optional dependency
#: group it needs (``pip install 'voirdire[<extra>]'``).
BACKENDS: Registry[type[JudgeBackend]] = Registry(
    "judge backend",
    check=_check_backend,
    name_of=_name_of,
    entry_points="voirdire.backends",
)
_BUILTINS = (
    ("replay", "voirdire.judges.replay:ReplayJudge", None),
    ("simulated", "voirdire.judges.simulated:SimulatedJudge", None),
    ("openai", "voirdire.judges.api.openai:OpenAIJudge", "api"),
    ("anthropic", "voirdire.judges.api.anthropic:AnthropicJudge", "api"),
    (
        "openai_compatible",
        "voirdire.judges.api.compatible:OpenAICompatibleJudge",
        "api",
    ),
    ("vllm", "voirdire.judges.vllm_judge:VllmJudge", "vllm"),
    ("template_rewriter", "voirdire.judges.rewriters:TemplateRewriter", None),
    ("template", "voirdire.judges.rewriters:TemplateRewriter", None),
    ("simulated_rewriter", "voirdire.judges.rewriters:SimulatedRewriter", None),
)
for _name, _target, _extra in _BUILTINS:
    BACKENDS.builtin(_name, _target, extra=_extra)


def register(cls: type[B]) -> type[B]:
    """Class decorator: make a backend available under ``cls.name`` and its ``aliases``
    (:meth:`voirdire.registry.Registry.register` of :data:`BACKENDS`).

    Raises:
        TypeError: ``cls`` is not a named JudgeBackend subclass.
        ValueError: another backend has that name.
    """
    BACKENDS.register(aliases=tuple(cls.aliases))(cls)
    return cls


def known_backends() -> list[str]:
    """Names accepted as ``backend`` in a job file (sorted; nothing is imported)."""
    return sorted(BACKENDS.names())


def get_backend(name: str) -> type[JudgeBackend]:
    """The backend class for a registry name or a ``"module:Class"`` import path.

    Raises:
        ConfigError: unknown name (the known ones listed), a built-in backend whose
            optional dependency is missing (naming the extra to install), or an import
            path that does not name a JudgeBackend.
    """
    return BACKENDS.get(name)


def backend_ref(cls: type[JudgeBackend]) -> str:
    """How a worker process finds ``cls``: its name where that is a built-in entry naming
    it, else its import path ``"module:Class"`` (a backend registered by decorator in the
    driver is found in the worker by importing its module, which registers it again)."""
    if any(cls.name == n for n, _, _ in _BUILTINS) and BACKENDS.find(cls.name) is cls:
        return cls.name
    return f"{cls.__module__}:{cls.__qualname__}"
