"""voirdire: examines LLM judges for bias at benchmark scale, on Ray.

The public API (:mod:`voirdire.api`) is re-exported here and imported on first use, so
``import voirdire`` stays cheap in Ray workers::

    import voirdire
    result = voirdire.run("examples/mtbench_position_bias.toml")
    result.judge_metrics

The rooms import as ``voirdire.core``, ``voirdire.benchmarks``, ``voirdire.judges``,
``voirdire.engine`` and ``voirdire.analysis`` (setuptools' ``package-dir`` maps the
repository's top-level folders to them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Results", "load", "load_job_spec", "plan", "estimate", "run", "analyze", "report", "mitigate", "rank", "people", "audit", "serve", "ConfigError",
    "__version__",
]  # fmt: skip

if TYPE_CHECKING:
    from voirdire.api import (
        Results,
        analyze,
        audit,
        estimate,
        load,
        load_job_spec,
        people,
        plan,
        rank,
        report,
        run,
        serve,
    )
    from voirdire.core import ConfigError


def __getattr__(name: str) -> Any:
    if name == "ConfigError":
        from voirdire.core import ConfigError

        return ConfigError
    if name in __all__:
        from voirdire import api

        return getattr(api, name)
    raise AttributeError(f"module 'voirdire' has no attribute {name!r}")
