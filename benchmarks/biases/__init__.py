"""Bias types: one record per bias (:class:`BiasType`), registered by name.

``get_bias("bandwagon")`` gives the record the job spec validates against, the engine
expands into variants and the prompt builder asks for its text. The built-in biases are
CALM's (Ye et al. 2024): :mod:`.instruction` (bandwagon, distraction, diversity, cot,
refinement_aware), :mod:`.names` (compassion_fade) and :mod:`.answer` (authority,
verbosity, sentiment, fallacy). Adding one (one module, one decorator, :func:`bias_type`):
``docs/contributing.md``.
"""

from voirdire.benchmarks.biases.bias import (
    ANSWER,
    FAMILIES,
    INSTRUCTION,
    NAMES,
    TEXT_VERSION,
    BiasParam,
    BiasType,
    Slots,
)
from voirdire.benchmarks.biases.registry import (
    BIASES,
    bias_type,
    find_bias,
    get_bias,
    known_biases,
    register_bias,
    unregister_bias,
)

__all__ = [
    "ANSWER",
    "FAMILIES",
    "INSTRUCTION",
    "NAMES",
    "TEXT_VERSION",
    "BiasType",
    "BiasParam",
    "Slots",
    "BIASES",
    "bias_type",
    "find_bias",
    "get_bias",
    "known_biases",
    "register_bias",
    "unregister_bias",
]
