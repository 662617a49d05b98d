"""Chat prompts for a user's own pairs: Jinja2 templates with a system and a user part.

A template is one Jinja2 file. Its ``{% block system %}...{% endblock %}`` is the system
turn and its ``{% block user %}...{% endblock %}`` the user turn; a file without a
``user`` block is the user turn as a whole (no system turn). Built-in templates ship as
package data: ``mtbench`` is FastChat's MT-Bench pairwise judge prompt ``pair-v2``
(``templates/pairs_mtbench.jinja``; single turn, system prompt and user turn as FastChat
sends them; verdict ``[[A]]``, ``[[B]]``, ``[[C]]`` for a tie); a registered benchmark may
lend its own prompt under its registry key (its class's ``pair_prompt``: a function returning
the source, the verdict pattern and labels; e.g. LLMBar's ``Vanilla`` comparison prompt).

Fields a template may use (:data:`PAIR_FIELDS`), for the order shown:

- ``instruction``: the instruction (question) of the pair;
- ``output_1``, ``output_2``: the answer in the first / second slot (the order shown);
- ``model_1``, ``model_2``: the models' names in slot order (a template that hides them
  simply does not use them);
- ``id``, ``task``: the pair's id and task;
- ``option_mode`` (2 or 3) and ``tie`` (true when a tie is offered);
- ``row``: the whole data row (``row["any column"]``), and every data column whose name is
  a Python identifier, by name (``{{ reference_answer }}``).

A template is untrusted input: it renders in Jinja2's
``jinja2.sandbox.ImmutableSandboxedEnvironment`` (no attribute that starts with ``_``, no
method that changes a list or dict, ranges of at most 100,000; here also no repeated string
or list over :data:`~voirdire.benchmarks.own_pairs.sandbox.MAX_REPEAT` items, no power above
:data:`~voirdire.benchmarks.own_pairs.sandbox.MAX_POWER`, widths and built texts bounded by
:mod:`~voirdire.benchmarks.own_pairs.template_bounds` (the environment:
:mod:`~voirdire.benchmarks.own_pairs.sandbox`), and each rendered turn by
``max_chars``, default :data:`MAX_PROMPT_CHARS`) with
``StrictUndefined`` and no loader, so a template is one file: ``include``, ``import`` and
``extends`` are refused when it is loaded. Built-in templates render in the same
environment. The data is never rendered as a template (a cell holding ``{{ 7*7 }}`` is sent
as written). Errors, each a one-line :class:`~voirdire.core.ConfigError` before anything is
sent: a field the data does not have (:func:`check_fields`, with Jinja2's
``meta.find_undeclared_variables``) and any error rendering a row (:func:`check_renders`:
an unsafe attribute, ``1/0``, ...).
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import meta, nodes

from voirdire.benchmarks.own_pairs import template_bounds as tb
from voirdire.benchmarks.own_pairs.sandbox import ENV
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: fields every pair prompt may use besides the data's columns
PAIR_FIELDS = (
    "instruction",
    "output_1",
    "output_2",
    "model_1",
    "model_2",
    "id",
    "task",
    "option_mode",
    "tie",
    "row",
)

#: built-in template name -> (package file, verdict pattern, verdict labels: slot 1, slot 2,
#: tie); a benchmark's own templates are found through the registry (:func:`lent_template`)
BUILTIN = {
    "mtbench": ("pairs_mtbench.jinja", r"\[\[([ABCD])\]\]", ("A", "B", "C")),
}


def lent_template(name: str) -> tuple[Any, str, tuple[str, ...]] | None:
    """The pair template a registered benchmark lends under its registry key (its class's
    ``pair_prompt``: source function, verdict pattern, labels), or None."""
    if (
        ":" in name or "/" in name or "." in name
    ):  # a file or an import path, not a benchmark key
        return None
    try:
        cls = BENCHMARKS.find(name)
    except ConfigError:
        return None
    return cls.pair_prompt if cls is not None else None


def known_templates() -> list[str]:
    """The names of the built-in and lent pair templates."""
    return [*BUILTIN, *(n for n in BENCHMARKS.names() if lent_template(n) is not None)]


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a template shipped with voirdire or lent by a benchmark (not a file)."""
    return name in BUILTIN or lent_template(name) is not None


_TEMPLATE_DIR = pathlib.Path(__file__).resolve().parent.parent / "templates"

#: default bound on one rendered prompt (system and user turns, each), in characters; a
#: job sets its own with ``[benchmark.pairs] max_prompt_chars``
MAX_PROMPT_CHARS = 1_000_000


