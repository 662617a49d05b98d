"""Backends say what they can do (the capability classes of voirdire.judges.capabilities
they derive from); the engine acts on what they declare and names no backend
(docs/contributing.md). A backend is one class and one decorator (``@register``)."""

from __future__ import annotations

import polars as pl
import pytest

import voirdire
from voirdire.analysis.results_dir import load_judgments
from voirdire.core import ConfigError
from voirdire.engine.plan import plan_job
from voirdire.engine.spec import parse_job
from voirdire.judges import base
from voirdire.judges.base import (
    BACKENDS,
    JudgeBackend,
    JudgeSettings,
    Query,
    Result,
    get_backend,
    register,
)
from voirdire.judges.capabilities import PromptFree, Recording
from voirdire.judges.simulated import SimulatedJudge


class RecordedLike(Recording, SimulatedJudge):
    """A simulated judge that declares itself a recording (test-only)."""


class SelfRewriting(SimulatedJudge):
    """A simulated judge that declares it rewrites answers itself (test-only)."""

    @classmethod
    def rewriter(cls):
        return cls


def _job(tmp_path, **over):
    d = {
        "name": "caps",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {"name": "mtbench", "questions": ["81"], "candidates": ["gpt-4"]},
        "judges": [{"name": "s", "backend": "simulated"}],
    }
    d.update(over)
    return parse_job(d)


def test_missing_extra_is_named_from_the_backends_declaration(monkeypatch):
    monkeypatch.setattr(
        BACKENDS, "_builtin", dict(BACKENDS._builtin)
    )  # forgotten after the test
    BACKENDS.builtin("fancy", "no_such_module_here:Fancy", extra="fancy-extra")
    with pytest.raises(ConfigError, match=r"pip install 'voirdire\[fancy-extra\]'"):
        get_backend("fancy")
    BACKENDS.builtin("plain", "no_such_module_either:Plain")
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
        plan_job(
            _job(
                tmp_path,
                rewriters=[{"name": "t", "backend": "replay", "recorded": "x"}],
            )
        )
    own = [{"name": "t", "backend": "tests.test_backend_capabilities:SelfRewriting"}]
    plan = plan_job(
        _job(
            tmp_path,
            rewriters=own,
            perturbations=[{"kind": "fallacy", "target": "candidate", "rewriter": "t"}],
        )
    )
    assert plan.rewriters["t"].backend is SelfRewriting and plan.rewrites.height == 1
    # the simulated judge names another backend to rewrite for it
    assert (
        plan_job(_job(tmp_path, rewriters=[{"name": "t", "backend": "simulated"}]))
        .rewriters["t"]
        .backend.name
        == "simulated_rewriter"
    )
    # can_judge: a rewriter is refused as a judge
    with pytest.raises(ConfigError, match="backend 'template' cannot judge"):
        plan_job(_job(tmp_path, judges=[{"name": "t", "backend": "template"}]))


def test_import_paths_must_name_a_backend():
    with pytest.raises(ConfigError, match="not a JudgeBackend subclass"):
        get_backend("tests.test_backend_capabilities:_job")
    with pytest.raises(ConfigError, match="cannot be imported"):
        get_backend("tests.test_backend_capabilities:Nothing")
    assert get_backend("tests.test_backend_capabilities:RecordedLike") is RecordedLike
    assert "echo_first" in base.known_backends()  # registered by the decorator below


class EchoSettings(JudgeSettings):
    """``pick``: the position letter the judge always answers."""

    pick: str = "A"


@register
class EchoFirst(PromptFree, JudgeBackend[EchoSettings]):
    """A user's backend in this module, one decorator: answers ``pick`` for every query."""

    name = "echo_first"
    Settings = EchoSettings

    @classmethod
    def worker_options(cls, settings: EchoSettings) -> dict:
        return {"num_cpus": 0}

    async def judge(self, queries: list[Query]) -> list[Result]:
        assert all(q.prompt is None for q in queries)  # PromptFree: no prompt rendered
        return [
            Result(unit_id=q.unit_id, output=f"[[{self.settings.pick}]]")
            for q in queries
        ]


