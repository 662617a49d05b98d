"""``people`` refuses the boards of anonymous answers (issue 40, item 8): LLMBar's pairs are
``output_1`` against ``output_2``, not named models, so no win rate or rating of them is
built (``rank`` refuses the same data); one line says so, and the selective judges of the
benchmark are still computed."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
from rich.console import Console

from tests.people_simulate import study, truth
from voirdire.analysis.people.study import people_study
from voirdire.analysis.report.people import print_people, write_people


def _mixed() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    named = study(rng, k=4, questions=30, judges={"j": (0.8, 0.6)}, benchmark="sim")
    anon = study(rng, k=2, questions=120, judges={"j": (0.8, 0.6)}, benchmark="LLMBar")
    anon = anon.with_columns(
        pl.col(c).str.replace("m0", "output_1").str.replace("m1", "output_2")
        for c in ("candidate", "reference", "gold")
    ).with_columns(
        pl.col(c).list.eval(
            pl.element().str.replace("m0", "output_1").str.replace("m1", "output_2")
        )
        for c in ("candidates", "shown")
    )
    return pl.concat([named, anon])


def test_anonymous_answers_get_no_board_and_one_line(tmp_path):
    j = _mixed()
    s = people_study(j, truth(j))
    assert set(s.boards["benchmark"]) == {"sim"}
    assert "output_1" not in set(s.boards["model"])
    assert set(s.selective["benchmark"]) == {"sim", "LLMBar"}
    assert len(s.refused) == 1 and s.refused[0].startswith("LLMBar: no human board")
    assert "anonymous answers" in s.refused[0] and "\n" not in s.refused[0]
    buf = io.StringIO()
    print_people(s, Console(file=buf, width=200))
    assert buf.getvalue().splitlines()[0] == s.refused[0] + "."
    paths = write_people(s, tmp_path / "p")
    md = paths["markdown"].read_text()
    assert "LLMBar: no human board" in md and "### LLMBar /" not in md


def test_only_anonymous_answers_still_give_the_selective_judges(tmp_path):
    j = _mixed().filter(pl.col("benchmark") == "LLMBar")
    s = people_study(j, truth(j))
    assert s.boards.height == 0 and s.selective.height == 1
    write_people(s, tmp_path / "p")  # the files are written without a board
