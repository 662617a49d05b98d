"""Progress on long commands (issue 40, item 5): the stages a command runs are watched
(``voirdire.stages.watching``), drawn as one line on a terminal and nowhere else, and a run
of many judges draws one bar for them all."""

from __future__ import annotations

import io

from rich.console import Console

from voirdire.cli import common
from voirdire.engine.progress import MAX_BARS, JobProgress
from voirdire.stages import Stage, run_stages, watching


def _inner(x):
    return {
        "y": run_stages([Stage("inner", ("x",), ("z",), lambda x: {"z": x})], {"x": x})[
            "z"
        ]
    }


STAGES = [
    Stage("first", ("x",), ("y",), _inner),
    Stage("second", ("y",), ("w",), lambda y: {"w": y + 1}),
]


def test_every_stage_is_seen_before_it_runs_with_its_place_and_depth():
    seen = []
    with watching(lambda *a: seen.append(a)):
        assert run_stages(STAGES, {"x": 1})["w"] == 2
    assert seen == [("first", 0, 2, 0), ("inner", 0, 1, 1), ("second", 1, 2, 0)]
    run_stages(STAGES, {"x": 1})  # no watcher left behind
    assert len(seen) == 3


def test_the_stage_line_is_drawn_on_a_terminal_only(monkeypatch):
    term = io.StringIO()
    monkeypatch.setattr(
        common, "err_console", Console(file=term, force_terminal=True, width=120)
    )
    with common.stage_progress("report"):
        run_stages(STAGES, {"x": 1})
    assert "report" in term.getvalue() and "stages" in term.getvalue()
    plain = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=plain, width=120))
    with common.stage_progress("report"):
        run_stages(STAGES, {"x": 1})
    quiet = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=quiet, force_terminal=True))
    with common.stage_progress("report", enabled=False):  # --no-progress
        run_stages(STAGES, {"x": 1})
    assert plain.getvalue() == "" and quiet.getvalue() == ""


def test_many_judges_share_one_bar_with_their_sums():
    few = JobProgress({f"j{i}": 10 for i in range(3)}, enabled=False, log_seconds=0)
    assert len(few.progress.tasks) == 3
    many = JobProgress({f"j{i}": 10 for i in range(65)}, enabled=False, log_seconds=0)
    assert len(many.progress.tasks) == 1 and MAX_BARS < 65
    (task,) = many.progress.tasks
    assert task.total == 650 and task.description == "65 judges"
    many.advance("j1", 4, {"failures": 1, "cost_usd": 0.5})
    many.advance("j2", 6, {"failures": 2, "cost_usd": 0.25})
    many.advance("j1", 1, {"failures": 1, "cost_usd": 0.75})  # j1's running totals
    assert task.completed == 11
    assert task.fields["extra"] == "3 failed · $1.00"
