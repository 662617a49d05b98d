"""Text from received files, shown as data: escaped for the terminal and for Markdown.

Judge, model, task, benchmark and file names, failure messages and anything else read from
a log, a results directory or a data file may hold what a terminal or a Markdown viewer would
act on: rich markup (``jx[/]y`` ends in a ``MarkupError``; ``[link=https://evil.example/]
gpt-4[/link]`` shows ``gpt-4``), escape sequences (an OSC that sets the window title, a CSI
that clears the screen), table pipes (``evil | 1.000 | FORGED`` forges cells) and raw HTML
(``<script>``). Every place that shows such text passes it through one of these:

- :func:`visible`: control characters written as escapes (``\\x1b``, ``\\n``, ``\\u202e``):
  C0 and C1 controls, DEL, the bidirectional overrides and isolates, the line and paragraph
  separators. Nothing reaches a terminal as a control byte.
- :func:`terminal`: :func:`visible`, then rich's markup escaped (``rich.markup.escape``):
  for text put into a markup string (``f"wrote {terminal(path)}"``).
- :func:`cell`: :func:`visible` as a ``rich.text.Text`` (never parsed as markup or emoji
  codes): for table cells.
- :func:`markdown`: :func:`visible`, then Markdown's active characters escaped: ``\\``,
  ``|``, backticks, ``*``, ``[``, ``]``, ``~``, ``_`` where it could open or close
  emphasis, and HTML's ``&``, ``<``, ``>`` as entities. For table cells and running text.
- :func:`markdown_code`: a code span that holds the text whatever backticks it has.

The HTML report is autoescaped by Jinja2 and the CSVs neutralise formulas
(:func:`voirdire.analysis.report.files.write_csv`: :func:`spreadsheet_text` on every text
cell and column name), undone where our own CSVs are read back (:func:`unquote_table`);
see ``docs/security.md``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "FORMULA_START",
    "visible",
    "terminal",
    "cell",
    "markdown",
    "markdown_code",
    "drawn",
    "spreadsheet_text",
    "spreadsheet_unquote",
    "unquote_table",
]

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: C0 controls, DEL, C1 controls, bidirectional embeddings/overrides/isolates, the line and
#: paragraph separators: each written as an escape
_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
#: :data:`_CONTROLS` but the line feed (:func:`drawn`)
_DRAWN_CONTROLS = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)


def _escape_one(m: re.Match[str]) -> str:
    c = m.group()
    if c in _SHORT:
        return _SHORT[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def visible(text: Any) -> str:
    """``str(text)`` with every control character written as an escape (``"\\x1b"``,
    ``"\\n"``, ``"\\x9b"``, ``"\\u202e"``: module docstring); other text as it is."""
    return _CONTROLS.sub(_escape_one, str(text))


def drawn(text: Any) -> str:
    """``str(text)`` for a figure's label: every control character (:func:`visible`'s)
    removed but the line feed, which matplotlib lays out as a line break rather than asking
    a font for a glyph (a tick label ``"strategy\nview"`` stays two lines). Figures also
    draw it without mathtext (``voirdire.analysis.report.plotting``)."""
    return _DRAWN_CONTROLS.sub("", str(text))


def terminal(text: Any) -> str:
    """``text`` for a rich markup string: :func:`visible`, then its markup escaped, so it
    prints literally (``"jx[/]y"`` prints ``jx[/]y``)."""
    from rich.markup import escape

    return escape(visible(text))


def cell(text: Any) -> Text:
    """``text`` as a rich ``Text`` for a table cell: :func:`visible`, never parsed as markup
    or emoji codes."""
    from rich.text import Text

    return Text(visible(text))


#: Markdown's and HTML's active characters (``_`` is handled apart)
_MD = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "[": "\\[",
    "]": "\\]",
    "~": "\\~",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}
_MD_CHARS = re.compile(r"[\\|`*\[\]~&<>]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def markdown(text: Any) -> str:
    """``text`` for a Markdown table cell or running text: :func:`visible`, then ``\\``,
    ``|``, backticks, ``*``, ``[``, ``]``, ``~`` and an ``_`` that is not inside a word
    backslash-escaped, ``&``, ``<``, ``>`` written as HTML entities: it renders as the
    text itself (no cell, link, emphasis or HTML of its own), and ``gpt4_1106_preview``
    stays as it is."""
    return _MD_CHARS.sub(lambda m: _MD.get(m.group(), "\\_"), visible(text))


def markdown_code(text: Any) -> str:
    """``text`` as a Markdown code span (not for table cells, where a ``|`` still splits):
    :func:`visible`, fenced by one backtick more than its longest run of backticks and
    padded with spaces where it starts or ends with one (CommonMark 6.1)."""
    s = visible(text)
    run = max((len(r) for r in re.findall("`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


#: the first characters that make a spreadsheet read a cell as a formula (OWASP's CSV
#: injection advice): a CSV text cell or column name starting with one is written after a
#: ``'``
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_QUOTED = "^'[" + re.escape("".join(FORMULA_START)) + "]"


def spreadsheet_text(text: str) -> str:
    """``text`` for a CSV cell or column name: with a leading ``'`` where it starts with
    one of :data:`FORMULA_START` (``"=1+1"`` → ``"'=1+1"``), else as it is."""
    return "'" + text if text.startswith(FORMULA_START) else text


def spreadsheet_unquote(text: str) -> str:
    """The inverse of :func:`spreadsheet_text` (``"'=1+1"`` → ``"=1+1"``; ``"'x"`` stays)."""
    quoted = text.startswith("'") and text[1:].startswith(FORMULA_START)
    return text[1:] if quoted else text


def unquote_table(df: Any) -> Any:
    """A polars frame read from a CSV that voirdire wrote (or that a person filled from
    one: ``people_to_label.csv``), its column names and text cells as they were before
    :func:`spreadsheet_text` (``'-1`` → ``-1``, ``'@cf/x`` → ``@cf/x``). Other columns
    are as they are; a column name that would collide with another is left quoted."""
    import polars as pl

    names = {}
    for c in df.columns:
        u = spreadsheet_unquote(c)
        if u != c and u not in df.columns and u not in names.values():
            names[c] = u
    if names:
        df = df.rename(names)
    texts = [c for c, t in df.schema.items() if t == pl.String]
    if not texts:
        return df
    return df.with_columns(
        pl.when(pl.col(c).str.contains(_QUOTED))
        .then(pl.col(c).str.slice(1))
        .otherwise(pl.col(c))
        .alias(c)
        for c in texts
    )
