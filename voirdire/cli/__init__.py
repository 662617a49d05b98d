"""The ``voirdire`` command line.

    voirdire run JOB.toml [JOB2.toml ...] [--address ADDR] [--dry-run] [--retry-failed] [--output-dir DIR]
    voirdire audit LOG [LOG ...] --format NAME [--out DIR] [--judge NAME] [--option KEY=VALUE]
    voirdire analyze DIR [DIR ...]
    voirdire report DIR [DIR ...] [--out OUT] [--judge-attributes CSV] [--tokenizer PATH]
    voirdire mitigate DIR [DIR ...] [--reference gold | --reference judge:NAME | --reference labels.csv] [--out OUT] [--strategies a,b] [--labels CSV]
    voirdire people DIR [DIR ...] [--labels gold | --labels labels.csv] [--share S | --rows N] [--level L] [--alpha A] [--delta D] [--confidence C] [--cascade a,b] [--out OUT]
    voirdire submit JOB.toml --address http://HEAD:8265 [--env K=V] [--output-dir DIR] [--no-wait]
    voirdire status [JOB_ID] [--address ...]
    voirdire stop JOB_ID [--address ...]
    voirdire data fetch [RELEASE] [--dest DIR] [--base-url URL] [--manifest TSV] [--prefer tsv|pkl] [--strict] [--deadline S] [--if-missing [--try DIR]]
    voirdire data fetch prd|alpaca_eval|judgebench [--annotator A] [--model M ...] [--judge J ...] [--dest DIR] ...
    voirdire serve JOB.toml [--judge NAME ...] [--port 8000] [--out DIR] [--strategy tie]

``run`` validates every job before sending anything, runs them one after another on one
Ray connection, and prints the per-judge table of all of them. Exit codes: 0 success,
2 invalid input (nothing was sent), 130 interrupted (Ctrl-C or SIGTERM; rerun to resume).
``submit`` sends a job to a Ray cluster's Jobs API (:mod:`voirdire.engine.submit`) and,
unless ``--no-wait``, streams its log; exit code 0 when the job succeeded, 1 when it
failed or was stopped.
"""

from __future__ import annotations

from voirdire.cli import common
from voirdire.cli.common import app, console, err_console, show_warning

# the commands register on the app in this order (``voirdire --help`` lists them so)
# isort: off
from voirdire.cli import jobs  # noqa: F401,E402  run, audit
from voirdire.cli import results  # noqa: F401,E402  analyze, report, mitigate, rank
from voirdire.cli import people  # noqa: F401,E402  people
from voirdire.cli import cluster  # noqa: F401,E402  submit, status, stop
from voirdire.cli import data  # noqa: F401,E402  data fetch
from voirdire.cli import serve  # noqa: F401,E402  serve
# isort: on

__all__ = ["app", "console", "err_console", "main", "sentences"]


def sentences(doc: str | None) -> str | None:
    """A command's docstring as help that reads as sentences: the lines of each paragraph
    joined by spaces (the terminal wraps them at its width; a docstring's own line breaks
    would break sentences in the middle), paragraphs kept apart by a blank line."""
    if doc is None:
        return None
    import inspect

    paras = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paras)


def _reflow(typer_app) -> None:
    """Every command's help (and every group's) as :func:`sentences`, set once."""
    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None:
            info.help = sentences(info.callback.__doc__)
    for group in typer_app.registered_groups:
        inner = group.typer_instance
        if inner is None:
            continue
        if isinstance(group.help, str):
            group.help = sentences(group.help)
        if isinstance(inner.info.help, str):
            inner.info.help = sentences(inner.info.help)
        _reflow(inner)


_reflow(app)


def main() -> None:
    """Entry point of the ``voirdire`` console script."""
    import warnings

    from voirdire.engine.ray_start import exit_if_starting, stop_at_exit

    warnings.showwarning = show_warning
    common.process_ends_with_command = True
    try:
        app()
    except SystemExit as exc:  # a command that ends before the Ray it began is up
        code = exc.code
        exit_if_starting(code if isinstance(code, int) else 0 if code is None else 1)
        stop_at_exit()  # Ray up: its node, agents and workers end now, not after us
        raise


if __name__ == "__main__":
    main()
