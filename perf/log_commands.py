"""The commands a user runs, run as they run them, for :mod:`perf.log_findings`: each
``voirdire ...`` a fresh process (the console script next to this interpreter), its wall
time and the peak resident memory of its process tree (the command and every process it
started, Ray's included, summed from ``/proc`` every 0.2 s), under a watchdog that kills the
tree past a bound (the machine is shared).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Ran", "VOIRDIRE", "run", "tree_rss"]

#: the console script of the interpreter running this (a venv's ``bin/voirdire``)
VOIRDIRE = str(Path(sys.executable).with_name("voirdire"))


def _tree(root: int) -> dict[int, int]:
    """``{pid: resident bytes}`` of ``root`` and every process below it (``/proc``, Linux;
    empty elsewhere)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/statm") as fh:
                rss[int(name)] = int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in rss:
            tree[pid] = rss[pid]
        todo += children.get(pid, [])
    return tree


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it, summed."""
    return sum(_tree(root).values())


def _kill_tree(root: int) -> None:
    """SIGKILL to ``root``'s process group and to every process below it, by id (a Ray
    process that left the group included)."""
    pids = list(_tree(root))
    try:
        os.killpg(root, signal.SIGKILL)
    except OSError:
        pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@dataclass(frozen=True)
class Ran:
    """One command's end: ``rc`` (−9: killed by the watchdog), ``seconds`` (wall), ``peak_gib``
    (the process tree's peak RSS), ``stdout`` and ``stderr`` (text), ``killed``."""

    cmd: tuple[str, ...]
    rc: int
    seconds: float
    peak_gib: float
    stdout: str
    stderr: str
    killed: bool

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def line(self) -> str:
        """``voirdire audit ...: 12.3 s, peak 1.20 GiB`` (and the failure's last lines)."""
        shown = " ".join(self.cmd[1:4]) + (" ..." if len(self.cmd) > 4 else "")
        head = (
            f"voirdire {shown}: {self.seconds:.1f} s, peak RSS {self.peak_gib:.2f} GiB"
        )
        if self.killed:
            return f"{head}: KILLED past the memory bound"
        if self.rc:
            tail = " / ".join(self.stderr.strip().splitlines()[-3:])
            return f"{head}: exit {self.rc}: {tail}"
        return head


def run(args: list[str], *, kill_gib: float, env: dict | None = None) -> Ran:
    """Run ``voirdire ARGS`` in a new session; kill its whole tree when its RSS passes
    ``kill_gib``. Output goes to temporary files (a command's output is never a pipe that
    can fill)."""
    cmd = (VOIRDIRE, *map(str, args))
    t0, peak, killed = time.perf_counter(), 0, False
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, start_new_session=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        try:
            while proc.poll() is None:
                peak = max(peak, tree_rss(proc.pid))
                if peak > kill_gib * 2**30:
                    killed = True
                    _kill_tree(proc.pid)
                    break
                time.sleep(0.2)
        except BaseException:
            _kill_tree(proc.pid)
            raise
        rc = proc.wait()
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return Ran(cmd, rc, time.perf_counter() - t0, peak / 2**30, *text, killed)
