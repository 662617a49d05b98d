"""The import rule of the rooms, checked on the source (``make test`` runs it in CI).

voirdire's rooms, left to right::

    voirdire.core -> benchmarks -> judges -> engine -> analysis -> voirdire.api -> voirdire.cli

A module imports only from its own room and rooms to its left: never "up", neither at the
top of a module nor inside a function, a ``try`` or an ``if TYPE_CHECKING:`` block. The
product never imports ``tests`` or ``perf`` and never edits ``sys.path`` (or a package's
``__path__``).

``import-linter`` cannot check this: it finds a package's modules under the package's one
folder, and setuptools' ``package-dir`` mapping puts the rooms in top-level folders of the
repository (``engine/`` is ``voirdire.engine``), so it reports ``voirdire.analysis does not
exist``. This test reads the same mapping from ``pyproject.toml`` and parses every module
with :mod:`ast`, so it sees every import statement, wherever it is.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: the rooms, left to right: a module may import from its room and those to its left
ROOMS = ["core", "benchmarks", "judges", "engine", "analysis", "api", "cli"]

#: modules of the top-level package itself, by room: ``voirdire/__init__.py`` re-exports the
#: public API, ``python -m voirdire`` is the CLI, ``voirdire.exceptions`` and ``voirdire.registry``
#: (the one registry every kind uses) are the core's, and so are the output directory's layout,
#: its row schemas, its ownership rules, the part reader and the stage machinery (engine and
#: analysis both use them)
PACKAGE_ROOT_ROOMS = {
    "voirdire": "api",
    "voirdire.__main__": "cli",
    "voirdire.exceptions": "core",
    "voirdire.registry": "core",
    "voirdire.import_paths": "core",
    "voirdire.layout": "core",
    "voirdire.ownership": "core",
    "voirdire.bounds": "core",
    "voirdire.file_set": "core",
    "voirdire.schema": "core",
    "voirdire.parts": "core",
    "voirdire.stages": "core",
    "voirdire.escape": "core",
    "voirdire.redaction": "core",
}


def product_modules() -> dict[str, Path]:
    """Every module of the product (dotted name -> file): every ``*.py`` file under each
    folder of pyproject's ``package-dir`` mapping, subpackages included."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mods: dict[str, Path] = {}
    for pkg, folder in cfg["package-dir"].items():
        for f in sorted((REPO / folder).rglob("*.py")):
            rel = f.relative_to(REPO / folder).with_suffix("").parts
            name = ".".join(
                [pkg, *rel[:-1]] + ([] if rel[-1] == "__init__" else [rel[-1]])
            )
            mods.setdefault(
                name, f
            )  # "voirdire" = "voirdire" maps the package, not the rooms' folders
    return mods


def room_of(module: str) -> str | None:
    """The room of a ``voirdire`` module (``None``: not voirdire's)."""
    if module in PACKAGE_ROOT_ROOMS:
        return PACKAGE_ROOT_ROOMS[module]
    parts = module.split(".")
    if parts[0] != "voirdire" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ROOMS else "unknown"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (absolute)
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """Every import in a module, anywhere in it, as absolute module names; ``from X import
    y`` names ``X.y`` when that is a module, else ``X``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(name, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            for a in node.names:
                sub = f"{src}.{a.name}"
                found.append(Import(name, sub if sub in known else src, node.lineno))
    return found


def upward_imports() -> list[str]:
    """Imports from a room to a room on its right (or to an unknown ``voirdire`` room)."""
    mods = product_modules()
    bad = []
    for name, path in mods.items():
        here = ROOMS.index(room_of(name))
        for imp in imports_of(name, path, set(mods)):
            there = room_of(imp.target)
            if there is None:
                continue
            if there == "unknown" or ROOMS.index(there) > here:
                bad.append(f"{imp} ({room_of(name)} -> {there})")
    return bad


def test_every_module_has_a_room():
    mods = product_modules()
    assert {
        "voirdire.core",
        "voirdire.engine.store",
        "voirdire.cli",
        "voirdire.api",
    } <= set(mods)
    assert {room_of(m) for m in mods} == set(ROOMS)


def test_the_checker_sees_every_kind_of_import(tmp_path):
    """The parser catches imports inside functions, TYPE_CHECKING blocks and relative ones
    (a check that cannot fail tests nothing)."""
    src = tmp_path / "store.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from voirdire.analysis.position import metrics\n"
        "def f():\n    import voirdire.api\n    from ..judges import base\n    from . import job\n"
        "from voirdire import core\n"
    )
    known = {
        "voirdire.analysis.position.metrics",
        "voirdire.judges.base",
        "voirdire.engine.job",
        "voirdire.core",
    }
    got = {
        (i.target, room_of(i.target))
        for i in imports_of("voirdire.engine.store", src, known)
    }
    assert got == {
        ("typing", None),
        ("voirdire.analysis.position.metrics", "analysis"),
        ("voirdire.api", "api"),
        ("voirdire.judges.base", "judges"),
        ("voirdire.engine.job", "engine"),
        ("voirdire.core", "core"),
    }


def test_no_import_goes_up():
    """No module imports from a room to its right (the rule of the developers' guide)."""
    bad = upward_imports()
    assert not bad, (
        "imports against the direction core -> benchmarks -> judges -> engine -> analysis -> api -> cli:\n"
        + "\n".join(bad)
    )


def import_graph() -> dict[str, list[str]]:
    """module -> the product modules it imports (every import statement, wherever it is)."""
    mods = product_modules()
    return {
        n: sorted(
            {
                i.target
                for i in imports_of(n, p, set(mods))
                if i.target in mods and i.target != n
            }
        )
        for n, p in mods.items()
    }


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The cycles of a directed graph: its strongly connected components of more than one
    node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                cycles.append(sorted([v, *comp]))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_cycle_finder():
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["d"], "f": ["f"]}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": ["b"], "b": []}) == []


