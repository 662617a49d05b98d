"""Jobs on a remote Ray cluster, through Ray's Jobs API.

``voirdire submit JOB.toml --address http://HEAD:8265`` validates the job here and
submits it with :class:`ray.job_submission.JobSubmissionClient`. The runtime environment
ships the *installed* ``voirdire`` package (the package directory as installed, package
data included, assembled from the modules this process imports:
:func:`~voirdire.engine.shipping.stage_package`) as a ``py_modules`` entry, and the job
file as the ``working_dir``; no repository folder is staged (what is staged, and the
head node's command: :mod:`voirdire.engine.shipping`). The entrypoint first finds the benchmark data on the head node and then runs
``python -m voirdire run <job file> --no-progress``; the driver joins the cluster and its
judge actors spread over the nodes. The driver's log (progress lines included) is streamed
back until the job ends. ``voirdire status`` and ``voirdire stop`` manage submitted jobs.

Benchmark data: unless the job names its ``data_dir`` or ``--env VOIRDIRE_DATA=...`` (the
variable of the benchmark's release) is given, the client resolves the data directory of the
release the benchmark reads here (the usual lookup) and hands its absolute path to the job,
which uses it when the head node can read it (a shared filesystem); otherwise the job
fetches that release on the cluster (``voirdire data fetch [<release>] --if-missing``). When
both fail the job's log says which path was tried and why the fetch failed. A user's own
pairs, their template file and a ``labels:`` quality file, named by relative paths, are
copied into the working directory so that the same paths resolve on the head node
(:mod:`voirdire.engine.shipping`); absolute paths must be readable there.

Results land where the job's ``output_dir`` says, *as seen from the head node*: give an
absolute path on a filesystem shared by the head node and you (NFS, EFS, Filestore, a
mounted bucket), or override it at submission with ``--output-dir``. A relative path
resolves inside the job's temporary working directory on the head node and is lost when
the cluster goes away (submit warns about it).

Authentication: when the cluster uses Ray's token authentication (``RAY_AUTH_MODE=token``,
the default of recent Ray versions when a token exists), the client reads the token from
``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH`` / ``~/.ray/auth_token`` and sends it; nothing
of it is logged or written.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voirdire.core import ConfigError, slug

#: statuses after which a job no longer changes
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
DEFAULT_ADDRESS = "http://127.0.0.1:8265"


def resolve_address(address: str | None) -> str:
    """The Jobs API address: the argument, else ``$RAY_API_SERVER_ADDRESS``, else
    ``$RAY_ADDRESS`` when it is an ``http(s)://`` address, else ``http://127.0.0.1:8265``."""
    if address:
        return address
    for var in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"):
        val = os.environ.get(var, "")
        if val.startswith(("http://", "https://")):
            return val
    return DEFAULT_ADDRESS


def client(address: str | None = None) -> Any:
    """A connected :class:`ray.job_submission.JobSubmissionClient`.

    Raises:
        ConnectionError: no Jobs API answers at the address (the message names it).
    """
    from ray.job_submission import JobSubmissionClient

    addr = resolve_address(address)
    try:
        return JobSubmissionClient(addr)
    except Exception as exc:  # noqa: BLE001 - requests/ConnectionError/RuntimeError, re-raised with the address
        raise ConnectionError(f"no Ray Jobs API at {addr}: {exc}") from exc


def validate_for_submission(job_path: Path) -> Any:
    """Validate a job file before it is sent: the spec, the judges' backends and settings.

    Benchmark data and backend preflight checks (API keys, model files) run on the
    cluster, where the data and keys are; a backend whose optional dependency (vLLM,
    provider SDK) is installed only on the cluster is accepted here.

    Returns:
        The :class:`~voirdire.engine.spec.JobSpec`.

    Raises:
        ConfigError: the file is missing or invalid, an unknown backend, bad settings.
    """
    from voirdire.engine.bind import ResolvedJudge
    from voirdire.engine.spec import load_job
    from voirdire.judges.base import get_backend

    job = load_job(job_path)
    for j in job.judges:
        if "*" in j.name and _expands(get_backend(j.backend)):
            # an entry standing for several judges (replay's name = "*"): they are named on
            # the cluster, from its data; check the settings under a stand-in name
            j = j.model_copy(update={"name": j.name.replace("*", "x")})
        try:
            ResolvedJudge(j, job)
        except ConfigError as exc:
            if "optional dependency" not in str(exc):
                raise
    return job


def _expands(backend: type) -> bool:
    """Whether one ``[[judges]]`` entry of ``backend`` may stand for several judges."""
    from voirdire.judges.capabilities import Expands

    return issubclass(backend, Expands)


@dataclass
class Submission:
    """A submitted job: its ``job_id`` (the Jobs API submission id), the ``address`` and
    the ``entrypoint`` that runs on the cluster."""

    job_id: str
    address: str
    entrypoint: str


