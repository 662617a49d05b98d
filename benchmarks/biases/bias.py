"""The record of one bias type: everything voirdire knows about it, in one place.

A :class:`BiasType` names its family (how it changes the judge's prompt), its one optional
parameter (:class:`BiasParam`: the job file's key, default values, allowed values, a check),
its default target rules, and its text: the sentence an instruction bias adds, or the
instruction that asks a model to rewrite an answer. The job spec validates a
``[[perturbations]]`` entry against it (:meth:`BiasType.parse_values`), the engine expands
it into variants and the prompt builder asks it for its text; nothing else names a bias.
Registering one: :mod:`voirdire.benchmarks.biases.registry`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from voirdire.core import ConfigError

#: how a bias changes the prompt ``P = (I, Q, R)`` (``docs/biases.md``): ``instruction``
#: adds one sentence to the instruction; ``names`` adds one and shows each slot's label with
#: the model's real name; ``answer`` shows the target's answer rewritten by a rewriter
INSTRUCTION, NAMES, ANSWER = "instruction", "names", "answer"
FAMILIES = (INSTRUCTION, NAMES, ANSWER)

#: the version of a bias's text when the record gives none (enters perturbed query ids)
TEXT_VERSION = "1"


@dataclass(frozen=True)
class Slots:
    """What a bias's sentence may name in one prompt: the target's slot label
    (``"Assistant B"``; None without a target), the other slot's label (pairwise; else
    None), every slot's label and the model shown in it (slot order)."""

    target: str | None = None
    other: str | None = None
    labels: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class BiasParam:
    """A bias's parameter: a list of values in the job file, one variant per value.

    Attributes:
        key: the ``[[perturbations]]`` key (plural: ``"shares"``).
        singular: the word in variant labels (``"share"``: ``bandwagon:share=80:...``).
        type: the type each value is read as (``int``, ``float``, ``str``; pydantic's
            lax conversion, so ``ratios = [2]`` reads ``2.0``).
        defaults: the values used when the entry gives none.
        allowed: the only values accepted (None: any value of ``type``).
        check: a test of one value returning what is wrong with it (None: nothing).
    """

    key: str
    singular: str
    type: type
    defaults: tuple[Any, ...]
    allowed: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None


#: an instruction text: a template (``str.format`` with ``param`` and ``target``) or a
#: function of (parameter value as text or None, the prompt's :class:`Slots`)
Text = str | Callable[[str | None, Slots], str]


