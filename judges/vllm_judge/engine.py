"""Engine setup and resources of a vLLM judge replica: device, Ray placement, tokenizer,
the ``AsyncLLM`` engine, and how the repetitions of a prompt become engine requests.

vLLM and transformers are imported inside the functions (in the worker): importing this
module never needs them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voirdire.judges.base import JudgeContext, Query
from voirdire.judges.vllm_judge.settings import VllmSettings


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
        plans.append(
            RequestPlan(qid, tuple(qs), 1 if greedy else k, k if greedy else 1)
        )
    return plans


def resolve_device(settings: VllmSettings) -> str:
    """``gpu`` or ``cpu``: the setting, or for ``auto`` whether the Ray cluster has GPUs."""
    if settings.device != "auto":
        return settings.device
    try:
        import ray

        if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) > 0:
            return "gpu"
    except Exception:  # noqa: BLE001 - no cluster: fall back to the CPU
        pass
    return "cpu"


def looks_local(path: str) -> bool:
    """Whether a model/tokenizer name is a local path rather than a Hub name."""
    return path.startswith(("/", ".", "~")) or Path(path).exists()


def load_tokenizer(settings: VllmSettings) -> Any:
    """The judge's tokenizer (``transformers.AutoTokenizer``; the model's by default; a
    GGUF file's own when the model is one), with ``chat_template`` if set."""
    from transformers import AutoTokenizer

    name = settings.tokenizer or settings.model
    if name.lower().endswith(".gguf"):
        path = Path(name).expanduser()
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    else:
        tok = AutoTokenizer.from_pretrained(name, revision=settings.revision)
    if settings.chat_template:
        tok.chat_template = settings.chat_template
    return tok


def worker_options(settings: VllmSettings) -> dict[str, Any]:
    """Ray resources of one replica: ``num_cpus``; on GPUs ``num_gpus = 1`` when
    ``tensor_parallel_size == 1`` (larger sizes reserve a placement group instead)."""
    opts: dict[str, Any] = {"num_cpus": settings.num_cpus}
    if resolve_device(settings) == "gpu":
        opts["num_gpus"] = 1 if settings.tensor_parallel_size == 1 else 0
    return opts


def reserve_placement_group(settings: VllmSettings, judge: str) -> Any:
    """A placement group of ``tensor_parallel_size`` bundles ``{"GPU": 1, "CPU": 1}`` on
    one node, owned by the calling actor (Ray removes it when the actor dies).

    Raises:
        RuntimeError: the cluster could not provide it within ``placement_timeout_s``.
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    tp = settings.tensor_parallel_size
    pg = placement_group(
        [{"GPU": 1, "CPU": 1}] * tp,
        strategy="STRICT_PACK",
        name=f"voirdire-vllm-{judge}-{uuid.uuid4().hex[:8]}",
    )
    try:
        ray.get(pg.ready(), timeout=settings.placement_timeout_s)
    except Exception as exc:
        remove_placement_group(pg)
        raise RuntimeError(
            f"judge {judge!r}: no node offered {tp} GPUs (tensor_parallel_size) within "
            f"{settings.placement_timeout_s:.0f} s; cluster resources: {ray.cluster_resources()}"
        ) from exc
    return pg


def start_engine(settings: VllmSettings, context: JudgeContext) -> tuple[Any, int, Any]:
    """Start the replica's ``AsyncLLM`` engine (prefix caching as set, the sampling seed
    as the engine seed, a placement group for tensor parallelism on GPUs; on the CPU its
    threads bound to ``num_cpus`` cores of its own, :mod:`~voirdire.judges.vllm_judge.cpu`).

    Returns:
        ``(engine, max_model_len, placement_group or None)``; ``max_model_len`` in tokens.
    """
    if resolve_device(settings) == "cpu":  # before vLLM reads its environment
        from voirdire.judges.vllm_judge.cpu import bind_engine_threads

        bind_engine_threads(settings.num_cpus)
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    sampling = context.sampling
    placement = None
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
        seed=sampling.seed if sampling.seed is not None else 0,
        disable_log_stats=True,
    )
    if settings.max_num_seqs is not None:
        kwargs["max_num_seqs"] = settings.max_num_seqs
    if resolve_device(settings) == "gpu" and settings.tensor_parallel_size > 1:
        kwargs["distributed_executor_backend"] = "ray"
        placement = reserve_placement_group(settings, context.judge)
    kwargs.update(settings.engine_kwargs)
    config = AsyncEngineArgs(**kwargs).create_engine_config()
    if placement is not None:
        config.parallel_config.placement_group = placement
    engine = AsyncLLM.from_vllm_config(config)
    return engine, int(config.model_config.max_model_len), placement


#: what makes an engine (:func:`engine_key`): the settings ``AsyncEngineArgs`` reads,
#: the device and the CPUs its threads are bound to
ENGINE_SETTINGS = (
    "model",
    "tokenizer",
    "revision",
    "dtype",
    "gguf_load",
    "max_model_len",
    "tensor_parallel_size",
    "gpu_memory_utilization",
    "enable_prefix_caching",
    "enforce_eager",
    "max_num_seqs",
    "engine_kwargs",
    "num_cpus",
    "placement_timeout_s",
)


def engine_key(settings: VllmSettings, context: JudgeContext) -> str | None:
    """The engine a judge of these settings starts, as a string (equal strings: one engine
    serves both judges in turn; :class:`~voirdire.judges.capabilities.SharesEngine`), or
    ``None`` when ``share_engine`` is off. The sampling seed is the engine's seed."""
    if not settings.share_engine:
        return None
    parts = {k: getattr(settings, k) for k in ENGINE_SETTINGS}
    parts["device"] = resolve_device(settings)
    parts["seed"] = context.sampling.seed
    return json.dumps(parts, sort_keys=True, default=str)


#: the engine a closed backend of this process lent to the next one: ``(key, (engine,
#: max_model_len, placement group))``; at most one
_LENT: list[tuple[str, tuple[Any, int, Any]]] = []


def lend(key: str, started: tuple[Any, int, Any]) -> None:
    """Keep ``started`` (:func:`start_engine`'s result) for the next :func:`borrow` of
    ``key`` in this process, shutting down any engine lent before."""
    discard_lent()
    _LENT.append((key, started))


def borrow(key: str | None) -> tuple[Any, int, Any] | None:
    """The engine lent under ``key`` (taken: lent no more), or ``None``; an engine lent
    under another key is shut down (its memory is the next engine's)."""
    if _LENT and key is not None and _LENT[0][0] == key:
        return _LENT.pop()[1]
    discard_lent()
    return None


def discard_lent() -> None:
    """Shut down the lent engine, if any."""
    while _LENT:
        engine, _, placement = _LENT.pop()[1]
        release(engine, placement)


def release(engine: Any, placement: Any) -> None:
    """Shut an engine down and remove its placement group (either may be ``None``)."""
    if engine is not None:
        engine.shutdown()
    if placement is not None:
        from ray.util.placement_group import remove_placement_group

        remove_placement_group(placement)


__all__ = [
    "ENGINE_SETTINGS",
    "RequestPlan",
    "borrow",
    "discard_lent",
    "engine_key",
    "lend",
    "load_tokenizer",
    "looks_local",
    "plan_requests",
    "release",
    "reserve_placement_group",
    "resolve_device",
    "start_engine",
    "worker_options",
]
