"""The processes of a local Ray node, ended with the process that started it.

Ray's GCS and raylet are started with Linux's parent-death signal and end with the process
that started them (:mod:`voirdire.engine.ray_start`); what the raylet starts in turn does
not: its dashboard and runtime-environment agents (and idle workers) notice their parent's
death only once their own start is through, and on a loaded machine that start takes tens
of seconds. A ``voirdire audit`` refused under a load of about 14 left both agents running,
parent PID 1, for 11 to 75 s.

So a process ending its local node ends the whole tree itself: :func:`node_tree` lists the
node's processes and their descendants (from ``/proc``, before a parent's death hands its
children to PID 1), and :func:`end_processes` stops them (``SIGSTOP``, so that none starts
another meanwhile; the tree is listed again until nothing new appears) and kills them
(``SIGKILL``). A process is signalled only while its PID still names the process listed
(its start time, ``/proc/<pid>/stat`` field 22). Where there is no ``/proc`` (not Linux),
nothing is listed and Ray's own shutdown is all there is.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["descendants", "end_processes", "node_tree"]

#: a process: (pid, start time in clock ticks since boot)
Proc = tuple[int, int]


def _table() -> dict[int, tuple[int, int]]:
    """``pid -> (parent pid, start time)`` of every process ``/proc`` lists (zombies
    left out: they hold nothing); ``{}`` without ``/proc``."""
    out: dict[int, tuple[int, int]] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return out
    for p in entries:
        if not p.name.isdigit():
            continue
        try:
            # the name in parentheses may hold spaces and parentheses: split after the last
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if fields[0] in ("Z", "X"):
            continue
        out[int(p.name)] = (int(fields[1]), int(fields[19]))
    return out


def descendants(roots: Iterable[int], table: dict | None = None) -> set[Proc]:
    """The live processes ``roots`` (pids) and every descendant of theirs, as
    ``(pid, start time)``; a root that is not running is left out."""
    table = _table() if table is None else table
    found = {pid for pid in roots if pid in table}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _) in table.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return {(pid, table[pid][1]) for pid in found}


def node_tree(node: Any) -> set[Proc]:
    """The processes a Ray ``Node`` (``ray._private.worker._global_node``) started (GCS,
    raylet, monitors; none for a driver that joined a cluster) and all their descendants
    (agents, workers); empty where Ray's private ``Node`` API has moved."""
    try:
        roots = [
            info.process.pid
            for infos in node.all_processes.values()
            for info in infos
            if info.process is not None
        ]
    except Exception:  # Ray's internals moved: Ray's own shutdown is all there is
        return set()
    return descendants(roots) if roots else set()


def _signal(procs: Iterable[Proc], sig: int, table: dict) -> set[Proc]:
    """Send ``sig`` to each process still running as listed; returns those signalled."""
    sent = set()
    for pid, start in procs:
        if table.get(pid, (None, None))[1] != start:
            continue  # ended, or its pid is another process now
        try:
            os.kill(pid, sig)
            sent.add((pid, start))
        except OSError:
            pass
    return sent


def end_processes(procs: Iterable[Proc]) -> None:
    """Stop (``SIGSTOP``) the processes ``procs`` that still run as listed, then every
    descendant they have (listed again until none is new: a stopped process starts no
    other), and kill (``SIGKILL``) them all."""
    me = os.getpid()
    frozen: set[Proc] = set()
    pending = {p for p in procs if p[0] != me}
    tried = set(pending)
    while pending:
        frozen |= _signal(pending, signal.SIGSTOP, _table())
        table = _table()
        pending = {
            p for p in descendants([p for p, _ in frozen], table) if p[0] != me
        } - tried
        tried |= pending
    _signal(frozen, signal.SIGKILL, _table())
