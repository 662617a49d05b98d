"""Starting and stopping the Ray cluster a run uses, overlapped with the run's own work.

A local Ray node takes about 3 to 4 s to start on the 2-core development machine, most of it
spent waiting on Ray's own processes (GCS, raylet, the API server), and ``ray.shutdown`` about
1.4 s (Ray gives its autoscaler monitor 1 s to exit; :func:`stop_ray` ends that one at once:
0.4 s). Neither needs the driver's CPU, so
:func:`init_ray` can begin the start in a background thread (``background=True``) while the
run reads its directory, builds its first work units and imports its analysis, and
:func:`stop_ray` can end a local node in the background while the last job is analysed.

Ray's processes are started with Linux's parent-death signal, which follows the *thread* that
started them: the thread that starts a node therefore stays parked (a daemon, holding no lock)
until the process exits, so the node lives as long as the process, as with a start on the
main thread.

A process must not finalise its interpreter while that thread is inside ``ray.init``: the C++
threads of Ray's half-made core worker then race the exit's destructors (a ``voirdire audit``
of a bad log ended in SIGSEGV on one CI machine after printing its error). An interpreter
that exits waits for the start to end first (an ``atexit`` hook, :data:`EXIT_WAIT_S` at
most), and the command line ends at once without finalising (:func:`exit_if_starting`).
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import socket
import sys
import threading
from typing import Any

from voirdire.core import ConfigError

#: tries to start a local Ray node (Ray's own raylet wait is a fixed 30 s)
RAY_START_ATTEMPTS = 3
#: the longest wait for a cluster address to accept a connection before ``ray.init`` is
#: asked to join it (Ray itself retries an address that answers nothing for a minute)
ADDRESS_TIMEOUT_S = 5.0

#: the start begun by ``init_ray(background=True)``: ``done`` (an Event) and ``error``
_starting: dict[str, Any] = {}
#: the shutdown begun by ``stop_ray(background=True)`` (a thread), joined by :func:`init_ray`
_stopping: dict[str, threading.Thread] = {}
_lock = threading.Lock()
#: the longest an exiting interpreter waits for a start begun in the background (seconds)
EXIT_WAIT_S = 120.0
#: never set: the threads that started Ray's processes wait on it until the process exits
_PARKED = threading.Event()

#: What ``ray.init`` imports on its way to starting a local node (Ray 2.60: usage stats,
#: the autoscaler's version check, the dashboard's optional dependencies (aiohttp,
#: OpenTelemetry), the uv hook, the NVIDIA probe): 275 modules, about 0.2 s. Imported by
#: :func:`init_ray` before its start thread begins: in that thread they would share the
#: interpreter lock with the caller's work, and every later step of Ray's start waits on
#: them (its node came up 0.8 s later on the 2-core machine). A name Ray no longer has is
#: skipped.
RAY_INIT_IMPORTS = (
    "ray._private.runtime_env.uv_runtime_env_hook",
    "ray._common.usage.usage_lib",
    "ray.autoscaler.v2.utils",
    "ray.dashboard.optional_deps",
    "ray._private.thirdparty.pynvml",
)


def init_ray(address: str | None = None, *, background: bool = False) -> None:
    """Join the Ray cluster at ``address`` or start a local one (the embedded default).

    A local node that misses Ray's fixed 30 s start-up wait (a loaded machine) is started
    again, up to :data:`RAY_START_ATTEMPTS` times; other errors are raised at once.

    Args:
        address: a Ray cluster address (``ray://host:10001``, ``host:6379``, ``auto``);
            ``None``: start a local node.
        background: begin the start in a thread and return at once; the next
            ``init_ray`` call waits for it and raises what it raised. A start on the main
            thread would set Ray's SIGTERM handler; begun here from the main thread, Ray's
            handler (exit the interpreter) is set when none is, and a handler of the
            caller's (the CLI's: stop as on Ctrl-C) is kept.

    Raises:
        Exception: Ray's own, when it cannot start or join the cluster.
    """
    import ray

    _wait_for_stop()
    with _lock:
        pending = _starting.get("done")
        if background:
            if pending is None and not ray.is_initialized():
                _begin(address)
            return
    if pending is not None:
        pending.wait()
        with _lock:
            error = _starting.pop("error", None)
            _starting.pop("done", None)
        if error is not None:
            raise error
    if not ray.is_initialized():
        _start(address)
    _python_handles_sigterm()


def _python_handles_sigterm() -> None:
    """On the main thread, once Ray is up: give SIGTERM back to the Python handler set
    for it (the CLI's: stop as on Ctrl-C; Ray's own: exit), where Ray's core worker put
    its C++ failure-signal handler (Abseil's) in its place. That one prints a stack dump,
    calls the Python handler and arms a 3 s alarm that aborts the process (exit -6) unless
    it has exited by then: a command that saves its results and stops its node takes
    longer. Crash signals (SIGSEGV, SIGABRT...) keep Ray's handler; without a Python
    handler (``SIG_DFL``), Ray's is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGTERM)  # Python's record: Ray's is not in it
    if callable(handler):
        signal.signal(signal.SIGTERM, handler)


def ray_starting() -> bool:
    """Whether a start begun by ``init_ray(background=True)`` is still under way."""
    done = _starting.get("done")
    return done is not None and not done.is_set()


def stop_ray(*, background: bool = False) -> None:
    """``ray.shutdown()``: stop a local node this process started, or leave a cluster.

    ``background``: in a thread (not a daemon: the interpreter waits for it at exit), so
    that the caller's remaining work (the last job's analysis) overlaps it; :func:`init_ray`
    waits for it before starting Ray again.
    """
    import ray

    _wait_for_stop()  # a stop begun in the background: not twice at once
    if _starting.get("done") is not None:  # a start begun: let it finish first
        init_ray()
    if not ray.is_initialized():
        return
    _drop_rays_excepthook()  # before the stop begins: none of its threads races it
    if not background:
        _shutdown()
        return
    t = threading.Thread(target=_shutdown, name="voirdire-ray-stop")
    with _lock:
        _stopping["thread"] = t
    t.start()


def _shutdown() -> None:
    """``ray.shutdown()``, the local node's autoscaler monitor ended first: asked to stop,
    it tries to report its own failure to the GCS, and Ray gives it 1 s of the 1.4 s a
    shutdown takes (Ray 2.60); a local node has no autoscaling for it to do. The node's
    processes and their descendants are listed first, and those that outlive Ray's
    shutdown (the raylet's agents, still starting on a loaded machine; idle workers) are
    ended (:mod:`voirdire.engine.node_processes`). Through Ray's private ``Node`` API:
    where that changes, the plain shutdown."""
    import ray

    from voirdire.engine.node_processes import end_processes, node_tree

    tree: set = set()
    try:
        from ray._private import worker

        node = worker._global_node
        if node is not None and node.is_head():
            tree = node_tree(node)
            node.kill_monitor(check_alive=False)
    except Exception:  # Ray's internals moved: nothing is lost but a second
        pass
    ray.shutdown()
    end_processes(tree)


def _drop_rays_excepthook() -> None:
    """Put back the ``sys.excepthook`` Ray wrapped when imported (Ray 2.60's
    ``custom_excepthook`` records a driver's uncaught exception through its core worker):
    after a shutdown that worker is gone, and Ray's C++ side ends the process before the
    traceback is printed, so an unexpected error after Ray stopped was exit 1 with no
    line. Where Ray's internals have moved, nothing changes."""
    try:
        from ray._private import worker

        if sys.excepthook is worker.custom_excepthook:
            sys.excepthook = worker.normal_excepthook
    except Exception:  # Ray's internals moved
        pass


def exit_if_starting(code: int) -> None:
    """End the process now with exit status ``code`` when a start begun by
    ``init_ray(background=True)`` is still under way; otherwise return.

    For a process that ends with its command (the console script) and fails before Ray is
    up (a bad job, a malformed log, Ctrl-C): standard output and error are flushed and the
    process leaves through ``os._exit``, without finalising the interpreter under the start
    thread (see the module's note) and without waiting 3 to 4 s for a node nobody will
    use. Every process this one started, and their descendants, are ended first
    (:func:`~voirdire.engine.node_processes.end_processes`): the GCS and raylet would end
    with their parent (their parent-death signal), but the raylet's agents, still starting
    on a loaded machine, would not. No file of the run is open before Ray is up.
    """
    if not ray_starting():
        return
    _end(_own_processes())
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream: nothing more can be said
            pass
    os._exit(code)


def stop_at_exit() -> None:
    """For a process that ends with its command, on its way out once Ray is up (or never
    began): stop the local node this process started, with every process of it
    (:func:`stop_ray`), rather than leave it to Ray's own exit hook, after which the
    raylet's agents can outlive the command; then end any process this one started that
    is still running (:mod:`voirdire.engine.node_processes`). Nothing when Ray was never
    imported; a driver that joined a cluster leaves it (the cluster's processes are not
    its own); an error of Ray's shutdown is left to Ray's hook."""
    if "ray" not in sys.modules:
        return
    try:
        stop_ray()
    except Exception:  # the node still ends with Ray's own hook
        return
    _end(_own_processes())


def _own_processes() -> set[tuple[int, int]]:
    """This process's descendants (:func:`~voirdire.engine.node_processes.descendants`)."""
    from voirdire.engine.node_processes import descendants

    return descendants([os.getpid()])


def _end(procs: set[tuple[int, int]]) -> None:
    """Stop and kill ``procs`` and their descendants (:mod:`voirdire.engine.node_processes`)."""
    from voirdire.engine.node_processes import end_processes

    end_processes(procs)


def _finish_start_at_exit() -> None:
    """``atexit``: wait (at most :data:`EXIT_WAIT_S`) for a start begun in the background,
    so that the interpreter is not finalised under ``ray.init``; Ray's own ``atexit``
    shutdown, registered when Ray was imported, runs after this one."""
    done = _starting.get("done")
    if done is not None:
        done.wait(EXIT_WAIT_S)


def _wait_for_stop() -> None:
    with _lock:
        t = _stopping.pop("thread", None)
    if t is not None:
        t.join()


def _begin(address: str | None) -> None:
    """Start Ray in a parked daemon thread (see the module's note), a local node's
    :data:`RAY_INIT_IMPORTS` imported first; ``_lock`` is held."""
    if address is None:
        for name in RAY_INIT_IMPORTS:
            try:
                importlib.import_module(name)
            except (
                Exception
            ):  # moved, or a minimal Ray: Ray's start imports what it needs
                pass
    done = threading.Event()
    _starting["done"] = done
    # registered here, after ``import ray`` registered Ray's own shutdown, so that it runs
    # before that one (``atexit`` runs last-registered first); once per process
    atexit.unregister(_finish_start_at_exit)
    atexit.register(_finish_start_at_exit)
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            # what ray.init sets on the main thread: exit, running finally blocks
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))

    def starter() -> None:
        try:
            _start(address)
        except BaseException as e:  # handed to the init_ray that waits
            _starting["error"] = e
        finally:
            done.set()
        _PARKED.wait()

    threading.Thread(target=starter, name="voirdire-ray-start", daemon=True).start()


