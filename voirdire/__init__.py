"""voirdire: examines LLM judges for position bias at benchmark scale, on Ray.

The repository keeps its rooms at the top level (``engine/``, ``judges/``,
``benchmarks/``, ``analysis/``); they import as ``voirdire.engine`` and so on. An
installed wheel maps them through setuptools' ``package-dir``; in a checkout (editable
install, or ``PYTHONPATH`` pointing at a worktree) the repository root is appended to this
package's search path so the same names resolve to the rooms.
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_root, "pyproject.toml")) and _root not in __path__:
    __path__.append(_root)  # type: ignore[name-defined]
