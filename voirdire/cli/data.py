"""``voirdire data fetch``: the public releases the benchmarks read and public judgment logs.

    voirdire data fetch [RELEASE] [--dest DIR] [--base-url URL] [--manifest TSV] [--prefer tsv|pkl] [--strict] [--deadline S] [--if-missing [--try DIR]]
    voirdire data fetch prd [--judge REVIEWER ...] [--dest DIR] [--base-url URL]
    voirdire data fetch alpaca_eval [--annotator NAME] [--model MODEL ...] [--dest DIR] [--base-url URL]
    voirdire data fetch judgebench [--judge NAME ...] [--dest DIR] [--base-url URL]

Exit codes: 0 success, 2 invalid input (an unknown release or pick), 1 a failed download
or verification (:mod:`voirdire.benchmarks.releases.catalogue`, :mod:`voirdire.benchmarks.releases.logs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voirdire.cli.common import app, err_console, fail
from voirdire.cli.options import bounded
from voirdire.escape import terminal

data_app = typer.Typer(
    no_args_is_help=True,
    help="The benchmark data: the public releases the benchmarks read (Shi et al., 2024, and others).",
)
app.add_typer(data_app, name="data")


# the options of `voirdire data fetch`
_Name = Annotated[
    str,
    typer.Argument(
        help="The release: judging-the-judges (MT-Bench, DevBench) or another benchmark's (an unknown name lists them)."
    ),
]
_Dest = Annotated[
    Path | None,
    typer.Option(
        help="Data directory to write (default: $VOIRDIRE_DATA, else the user data directory)."
    ),
]
_BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="Where the release's files are, paths appended as in the repository (default: $VOIRDIRE_RELEASE_URL, else GitHub's raw URLs of the pinned commit).",
    ),
]
_Prefer = Annotated[
    str,
    typer.Option(
        help="Form of the judges' outputs fetched first: tsv (record_*.tsv) or pkl (tmp.pkl, loaded without executing); the other is the fallback."
    ),
]
_IfMissing = Annotated[
    bool,
    typer.Option(
        "--if-missing",
        help="Fetch only when no data directory is found (the usual lookup); print the one in use.",
    ),
]
_TryDir = Annotated[
    str | None,
    typer.Option(
        "--try",
        help="With --if-missing: a directory to use first when it exists here (a cluster client's data location).",
    ),
]
_Progress = Annotated[bool, typer.Option(help="Show download progress bars.")]
_Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Fail when the mirror lacks any judge's outputs (default: take every judge it has, name those skipped).",
    ),
]
_Manifest = Annotated[
    Path | None,
    typer.Option(
        help="The files and git blob ids to fetch and verify (a manifest TSV) instead of the package's (a mirror of other files)."
    ),
]
_Deadline = Annotated[
    float,
    bounded(
        "deadline",
        "Seconds each file's download may take in all; a slower one is cut off.",
    ),
]
_Annotator = Annotated[
    str | None,
    typer.Option(
        help="alpaca_eval: the annotator whose annotations are fetched (default weighted_alpaca_eval_gpt4_turbo, AlpacaEval 2's)."
    ),
]
_Model = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        help="alpaca_eval: a model whose annotations are fetched (repeat; default every model the annotator judged).",
    ),
]
_Judge = Annotated[
    list[str] | None,
    typer.Option(
        "--judge",
        help="prd: a reviewer (the people always come); judgebench: a judge name or judge model (repeat; default all).",
    ),
]


@data_app.command("fetch")
def data_fetch(
    name: _Name = "judging-the-judges",
    dest: _Dest = None,
    base_url: _BaseUrl = None,
    prefer: _Prefer = "pkl",
    if_missing: _IfMissing = False,
    try_dir: _TryDir = None,
    progress: _Progress = True,
    strict: _Strict = False,
    manifest: _Manifest = None,
    deadline: _Deadline = 600.0,
    annotator: _Annotator = None,
    model: _Model = None,
    judge: _Judge = None,
) -> None:
    """Download a release, verify every file against its git blob id, and convert it once.

    A mirror lacking some judges' outputs: those judges are skipped and named (exit 0), or,
    with --strict, the fetch fails. Public judgment logs (prd, alpaca_eval, judgebench) are
    fetched unchanged for `voirdire audit`; a repository without a licence file is fetched
    for you to read, never to redistribute (the command says so). Prints the data directory
    on stdout (messages go to stderr)."""
    from voirdire.benchmarks.releases import catalogue as release
    from voirdire.benchmarks.releases.http_guard import redact_url
    from voirdire.benchmarks.releases.logs import LogRelease, Picks
    from voirdire.core import ConfigError, DataError

    def log(msg: str) -> None:
        err_console.print(terminal(redact_url(msg)), highlight=False)

    try:
        rel = release.get_release(name)
        if isinstance(rel, LogRelease):
            picks = Picks(annotator, tuple(model or ()), tuple(judge or ()))
            path = _fetch_logs(rel, picks, dest, base_url, if_missing, manifest, strict, progress, log, deadline)  # fmt: skip
        elif if_missing:
            path = release.locate_or_fetch(
                try_dir,
                base_url,
                release=rel,
                prefer=prefer,
                progress=progress,
                log=log,
                manifest=manifest,
                deadline=deadline,
            )
        else:
            path = release.fetch_release(
                dest,
                base_url,
                release=rel,
                prefer=prefer,
                manifest=manifest,
                strict=strict,
                progress=progress,
                log=log,
                deadline=deadline,
            ).dest
    except ConfigError as exc:
        fail(redact_url(str(exc)))
    except DataError as exc:
        fail(redact_url(str(exc)), 1)
    typer.echo(str(path))


def _fetch_logs(rel, picks, dest, base_url, if_missing, manifest, strict, progress, log, deadline) -> Path:  # fmt: skip
    """A log source's fetch; with ``if_missing``, the data directory a fetch already wrote
    (``--dest``, else the source's default) is used as it is."""
    from voirdire.benchmarks.releases.logs import fetch_logs
    from voirdire.benchmarks.releases.steps import fetched_release

    target = Path(dest or rel.default_dir()).expanduser()
    if if_missing and (fetched_release(target) or {}).get("commit") == rel.commit:
        log(rel.terms())
        return target.resolve()
    return fetch_logs(
        rel, dest, base_url, picks=picks, manifest=manifest, strict=strict,
        progress=progress, log=log, deadline=deadline,
    ).dest  # fmt: skip


__all__ = ["data_app", "data_fetch"]