@dataclass(frozen=True)
class BiasType:
    """One bias type (a CALM bias, Ye et al. 2024, or your own).

    Attributes:
        name: the ``kind`` of ``[[perturbations]]`` entries (``"bandwagon"``).
        family: :data:`INSTRUCTION`, :data:`NAMES` or :data:`ANSWER`.
        param: its parameter, or None (the bias has one variant per target rule).
        default_targets: target rules used when the entry gives none (``()``: no target
            unless one is given).
        targeted: False for a bias that never has a target (``target`` is an error).
        instruction: the sentence added to the instruction (instruction and names
            families).
        rewrite: the instruction that asks a model to rewrite the answer (answer family):
            a template (``str.format`` with ``param``) or a function of the parameter.
        metric: what CALM reads it by: ``"robustness"`` (the verdict should not move),
            ``"accuracy"`` (agreement with the better answer: ``fallacy``, ``cot``) or
            ``"error_rate"`` (``refinement_aware``).
        damages_target: the rewrite makes the target worse (``fallacy``): a judge that
            sees it should move away from the target.
        version: the version of its text; enters the ids of its perturbed queries, so a
            change of wording gives new ids.
    """

    name: str
    family: Literal["instruction", "names", "answer"]
    param: BiasParam | None = None
    default_targets: tuple[str, ...] = ()
    targeted: bool = True
    instruction: Text | None = None
    rewrite: str | Callable[[str | None], str] | None = None
    metric: Literal["robustness", "accuracy", "error_rate"] = "robustness"
    damages_target: bool = False
    version: str = TEXT_VERSION

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(
                f"bias type {self.name!r}: unknown family {self.family!r} (families: {', '.join(FAMILIES)})"
            )
        if (self.family == ANSWER) != (self.rewrite is not None):
            raise ValueError(
                f"bias type {self.name!r}: the answer family, and only it, has a rewrite instruction"
            )
        if (self.family == ANSWER) == (self.instruction is not None):
            raise ValueError(
                f"bias type {self.name!r}: the instruction and names families have an instruction text"
            )
        if not self.targeted and self.default_targets:
            raise ValueError(
                f"bias type {self.name!r}: an untargeted bias has no default targets"
            )

    @property
    def rewrites_answers(self) -> bool:
        """Whether its variants show a rewritten answer (and need a rewriter)."""
        return self.family == ANSWER

    def parse_values(self, given: dict[str, Any]) -> list[Any] | None:
        """The parameter values of one entry, converted to :attr:`BiasParam.type`, from the
        entry's parameter keys ``given`` (``{}``: the defaults); None for a bias without a
        parameter.

        Raises:
            ConfigError: a key that is not this bias's parameter, an empty list, a value
                of the wrong type, outside ``allowed`` or failing ``check``.
        """
        p = self.param
        for key in given:
            if p is None or key != p.key:
                raise ConfigError(
                    f"perturbation {self.name!r}: {key!r} is not a parameter of this kind"
                    + (f" (its parameter is {p.key!r})" if p else " (it has none)")
                )
        if p is None:
            return None
        raw = given.get(p.key, p.defaults)
        if not isinstance(raw, (list, tuple)) or not raw:
            raise ConfigError(
                f"perturbation {self.name!r}: {p.key} must be a non-empty list"
            )
        try:
            values = TypeAdapter(list[p.type]).validate_python(list(raw))  # type: ignore[name-defined]
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(
                f"perturbation {self.name!r}: {p.key}: {err['input']!r}: {err['msg']}"
            ) from None
        for v in values:
            if p.allowed is not None and v not in p.allowed:
                raise ConfigError(
                    f"perturbation {self.name!r}: unknown {p.singular} {v!r}; known: {', '.join(map(str, p.allowed))}"
                )
            problem = p.check(v) if p.check else None
            if problem:
                raise ConfigError(
                    f"perturbation {self.name}: {p.singular} {v} {problem}"
                )
        return values

    @staticmethod
    def value_text(value: Any) -> str:
        """A parameter value as it stands in labels, ids and prompts (``"80"``, ``"2.0"``)."""
        return repr(float(value)) if isinstance(value, float) else str(value)

    def normalize(self, entry: dict[str, Any]) -> dict[str, Any]:
        """An entry's parameter keys checked (:meth:`parse_values`), the parameter's values
        converted; keys set to null count as not given and are dropped (a ``job.json`` of
        voirdire 0.1 lists every bias's parameter). Raises ConfigError."""
        given = {k: v for k, v in entry.items() if v is not None}
        values = self.parse_values(given)
        return (
            {self.param.key: values}
            if self.param is not None and self.param.key in given
            else {}
        )

    def value_texts(self, entry: dict[str, Any]) -> tuple[str, ...] | None:
        """An entry's parameter values as text (the defaults when it gives none; None for a
        bias without a parameter). Raises ConfigError."""
        values = self.parse_values({k: v for k, v in entry.items() if v is not None})
        return None if values is None else tuple(map(self.value_text, values))

    def label(self, value: str | None, rule: str | None, rewriter: str | None) -> str:
        """A variant's readable label: ``kind[:singular=value][:target=rule][:rewriter=name]``."""
        parts = [self.name]
        if value is not None and self.param is not None:
            parts.append(f"{self.param.singular}={value}")
        if rule is not None:
            parts.append(f"target={rule}")
        if rewriter:
            parts.append(f"rewriter={rewriter}")
        return ":".join(parts)

    def instruction_text(self, value: str | None, slots: Slots) -> str:
        """The sentence this bias adds to one prompt (parameter value as text).

        Raises:
            ConfigError: the bias adds no sentence (answer family).
        """
        if self.instruction is None:
            raise ConfigError(
                f"{self.name!r} adds no instruction (it rewrites answers)"
            )
        if isinstance(self.instruction, str):
            return self.instruction.format(param=value, target=slots.target)
        return self.instruction(value, slots)

    def rewrite_instruction(self, value: str | None) -> str:
        """The instruction that asks a model to rewrite an answer for this bias.

        Raises:
            ConfigError: the bias rewrites no answer.
        """
        if self.rewrite is None:
            raise ConfigError(f"{self.name!r} needs no rewrite (it rewrites no answer)")
        return (
            self.rewrite.format(param=value)
            if isinstance(self.rewrite, str)
            else self.rewrite(value)
        )