def test_a_decorated_backend_runs_through_a_job(tmp_path, data_dir, ray_local):
    # the job names it by its registered name; the worker finds it by its module
    job = _job(tmp_path, judges=[{"name": "e", "backend": "echo_first", "pick": "B"}])
    assert base.backend_ref(EchoFirst) == "tests.test_backend_capabilities:EchoFirst"
    assert base.backend_ref(SimulatedJudge) == "simulated"
    outcome = voirdire.run(job)
    j = load_judgments(outcome.output_dir)
    assert j.height == 2 and j["extracted"].to_list() == ["B", "B"]
    assert j.filter(pl.col("judge") == "e")["failure"].null_count() == 2
    with pytest.raises(ValueError, match="already registered"):
        register(
            type(
                "Other",
                (JudgeBackend,),
                {
                    "name": "echo_first",
                    "Settings": EchoSettings,
                    "judge": EchoFirst.judge,
                },
            )
        )
    with pytest.raises(TypeError, match="Settings is not a JudgeSettings"):
        register(
            type(
                "NoSettings",
                (JudgeBackend,),
                {"name": "no_settings", "judge": EchoFirst.judge},
            )
        )


def test_verdict_modes_are_read_once_for_vllm_and_compatible_servers():
    import itertools
    import math

    from voirdire.judges.api.compatible import CompatibleSettings
    from voirdire.judges.verdict_modes import read_verdict
    from voirdire.judges.vllm_judge.settings import VllmSettings

    for key in ("verdict_mode", "verdict_letters"):
        assert (
            VllmSettings.model_fields[key].annotation
            == CompatibleSettings.model_fields[key].annotation
        )
        assert (
            VllmSettings.model_fields[key].metadata
            == CompatibleSettings.model_fields[key].metadata
        )
    # structured: every written text of 3 options, with and without verdict_letters
    for written, shown in ((None, "ABC"), ("abc", "abc")):
        for text in [*shown, " " + shown[1] + "\n", "D", "", "AB"]:
            choice, out, probs = read_verdict("structured", text, 3, written)
            want = (
                "ABC"[shown.index(text.strip())]
                if text.strip() in shown and len(text.strip()) == 1
                else None
            )
            assert (choice, out, probs) == (want, text.strip(), None)
    # logprobs: the most probable option (first on ties), written as the judge writes it
    for lps in itertools.product([0.0, -1.0, -math.inf], repeat=2):
        raw = dict(zip("AB", lps, strict=True))
        z = sum(math.exp(v) for v in lps if v > -math.inf)
        probs = {k: (math.exp(v) / z if z else 0.5) for k, v in raw.items()}
        choice, out, got = read_verdict("logprobs", "?", 2, "ab", probs)
        assert (
            choice == max(probs, key=probs.__getitem__)
            and out == "ab"["AB".index(choice)]
            and got is probs
        )
    # a server that returned no log-probabilities: the written option has probability 1
    assert read_verdict("logprobs", "b", 2, "ab") == ("B", "b", {"A": 0.0, "B": 1.0})
    assert read_verdict("logprobs", "x", 2, "ab") == (None, "x", None)


def test_a_backend_sets_its_units_comparison_mode_through_its_capability():
    from voirdire.judges.capabilities import (
        comparison_mode,
        needs_prompt,
        rewrite_biases,
    )
    from voirdire.judges.replay import ReplayJudge, ReplaySettings

    assert (
        comparison_mode(
            ReplayJudge, ReplaySettings(recorded="GPT-4/Rating_Metrics@tie")
        )
        == "score"
    )
    assert comparison_mode(ReplayJudge, ReplaySettings(recorded="gpt-4-0613")) is None
    assert (
        comparison_mode(SimulatedJudge, SimulatedJudge.Settings()) is None
    )  # not OwnComparisonMode
    assert not needs_prompt(ReplayJudge) and needs_prompt(get_backend("openai"))
    assert (
        rewrite_biases(get_backend("template")) == ("authority", "verbosity")
        and rewrite_biases(ReplayJudge) is None
    )