def check_address(address: str | None, timeout: float = ADDRESS_TIMEOUT_S) -> None:
    """Refuse a cluster address (``host:port``, ``ray://host:port``) where nothing accepts a
    connection within ``timeout`` seconds, before ``ray.init`` would retry it for a
    minute; ``None``, ``auto``, ``local`` and an address without a port are left to Ray.

    Raises:
        ConfigError: one line naming the address and the reason (refused, timed out, no
            such host).
    """
    if address is None or address in ("auto", "local"):
        return
    where = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = where.rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except (OSError, ValueError, OverflowError) as exc:
        why = (
            "timed out"
            if isinstance(exc, TimeoutError)
            else str(exc) or type(exc).__name__
        )
        raise ConfigError(
            f"Ray cluster address {address!r}: nothing accepts a connection there ({why}); "
            "start the cluster (ray start --head) or give its address"
        ) from None


def _start(address: str | None) -> None:
    import ray

    check_address(address)
    os.environ.setdefault("RAY_ACCEPT_CLUSTER_AUTH_TOKEN", "1")
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        before = _own_processes()
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=True,
                configure_logging=True,
                logging_level="ERROR",
            )
            return
        except Exception as e:  # Ray raises a bare Exception for this
            # a local node waits a fixed 30 s for its raylet; a busy machine can miss it
            if address is not None or "timed out during startup" not in str(e):
                raise
            begun = _own_processes() - before  # the missed node's processes
            ray.shutdown()
            _end(begun)  # its raylet's agents would outlive it
            if attempt == RAY_START_ATTEMPTS:
                raise
