"""The ``voirdire`` command line run in this process (typer's ``CliRunner``), answered as
``subprocess.run`` answers: exit code, stdout and stderr.

A test of what a command prints, writes or refuses needs no process of its own: the
process costs 3-6 s of imports, and a Ray node when the command starts one (the test
run's shared cluster is reused instead: :func:`voirdire.cli.common` keeps a cluster it
did not start). Tests whose point is the process (signals, exit codes of the console
script, start-up imports, a killed driver) start one (``pytest.mark.process``).
"""

from __future__ import annotations

import contextlib
import os
import traceback
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ran:
    """What a command did: ``returncode``, ``stdout``, ``stderr`` (as
    ``subprocess.CompletedProcess``'s) and both interleaved (``output``)."""

    returncode: int
    stdout: str
    stderr: str
    output: str


def voirdire(
    *args: object,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    input: str | None = None,
) -> Ran:
    """Run ``voirdire ARGS`` in this process.

    ``env``: the command's whole environment, as ``subprocess.run(env=...)`` takes it
    (variables of this process that it lacks are unset for the command's time);
    ``cwd``: the directory it runs in. An exception the command did not handle is
    printed to ``stderr`` as the console script would print it (with ``Traceback``), exit
    code 1.
    """
    from typer.testing import CliRunner

    from voirdire.cli import app
    from voirdire.cli.common import show_warning

    changes: dict[str, str | None] | None = None
    if env is not None:
        changes = {k: None for k in os.environ if k not in env}
        changes.update(env)
    runner = CliRunner()
    with contextlib.chdir(Path(cwd) if cwd is not None else Path.cwd()):
        shown = warnings.showwarning
        warnings.showwarning = show_warning  # as voirdire.cli.main sets it
        try:
            r = runner.invoke(app, [str(a) for a in args], env=changes, input=input)
        finally:
            warnings.showwarning = shown
    stderr = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        stderr += "".join(
            traceback.format_exception(
                type(r.exception), r.exception, r.exception.__traceback__
            )
        )
    return Ran(r.exit_code, r.stdout, stderr, r.output + stderr[len(r.stderr) :])
