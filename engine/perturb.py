"""Perturbations as a unit dimension: ``[[perturbations]]`` entries expanded into variants,
and a variant's target resolved for one (instance, order).

Every job has the control (no perturbation, label ``"control"``); each entry of
``[[perturbations]]`` adds one variant per (parameter value, target rule). A variant's
identity -- kind, parameter, target rule, the text version of the instruction templates,
the quality source where the rule needs one, the rewriter's identity hash where answers
are rewritten -- is hashed into :attr:`Variant.key`, which enters the query id of its
units (``voirdire.engine.units.query_id``); the control's key is ``""`` and its ids are
those of a job without perturbations. See ``docs/biases.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from voirdire.benchmarks.perturb import (
    ANSWER_KINDS,
    CITATIONS,
    DISTRACTIONS,
    EMOTIONS,
    IDENTITIES,
    KINDS,
    SHARES,
    TEXT_VERSION,
)
from voirdire.engine.spec import JobSpec, PerturbationSpec

from voirdire.core import LETTERS, ConfigError, content_hash

#: kind -> (the spec key of its parameter, default values); kinds without one: None
PARAMS: dict[str, tuple[str, tuple] | None] = {
    "bandwagon": ("shares", SHARES),
    "distraction": ("statements", ("pasta",)),
    "diversity": ("identities", IDENTITIES),
    "compassion_fade": None,
    "cot": None,
    "refinement_aware": None,
    "authority": ("citations", CITATIONS),
    "verbosity": ("ratios", (2.0,)),
    "sentiment": ("emotions", EMOTIONS),
    "fallacy": None,
}
#: the singular used in labels ("bandwagon:share=80:...")
_SINGULAR = {"shares": "share", "statements": "statement", "identities": "identity", "citations": "citation",
             "ratios": "ratio", "emotions": "emotion"}
#: kind -> default target rules (CALM's where it names one); ``()``: the kind has no target
DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    "bandwagon": ("candidate",),
    "distraction": ("better", "worse"),
    "diversity": ("candidate",),
    "compassion_fade": (),
    "cot": (),
    "refinement_aware": ("candidate",),
    "authority": ("candidate",),
    "verbosity": ("worse",),
    "sentiment": ("better",),
    "fallacy": ("better",),
}
#: kinds whose variants never have a target (``target`` is an error there)
UNTARGETED = ("cot",)
#: parameter values a kind accepts (None: any)
_ALLOWED = {"statements": tuple(DISTRACTIONS), "citations": CITATIONS, "emotions": EMOTIONS}
#: rules that need a quality source
QUALITY_RULES = ("better", "worse")


@dataclass(frozen=True)
class Variant:
    """One perturbation variant (or the control).

    Attributes:
        label: readable and unique in the job (``"control"``, ``"bandwagon:share=80:target=worse"``).
        kind: ``"control"`` or a kind of :data:`voirdire.benchmarks.perturb.KINDS`.
        param: the parameter value as text (``"80"``, ``"cheerful"``), or None.
        rule: the target rule, or None (control, ``cot``, ``compassion_fade`` without one).
        rewriter: the ``[[rewriters]]`` name (answer kinds), else None.
        key: the identity hash entering query ids (``""`` for the control).
    """

    label: str
    kind: str
    param: str | None = None
    rule: str | None = None
    rewriter: str | None = None
    key: str = ""

    @property
    def is_control(self) -> bool:
        return self.kind == "control"


CONTROL = Variant(label="control", kind="control")


def _param_text(v: object) -> str:
    return repr(float(v)) if isinstance(v, float) else str(v)


def _check_rule(rule: str, mode: str, list_size: int) -> None:
    if rule in QUALITY_RULES:
        return
    if rule in ("candidate", "reference"):
        if mode != "pairwise":
            raise ConfigError(f"perturbation target {rule!r} exists only in pairwise jobs (list-wise: better, worse, slot:X)")
        return
    if rule.startswith("slot:") and rule[5:] in LETTERS[:list_size] and len(rule) == 6:
        return
    raise ConfigError(
        f"perturbation target {rule!r} does not exist; use better, worse, candidate, reference or "
        f"slot:{'|'.join(LETTERS[:list_size])}"
    )


def expand_entry(entry: PerturbationSpec, *, mode: str, list_size: int, rewriter_hashes: dict[str, str],
                 quality: str | None) -> list[Variant]:
    """The variants of one ``[[perturbations]]`` entry (parameter values x target rules).

    Raises:
        ConfigError: unknown kind, a parameter of another kind, an unknown parameter value,
            a target that does not exist, a target on ``cot``, an answer kind without a
            rewriter (or naming one that is not in ``[[rewriters]]``), a rewriter on a kind
            that rewrites nothing, or a better/worse target without ``benchmark.quality``.
    """
    kind = entry.kind
    if kind not in KINDS:
        raise ConfigError(f"unknown perturbation kind {kind!r}; known kinds: {', '.join(KINDS)}")
    spec = PARAMS[kind]
    given = {k: v for k, v in entry.model_dump(exclude={"kind", "target", "rewriter"}).items() if v is not None}
    for key in given:
        if spec is None or key != spec[0]:
            raise ConfigError(f"perturbation {kind!r}: {key!r} is not a parameter of this kind"
                              + (f" (its parameter is {spec[0]!r})" if spec else " (it has none)"))
    values: list[str | None] = [None]
    if spec is not None:
        raw = given.get(spec[0], spec[1])
        if not raw:
            raise ConfigError(f"perturbation {kind!r}: {spec[0]} is empty")
        allowed = _ALLOWED.get(spec[0])
        for v in raw:
            if allowed and v not in allowed:
                raise ConfigError(f"perturbation {kind!r}: unknown {_SINGULAR[spec[0]]} {v!r}; known: {', '.join(allowed)}")
            if spec[0] == "shares" and not 0 < int(v) <= 100:
                raise ConfigError(f"perturbation bandwagon: share {v} is not a percentage in 1..100")
            if spec[0] == "ratios" and not float(v) > 0:
                raise ConfigError(f"perturbation verbosity: ratio {v} must be positive")
        values = [_param_text(v) for v in raw]
    if entry.target is not None and kind in UNTARGETED:
        raise ConfigError(f"perturbation {kind!r} has no target (it perturbs the instruction for every answer alike)")
    rules: tuple[str, ...] = tuple([entry.target] if isinstance(entry.target, str) else entry.target or DEFAULT_TARGETS[kind])
    if not rules and DEFAULT_TARGETS[kind]:
        raise ConfigError(f"perturbation {kind!r} needs a target (e.g. {DEFAULT_TARGETS[kind][0]!r})")
    for r in rules:
        _check_rule(r, mode, list_size)
        if r in QUALITY_RULES and not quality:
            raise ConfigError(
                f"perturbation {kind!r}: target {r!r} needs a quality source: set benchmark.quality "
                "(\"simulated:<judge>\", \"replay:<recorded judge>\" or \"labels:<file.csv>\")"
            )
    rewriter_hash = ""
    if kind in ANSWER_KINDS:
        if not entry.rewriter:
            raise ConfigError(f"perturbation {kind!r} rewrites answers and needs a rewriter: add rewriter = \"<name>\" "
                              "naming a [[rewriters]] entry (backend template, simulated, openai, anthropic, "
                              "openai_compatible or vllm)")
        if entry.rewriter not in rewriter_hashes:
            raise ConfigError(f"perturbation {kind!r}: rewriter {entry.rewriter!r} is not a [[rewriters]] entry"
                              + (f" (entries: {', '.join(rewriter_hashes)})" if rewriter_hashes else " (there is none)"))
        rewriter_hash = rewriter_hashes[entry.rewriter]
    elif entry.rewriter:
        raise ConfigError(f"perturbation {kind!r} rewrites no answer; remove rewriter = {entry.rewriter!r}")
    out = []
    for v in values:
        for r in rules or (None,):
            parts = [kind]
            if v is not None:
                parts.append(f"{_SINGULAR[spec[0]]}={v}")  # type: ignore[index]
            if r is not None:
                parts.append(f"target={r}")
            if entry.rewriter:
                parts.append(f"rewriter={entry.rewriter}")
            key = content_hash("perturbation", TEXT_VERSION, kind, v, r, quality if r in QUALITY_RULES else None, rewriter_hash)
            out.append(Variant(":".join(parts), kind, v, r, entry.rewriter, key))
    return out


def expand_variants(job: JobSpec, *, list_size: int, rewriter_hashes: dict[str, str],
                    quality_identity: str | None = None) -> tuple[Variant, ...]:
    """The job's variants, the control first, then each entry's in file order.

    ``quality_identity``: what the quality source is (enters the key of better/worse
    variants; default: ``benchmark.quality`` as written).

    Raises:
        ConfigError: see :func:`expand_entry`; also two entries giving the same variant.
    """
    out = [CONTROL]
    for entry in job.perturbations:
        out += expand_entry(entry, mode=job.comparison.mode, list_size=list_size,
                            rewriter_hashes=rewriter_hashes,
                            quality=quality_identity or job.benchmark.quality)
    labels = [v.label for v in out]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ConfigError(f"perturbations: the same variant is listed twice: {', '.join(dupes)}")
    return tuple(out)


def target_model(rule: str | None, candidates: Sequence[str], shown: Sequence[str], better: str | None,
                 worst: str | None) -> str | None:
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


def rewrite_targets(rule: str, candidates: Sequence[str], better: str | None, worst: str | None) -> tuple[str, ...]:
    """Every model whose answer a variant rewrites in an instance (over all its orders)."""
    if rule.startswith("slot:"):
        return tuple(candidates)
    m = target_model(rule, candidates, candidates, better, worst)
    return (m,) if m is not None else ()
