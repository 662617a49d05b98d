"""Named stages run in order over one state (the machinery of :mod:`voirdire.engine.plan`).

A :class:`Stage` declares the state keys it reads and writes (after Ray Data LLM, where each
processor stage declares its inputs); :func:`check_stages` refuses a sequence where a stage
reads a key no earlier stage wrote, or two stages write the same key; :func:`run_stages`
runs them. Split from :mod:`voirdire.engine.plan`, which still exports these names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Stage", "check_stages", "run_stages"]


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
    for s in stages:
        state.update(s(state))
        if on_stage is not None:
            on_stage(s)
    return state
