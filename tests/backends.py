"""Test-only judge backends: the product's simulated and vLLM judges, plus crashes.

A job names them by import path, as any user's own backend (``backend =
"tests.backends:CrashingSimulated"``); the driver and every Ray worker import them as the
module ``tests.backends``, so the repository root must be on their import path: pytest
puts it on the driver's (``tests`` is a package; rootdir-relative ``prepend`` import mode)
and the shared Ray fixture (``tests/conftest.py: ray_local``) puts it on the workers'
(``PYTHONPATH`` in the job's ``runtime_env``); a ``voirdire run`` subprocess gets
``PYTHONPATH`` from its test.

Faults, excluded from the judge's identity (``name`` stays the parent's, so a resumed run
with or without them asks the same units):

- ``crash_after``: the worker process exits (``os._exit(1)``: no cleanup, as a segfault
  or an OOM kill) once it has answered that many queries; with ``crash_marker`` (a file
  path) only once: the file is created just before exiting, and a restarted worker that
  finds it carries on.
- ``kill_driver_after`` (simulated only): SIGKILL to the driver process after that many
  queries, the hardest interruption a job can suffer.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from pydantic import Field

from voirdire.judges.base import Query, Result
from voirdire.judges.capabilities import SharesEngine
from voirdire.judges.simulated import SimulatedJudge, SimulatedSettings
from voirdire.judges.vllm_judge import (  # import-safe: vLLM loads in the worker
    RequestPlan,
    VllmJudge,
    VllmSettings,
)
from voirdire.judges.vllm_judge import engine as vllm_engine


def crash_once(after: int | None, answered: int, marker: str | None) -> None:
    """Exit the process now if ``after`` is set, ``answered >= after`` and ``marker``
    (a file path, or ``None`` for "every time") does not exist yet.

    Args:
        after: queries answered before the crash; ``None`` disables the fault.
        answered: queries this worker has answered so far.
        marker: file created just before crashing; while it exists no crash happens.
    """
    if after is None or answered < after:
        return
    path = Path(marker) if marker else None
    if path is not None and path.exists():
        return
    if path is not None:
        path.write_text("crashed once\n")
    os._exit(1)


CRASH_FIELDS = ("crash_after", "crash_marker")


class CrashingSimulatedSettings(SimulatedSettings):
    """:class:`SimulatedSettings` plus the faults of the module docstring."""

    crash_after: int | None = Field(default=None, ge=0)
    crash_marker: str | None = None
    kill_driver_after: int | None = Field(default=None, ge=0)


class CrashingSimulated(SimulatedJudge):
    """The simulated judge, answering query by query and crashing (the worker) or killing
    the driver at the configured count."""

    Settings = CrashingSimulatedSettings
    identity_exclude = (
        *SimulatedJudge.identity_exclude,
        *CRASH_FIELDS,
        "kill_driver_after",
    )

    async def judge(self, queries: list[Query]) -> list[Result]:
        s: CrashingSimulatedSettings = self.settings  # type: ignore[assignment]
        out: list[Result] = []
        for q in queries:
            crash_once(s.crash_after, self.answered, s.crash_marker)
            if (
                s.kill_driver_after is not None
                and self.answered >= s.kill_driver_after
                and self.context.driver_pid
            ):
                os.kill(self.context.driver_pid, signal.SIGKILL)
            out += await super().judge([q])
        return out


class CrashingVllmSettings(VllmSettings):
    """:class:`VllmSettings` plus ``crash_after`` and ``crash_marker``."""

    crash_after: int | None = Field(default=None, ge=0)
    crash_marker: str | None = None


class CrashingVllm(VllmJudge):
    """The vLLM judge, its replica crashing once it has answered ``crash_after`` queries
    (checked after each prompt's repetitions are answered)."""

    Settings = CrashingVllmSettings
    identity_exclude = (*VllmJudge.identity_exclude, *CRASH_FIELDS)

    async def _answer(self, plan: RequestPlan) -> list[Result]:
        results = await super()._answer(plan)
        s: CrashingVllmSettings = self.settings  # type: ignore[assignment]
        crash_once(s.crash_after, self.answered, s.crash_marker)
        return results


class DiesAtStartSettings(SimulatedSettings):
    """:class:`SimulatedSettings` plus the dtype its (pretended) engine started in."""

    dtype: str = "bfloat16"


class DiesAtStart(SimulatedJudge):
    """A judge whose engine dies by ``SIGILL`` while its worker starts: a real child process
    kills itself, and the worker raises what the vLLM judge raises for such an engine
    (:func:`voirdire.judges.vllm_judge.dtype.start_failure` of vLLM's start-up error)."""

    Settings = DiesAtStartSettings

    def __init__(self, settings: DiesAtStartSettings, context) -> None:
        import subprocess
        import sys

        from voirdire.judges.vllm_judge.dtype import start_failure

        code = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
        rc = subprocess.run([sys.executable, "-c", code]).returncode
        exc = RuntimeError(
            "Engine core initialization failed. See root cause above. "
            f"Failed core proc(s): {{'EngineCore_DP0': {rc}}}"
        )
        raise start_failure(exc, context.judge, settings.dtype, "gpu")


class EngineSimulatedSettings(SimulatedSettings):
    """:class:`SimulatedSettings` plus ``engine`` (what makes the engine: judges with the
    same non-empty value share one) and ``engine_log`` (a file each engine start, judge
    built and engine shutdown is appended to, with the worker's pid)."""

    engine: str = ""
    engine_log: str = ""


def _log(path: str, *words: object) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(" ".join(map(str, words)) + "\n")


class _LoggedEngine:
    """A stand-in for a vLLM engine: its start and its ``shutdown`` are logged."""

    def __init__(self, log: str, key: str | None) -> None:
        self.log, self.key = log, key
        _log(log, "start", os.getpid(), key)

    def shutdown(self) -> None:
        _log(self.log, "shutdown", os.getpid(), self.key)


class EngineSimulated(SharesEngine, SimulatedJudge):
    """The simulated judge with an engine to share, lent and borrowed through the vLLM
    judge's own :func:`~voirdire.judges.vllm_judge.engine.lend` and ``borrow``, as the vLLM
    judge does; it waits ``latency_s`` per query (set it > 0: a judge that shares workers
    takes the other path of the scheduler)."""

    Settings = EngineSimulatedSettings
    identity_exclude = (*SimulatedJudge.identity_exclude, "engine", "engine_log")

    @classmethod
    def engine_key(cls, settings: EngineSimulatedSettings, context) -> str | None:
        return settings.engine or None

    def __init__(self, settings: EngineSimulatedSettings, context) -> None:
        super().__init__(settings, context)
        self._key = settings.engine or None
        self._lend = False
        lent = vllm_engine.borrow(self._key)
        self.engine = lent[0] if lent else _LoggedEngine(settings.engine_log, self._key)
        _log(settings.engine_log, "judge", os.getpid(), context.judge)

    def lend_engine(self) -> None:
        self._lend = True

    async def aclose(self) -> None:
        if self.engine is None:
            return
        if self._lend and self._key is not None:
            vllm_engine.lend(self._key, (self.engine, 0, None))
        else:
            vllm_engine.release(self.engine, None)
        self.engine = None
        self._lend = False
