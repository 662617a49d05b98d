"""Default outputs never collide (issue 40, item 7): ``mitigate``, ``rank`` and ``people``
write, without ``--out``, into a folder named after their inputs; a default that is not
ours is refused in one line naming the ``--out`` to give."""

from __future__ import annotations

from pathlib import Path

import pytest

from voirdire.analysis.together import MAX_DEFAULT_NAME, default_out, destination
from voirdire.core import ConfigError


def test_the_default_is_named_after_the_inputs(tmp_path):
    a, b = tmp_path / "mtbench-position-bias", tmp_path / "devbench-position-bias"
    assert (
        default_out([a], "mitigation") == tmp_path / "mtbench-position-bias-mitigation"
    )
    assert default_out([b], "mitigation") != default_out([a], "mitigation")
    assert default_out([a, b], "ranking") == (
        tmp_path / "mtbench-position-bias+devbench-position-bias-ranking"
    )
    assert default_out([a, b], "ranking") != default_out([b, a], "ranking")
    assert default_out([a], "people") == tmp_path / "mtbench-position-bias-people"


def test_long_inputs_are_shortened_with_a_hash(tmp_path):
    dirs = [tmp_path / f"a-very-long-directory-name-{i}" for i in range(5)]
    one, other = default_out(dirs, "ranking"), default_out(dirs[:4], "ranking")
    assert one != other and one.parent == tmp_path
    assert len(one.name) <= MAX_DEFAULT_NAME + len("-ranking")
    assert one.name.startswith("a-very-long-directory-name-0+4-")


def test_a_default_that_is_not_ours_is_refused_naming_the_out(tmp_path):
    d = tmp_path / "run1"
    taken = default_out([d], "mitigation")
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError) as e:
        destination([d], None, "mitigation")
    msg = str(e.value)
    assert "\n" not in msg and "--out" in msg and str(taken) in msg
    assert destination([d], tmp_path / "elsewhere", "mitigation") == Path(
        tmp_path / "elsewhere"
    )
