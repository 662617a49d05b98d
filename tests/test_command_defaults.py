"""Every command's options have one default: the Python API's function and the command
line's command agree on every parameter they share, and a parameter that is a field of
:class:`~voirdire.analysis.settings.AnalysisSettings` defaults to that field, so an
option added to one side with another default fails here."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import fields

import pytest

from voirdire.analysis.settings import DEFAULTS

#: (the API's module, the command line's module, the command)
COMMANDS = [
    ("voirdire.api.results", "voirdire.cli.results", "report"),
    ("voirdire.api.results", "voirdire.cli.results", "mitigate"),
    ("voirdire.api.results", "voirdire.cli.results", "rank"),
    ("voirdire.api.people", "voirdire.cli.people", "people"),
    ("voirdire.api.serving", "voirdire.cli.serve", "serve"),
]
#: parameters on one side only: the directories (a list in Python, arguments on the
#: command line) and the terminal's progress line
ONE_SIDED = {"output_dirs", "dirs", "progress"}
#: a parameter whose name differs from the settings' field it takes
SETTING_OF = {"margin": "choice_margin", "figures": "static_figures"}


def _defaults(module: str, name: str) -> dict[str, object]:
    fn = getattr(importlib.import_module(module), name)
    return {
        n: p.default
        for n, p in inspect.signature(fn).parameters.items()
        if n not in ONE_SIDED
    }


def _same(api: object, cli: object) -> bool:
    """Equal, a comma-separated option read as the tuple or list it becomes."""
    if isinstance(cli, str) and isinstance(api, tuple | list):
        return tuple(cli.split(",")) == tuple(api)
    return api == cli


@pytest.mark.parametrize("api_module,cli_module,command", COMMANDS)
def test_the_api_and_the_command_line_share_every_option_and_default(
    api_module, cli_module, command
):
    api, cli = _defaults(api_module, command), _defaults(cli_module, command)
    assert set(api) == set(cli), (set(api) ^ set(cli), command)
    differ = {n: (api[n], cli[n]) for n in api if not _same(api[n], cli[n])}
    assert not differ, (command, differ)
    settings = {f.name for f in fields(DEFAULTS)}
    for name, value in api.items():
        field = SETTING_OF.get(name, name)
        if field in settings:
            assert value == getattr(DEFAULTS, field), (command, name)