#: tags that would read another template (there is no loader: a template is one file)
_NO_LOADER = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from ... import",
    nodes.Extends: "extends",
}


@dataclass(frozen=True)
class PairTemplate:
    """A loaded pair template.

    Attributes:
        name: the built-in name or the file's path (as given).
        source: the template's text (enters the prompts' content ids).
        verdict_pattern: regex whose group 1 is the verdict label.
        verdict_labels: what group 1 reads for slot 1, slot 2 and, when offered, a tie.
        max_chars: the most characters a rendered turn (system or user) may have
            (:data:`MAX_PROMPT_CHARS` unless the job sets ``max_prompt_chars``); past it the
            rendering stops with one line.
    """

    name: str
    source: str
    verdict_pattern: str
    verdict_labels: tuple[str, ...]
    max_chars: int = MAX_PROMPT_CHARS

    @property
    def compiled(self) -> jinja2.Template:
        return _compiled(self.source)

    @property
    def fields(self) -> frozenset[str]:
        """The variables the template reads (undeclared in it)."""
        return frozenset(meta.find_undeclared_variables(ENV.parse(self.source)))

    def render(self, values: Mapping[str, Any]) -> tuple[str | None, str]:
        """``(system, user)``: the two turns filled with ``values`` (system ``None`` when
        the template has no system block).

        Raises:
            ConfigError: the template fails on these values (an unsafe attribute, a field
                missing from ``values``, ``1/0``, ...; checked beforehand by
                :func:`check_fields` and :func:`check_renders`), naming the template and the
                error.
        """
        try:
            return self._render(values)
        except Exception as exc:  # noqa: BLE001 - a user's template may raise anything
            raise ConfigError(
                f"pair template {self.name!r}: {_one_line(exc)}"
            ) from None

    def _render(self, values: Mapping[str, Any]) -> tuple[str | None, str]:
        t, n = self.compiled, self.max_chars
        if "user" not in t.blocks:
            ctx = t.new_context(dict(values))
            return None, tb.bounded_text(t.root_render_func(ctx), n, "the prompt")
        ctx = t.new_context(dict(values))
        system = (
            tb.bounded_text(t.blocks["system"](ctx), n, "the system prompt")
            if "system" in t.blocks
            else None
        )
        ctx = t.new_context(dict(values))
        return system, tb.bounded_text(t.blocks["user"](ctx), n, "the user prompt")

    @property
    def letter_map(self) -> dict[str, str]:
        """verdict label -> position letter (slot 1 ``A``, slot 2 ``B``, tie ``C``)."""
        return {lab: "ABC"[i] for i, lab in enumerate(self.verdict_labels)}


_CACHE: dict[str, jinja2.Template] = {}


def _compiled(source: str) -> jinja2.Template:
    t = _CACHE.get(source)
    if t is None:
        t = _CACHE[source] = ENV.from_string(source)
    return t


def load_template(
    template: str,
    base: str | os.PathLike[str] | None = None,
    *,
    verdict_pattern: str | None = None,
    verdict_labels: Iterable[str] | None = None,
    max_chars: int = MAX_PROMPT_CHARS,
) -> PairTemplate:
    """A built-in template by name (:data:`BUILTIN`) or a Jinja2 file (relative paths from
    ``base``, else the working directory), with its verdict pattern and labels.

    A built-in template brings its own pattern and labels (which the arguments may
    override); a file needs ``verdict_pattern`` (one capture group); ``verdict_labels``
    default to ``["A", "B", "C"]`` (slot 1, slot 2, tie; two labels: no tie offered).
    ``max_chars`` bounds each rendered turn (characters).

    Raises:
        ConfigError: unknown built-in name, unreadable file, a syntax error in the
            template, a missing or invalid verdict pattern (not one group), labels that are
            not 2 or 3 distinct non-empty strings.
    """
    source, pattern, labels = _source(template, base, verdict_pattern, verdict_labels)
    _check_verdict_format(template, pattern, labels)
    _check_structure(template, source)
    return PairTemplate(template, source, pattern, labels, max_chars)


