"""Processes a test started, found again: a mark in the environment (Ray's processes
inherit the driver's), looked up in ``/proc``; busy loops that load a CPU."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.repo import repo_pythonpath


def processes_marked(mark: str) -> list[int]:
    """Pids of live processes whose environment holds ``mark`` (Ray's processes inherit
    the driver's environment)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if mark.encode() in (p / "environ").read_bytes():
                stat = (p / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":  # a zombie holds nothing
                    found.append(int(p.name))
        except OSError:
            continue
    return found


def agents_started() -> int:
    """How many of this process's descendants are Ray's agents (dashboard and
    runtime-environment agents, which the raylet starts): their command lines name
    ``agent``."""
    parent: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parent[int(p.name)] = int(
                    (p / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    tree, grew = {os.getpid()}, True
    while grew:
        new = {pid for pid, pp in parent.items() if pp in tree} - tree
        tree |= new
        grew = bool(new)
    n = 0
    for pid in tree - {os.getpid()}:
        try:
            n += b"agent" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
    return n


def marked_env() -> tuple[str, dict[str, str]]:
    """A unique ``VOIRDIRE_TEST_MARK=...`` and the environment of a subprocess that
    carries it (with the repository on ``PYTHONPATH``), for :func:`no_process_marked`."""
    mark = f"VOIRDIRE_TEST_MARK={uuid.uuid4().hex}"
    key, value = mark.split("=")
    return mark, {**os.environ, "PYTHONPATH": repo_pythonpath(), key: value}


def no_process_marked(mark: str, wait_s: float = 30) -> bool:
    """Whether every process carrying ``mark`` has ended within ``wait_s`` seconds."""
    deadline = time.time() + wait_s
    while processes_marked(mark) and time.time() < deadline:
        time.sleep(0.5)
    return not processes_marked(mark)


def end_marked(mark: str) -> None:
    """Kill what is left of a test's processes (after its assertion has failed)."""
    for pid in processes_marked(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


@contextlib.contextmanager
def busy_cpu(n: int) -> Iterator[int]:
    """``n`` busy-loop processes pinned to one CPU (the last this process may use) for the
    block; yields the CPU, to pin the process under test to (``os.sched_setaffinity``): a
    load of ``n`` + 1 on that CPU, the other CPUs left to the machine's other work."""
    cpu = max(os.sched_getaffinity(0))
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass\n"
    loops = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    try:
        yield cpu
    finally:
        for p in loops:
            p.kill()
            p.wait()
