"""CALM's ``compassion_fade``: each slot's label is shown with the model's real name, and a
sentence maps the labels to the names (the verdict letters are unchanged)."""

from __future__ import annotations

from voirdire.benchmarks.biases.bias import NAMES, BiasType, Slots
from voirdire.benchmarks.biases.registry import register_bias


def _names(value: str | None, slots: Slots) -> str:
    pairs = ", ".join(
        f"{label} is {name}" for label, name in zip(slots.labels, slots.shown)
    )
    return f"The assistants are real models: {pairs}."


COMPASSION_FADE = register_bias(
    BiasType(name="compassion_fade", family=NAMES, instruction=_names)
)