def submit(
    job_path: str | os.PathLike,
    address: str | None = None,
    *,
    output_dir: str | None = None,
    env: dict[str, str] | None = None,
    pip: list[str] | None = None,
    submission_id: str | None = None,
    entrypoint_num_cpus: float | None = None,
    warn: Callable[[str], None] | None = None,
) -> Submission:
    """Validate, stage and submit a job file; returns at once (see :func:`follow`).

    Args:
        job_path: the job's TOML file.
        address: the cluster's Jobs API (``http://HEAD:8265``); see :func:`resolve_address`.
        output_dir: overrides the job's ``output_dir`` (a path on the head node).
        env: environment variables of the job's processes (driver and judge actors), e.g.
            ``VOIRDIRE_DATA``; API keys are better set on the cluster's nodes than sent.
        pip: extra pip requirements installed in the job's runtime environment.
        submission_id: the job id to use; default ``voirdire-<name>-<time>``.
        entrypoint_num_cpus: CPUs reserved for the driver (default none).
        warn: called with warnings (a relative output directory).

    Raises:
        ConfigError: invalid job file, or a data file it names missing (nothing is sent).
        ConnectionError: no Jobs API at the address.
    """
    path = Path(job_path)
    job = validate_for_submission(path)
    out = output_dir or job.output_dir
    if warn and not os.path.isabs(out):
        warn(
            f"output_dir {out!r} is relative: it resolves inside the job's temporary working directory on the "
            "head node. Give an absolute path on a shared filesystem (or --output-dir) to keep the results."
        )
    root = Path(tempfile.mkdtemp(prefix="voirdire-submit-"))
    from voirdire.engine.shipping import prepare

    try:
        pkg, work, entry = prepare(
            job, path, root, output_dir, env
        )  # a missing input fails here, before connecting
        c = client(address)
        runtime_env: dict[str, Any] = {
            "working_dir": str(work),
            "py_modules": [str(pkg)],
            "env_vars": dict(env or {}),
        }
        if pip:
            runtime_env["pip"] = list(pip)
        sid = (
            submission_id
            or f"voirdire-{slug(job.name, sep='-', keep='_-', max_len=40, default='job')}-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        kwargs: dict[str, Any] = {}
        if entrypoint_num_cpus is not None:
            kwargs["entrypoint_num_cpus"] = entrypoint_num_cpus
        job_id = c.submit_job(
            entrypoint=entry,
            runtime_env=runtime_env,
            submission_id=sid,
            metadata={"voirdire_job": job.name},
            **kwargs,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Submission(job_id=job_id, address=resolve_address(address), entrypoint=entry)


def follow(
    job_id: str, address: str | None = None, write: Callable[[str], None] = print
) -> str:
    """Stream a job's log to ``write`` until the job ends; returns its final status
    (``SUCCEEDED``, ``FAILED`` or ``STOPPED``)."""
    c = client(address)

    async def _tail() -> None:
        async for chunk in c.tail_job_logs(job_id):
            write(chunk)

    try:
        asyncio.run(_tail())
    except Exception:  # noqa: BLE001 - the log stream may close early; fall back to polling
        pass
    return wait(job_id, address, client_=c)


def wait(
    job_id: str,
    address: str | None = None,
    timeout_s: float | None = None,
    client_: Any = None,
) -> str:
    """Poll a job until it ends (or ``timeout_s`` seconds pass); returns its status."""
    c = client_ or client(address)
    t0 = time.monotonic()
    while True:
        status = str(c.get_job_status(job_id).value)
        if status in TERMINAL or (
            timeout_s is not None and time.monotonic() - t0 > timeout_s
        ):
            return status
        time.sleep(1.0)


def status(
    job_id: str | None = None, address: str | None = None
) -> list[dict[str, Any]]:
    """One job's record, or every job's (newest first): dicts with ``job_id``,
    ``status``, ``entrypoint``, ``message``, ``start_time`` / ``end_time`` (ms since the
    epoch, or None) and ``metadata``.

    Raises:
        ConnectionError: no Jobs API at the address.
        RuntimeError: unknown job id (from Ray).
    """
    c = client(address)
    infos = [c.get_job_info(job_id)] if job_id else c.list_jobs()
    rows = []
    for info in infos:
        rows.append(
            {
                "job_id": info.submission_id or info.job_id,
                "status": str(info.status.value),
                "entrypoint": info.entrypoint,
                "message": info.message,
                "start_time": info.start_time,
                "end_time": info.end_time,
                "metadata": dict(info.metadata or {}),
            }
        )
    rows.sort(key=lambda r: r["start_time"] or 0, reverse=True)
    return rows


def stop(job_id: str, address: str | None = None) -> bool:
    """Ask the cluster to stop a job (its driver gets SIGTERM; finished results are saved
    and a resubmission resumes). Returns whether a running job was asked to stop."""
    return bool(client(address).stop_job(job_id))


def logs(job_id: str, address: str | None = None) -> str:
    """A job's whole driver log so far."""
    return client(address).get_job_logs(job_id)


__all__ = [
    "Submission",
    "follow",
    "logs",
    "resolve_address",
    "status",
    "stop",
    "submit",
    "validate_for_submission",
    "wait",
]
