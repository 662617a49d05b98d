"""``python -m voirdire`` runs the command-line interface.

``-m`` puts the current directory first on ``sys.path``; the command line is often run
inside a results directory (``python -m voirdire report .``), which is data from anyone and
may hold a ``polars.py`` or a ``mypackage/``. The entry drops that entry before importing
anything else, so ``python -m voirdire`` imports what the ``voirdire`` console script
imports (``docs/security.md``). (A ``voirdire.py`` or ``voirdire/`` in the current directory
is found by Python itself before this file runs: ``python -P -m voirdire`` or the console
script avoid that too.)
"""

import os
import sys


def _drop_cwd(path: list[str]) -> None:
    """Remove the current directory that ``-m`` put first on ``path`` (``""`` or its
    absolute name); nothing when Python runs with ``-P`` (``sys.flags.safe_path``)."""
    if getattr(sys.flags, "safe_path", False) or not path:
        return
    if path[0] == "" or os.path.abspath(path[0]) == os.getcwd():
        del path[0]


_drop_cwd(sys.path)

from voirdire.cli import main  # noqa: E402  (after the current directory left sys.path)

if __name__ == "__main__":
    main()
