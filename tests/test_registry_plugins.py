"""One installed plugin that cannot be imported leaves every other name working: the lookups
that go through all benchmarks (the formats' list, a recorded judge's comparison mode, the
releases) and every metric and strategy (``Registry.available``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.audit_logs import draws, write_arena_hard
from voirdire.core import ConfigError
from voirdire.registry import Builtin


@pytest.fixture
def broken_plugins(monkeypatch):
    """A benchmark, a metric and a strategy entry whose module does not exist, as an entry
    point of a half-installed plugin would be."""
    from voirdire.analysis.mitigation.registry import STRATEGIES
    from voirdire.analysis.position.registry import METRICS
    from voirdire.benchmarks.registry import BENCHMARKS

    for reg in (BENCHMARKS, METRICS, STRATEGIES):
        reg.names()  # entry points read first: the broken one is added after them
        monkeypatch.setitem(reg._builtin, "broken", Builtin("voirdire_no_plugin_xyz:X"))


def test_a_broken_benchmark_plugin_leaves_the_audit_and_the_lists_working(
    broken_plugins, tmp_path: Path
):
    from voirdire.api.jobs import audit_job, plan
    from voirdire.benchmarks.registry import benchmark_class, recorded_mode
    from voirdire.benchmarks.releases.catalogue import releases

    d = tmp_path / "model_judgment" / "judge"
    d.mkdir(parents=True)
    write_arena_hard(d / "model-x.jsonl", draws(6, seed=3))
    p = plan(audit_job([d], "arena-hard", out=tmp_path / "o"))  # reads every benchmark
    assert p.units_per_judge == 12
    assert recorded_mode("gpt-4") is None  # asked of every benchmark with a release
    assert "llmbar" in releases()
    with pytest.raises(
        ConfigError, match="not a judgment log format; formats: .*ArenaHard, AutoJ"
    ):
        audit_job([d], "mtbench")
    with pytest.raises(
        ConfigError, match="unknown benchmark 'nosuch'; known benchmarks: .*MTBench"
    ):
        benchmark_class("nosuch")
    with pytest.raises(
        ConfigError, match="benchmark 'broken' needs an optional dependency"
    ):
        benchmark_class("broken")


def test_a_broken_metric_or_strategy_plugin_is_left_out_with_a_warning(broken_plugins):
    from voirdire.analysis.mitigation.registry import strategies
    from voirdire.analysis.position.registry import metrics

    with pytest.warns(UserWarning, match="metric 'broken' left out"):
        assert "pc" in metrics() and "broken" not in metrics()
    with pytest.warns(UserWarning, match="strategy 'broken' left out"):
        found = strategies()
    assert found and "broken" not in found
