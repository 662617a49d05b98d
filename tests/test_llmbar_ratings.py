"""LLMBar's rating strategies, read two ways: the release's reading (the default; equal
ratings go to the output shown second, as LLMEvaluator's ``evaluate.py`` recorded them) and
voirdire's (``"<evaluator>/<Rating*>@tie"``: equal ratings a tie). Replaying the release by
default reproduces every one of its 499 published ``statistics.json``.

The release is the shared copy, fetched over loopback by the fixtures of ``test_llmbar.py``."""

from __future__ import annotations

import polars as pl
import pytest

from tests.test_llmbar import base_url, copy_dir, data  # noqa: F401  (fixtures)
from voirdire.benchmarks.llmbar import LLMBar, release_rating_winner, split_recorded
from voirdire.benchmarks.recorded import record_key
from voirdire.benchmarks.releases.llmbar import OUTPUTS_SCHEMA
from voirdire.core import ConfigError
from voirdire.judges.replay import recorded_letters

#: the release fetched and converted, then read by every test: seconds each
pytestmark = pytest.mark.slow

O1, O2 = ("output_1", "output_2"), ("output_2", "output_1")


def test_release_rule_for_equal_and_unreadable_ratings():
    """LLMEvaluator's rule, case by case: the higher rating wins in both orders; equal
    ratings go to the output shown second (output_2 as given, output_1 swapped); an
    unreadable rating to the output shown first; ratings are read with ``int()``."""
    cases = [
        (("7", "3"), ("1", "1")),
        (("2", "8"), ("2", "2")),
        (("5", "5"), ("2", "1")),  # a tie: the second shown, in each order
        ((" 6\n", "6"), ("2", "1")),  # int() strips white space
        (("10", "9"), ("1", "1")),  # off voirdire's 0-9 scale, but int() reads it
        (("", "0"), ("1", "2")),  # unreadable: the first shown
        (("7.5", "3"), ("1", "2")),
        ((None, "3"), ("1", "2")),
    ]
    for (s1, s2), want in cases:
        got = (
            release_rating_winner(s1, s2, False),
            release_rating_winner(s1, s2, True),
        )
        assert got == want, (s1, s2)
    assert split_recorded("GPT-4/Rating") == ("GPT-4", "Rating", "release")
    assert split_recorded("GPT-4/Rating_Reference@tie")[2] == "tie"
    for bad in ("GPT-4/Vanilla@tie", "GPT-4/Rating@ties", "GPT-4/Rating@"):
        with pytest.raises(ConfigError, match="only a rating strategy takes a reading"):
            split_recorded(bad)
    assert LLMBar.recorded_mode("GPT-4/Rating") is None  # a pairwise verdict
    assert LLMBar.recorded_mode("GPT-4/Rating@tie") == "score"


def test_a_constructed_tie_replays_as_the_release_read_it_and_as_a_tie(tmp_path):
    """Three items rated alone: a tie (5, 5), a clear winner (3, 8) and an unreadable
    rating. The default reading gives the release's letters (the tie: B in both orders, so
    the two orders disagree, as the release counted it); ``@tie`` gives score-mode text
    with no letter (voirdire reads the tie)."""
    ratings = {0: ("5", "5"), 1: ("3", "8"), 2: ("n/a", "4")}
    rows = [
        ("S", "E", "Rating", i, order, 0, None, None, None, a, b)
        for i, (a, b) in ratings.items()
        for order in (0, 1)
    ]
    path = tmp_path / "outputs.parquet"
    pl.DataFrame(rows, schema=OUTPUTS_SCHEMA, orient="row").write_parquet(path)
    rel = LLMBar.read_recorded(path, "E/Rating")
    letters = {
        (i, o): rel[record_key(f"S/{i}", O1 if o == 0 else O2)].choice
        for i in ratings
        for o in (0, 1)
    }
    assert letters == {
        (0, 0): "B", (0, 1): "B",  # equal: the output shown second, in each order
        (1, 0): "B", (1, 1): "A",  # output_2 is better, wherever it is shown
        (2, 0): "A", (2, 1): "A",  # unreadable: the output shown first
    }  # fmt: skip
    tie = LLMBar.read_recorded(path, "E/Rating@tie")
    shown_swapped = tie[record_key("S/1", O2)]
    assert shown_swapped.choice is None and shown_swapped.output == (
        "Score of Output (a): 8\nScore of Output (b): 3"
    )
    assert rel[record_key("S/1", O2)].output == shown_swapped.output


