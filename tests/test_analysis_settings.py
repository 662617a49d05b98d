"""The analysis' defaults are one record (``analysis/settings.py``); the signatures of the API
and the command line write the same values out (importing them imports no analysis), so
this checks they agree, and that the analysis reads the record where the values apply."""

from __future__ import annotations

import inspect

from voirdire.analysis.settings import DEFAULTS


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def test_api_and_cli_defaults_are_the_settings():
    from voirdire.api import mitigate, rank, report
    from voirdire.cli import results as cli

    for fn in (report, mitigate, rank):
        assert _default(fn, "replicates") == DEFAULTS.replicates, fn.__name__
    assert _default(rank, "seed") == DEFAULTS.seed
    for fn in (cli.report, cli.mitigate, cli.rank):
        assert _default(fn, "replicates") == DEFAULTS.replicates, fn.__name__
    assert _default(cli.report, "rs_min") == DEFAULTS.rs_min
    assert _default(cli.report, "max_error") == DEFAULTS.max_error


def test_the_analysis_reads_the_settings():
    from voirdire.analysis.mitigation.pass_kappa import KAPPA_GATE
    from voirdire.analysis.study import MAX_ERROR, RS_MIN, analyze_study

    assert KAPPA_GATE == DEFAULTS.kappa_gate == 0.6
    assert (RS_MIN, MAX_ERROR) == (DEFAULTS.rs_min, DEFAULTS.max_error)
    assert _default(analyze_study, "power_replicates") == DEFAULTS.power_replicates
