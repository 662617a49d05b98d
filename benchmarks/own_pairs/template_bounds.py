"""Bounds on what one step of a sandboxed pair template may build (issue 26, item 4).

Jinja2's sandbox stops code execution and file reads, not a template that asks for
gigabytes: ``{{ x|center(999999999) }}``, ``'%999999999s'|format(x)``,
``'{:999999999}'.format(x)``, ``x.ljust(10**9)``, a ``replace`` or ``join`` that multiplies
a long text, ``~``/``+`` chains that double a string. Each of these is checked *before* it
allocates: a width, an indent or a predicted length over :data:`MAX_TEXT` characters is a
:class:`jinja2.exceptions.SecurityError`, which the template checks turn into one line
(:func:`voirdire.benchmarks.own_pairs.prompts.check_renders`). Every filter's result is also
checked after it is built (a filter that grows its input a few times, such as ``escape``,
stops at the next step). The rendered prompt as a whole is bounded separately
(``max_prompt_chars``, :mod:`voirdire.benchmarks.own_pairs.prompts`).

What is not bounded here: time spent in loops that build nothing (``range`` is at most
100,000 items by Jinja2, but loops nest).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError

#: the most characters (or items) one filter, method, operator or ``~`` may build, and the
#: largest width, padding or count argument
MAX_TEXT = 1_000_000
#: the largest ``tojson`` indent (it repeats once per nesting level and item)
MAX_JSON_INDENT = 64

#: ``%`` conversion specs: flags, width, precision
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")


def too_big(what: str) -> SecurityError:
    """The error for an operation past :data:`MAX_TEXT`."""
    return SecurityError(f"{what} over {MAX_TEXT:,} characters is not allowed")


def _width(n: Any, what: str, limit: int = MAX_TEXT) -> None:
    if isinstance(n, int) and not isinstance(n, bool) and n > limit:
        raise SecurityError(f"{what} over {limit:,} is not allowed")


def _ints(args: Any) -> list[int]:
    vals = args.values() if isinstance(args, Mapping) else args
    if not isinstance(vals, (tuple, list)) and not hasattr(vals, "__iter__"):
        vals = (vals,)
    if isinstance(vals, (str, bytes)):
        return []
    return [v for v in vals if isinstance(v, int) and not isinstance(v, bool)]


def check_percent(fmt: str, args: Any) -> None:
    """Refuse a ``%``-format whose width or precision (written, or ``*`` from ``args``) is
    over :data:`MAX_TEXT`."""
    star = False
    for width, prec in _PERCENT.findall(fmt):
        for n in (width, prec):
            if n == "*":
                star = True
            elif n:
                _width(int(n), "a format width")
    if star:
        for n in _ints(args if isinstance(args, tuple) else (args,)):
            _width(n, "a format width")


def check_format_source(fmt: str, args: tuple, kwargs: dict) -> None:
    """Refuse a ``str.format`` template whose format specs ask for a width or precision over
    :data:`MAX_TEXT` (a nested spec ``{:{w}}``: every integer argument is checked)."""
    for _lit, _field, spec, _conv in string.Formatter().parse(fmt):
        if not spec:
            continue
        if "{" in spec:
            given = list(args) + list(kwargs.values())
            given += [v for a in args if isinstance(a, Mapping) for v in a.values()]
            for n in _ints(given):
                _width(n, "a format width")
        for n in re.findall(r"\d+", spec):
            _width(int(n), "a format width")


def _seq_len(x: Any) -> int:
    return len(x) if isinstance(x, (str, list, tuple)) else 0


def check_result(value: Any, what: str) -> Any:
    """``value``, or SecurityError when it is a text or list over :data:`MAX_TEXT`."""
    if _seq_len(value) > MAX_TEXT:
        raise too_big(what)
    return value


def _replaced_len(s: str, old: str, new: str, count: Any = None) -> int:
    hits = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * (len(new) - len(old))


def check_join(items: Any, sep: str, what: str) -> list:
    """``items`` as a list, refused when their text joined by ``sep`` would pass
    :data:`MAX_TEXT` (items that are not text are counted by their ``str``)."""
    xs = list(items)
    total = len(sep) * max(len(xs) - 1, 0)
    for x in xs:
        total += len(x) if isinstance(x, str) else len(str(x))
        if total > MAX_TEXT:
            raise too_big(what)
    return xs


def _pre(name: str, args: tuple, kwargs: dict) -> None:
    """Checks before a filter runs (``args`` without the eval context/environment)."""
    get = lambda i, key, default=None: (  # noqa: E731
        args[i] if len(args) > i else kwargs.get(key, default)
    )
    value = args[0] if args else None
    if name == "center":
        _width(get(1, "width"), "a width")
    elif name == "indent":
        w = get(1, "width", 4)
        w = len(w) if isinstance(w, str) else w
        _width(w, "an indent")
        if isinstance(w, int) and isinstance(value, str):
            if len(value) + w * (value.count("\n") + 1) > MAX_TEXT:
                raise too_big("an indented text")
    elif name == "format" and isinstance(value, str):
        check_percent(value, tuple(args[1:]) + tuple(kwargs.values()))
    elif name == "replace" and isinstance(value, str):
        old, new = str(get(1, "old", "")), str(get(2, "new", ""))
        if _replaced_len(value, old, new, get(3, "count")) > MAX_TEXT:
            raise too_big("a replaced text")
    elif name == "wordwrap" and isinstance(value, str):
        wrap = get(3, "wrapstring") or "\n"
        breaks = len(value) // max(int(get(1, "width", 79) or 1), 1) + value.count("\n")
        if len(value) + (breaks + 1) * len(str(wrap)) > MAX_TEXT:
            raise too_big("a wrapped text")
    elif name in ("batch", "slice"):
        _width(get(1, "linecount" if name == "batch" else "slices"), f"a {name} count")
    elif name == "tojson":
        _width(get(1, "indent"), "a tojson indent", MAX_JSON_INDENT)
    elif name in ("truncate",) and isinstance(value, str):
        end = get(3, "end", "...")
        if isinstance(end, str) and len(end) > MAX_TEXT:
            raise too_big("a truncation mark")


def _bounded_filter(name: str, f: Callable) -> Callable:
    passes = getattr(f, "jinja_pass_arg", None) is not None

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        value_args = args[1:] if passes else args
        if name == "join" and value_args:
            sep = value_args[1] if len(value_args) > 1 else kwargs.get("d", "")
            if len(value_args) < 3 and "attribute" not in kwargs:
                xs = check_join(value_args[0], str(sep), "a joined text")
                args = (*args[: 1 if passes else 0], xs, *value_args[1:])
        _pre(name, value_args, kwargs)
        return check_result(f(*args, **kwargs), f"the result of the filter {name!r}")

    return run


def bounded_filters(filters: Mapping[str, Callable]) -> dict[str, Callable]:
    """Jinja2's filters, each checked before it runs (widths, predicted lengths) and after
    (its result's length), against :data:`MAX_TEXT`."""
    return {name: _bounded_filter(name, f) for name, f in filters.items()}


#: ``str`` methods that pad to a width argument, and those whose result length is predicted
_PAD_METHODS = ("center", "ljust", "rjust", "zfill")


def check_call(obj: Any, args: tuple, kwargs: dict) -> None:
    """Checks before a sandboxed call of a ``str`` method (``ljust(10**9)``,
    ``expandtabs``, ``replace``, ``join``)."""
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        return
    name = getattr(obj, "__name__", "")
    first = args[0] if args else next(iter(kwargs.values()), None)
    if name in _PAD_METHODS:
        _width(first, "a width")
    elif name == "expandtabs":
        size = 8 if first is None else first
        if isinstance(size, int) and len(owner) + size * owner.count("\t") > MAX_TEXT:
            raise too_big("an expanded text")
    elif name == "replace" and len(args) >= 2:
        if (
            _replaced_len(
                owner, str(args[0]), str(args[1]), args[2] if len(args) > 2 else None
            )
            > MAX_TEXT
        ):
            raise too_big("a replaced text")
    elif name == "join" and args:
        check_join(args[0], owner, "a joined text")


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Checks before ``+`` (concatenation) and ``%`` (formatting) in a template."""
    if operator == "+" and _seq_len(left) + _seq_len(right) > MAX_TEXT:
        raise too_big("a concatenation")
    if operator == "%" and isinstance(left, str):
        check_percent(left, right)


def bounded_concat(parts: tuple) -> str:
    """``~`` in a template: the parts' text joined, refused past :data:`MAX_TEXT`."""
    return "".join(check_join(map(str, parts), "", "a concatenation (~)"))


class BoundedCodeGenerator(CodeGenerator):
    """Jinja2's code generator with ``~`` compiled to :func:`bounded_concat` (through the
    environment's ``bounded_concat``), so that repeated doubling stops at :data:`MAX_TEXT`."""

    def visit_Concat(self, node, frame) -> None:  # type: ignore[override]
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            return super().visit_Concat(node, frame)
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def bounded_text(pieces, limit: int, what: str) -> str:
    """The rendered pieces joined, stopping with SecurityError once past ``limit``
    characters (the rendered prompt's bound)."""
    out: list[str] = []
    n = 0
    for piece in pieces:
        n += len(piece)
        if n > limit:
            raise SecurityError(
                f"{what} is over {limit:,} characters (max_prompt_chars)"
            )
        out.append(piece)
    return "".join(out)
