"""Where the repository is, for tests that start processes which must import ``tests.*``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: the repository root: the test package imports from here as ``tests``
REPO = Path(__file__).resolve().parents[1]


def repo_pythonpath() -> str:
    """``PYTHONPATH`` with the repository root first, for Ray workers and subprocesses
    that must import the test package (``tests.backends``) as the driver does."""
    rest = os.environ.get("PYTHONPATH")
    return str(REPO) + (os.pathsep + rest if rest else "")


def in_fresh_interpreter(code: str, answer: str, timeout: float = 300) -> Any:
    """Run ``code`` in a fresh interpreter, then print ``answer`` (a Python expression that
    may read what ``code`` defined, and ``sys``) as JSON; the value read back. For tests
    whose point is what a new process imports or keeps (``sys.modules``: Ray, the analysis
    stack).

    Raises:
        subprocess.CalledProcessError: ``code`` failed (its stderr in the error)."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps({answer}))"],
        capture_output=True, text=True, timeout=timeout, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    return set(in_fresh_interpreter(code, "sorted(sys.modules)"))
