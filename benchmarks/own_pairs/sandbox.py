"""The Jinja2 environment a pair template renders in (:mod:`voirdire.benchmarks.own_pairs.prompts`).

:data:`ENV` is Jinja2's ``ImmutableSandboxedEnvironment`` (no attribute that starts with
``_``, no method that changes a list or dict, ranges of at most 100,000) with
``StrictUndefined``, no loader and no ``lipsum``; :class:`Sandbox` adds bounds on what one
step may build: no repeated string or list over :data:`MAX_REPEAT` items, no power above
:data:`MAX_POWER`, and widths and built texts bounded by
:mod:`~voirdire.benchmarks.own_pairs.template_bounds`.
"""

from __future__ import annotations

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from voirdire.benchmarks.own_pairs import template_bounds as tb

#: the most items a ``*`` may repeat a string or list to, and the largest exponent of ``**``
MAX_REPEAT, MAX_POWER = 1_000_000, 1_000


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, with ``*`` and ``**`` bounded (:data:`MAX_REPEAT`,
    :data:`MAX_POWER`), and widths, paddings, ``+``, ``%``, ``~``, ``str`` methods and every
    filter's result bounded by :data:`~voirdire.benchmarks.own_pairs.template_bounds.MAX_TEXT`
    (:mod:`voirdire.benchmarks.own_pairs.template_bounds`): guards against a template that builds
    gigabytes. The sandbox stops code execution and file reads; time in nested loops that
    build nothing is not bounded. A template is checked by rendering it
    (:func:`voirdire.benchmarks.own_pairs.prompts.check_renders`)."""

    intercepted_binops = frozenset(["*", "**", "+", "%"])
    code_generator_class = tb.BoundedCodeGenerator

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.filters = tb.bounded_filters(self.filters)
        self.bounded_concat = tb.bounded_concat

    def call(__self, __context, __obj, *args, **kwargs):  # type: ignore[override]  # noqa: N805
        tb.check_call(__obj, args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value):  # type: ignore[override]
        fmt = super().wrap_str_format(value)
        if fmt is None:
            return None
        source = value.__self__

        def checked(*args, **kwargs):
            tb.check_format_source(source, args, kwargs)
            return tb.check_result(fmt(*args, **kwargs), "a formatted text")

        return checked

    def call_binop(self, context, operator, left, right):  # type: ignore[override]
        tb.check_binop(operator, left, right)
        if (
            operator == "**"
            and isinstance(right, (int, float))
            and (
                abs(right) > MAX_POWER
                or (
                    isinstance(left, int)
                    and abs(left).bit_length() * abs(right) > 64 * MAX_POWER
                )
            )
        ):
            raise SecurityError(
                f"a power above {MAX_POWER} (or of more than {64 * MAX_POWER:,} bits) is not allowed"
            )
        if operator == "*":
            seq, n = (left, right) if isinstance(right, int) else (right, left)
            if (
                isinstance(seq, (str, list, tuple))
                and isinstance(n, int)
                and len(seq) * n > MAX_REPEAT
            ):
                raise SecurityError(
                    f"a repeated string or list over {MAX_REPEAT:,} items is not allowed"
                )
        return super().call_binop(context, operator, left, right)


#: the one environment every pair template (built-in or a user's) compiles and renders in
ENV = Sandbox(
    undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
)
del ENV.globals[
    "lipsum"
]  # lipsum(10**6) would write megabytes; a prompt has no use for it


__all__ = ["ENV", "MAX_POWER", "MAX_REPEAT", "Sandbox"]