@pytest.mark.parametrize("room", ROOMS)
def test_no_import_cycle(room):
    """No two modules import each other, directly or through others (an import moved into
    a function or to the bottom of a module still counts): one direction inside a room too."""
    cycles = [
        c for c in find_cycles(import_graph()) if any(room_of(m) == room for m in c)
    ]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


#: the one module that may touch ``sys.path``, and only to remove from it: ``python -m
#: voirdire`` drops the current directory ``-m`` put first (a results directory, which is
#: data: issue 26, section 4), so it imports what the console script imports
SYS_PATH_REMOVAL_ONLY = "voirdire.__main__"


def test_product_never_imports_tests_or_perf_nor_edits_sys_path():
    mods = product_modules()
    bad = []
    main = ast.parse(mods[SYS_PATH_REMOVAL_ONLY].read_text())
    for node in ast.walk(main):  # removal only: no insert/append/extend, no assignment
        if isinstance(node, ast.Attribute) and node.attr in {
            "insert",
            "append",
            "extend",
        }:
            bad.append(f"{SYS_PATH_REMOVAL_ONLY}:{node.lineno} adds to a list")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            bad.append(f"{SYS_PATH_REMOVAL_ONLY}:{node.lineno} assigns")
    for name, path in mods.items():
        for imp in imports_of(name, path, set(mods)):
            top = imp.target.split(".")
            if top[0] in ("tests", "perf") or top[:2] in (
                ["voirdire", "tests"],
                ["voirdire", "perf"],
            ):
                bad.append(str(imp))
        for node in ast.walk(ast.parse(path.read_text())):
            # sys.path / site.addsitedir / __path__ in any form (append, insert, assignment)
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (
                    (node.value.id, node.attr)
                    in {("sys", "path"), ("site", "addsitedir")}
                )
                and not (name == SYS_PATH_REMOVAL_ONLY and node.attr == "path")
            ):
                bad.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
            if isinstance(node, ast.Name) and node.id == "__path__":
                bad.append(f"{name}:{node.lineno} uses __path__")
    assert not bad, "\n".join(bad)


#: the stages of ``voirdire.analysis``, left to right: a stage imports only from itself and
#: the stages to its left (``settings`` holds the defaults, ``stats`` is the statistics floor
#: that knows no benchmark, ``results_dir`` is the one door
#: into a directory; ``stages`` plans one directory's analysis from the next three;
#: ``outputs``/``study`` compute one and several directories' tables; ``ranking`` fits
#: leaderboards from judgments; ``people`` estimates people's from a few labels; ``together``
#: reads several directories for report, mitigate, rank and people; ``families``
#: names each judge's model and strategy; ``choice`` ranks the judges a user chooses among
#: (the report's summary); ``report`` writes and renders them; ``build`` computes a report's
#: tables, then has them written)
ANALYSIS_STAGES = [
    "settings",
    "key_sort",
    "stats",
    "results_dir",
    "position",
    "biases",
    "mitigation",
    "ranking",
    "people",
    "stages",
    "outputs",
    "study",
    "together",
    "families",
    "shared_units",
    "choice",
    "report",
    "build",
]


def test_analysis_stages_import_one_way():
    mods = product_modules()
    bad = []
    for name, path in mods.items():
        parts = name.split(".")
        if parts[:2] != ["voirdire", "analysis"] or len(parts) < 3:
            continue
        here = ANALYSIS_STAGES.index(parts[2])
        for imp in imports_of(name, path, set(mods)):
            t = imp.target.split(".")
            if (
                t[:2] == ["voirdire", "analysis"]
                and len(t) > 2
                and ANALYSIS_STAGES.index(t[2]) > here
            ):
                bad.append(str(imp))
    order = "settings -> key_sort -> stats -> results_dir -> position -> biases -> mitigation -> ranking -> people -> stages -> outputs -> study -> report -> build"
    assert not bad, f"analysis imports against {order}:\n" + "\n".join(bad)
