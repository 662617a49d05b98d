"""Bias types: one record per bias (:class:`~voirdire.benchmarks.biases.bias.BiasType`),
registered by name (:mod:`~voirdire.benchmarks.biases.registry`).

``get_bias("bandwagon")`` gives the record the job spec validates against, the engine
expands into variants and the prompt builder asks for its text. The built-in biases are
CALM's (Ye et al. 2024): :mod:`.instruction` (bandwagon, distraction, diversity, cot,
refinement_aware), :mod:`.names` (compassion_fade) and :mod:`.answer` (authority,
verbosity, sentiment, fallacy), each loaded by the registry on first use. Adding one (one
module, one decorator, :func:`~voirdire.benchmarks.biases.registry.bias_type`):
``docs/contributing.md``. Import each name from the module that defines it (``bias``,
``registry``); this package re-exports nothing.
"""
