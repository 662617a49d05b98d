"""Settings of a vLLM judge, and the token budgets they imply (no vLLM import here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator

from voirdire.judges.base import JudgeContext, JudgeSettings
from voirdire.judges.verdict_modes import (
    VERDICT_TOKENS,
    VerdictLetters,
    VerdictMode,
)

#: verdict cue and closing text when neither the judge nor the benchmark names one
DEFAULT_VERDICT_FORMAT = ("Verdict: ", "")


class VllmSettings(JudgeSettings):
    """Settings of a vLLM judge (keys of its ``[[judges]]`` table besides name/backend/
    workers/concurrency/sampling).

    Attributes:
        model: Hugging Face model name, local directory, GGUF file (``*.gguf``) or the name
            of a registry-shipped GGUF model (``"smollm2-135m-instruct"``; see
            :mod:`voirdire.judges.vllm_judge.gguf`).
        tokenizer: tokenizer name or directory (default: the model's).
        revision: model revision (commit, branch or tag).
        dtype: weights and activations dtype (``auto``, ``bfloat16``, ``float16``, ``float32``);
            ``auto`` on a CPU is ``float32``, or ``bfloat16`` once a probe engine ran in it
            (:mod:`voirdire.judges.vllm_judge.dtype`).
        gguf_load: how a GGUF model is loaded: ``convert`` (once, into a cached safetensors
            directory), ``native`` (vLLM reads the file; GPUs with a vLLM that reads GGUF,
            elsewhere a one-line error) or ``auto`` (native where vLLM can, else convert).
        chat_template: a Jinja chat template replacing the tokenizer's (for models that
            ship none).
        max_model_len: context window in tokens (default: the model's).
        tensor_parallel_size: GPUs per replica (GPU only; > 1 uses a placement group).
        gpu_memory_utilization: share of GPU memory vLLM may use, in (0, 1]; on the CPU the
            share of the node's RAM it reserves (weights, activations and KV cache).
        device: ``auto`` (GPU when the Ray cluster has GPUs), ``gpu`` or ``cpu``.
        num_cpus: Ray CPUs per replica actor; on the CPU also the cores its engine's threads
            are bound to, distinct from other voirdire engines on the machine
            (:mod:`voirdire.judges.vllm_judge.cpu`).
        verdict_mode: ``free``, ``structured`` or ``logprobs`` (see :mod:`voirdire.judges.vllm_judge`).
        reasoning_tokens: cap, in tokens, on free reasoning before a constrained verdict
            (structured/logprobs); ``None``: the sampling ``max_tokens`` in structured mode,
            0 in logprobs mode.
        verdict_cue: text placed before the constrained letter (default: the benchmark's
            own cue, :attr:`voirdire.benchmarks.base.Benchmark.verdict_cue`).
        verdict_letters: what the judge writes for each position in a constrained verdict,
            one character per position (``"ab"`` for a prompt's ``Output (a)``); default the
            position letters ``A``, ``B``, ``C``. Mapped back to position letters.
        system_prompt: a system turn before the judge prompt (``None``: the prompt is the
            single user turn, as the release did).
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        enforce_eager: skip graph capture/compilation (faster start, slower decode).
        max_num_seqs: cap on sequences the engine runs at once (default vLLM's).
        engine_kwargs: further ``vllm.AsyncEngineArgs`` keyword arguments.
        placement_timeout_s: seconds to wait for a tensor-parallel placement group.
        share_engine: judges of one job whose engine settings are the same (model,
            tokenizer, dtype, context window, engine options, device, CPUs, the sampling
            seed) take turns on one engine, started once, rather than each starting its
            own at the same time; ``False``: this judge starts its own.
    """

    model: str
    tokenizer: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    gguf_load: Literal["auto", "convert", "native"] = "auto"
    chat_template: str | None = None
    max_model_len: int | None = Field(default=None, ge=16)
    tensor_parallel_size: int = Field(default=1, ge=1, le=64)
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0)
    device: Literal["auto", "gpu", "cpu"] = "auto"
    num_cpus: float = Field(default=1.0, ge=0.0)
    verdict_mode: VerdictMode = "free"
    reasoning_tokens: int | None = Field(default=None, ge=0)
    verdict_cue: str | None = None
    verdict_letters: VerdictLetters = None
    system_prompt: str | None = None
    enable_prefix_caching: bool = True
    enforce_eager: bool = False
    max_num_seqs: int | None = Field(default=None, ge=1)
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    placement_timeout_s: float = Field(default=600.0, gt=0)
    share_engine: bool = True

    @model_validator(mode="after")
    def _check(self) -> VllmSettings:
        if self.device == "cpu" and self.tensor_parallel_size > 1:
            raise ValueError(
                "tensor_parallel_size > 1 needs GPUs (device = 'gpu' or 'auto')"
            )
        reserved = {
            "model",
            "tokenizer",
            "dtype",
            "max_model_len",
            "tensor_parallel_size",
            "seed",
        }
        clash = sorted(reserved & set(self.engine_kwargs))
        if clash:
            raise ValueError(
                f"engine_kwargs may not set {', '.join(clash)}; use the judge's own keys"
            )
        return self


def verdict_format(settings: VllmSettings, context: JudgeContext) -> tuple[str, str]:
    """``(cue, closing)`` around a constrained verdict letter: the judge's ``verdict_cue``
    (closing ``""``), else the benchmark's (``context.verdict_cue``/``verdict_closing``,
    MT-Bench ``("[[", "]]")``, DevBench ``("Choice: ", "")``), else ``("Verdict: ", "")``."""
    if settings.verdict_cue is not None:
        return settings.verdict_cue, ""
    if context.verdict_cue is not None:
        return context.verdict_cue, context.verdict_closing
    return DEFAULT_VERDICT_FORMAT


def reasoning_tokens(settings: VllmSettings, max_tokens: int) -> int:
    """Tokens of free reasoning before a constrained verdict: 0 in free mode; else
    ``reasoning_tokens``, defaulting to ``max_tokens`` (structured) or 0 (logprobs)."""
    if settings.verdict_mode == "free":
        return 0
    if settings.reasoning_tokens is not None:
        return settings.reasoning_tokens
    return max_tokens if settings.verdict_mode == "structured" else 0


def generation_budget(
    settings: VllmSettings,
    max_tokens: int,
    cue: str,
    encode: Callable[[str], list[int]] | None = None,
) -> int:
    """Tokens a mode may add after the prompt: ``max_tokens`` in free mode; reasoning, a
    separator, the cue (``encode``'s token count, else its characters as an upper bound)
    and the verdict in the constrained modes."""
    if settings.verdict_mode == "free":
        return max_tokens
    cue_tokens = len(encode(cue)) if encode is not None else len(cue)
    verdict = VERDICT_TOKENS if settings.verdict_mode == "structured" else 1
    return reasoning_tokens(settings, max_tokens) + 1 + cue_tokens + verdict


__all__ = [
    "DEFAULT_VERDICT_FORMAT",
    "VllmSettings",
    "generation_budget",
    "reasoning_tokens",
    "verdict_format",
]
