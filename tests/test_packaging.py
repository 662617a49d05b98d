"""voirdire is a normal package: a checkout exposes nothing but the package, a wheel built
from the repository holds every module and its data (and no tests), works on its own, and
static tools resolve every ``voirdire.*`` import.

The wheel tests run the wheel with the editable install switched off (a ``sitecustomize``
removes setuptools' editable finder and fails the process if any ``voirdire`` module was
loaded from anywhere but the wheel), so a module missing from the wheel cannot be served
from the checkout behind the test's back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.test_imports import REPO, product_modules

#: a sitecustomize for the wheel's processes: no editable finder; at exit, every loaded
#: voirdire module must come from the wheel's folder (exit code 3 otherwise)
SITECUSTOMIZE = """
import atexit, os, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in (getattr(f, "__module__", "") + repr(f)).lower()]
sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in (getattr(h, "__module__", "") + repr(h)).lower()]
sys.path_importer_cache.clear()
_TREE = os.environ["VOIRDIRE_WHEEL_TREE"]

def _check():
    strays = [f"{n}: {getattr(m, '__file__', None)}" for n, m in list(sys.modules.items())
              if (n == "voirdire" or n.startswith("voirdire.")) and not str(getattr(m, "__file__", "")).startswith(_TREE)]
    if strays:
        sys.stderr.write("voirdire modules not loaded from the wheel:\\n" + "\\n".join(strays) + "\\n")
        sys.stderr.flush()
        os._exit(3)

atexit.register(_check)
"""

_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "runs", "__pycache__", ".*cache"
)


def _checkout_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


#: every test here starts processes (a Python in the checkout, pip, the wheel, mypy)
pytestmark = pytest.mark.process

NOT_SUBPACKAGES = (
    "voirdire.tests",
    "voirdire.perf",
    "voirdire.voirdire",
    "voirdire.conftest",
)


def test_checkout_exposes_only_the_package():
    """In a checkout (working directory = repository root, as ``python -c`` there), the
    repository's other folders are not subpackages of voirdire; the rooms are (one
    interpreter tries every name)."""
    code = (
        "import importlib, voirdire.engine.store, voirdire.core\n"
        f"for name in {NOT_SUBPACKAGES!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as e:\n"
        "        print(name, 'missing' if e.name == name else f'other {e.name}')\n"
        "    else:\n"
        "        print(name, 'imported')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=_checkout_env(),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n")[:-1] == [f"{n} missing" for n in NOT_SUBPACKAGES], (
        r.stdout
    )


def test_the_makefile_lints_with_the_ruff_of_the_test_extra():
    """``make lint`` installs ruff alone (before the heavy extras); its pin is the test
    extra's."""
    import re
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    (pin,) = [d for d in extra if d.startswith("ruff")]
    make = re.search(r"^RUFF := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert make is not None and make.group(1) == pin, (make, pin)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """The wheel built from a copy of the repository (a build leaves no ``build/`` behind
    in the checkout, and reads none), installed with ``pip install --target``.

    Returns ``(wheel file, install folder, environment for its processes)``.
    """
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCES, symlinks=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        check=True,
        timeout=600,
    )
    (whl,) = (tmp / "dist").glob("voirdire-*.whl")
    tree = tmp / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(tree), str(whl)],
        check=True,
        timeout=600,
    )
    boot = tmp / "boot"
    boot.mkdir()
    (boot / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **_checkout_env(),
        "PYTHONPATH": f"{boot}{os.pathsep}{tree}",
        "VOIRDIRE_WHEEL_TREE": str(tree / "voirdire"),
    }
    return whl, tree, env


@pytest.mark.slow
def test_wheel_holds_every_module_and_the_templates_and_no_tests(wheel):
    whl, _, _ = wheel
    names = set(zipfile.ZipFile(whl).namelist())
    expected = {
        m.replace(".", "/") + ("/__init__.py" if f.stem == "__init__" else ".py")
        for m, f in product_modules().items()
    }
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    templates = {
        f"voirdire/benchmarks/templates/{f.name}"
        for f in (REPO / "benchmarks" / "templates").iterdir()
        if f.is_file()
    }
    assert {
        "voirdire/benchmarks/templates/prompts.json",
        "voirdire/benchmarks/templates/NOTICE.txt",
    } <= templates
    assert not templates - names, (
        f"package data missing from the wheel: {sorted(templates - names)}"
    )
    pages = {
        f"voirdire/analysis/report/templates/{f.name}"
        for f in (REPO / "analysis" / "report" / "templates").iterdir()
        if f.is_file()
    }
    assert (
        "voirdire/analysis/report/templates/report.html.j2" in pages
        and not pages - names
    ), sorted(pages - names)
    tops = {n.split("/")[0] for n in names}
    assert tops == {"voirdire", "voirdire-0.1.0.dist-info"}, tops
    assert not [n for n in names if "/tests/" in n or "/perf/" in n or "conftest" in n]


@pytest.mark.slow
def test_wheel_alone_imports_every_module_and_runs(wheel, data_dir, tmp_path):
    """From the wheel only (no checkout on the path, no editable finder): every module
    imports, the templates (package data) load, and the CLI answers."""
    _, tree, env = wheel
    mods = sorted(product_modules())
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "from voirdire.benchmarks.registry import load_benchmark\n"
        "from voirdire.benchmarks.templating import load_listwise_templates\n"
        "b = load_benchmark('mtbench', sys.argv[1])\n"
        "assert load_listwise_templates()\n"
        "from voirdire.analysis.report.views import render_template\n"
        "assert 'id=\"biases\"' in render_template('bias.html.j2', bias={'effects': [], 'self_enhancement': []})\n"
        "import voirdire; print(voirdire.__file__, b.name, len(b.questions))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(data_dir)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(str(tree / "voirdire" / "__init__.py")), r.stdout
    cli = subprocess.run(
        [sys.executable, "-m", "voirdire", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0 and "analyze" in cli.stdout, cli.stdout + cli.stderr


@pytest.mark.slow
def test_mypy_resolves_every_voirdire_import(wheel, tmp_path):
    """mypy resolves every ``voirdire.*`` import of the installed tree, in one run beside a
    probe package whose one import names a module that does not exist (mypy must report
    that one, which proves the check can fail). Static tools cannot follow setuptools'
    editable import hook: for an IDE, install with ``--config-settings
    editable_mode=strict``, a link tree that static tools read."""
    _, tree, env = wheel
    probe = tmp_path / "probe"
    (probe / "voirdire_probe").mkdir(parents=True)
    (probe / "voirdire_probe" / "__init__.py").write_text(
        "import voirdire.engine.no_such_module  # noqa: F401\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=skip", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "-p", "voirdire", "-p", "voirdire_probe"],
        cwd=tmp_path, env={**env, "MYPYPATH": f"{tree}{os.pathsep}{probe}"},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "error:" in r.stdout or r.returncode == 0, r.stdout + r.stderr  # mypy ran
    unresolved = [
        ln
        for ln in r.stdout.splitlines()
        if '"voirdire' in ln
        and (
            "[import-not-found]" in ln
            or "[import-untyped]" in ln
            or "[attr-defined]" in ln
            and 'Module "voirdire' in ln
        )
    ]
    assert [ln for ln in unresolved if "voirdire_probe" not in ln] == []
    assert any("voirdire.engine.no_such_module" in ln for ln in unresolved), r.stdout
