"""Size limits on the product code (issue 28, item 5).

No product Python file is over :data:`MAX_FILE_LINES` lines and no function or method is
over :data:`MAX_FUNCTION_LINES` lines. The product code is every ``*.py`` file under the
rooms that install as ``voirdire`` (``voirdire/``, ``analysis/``, ``benchmarks/``,
``judges/``, ``engine/``); ``tests/``, ``perf/``, ``examples/`` and ``cluster/`` are not
product code. A function's size is ``end_lineno - lineno + 1`` as :mod:`ast` reports it,
so its decorators are not counted but its docstring is. Nested functions are measured on
their own too (and count inside the function that holds them).

A failure lists every offender with its size, so one run shows the whole job.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.repo import REPO

#: the limits of the project rules (README "How we build"): lines per file, per function
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80

#: the product rooms, relative to the repository root
PRODUCT_ROOMS = ("voirdire", "analysis", "benchmarks", "judges", "engine")


def product_files(root: Path = REPO) -> list[Path]:
    """Every product ``*.py`` file under ``root``, sorted (paths absolute)."""
    files: list[Path] = []
    for room in PRODUCT_ROOMS:
        files.extend(
            p for p in (root / room).rglob("*.py") if "__pycache__" not in p.parts
        )
    return sorted(files)


def file_lines(path: Path) -> int:
    """The number of lines of ``path`` (as ``wc -l`` counts them, plus a last unended line)."""
    return len(path.read_text(encoding="utf-8").splitlines())


def long_functions(
    source: str, limit: int = MAX_FUNCTION_LINES
) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, size)`` of each function in ``source`` over ``limit`` lines.

    The qualified name joins the enclosing classes and functions with dots
    (``Class.method``, ``outer.inner``); the first line is the ``def`` line.
    """
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    size = child.end_lineno - child.lineno + 1
                    if size > limit:
                        found.append((name, child.lineno, size))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def offenders(root: Path = REPO) -> tuple[list[str], list[str]]:
    """The files over :data:`MAX_FILE_LINES` and the functions over :data:`MAX_FUNCTION_LINES`.

    Each is a line ``path: N lines`` or ``path:LINE name: N lines`` (``path`` relative to
    ``root``), the files largest first, the functions largest first.
    """
    big_files: list[tuple[int, str]] = []
    big_functions: list[tuple[int, str]] = []
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        n = file_lines(path)
        if n > MAX_FILE_LINES:
            big_files.append((n, f"{rel}: {n} lines"))
        for name, line, size in long_functions(path.read_text(encoding="utf-8")):
            big_functions.append((size, f"{rel}:{line} {name}: {size} lines"))
    return (
        [text for _, text in sorted(big_files, key=lambda t: (-t[0], t[1]))],
        [text for _, text in sorted(big_functions, key=lambda t: (-t[0], t[1]))],
    )


def test_the_measure_counts_what_it_says(tmp_path):
    """The measure itself, on a made-up room: decorators excluded, nested and methods found."""
    body = "\n".join(
        f"    x{i} = {i}" for i in range(79)
    )  # def line + 79 = 80 lines: allowed
    over = "\n".join(
        f"    y{i} = {i}" for i in range(80)
    )  # def line + 80 = 81 lines: over
    source = (
        "import functools\n\n"
        f"@functools.cache\n@functools.wraps(print)\ndef fine():\n{body}\n\n"
        f"def too_long():\n{over}\n\n"
        "class C:\n"
        + "\n".join("    " + line for line in f"def method():\n{over}".splitlines())
        + "\n"
    )
    found = long_functions(source)
    assert [(name, size) for name, _, size in found] == [
        ("too_long", 81),
        ("C.method", 81),
    ]
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "big.py").write_text("x = 1\n" * 401, encoding="utf-8")
    (tmp_path / "engine" / "ok.py").write_text("x = 1\n" * 400, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "big.py").write_text("x = 1\n" * 900, encoding="utf-8")
    files, functions = offenders(tmp_path)
    assert files == ["engine/big.py: 401 lines"]
    assert functions == []


def test_product_files_and_functions_are_small():
    """No product file over 400 lines, no function over 80 (issue 28, item 5)."""
    assert product_files(), f"no product files found under {REPO}"
    files, functions = offenders()
    message = []
    if files:
        message.append(f"{len(files)} files over {MAX_FILE_LINES} lines:")
        message.extend("  " + line for line in files)
    if functions:
        message.append(f"{len(functions)} functions over {MAX_FUNCTION_LINES} lines:")
        message.extend("  " + line for line in functions)
    assert not message, "\n".join(message)
