"""Perturbations as a unit dimension: ``[[perturbations]]`` entries expanded into variants,
and a variant's target resolved for one (instance, order).

Every job has the control (no perturbation, label ``"control"``); each entry of
``[[perturbations]]`` adds one variant per (parameter value, target rule). A variant's
identity -- bias, parameter, target rule, the text version of the instruction templates,
the quality source where the rule needs one, the rewriter's identity hash where answers
are rewritten -- is hashed into :attr:`Variant.key`, which enters the query id of its
units (``voirdire.engine.units.query_id``); the control's key is ``""`` and its ids are
those of a job without perturbations. See ``docs/biases.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voirdire.benchmarks.biases.bias import BiasType
from voirdire.core import LETTERS, ConfigError, content_hash
from voirdire.engine.spec import JobSpec, PerturbationSpec

#: rules that need a quality source
QUALITY_RULES = ("better", "worse")


@dataclass(frozen=True)
class Variant:
    """One perturbation variant (or the control).

    Attributes:
        label: readable and unique in the job (``"control"``, ``"bandwagon:share=80:target=worse"``).
        bias: ``"control"`` or a bias type's name (:func:`voirdire.benchmarks.biases.registry.known_biases`).
        param: the parameter value as text (``"80"``, ``"cheerful"``), or None.
        rule: the target rule, or None (control, ``cot``, ``compassion_fade`` without one).
        rewriter: the ``[[rewriters]]`` name (answer biases), else None.
        key: the identity hash entering query ids (``""`` for the control).
    """

    label: str
    bias: str
    param: str | None = None
    rule: str | None = None
    rewriter: str | None = None
    key: str = ""

    @property
    def is_control(self) -> bool:
        return self.bias == "control"


CONTROL = Variant(label="control", bias="control")


def _check_rule(rule: str, mode: str, list_size: int) -> None:
    if rule in QUALITY_RULES:
        return
    if rule in ("candidate", "reference"):
        if mode != "pairwise":
            raise ConfigError(
                f"perturbation target {rule!r} exists only in pairwise jobs (list-wise: better, worse, slot:X)"
            )
        return
    if rule.startswith("slot:") and rule[5:] in LETTERS[:list_size] and len(rule) == 6:
        return
    raise ConfigError(
        f"perturbation target {rule!r} does not exist; use better, worse, candidate, reference or "
        f"slot:{'|'.join(LETTERS[:list_size])}"
    )


def expand_entry(
    entry: PerturbationSpec,
    *,
    mode: str,
    list_size: int,
    rewriter_hashes: dict[str, str],
    quality: str | None,
) -> list[Variant]:
    """The variants of one ``[[perturbations]]`` entry (parameter values x target rules);
    the entry's bias and parameter values were checked by the spec
    (:class:`~voirdire.engine.spec.PerturbationSpec`).

    Raises:
        ConfigError: a target that does not exist, a target on an untargeted bias, a
            better/worse target without ``benchmark.quality``, an answer bias
            without a rewriter (or naming one that is not in ``[[rewriters]]``), a
            rewriter on a bias that rewrites nothing.
    """
    bias = entry.bias
    rules = _rules(entry, bias)
    for r in rules:
        _check_rule(r, mode, list_size)
        if r in QUALITY_RULES and not quality:
            raise ConfigError(
                f"perturbation {bias.name!r}: target {r!r} needs a quality source: set benchmark.quality "
                '("<backend>:<argument>" with a judge backend that is a quality source, or "labels:<file.csv>"; '
                "docs/biases.md)"
            )
    rewriter_hash = _rewriter_hash(entry, bias, rewriter_hashes)
    out = []
    for v in entry.values or (None,):
        for r in rules or (None,):
            key = content_hash(
                "perturbation",
                bias.version,
                bias.name,
                v,
                r,
                quality if r in QUALITY_RULES else None,
                rewriter_hash,
            )
            out.append(
                Variant(
                    bias.label(v, r, entry.rewriter),
                    bias.name,
                    v,
                    r,
                    entry.rewriter,
                    key,
                )
            )
    return out


def _rules(entry: PerturbationSpec, bias: BiasType) -> tuple[str, ...]:
    """The entry's target rules: given, else the bias's defaults (``()``: no target)."""
    if entry.target is not None and not bias.targeted:
        raise ConfigError(
            f"perturbation {bias.name!r} has no target (it perturbs the instruction for every answer alike)"
        )
    return tuple(
        [entry.target]
        if isinstance(entry.target, str)
        else entry.target or bias.default_targets
    )


def _rewriter_hash(
    entry: PerturbationSpec, bias: BiasType, rewriter_hashes: dict[str, str]
) -> str:
    """The identity hash of the entry's rewriter (``""`` for a bias that rewrites nothing)."""
    if not bias.rewrites_answers:
        if entry.rewriter:
            raise ConfigError(
                f"perturbation {bias.name!r} rewrites no answer; remove rewriter = {entry.rewriter!r}"
            )
        return ""
    if not entry.rewriter:
        raise ConfigError(
            f'perturbation {bias.name!r} rewrites answers and needs a rewriter: add rewriter = "<name>" '
            "naming a [[rewriters]] entry (a backend that generates text, or names a rewriter)"
        )
    if entry.rewriter not in rewriter_hashes:
        raise ConfigError(
            f"perturbation {bias.name!r}: rewriter {entry.rewriter!r} is not a [[rewriters]] entry"
            + (
                f" (entries: {', '.join(rewriter_hashes)})"
                if rewriter_hashes
                else " (there is none)"
            )
        )
    return rewriter_hashes[entry.rewriter]


def expand_variants(
    job: JobSpec,
    *,
    list_size: int,
    rewriter_hashes: dict[str, str],
    quality_identity: str | None = None,
) -> tuple[Variant, ...]:
    """The job's variants, the control first, then each entry's in file order.

    ``quality_identity``: what the quality source is (enters the key of better/worse
    variants; default: ``benchmark.quality`` as written).

    Raises:
        ConfigError: see :func:`expand_entry`; also two entries giving the same variant.
    """
    out = [CONTROL]
    for entry in job.perturbations:
        out += expand_entry(
            entry,
            mode=job.comparison.mode,
            list_size=list_size,
            rewriter_hashes=rewriter_hashes,
            quality=quality_identity or job.benchmark.quality,
        )
    labels = [v.label for v in out]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ConfigError(
            f"perturbations: the same variant is listed twice: {', '.join(dupes)}"
        )
    return tuple(out)


def target_model(
    rule: str | None,
    candidates: Sequence[str],
    shown: Sequence[str],
    better: str | None,
    worst: str | None,
) -> str | None:
    """The model a variant treats in one (instance, order): ``better``/``worse`` from the
    quality source (None where it is unknown for the instance), ``candidate``/``reference``
    (pairwise ``candidates[0]``/``[1]``), ``slot:X`` the model shown in slot X."""
    if rule is None:
        return None
    if rule == "better":
        return better
    if rule == "worse":
        return worst
    if rule == "candidate":
        return candidates[0]
    if rule == "reference":
        return candidates[1]
    return shown[LETTERS.index(rule[5])]


def rewrite_targets(
    rule: str, candidates: Sequence[str], better: str | None, worst: str | None
) -> tuple[str, ...]:
    """Every model whose answer a variant rewrites in an instance (over all its orders)."""
    if rule.startswith("slot:"):
        return tuple(candidates)
    m = target_model(rule, candidates, candidates, better, worst)
    return (m,) if m is not None else ()
