"""Named stages, each declaring what it reads and what it writes: the one planning machinery
of the engine (:data:`voirdire.engine.plan.PLAN_STAGES`) and of the analysis
(:data:`voirdire.analysis.stages.ANALYSIS_STAGES`).

A stage is a :class:`Stage` record (after Ray Data LLM, where each processor stage declares
its inputs) run in order by :func:`run_stages` over one state, a dict by key: it is called
with exactly the keys it reads, as keyword arguments, and returns exactly the keys it
writes. :func:`check_stages` refuses a sequence where a stage reads a key no earlier stage
wrote, or two stages write the same key. :func:`stages_for` picks from a sequence only the
stages that produce the asked outputs (and what they read, transitively), so a caller that
needs a few outputs runs only their stages.

Progress: :func:`run_stages` tells every callback registered with :func:`watching` which
stage starts (its name, its place in the sequence, the sequence's length, and how deep
the run is nested in another), so that a command can show where a long analysis is
without the analysis knowing who watches.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Stage", "check_stages", "run_stages", "stages_for", "watching"]

#: ``(stage name, index from 0, stages in the run, depth)``: a stage about to run
StageWatcher = Callable[[str, int, int, int], None]
_WATCHERS: list[StageWatcher] = []
_DEPTH = threading.local()


@contextlib.contextmanager
def watching(watcher: StageWatcher) -> Iterator[None]:
    """Call ``watcher(name, index, count, depth)`` before every stage :func:`run_stages`
    runs inside the ``with`` block (``depth`` 0: a run not nested in another's stage)."""
    _WATCHERS.append(watcher)
    try:
        yield
    finally:
        _WATCHERS.remove(watcher)


@dataclass(frozen=True)
class Stage:
    """One named step of planning.

    Attributes:
        name: the stage's name (unique in a sequence).
        reads: the state keys it is called with, as keyword arguments; they must be the
            parameters of ``fn``, in any order.
        writes: the state keys it returns (a dict with exactly these keys).
        fn: the stage's function.

    Raises:
        TypeError: ``fn``'s parameters are not exactly ``reads``.
    """

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    fn: Callable[..., dict[str, Any]]

    def __post_init__(self) -> None:
        params = set(inspect.signature(self.fn).parameters)
        if params != set(self.reads):
            raise TypeError(
                f"stage {self.name!r} declares reads {sorted(self.reads)} "
                f"but its function takes {sorted(params)}"
            )

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Run the stage on ``state``: its reads in, its writes out.

        Raises:
            ValueError: the function returned other keys than ``writes``.
        """
        got = self.fn(**{k: state[k] for k in self.reads})
        if set(got) != set(self.writes):
            raise ValueError(
                f"stage {self.name!r} declares writes {sorted(self.writes)} but returned {sorted(got)}"
            )
        return got


def check_stages(
    stages: Sequence[Stage], inputs: Sequence[str], outputs: Sequence[str] = ()
) -> None:
    """Check a stage sequence before it runs: every key a stage reads is an input or was
    written by an earlier stage, no key is written twice (inputs included), names are
    unique, and every key of ``outputs`` is written.

    Raises:
        ValueError: naming the stage and the key.
    """
    have = {k: "the inputs" for k in inputs}
    names: set[str] = set()
    for s in stages:
        if s.name in names:
            raise ValueError(f"two stages are named {s.name!r}")
        names.add(s.name)
        if missing := [k for k in s.reads if k not in have]:
            raise ValueError(
                f"stage {s.name!r} reads {', '.join(missing)}, which no earlier stage writes"
            )
        for k in s.writes:
            if k in have:
                raise ValueError(
                    f"stage {s.name!r} writes {k!r}, already written by {have[k]}"
                )
            have[k] = f"stage {s.name!r}"
    if missing := [k for k in outputs if k not in have]:
        raise ValueError(f"no stage writes {', '.join(missing)}")


def run_stages(
    stages: Sequence[Stage],
    inputs: Mapping[str, Any],
    outputs: Sequence[str] = (),
    *,
    on_stage: Callable[[Stage], None] | None = None,
) -> dict[str, Any]:
    """Run ``stages`` in order over a state that starts as ``inputs``; return the final
    state (inputs and every stage's writes, by key). ``on_stage`` is called with each stage
    after it ran.

    Raises:
        ValueError: the sequence fails :func:`check_stages`, or a stage returned other keys
            than it declares.
        ConfigError: whatever a stage raises for a bad job.
    """
    check_stages(stages, list(inputs), outputs)
    state = dict(inputs)
    depth = getattr(_DEPTH, "n", 0)
    _DEPTH.n = depth + 1
    try:
        for i, s in enumerate(stages):
            for w in list(_WATCHERS):
                w(s.name, i, len(stages), depth)
            state.update(s(state))
            if on_stage is not None:
                on_stage(s)
    finally:
        _DEPTH.n = depth
    return state


def stages_for(stages: Sequence[Stage], outputs: Sequence[str]) -> list[Stage]:
    """The stages of ``stages`` (in their order) that write ``outputs`` or what those
    stages read, transitively: the least sequence that produces ``outputs``.

    Raises:
        ValueError: an output no stage writes and no input gives is left to
            :func:`check_stages` (run by :func:`run_stages`).
    """
    writer = {k: s for s in stages for k in s.writes}
    wanted: set[str] = set()
    todo = [k for k in outputs if k in writer]
    while todo:
        s = writer[todo.pop()]
        if s.name not in wanted:
            wanted.add(s.name)
            todo += [k for k in s.reads if k in writer]
    return [s for s in stages if s.name in wanted]
