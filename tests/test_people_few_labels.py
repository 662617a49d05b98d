"""A model whose human win rate rests on few labelled pairs is flagged in one line, in the
terminal, ``people.md`` and the report's section (``MIN_LABELS``: PRD at 16 labelled pairs
per model covers 0.87 of 0.90), naming the models fewest first; enough labels, no line."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from tests.people_simulate import study, truth
from voirdire.analysis.people.study import people_study
from voirdire.analysis.report.people import print_people, write_people
from voirdire.analysis.report.people_files import MIN_LABELS, few_labels, people_tables
from voirdire.analysis.report.people_section import people_view

JUDGE = "<b>cheap</b>|*x*"  # markup in every output: shown as written


@pytest.fixture(scope="module")
def judged():
    return study(
        np.random.default_rng(5), k=4, questions=40, judges={JUDGE: (0.6, 0.7)}
    )


def _terminal(s) -> str:
    buf = io.StringIO()
    print_people(s, Console(file=buf, width=200, highlight=False))
    return buf.getvalue()


def test_few_labels_are_flagged_in_every_output(judged, tmp_path):
    s = people_study(judged, truth(judged), share=0.15)
    t = people_tables(s)
    labels = t.boards.filter(
        (t.boards["kind"] == "win_rate") & (t.boards["estimator"] == "classical")
    ).sort("n_labels", "model")
    assert (labels["n_labels"] < MIN_LABELS).all()  # 36 labels: about 18 per model
    (line,) = few_labels(t)
    assert line[:2] == ("sim", JUDGE)
    first = f"{labels['model'][0]} {labels['n_labels'][0]}"
    assert (
        f"4 of 4 models have fewer than {MIN_LABELS} labelled pairs ({first}, "
        in line[2]
    )
    assert "Few labels" not in _terminal(s) and line[2] in _terminal(s).replace(
        "\n", ""
    )
    md = (write_people(s, tmp_path / "people")["markdown"]).read_text()
    assert "**Few labels.**" in md and JUDGE not in md  # escaped
    assert "\\<b\\>cheap\\</b\\>" in md or "&lt;b&gt;cheap" in md
    view = people_view(t, {}, [0])
    assert view["benchmarks"][0]["few_labels"] == [line[2]]


def test_enough_labels_no_flag(judged):
    s = people_study(judged, truth(judged), share=1.0)
    t = people_tables(s)
    assert not few_labels(t)
    assert "fewer than" not in _terminal(s)
    # the threshold is the argument: at 200 every model is short of it
    assert few_labels(t, least=200)[0][2].startswith(f"sim / {JUDGE}: 4 of 4 models")
