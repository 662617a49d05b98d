"""voirdire's public Python API: what the CLI does, as functions a notebook can call.

    import voirdire
    result = voirdire.run("examples/mtbench_position_bias.toml")   # run or resume, then analyse
    result.judge_metrics                                          # polars DataFrame
    done = voirdire.load("runs/mtbench-position-bias")            # a finished directory (read-only)
    voirdire.report([done.output_dir], out="runs/report")         # report.html, report.md, CSVs

Every function validates before anything is sent and raises
:class:`voirdire.core.ConfigError` (invalid job, data or judge) with a message naming the
culprit; :class:`voirdire.engine.scheduler.JobInterrupted` on Ctrl-C (what finished is
saved: run again to resume).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# the API's functions, by what they take: jobs, or finished directories
from voirdire.api.jobs import (
    audit,
    audit_job,
    check_audit,
    estimate,
    load_job_spec,
    plan,
    run,
    run_queries,
)
from voirdire.api.people import people
from voirdire.api.results import analyze, load, mitigate, rank, report
from voirdire.api.serving import serve

# The analysis (scipy, statsmodels, matplotlib: seconds to import) is imported by the
# functions that use it, when they use it: a run starts Ray first (issue 28.6).
if TYPE_CHECKING:
    from voirdire.analysis.outputs import Results

__all__ = [
    "Results",
    "load",
    "load_job_spec",
    "plan",
    "estimate",
    "run",
    "run_queries",
    "analyze",
    "report",
    "mitigate",
    "rank",
    "people",
    "audit",
    "audit_job",
    "check_audit",
    "serve",
]


def __getattr__(name: str) -> Any:
    if name == "Results":  # voirdire.api.Results, imported on first use
        from voirdire.analysis.outputs import Results

        return Results
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
