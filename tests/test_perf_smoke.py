"""``make perf-smoke`` inside the test run: every perf script of the Makefile's ``PERF``
list at its ``--smoke`` size, in one ``python -m perf.smoke`` process (as the target runs
it), so a refactor that breaks one fails the suite. It runs on one of ``make test``'s
workers while the other takes the modules, instead of after the whole suite."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.repo import repo_pythonpath
from tests.test_perf_list import ROOT, _perf_list

pytestmark = [pytest.mark.process, pytest.mark.slow]


def test_every_perf_script_runs_at_its_smoke_size():
    names = _perf_list()
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    r = subprocess.run(
        [sys.executable, "-m", "perf.smoke", *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    table = r.stdout[r.stdout.index("perf smoke: wall seconds per script") :]
    assert all(f"ok      perf.{n}" in table for n in names), table
