"""Bias kinds: one record per kind (:class:`BiasKind`), registered by name.

``get_kind("bandwagon")`` gives the record the job spec validates against, the engine
expands into variants and the prompt builder asks for its text. The built-in kinds are
CALM's (Ye et al. 2024): :mod:`.instruction` (bandwagon, distraction, diversity, cot,
refinement_aware), :mod:`.names` (compassion_fade) and :mod:`.answer` (authority,
verbosity, sentiment, fallacy). Adding one (one module, one decorator, :func:`bias_kind`):
``docs/contributing.md``.
"""

from voirdire.benchmarks.biases.kind import (
    ANSWER,
    FAMILIES,
    INSTRUCTION,
    NAMES,
    TEXT_VERSION,
    BiasKind,
    BiasParam,
    Slots,
)
from voirdire.benchmarks.biases.registry import (
    KINDS,
    bias_kind,
    find_kind,
    get_kind,
    known_kinds,
    register_kind,
    unregister_kind,
)

__all__ = [
    "ANSWER",
    "FAMILIES",
    "INSTRUCTION",
    "NAMES",
    "TEXT_VERSION",
    "BiasKind",
    "BiasParam",
    "Slots",
    "KINDS",
    "bias_kind",
    "find_kind",
    "get_kind",
    "known_kinds",
    "register_kind",
    "unregister_kind",
]
