"""Backends say what they can do (class attributes and classmethods of JudgeBackend); the
engine acts on what they declare and names no backend (docs/contributing.md)."""

from __future__ import annotations

import pytest
from voirdire.engine.job import plan_job
from voirdire.engine.spec import parse_job
from voirdire.judges import base
from voirdire.judges.base import Builtin, get_backend
from voirdire.judges.simulated import SimulatedJudge

from voirdire.core import ConfigError


class RecordedLike(SimulatedJudge):
    """A simulated judge that declares itself a recording (test-only)."""

    is_recording = True


class SelfRewriting(SimulatedJudge):
    """A simulated judge that declares it rewrites answers itself (test-only)."""

    @classmethod
    def rewriter(cls):
        return cls


def _job(tmp_path, **over):
    d = {"name": "caps", "output_dir": str(tmp_path / "out"),
         "benchmark": {"name": "mtbench", "questions": ["81"], "candidates": ["gpt-4"]},
         "judges": [{"name": "s", "backend": "simulated"}]}
    d.update(over)
    return parse_job(d)


def test_missing_extra_is_named_from_the_backends_declaration(monkeypatch):
    monkeypatch.setitem(base._BUILTIN, "fancy", Builtin("no_such_module_here", "fancy-extra"))
    with pytest.raises(ConfigError, match=r"pip install 'voirdire\[fancy-extra\]'"):
        get_backend("fancy")
    monkeypatch.setitem(base._BUILTIN, "plain", Builtin("no_such_module_either"))
    with pytest.raises(ConfigError, match="needs an optional dependency") as exc:
        get_backend("plain")
    assert "pip install" not in str(exc.value)


def test_the_engine_reads_what_a_backend_declares(tmp_path, data_dir):
    # is_recording: no perturbation for it, whatever its name
    rec = [{"name": "r", "backend": "tests.test_backend_capabilities:RecordedLike"}]
    with pytest.raises(ConfigError, match="cannot answer perturbations"):
        plan_job(_job(tmp_path, judges=rec, perturbations=[{"kind": "cot"}]))
    assert plan_job(_job(tmp_path, judges=rec)).units_per_judge == 2
    # rewriter(): None (the default) refuses, the class itself rewrites
    with pytest.raises(ConfigError, match="cannot rewrite answers"):
        plan_job(_job(tmp_path, rewriters=[{"name": "t", "backend": "replay", "recorded": "x"}]))
    own = [{"name": "t", "backend": "tests.test_backend_capabilities:SelfRewriting"}]
    plan = plan_job(_job(tmp_path, rewriters=own, perturbations=[{"kind": "fallacy", "target": "candidate", "rewriter": "t"}]))
    assert plan.rewriters["t"].backend is SelfRewriting and plan.rewrites.height == 1
    # the simulated judge names another backend to rewrite for it
    assert plan_job(_job(tmp_path, rewriters=[{"name": "t", "backend": "simulated"}])).rewriters["t"].backend.name == "simulated_rewriter"
    # can_judge: a rewriter is refused as a judge
    with pytest.raises(ConfigError, match="backend 'template' cannot judge"):
        plan_job(_job(tmp_path, judges=[{"name": "t", "backend": "template"}]))
