"""``voirdire people``'s files read back as the report reads them
(:mod:`voirdire.analysis.report.people_files`): the same tables as the study's, names that
the CSV writer quoted as formulas restored exactly, a broken table refused in one line."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.people_simulate import study, truth
from voirdire.analysis.people.study import people_study
from voirdire.analysis.report.people import write_people
from voirdire.analysis.report.people_files import find_people, read_people
from voirdire.core import ConfigError

FORMULA = "=HYPERLINK(x)"  # a judge's name a spreadsheet would run: quoted in the CSVs


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    j = study(np.random.default_rng(3), k=4, questions=40, judges={"cheap": (0.5, 0.8), FORMULA: (0.9, 0.6)})  # fmt: skip
    s = people_study(j, truth(j), share=0.3)
    out = tmp_path_factory.mktemp("people-files") / "people"
    write_people(s, out)
    return s, out


def test_the_files_read_back_as_the_study(written):
    s, out = written
    assert "'" + FORMULA in (out / "metrics" / "people_selective.csv").read_text()
    t = read_people(out)
    assert FORMULA in t.selective["judge"].to_list()
    for name in ("boards", "selective", "curve", "cascade"):
        assert_frame_equal(getattr(t, name), getattr(s, name), check_dtypes=False)
    assert t.settings == {k: s.settings[k] for k in t.settings}
    assert t.to_label == s.to_label.height and t.source == "people"
    # found beside the first directory, or in the report's own output directory
    assert find_people(out.parent / "report", [out.parent / "audit"]) == out
    assert find_people(out, []) == out
    assert find_people(out.parent / "report", [out.parent / "x" / "audit"]) is None


def test_a_broken_table_is_refused_in_one_line(written, tmp_path):
    import shutil

    _, out = written
    copy = tmp_path / "people"
    shutil.copytree(out, copy)
    (copy / "metrics" / "people_settings.csv").unlink()
    with pytest.raises(ConfigError, match=r"people_settings\.csv is missing"):
        read_people(copy)
    shutil.copy(out / "metrics" / "people_settings.csv", copy / "metrics")
    boards = copy / "metrics" / "people_boards.csv"
    pl.read_csv(boards).with_columns(rank=pl.lit("first")).write_csv(boards)
    with pytest.raises(ConfigError, match=r"people_boards\.csv cannot be read as voirdire people's table"):  # fmt: skip
        read_people(copy)