def _source(
    template: str,
    base: str | os.PathLike[str] | None,
    verdict_pattern: str | None,
    verdict_labels: Iterable[str] | None,
) -> tuple[str, str, tuple[str, ...]]:
    """``(source, verdict pattern, verdict labels)`` of a template named by
    :func:`load_template`: a built-in or lent one's text with its own pattern and labels
    (the arguments override them), or a file's text (relative to ``base``) with the given
    pattern and labels (default ``("A", "B", "C")``).

    Raises:
        ConfigError: no such file, or a file without ``verdict_pattern``.
    """
    lent = None if template in BUILTIN else lent_template(template)
    if template in BUILTIN or lent is not None:
        if lent is not None:
            make, pat, labels = lent
            source = make()
        else:
            fname, pat, labels = BUILTIN[template]
            source = (_TEMPLATE_DIR / fname).read_text(encoding="utf-8")
        pattern = verdict_pattern or pat
        labels = tuple(verdict_labels) if verdict_labels is not None else labels
    else:
        path = pathlib.Path(template)
        if not path.is_absolute() and base is not None:
            path = pathlib.Path(base) / path
        if not path.is_file():
            raise ConfigError(
                f"pair template {template!r}: no such file ({path}); built-in templates: {', '.join(known_templates())}"
            )
        source = path.read_text(encoding="utf-8")
        if not verdict_pattern:
            raise ConfigError(
                f"pair template {template!r}: an own template needs verdict_pattern (a regex, group 1 = the label)"
            )
        pattern = verdict_pattern
        labels = (
            tuple(verdict_labels) if verdict_labels is not None else ("A", "B", "C")
        )
    return source, pattern, labels


def _check_verdict_format(template: str, pattern: str, labels: tuple[str, ...]) -> None:
    """Check a template's verdict pattern (a regex with a capture group: group 1 is the
    label) and its labels (2 or 3 distinct non-empty strings: slot 1, slot 2[, tie]).

    Raises:
        ConfigError: naming the template and what is wrong.
    """
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise ConfigError(
            f"pair template {template!r}: verdict_pattern {pattern!r} is not a regex ({exc})"
        ) from None
    if groups < 1:
        raise ConfigError(
            f"pair template {template!r}: verdict_pattern {pattern!r} has no capture group (group 1 = the label)"
        )
    if (
        len(labels) not in (2, 3)
        or len(set(labels)) != len(labels)
        or not all(isinstance(x, str) and x for x in labels)
    ):
        raise ConfigError(
            f"pair template {template!r}: verdict_labels must be 2 or 3 distinct labels (slot 1, slot 2[, tie]), not {list(labels)}"
        )


def _check_structure(template: str, source: str) -> None:
    """Check a template's text: valid Jinja2, no tag that reads another template
    (:data:`_NO_LOADER`), only ``system`` and ``user`` blocks, and a ``user`` block wherever
    there is a ``system`` block.

    Raises:
        ConfigError: naming the template, the line where known, and what is wrong.
    """
    try:
        _compiled(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"pair template {template!r}: Jinja2 syntax error on line {exc.lineno}: {exc.message}"
        ) from None
    t = _compiled(source)
    for node_type, tag in _NO_LOADER.items():
        for node in ENV.parse(source).find_all(node_type):
            raise ConfigError(
                f"pair template {template!r}: line {node.lineno}: {{% {tag} %}} is not allowed (a template is one file)"
            )
    extra = set(t.blocks) - {"system", "user"}
    if extra:
        raise ConfigError(
            f"pair template {template!r}: unknown block(s) {', '.join(sorted(extra))} (blocks: system, user)"
        )
    if "system" in t.blocks and "user" not in t.blocks:
        raise ConfigError(
            f"pair template {template!r}: a system block needs a user block"
        )


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its type and its message's first line."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


def check_renders(
    template: PairTemplate, rows: Iterable[tuple[str, Mapping[str, Any]]]
) -> None:
    """Render the template once for each ``(row label, values)`` (at plan time, before any
    query), so that a template that fails (an unsafe attribute such as ``__class__``, ``1/0``,
    a filter on the wrong type) is refused as one line, never a traceback mid-run.

    Raises:
        ConfigError: naming the template, the row and the error.
    """
    for where, values in rows:
        try:
            template._render(values)
        except Exception as exc:  # noqa: BLE001 - a user's template may raise anything
            raise ConfigError(
                f"pair template {template.name!r} fails on {where}: {_one_line(exc)}"
            ) from None


def check_fields(template: PairTemplate, columns: Iterable[str]) -> None:
    """Check that every field the template reads exists: a pair field
    (:data:`PAIR_FIELDS`) or a column of the data.

    Raises:
        ConfigError: naming the first unknown field, the template and the data's columns.
    """
    known = set(PAIR_FIELDS) | set(columns)
    unknown = sorted(template.fields - known)
    if unknown:
        raise ConfigError(
            f"pair template {template.name!r}: field {unknown[0]!r} is not in the data "
            f"(columns: {', '.join(sorted(columns))}; pair fields: {', '.join(PAIR_FIELDS)})"
        )
