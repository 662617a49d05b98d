"""Where the repository is, for tests that start processes which must import ``tests.*``."""

from __future__ import annotations

import os
from pathlib import Path

#: the repository root: the test package imports from here as ``tests``
REPO = Path(__file__).resolve().parents[1]


def repo_pythonpath() -> str:
    """``PYTHONPATH`` with the repository root first, for Ray workers and subprocesses
    that must import the test package (``tests.backends``) as the driver does."""
    rest = os.environ.get("PYTHONPATH")
    return str(REPO) + (os.pathsep + rest if rest else "")