def _winners(data_dir, judges: list[str]) -> pl.DataFrame:
    """Per (judge, subset, item) the winner in the order shown (``w0``) and swapped
    (``w1``), as the replay judge's verdict letters read (``recorded_letters``), with the
    gold output."""
    bench = LLMBar(data_dir=data_dir)
    parts = [
        recorded_letters(j, bench, str(data_dir)).with_columns(judge=pl.lit(j))
        for j in judges
    ]
    k = pl.concat(parts).with_columns(parts=pl.col("cmp_index").str.split(";"))
    k = k.with_columns(
        qid=pl.col("parts").list.get(0),
        first=pl.col("parts").list.get(1),
        w=pl.when(pl.col("letter") == "A")
        .then(pl.col("parts").list.get(1))
        .when(pl.col("letter") == "B")
        .then(pl.col("parts").list.get(2)),
    ).with_columns(
        subset=pl.col("qid").str.extract(r"^(.*)/\d+$", 1),
        item=pl.col("qid").str.extract(r"/(\d+)$", 1).cast(pl.Int32),
    )
    keys = ["judge", "subset", "item"]
    w0 = k.filter(pl.col("first") == "output_1").select(*keys, w0="w")
    w1 = k.filter(pl.col("first") == "output_2").select(*keys, w1="w")
    gold = pl.read_parquet(data_dir / "pairs.parquet").select(
        "subset",
        "item",
        gold=pl.when(pl.col("label") == 1).then(pl.lit(O1[0])).otherwise(pl.lit(O2[0])),
    )
    return w0.join(w1, on=keys).join(gold, on=["subset", "item"])


def _counts(w: pl.DataFrame) -> pl.DataFrame:
    """The counts of ``statistics.json`` per (judge, subset); a failed verdict is not
    correct, and two failed verdicts are the same winner (the release's ``equal``)."""
    g, a, b = pl.col("gold"), pl.col("w0"), pl.col("w1")
    return w.group_by("judge", "subset").agg(
        n=pl.len().cast(pl.Int32),
        equal=a.eq_missing(b).sum().cast(pl.Int32),
        correct_False=(a == g).fill_null(False).sum().cast(pl.Int32),
        correct_True=(b == g).fill_null(False).sum().cast(pl.Int32),
        correct_both=((a == g) & (b == g)).fill_null(False).sum().cast(pl.Int32),
    )


def test_every_published_statistic_is_reproduced_by_default(data):  # noqa: F811
    """All 499 cells (65 evaluator/strategy judges × the subsets they ran): the replay
    judge's verdicts, read by default, give the published ``n``, ``equal``,
    ``correct_False``, ``correct_True`` and ``correct_both``. On 68e7136 the 35 rating cells
    were not reproduced (equal ratings read as a tie, correct against no label). Read
    ``@tie``, those 35 cells are voirdire's own: every rating pair consistent, and fewer
    correct wherever a cell has ties."""
    cols = ["n", "equal", "correct_False", "correct_True", "correct_both"]
    pub = pl.read_parquet(data / "statistics.parquet").select(
        *cols, judge=pl.col("evaluator") + "/" + pl.col("strategy"), subset="subset"
    )
    judges = LLMBar.recorded_judges(data, "position_bias", [])
    assert len(judges) == 65
    mine = _counts(_winners(data, judges))
    both = pub.join(mine, on=["judge", "subset"], how="left", suffix="_v")
    ok = pl.all_horizontal([pl.col(c).eq_missing(pl.col(f"{c}_v")) for c in cols])
    assert both.height == 499 and int(both.select(ok.sum()).item()) == 499
    rating = [j for j in judges if j.split("/")[1].startswith("Rating")]
    tie = _winners(data, [f"{j}@tie" for j in rating]).with_columns(
        judge=pl.col("judge").str.replace("@tie$", "")
    )
    ties = tie.group_by("judge", "subset").agg(
        none=(pl.col("w0").is_null() & pl.col("w1").is_null()).sum().cast(pl.Int32)
    )
    voir = _counts(tie).join(ties, on=["judge", "subset"])
    cmp = pub.join(voir, on=["judge", "subset"], how="inner", suffix="_v")
    assert cmp.height == 35 and (cmp["none"] > 0).all()
    # a tie is correct in exactly one order under the release's reading, in none as a tie
    lost = (cmp["correct_False"] + cmp["correct_True"]) - (
        cmp["correct_False_v"] + cmp["correct_True_v"]
    )
    assert (lost > 0).all() and (lost <= cmp["none"] * 2).all()
    assert (cmp["correct_both_v"] <= cmp["correct_both"]).all()
    assert (cmp["equal_v"] == cmp["n"]).all()  # no order effect, as voirdire reads it
