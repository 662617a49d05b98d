"""An outlier alarm on the product code's size, not a layout rule.

Where code lives is decided by cohesion: a file holds one idea, and a function one step
(``docs/contributing.md``, "Where code lives"). A count cannot say that; it can only catch a
file or a function that has clearly grown past any one idea. So the count leaves out what
explains the code: docstrings, comments and blank lines are not counted, and the limits
(:data:`MAX_FILE_CODE_LINES`, :data:`MAX_FUNCTION_CODE_LINES`) sit well above what one idea
needs. The product code is every ``*.py`` file under the rooms that install as ``voirdire``;
``tests/``, ``perf/``, ``examples/`` and ``cluster/`` are not product code. A failure lists
every offender with its count.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from tests.repo import REPO

#: code lines (docstrings, comments and blank lines not counted) per file, per function
MAX_FILE_CODE_LINES = 600
MAX_FUNCTION_CODE_LINES = 120

#: the product rooms, relative to the repository root
PRODUCT_ROOMS = ("voirdire", "analysis", "benchmarks", "judges", "engine")

_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def product_files(root: Path = REPO) -> list[Path]:
    """Every product ``*.py`` file under ``root``, sorted (paths absolute)."""
    files: list[Path] = []
    for room in PRODUCT_ROOMS:
        files.extend(
            p for p in (root / room).rglob("*.py") if "__pycache__" not in p.parts
        )
    return sorted(files)


def _docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every module, class and function docstring."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            )
            and node.body
        ):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source: str) -> set[int]:
    """The line numbers of ``source`` that hold code: a token other than a comment, on a
    line outside every docstring."""
    docs = _docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NOT_CODE:
            lines.update(
                n for n in range(tok.start[0], tok.end[0] + 1) if n not in docs
            )
    return lines


def long_functions(
    source: str, limit: int = MAX_FUNCTION_CODE_LINES
) -> list[tuple[str, int, int]]:
    """``(qualified name, def line, code lines)`` of each function of ``source`` with more
    than ``limit`` code lines (its decorators not counted, nested functions counted in the
    function that holds them and on their own)."""
    code = code_lines(source)
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    n = sum(child.lineno <= ln <= child.end_lineno for ln in code)
                    if n > limit:
                        found.append((name, child.lineno, n))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def offenders(root: Path = REPO) -> tuple[list[str], list[str]]:
    """The files over :data:`MAX_FILE_CODE_LINES` and the functions over
    :data:`MAX_FUNCTION_CODE_LINES`, each a line ``path: N code lines`` or ``path:LINE
    name: N code lines`` (``path`` relative to ``root``), largest first."""
    big_files: list[tuple[int, str]] = []
    big_functions: list[tuple[int, str]] = []
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        n = len(code_lines(source))
        if n > MAX_FILE_CODE_LINES:
            big_files.append((n, f"{rel}: {n} code lines"))
        for name, line, size in long_functions(source):
            big_functions.append((size, f"{rel}:{line} {name}: {size} code lines"))
    return (
        [text for _, text in sorted(big_files, key=lambda t: (-t[0], t[1]))],
        [text for _, text in sorted(big_functions, key=lambda t: (-t[0], t[1]))],
    )


def test_the_measure_counts_code_only(tmp_path):
    """The measure itself, on a made-up room: docstrings, comments, blank lines and
    decorators not counted; a statement over several lines counted whole; nested
    functions and methods found."""
    doc = '    """' + "\n".join(["A docstring"] * 300) + '"""\n'
    body = "\n".join(f"    x{i} = {i}  # a comment" for i in range(119))
    over = "\n".join(f"    y{i} = {i}\n\n    # note" for i in range(120))
    source = (
        "import functools\n\n"
        f"@functools.cache\n@functools.wraps(print)\ndef fine():\n{doc}{body}\n\n"
        f"def too_long():\n{over}\n\n"
        "class C:\n"
        + "\n".join("    " + line for line in f"def method():\n{over}".splitlines())
        + "\n"
        "call(\n    1,\n    2,\n)\n"
    )
    found = long_functions(source)
    assert [(name, size) for name, _, size in found] == [
        ("too_long", 121),
        ("C.method", 121),
    ]
    assert (
        len(code_lines("def f():\n    '''doc\n    more'''\n    return (1,\n  2)\n"))
        == 3
    )
    (tmp_path / "engine").mkdir()
    big = '"""' + "doc\n" * 900 + '"""\n' + "x = 1\n" * 601
    (tmp_path / "engine" / "big.py").write_text(big, encoding="utf-8")
    (tmp_path / "engine" / "ok.py").write_text("# c\n\n" * 900 + "x = 1\n" * 600)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "big.py").write_text("x = 1\n" * 900, encoding="utf-8")
    files, functions = offenders(tmp_path)
    assert files == ["engine/big.py: 601 code lines"]
    assert functions == []


def test_no_product_file_or_function_has_outgrown_one_idea():
    """No product file over 600 code lines, no function over 120: past those, a file or a
    function holds more than one idea (``docs/contributing.md``)."""
    assert product_files(), f"no product files found under {REPO}"
    files, functions = offenders()
    message = []
    if files:
        message.append(f"{len(files)} files over {MAX_FILE_CODE_LINES} code lines:")
        message.extend("  " + line for line in files)
    if functions:
        message.append(
            f"{len(functions)} functions over {MAX_FUNCTION_CODE_LINES} code lines:"
        )
        message.extend("  " + line for line in functions)
    assert not message, "\n".join(message)
