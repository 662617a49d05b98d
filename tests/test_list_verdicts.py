"""The verdict viewer's list-wise series (issue #40 item 11): on a list-wise MT-Bench job of
three simulated judges of known bias (lists of 3 in their 3 cyclic orders, option mode 4,
two tasks), the series shown really changed their choice with the order (recounted here
from the judgments' letters), every flip is counted, the bounds hold, each permutation's
prompt is rebuilt as sent, and received text is escaped."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import polars as pl
import pytest

import voirdire
from voirdire.analysis.report.list_verdicts import flipped_lists, with_list_prompts
from voirdire.analysis.report.verdicts import FlippedPairs, flipped_pairs, verdicts_page

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '</pre><script>alert("x")</script><img src=x onerror=alert(1)>'


def listwise_run(out: Path, data_dir: Path) -> Path:
    """The example list-wise job (``examples/mtbench_listwise_p3_cyclic.toml``) on two
    tasks, into ``out`` (test machinery, also for the browser test)."""
    from voirdire.engine.spec import parse_job

    job = tomllib.loads(
        (ROOT / "examples" / "mtbench_listwise_p3_cyclic.toml").read_text()
    )
    job["output_dir"] = str(out)
    job["benchmark"] |= {"data_dir": str(data_dir), "tasks": ["writing", "math"]}
    voirdire.run(parse_job(job, "listwise-viewer"))
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, data_dir) -> Path:
    return listwise_run(tmp_path_factory.mktemp("lists") / "run", data_dir)


@pytest.fixture(scope="module")
def judgments(run_dir) -> pl.DataFrame:
    from voirdire.analysis.results_dir import load_judgments

    return load_judgments(run_dir)


def _reads(judgments: pl.DataFrame) -> dict[tuple, dict[int, str | None]]:
    """(judge, question, list, repetition) -> {permutation: what it chose}, written out
    here from the letter and the order shown (not the analysis')."""
    out: dict[tuple, dict[int, str | None]] = {}
    for r in judgments.iter_rows(named=True):
        letter, shown = r["extracted"], r["shown"]
        code = ord(letter) - ord("A") if letter and len(letter) == 1 else -1
        read = (
            None if r["failure"] else shown[code] if 0 <= code < len(shown)
            else "tie" if code == len(shown) else None
        )  # fmt: skip
        key = (r["judge"], r["question_id"], tuple(r["candidates"]), r["repetition"])
        out.setdefault(key, {})[r["permutation"]] = read
    return out


def test_the_series_shown_really_flip_and_every_flip_is_counted(judgments):
    lists = flipped_lists(judgments)
    reads = _reads(judgments)
    assert lists.series.height > 25  # enough to page
    for r in lists.series.iter_rows(named=True):
        mine = reads[
            (r["judge"], r["question_id"], tuple(r["candidates"]), r["repetition"])
        ]
        assert [o["permutation"] for o in r["orders"]] == sorted(mine)
        assert len(set(mine.values())) > 1 and None not in mine.values()
        for o in r["orders"]:  # each permutation's order and the candidate it named
            assert sorted(o["shown"]) == sorted(r["candidates"])
            assert ("tie" if o["tie"] else o["chosen"]) == mine[o["permutation"]]
            assert o["output"]
    expected: dict[str, list[int]] = {}
    for (judge, *_), m in reads.items():
        if None not in m.values():
            e = expected.setdefault(judge, [0, 0])
            e[0] += 1
            e[1] += len(set(m.values())) > 1
    counts = {j: [s, f] for j, s, f in lists.counts.select("judge", "series", "flipped").iter_rows()}  # fmt: skip
    assert counts == expected and len(counts) == 3
    shown = dict(lists.counts.select("judge", "shown").iter_rows())
    assert shown == {j: min(f, lists.per_judge) for j, (_, f) in expected.items()}
    # the pairwise half finds nothing to pair in a list-wise job
    assert flipped_pairs(judgments).pairs.height == 0


def test_the_bounds_hold_and_the_page_says_what_they_left_out(judgments):
    lists = flipped_lists(judgments, per_judge=4, max_series=10)
    assert lists.per_judge == 3 and lists.series.height <= 10
    assert lists.series.group_by("judge").len().get_column("len").max() <= 3
    assert (
        lists.left_out
        == int(lists.counts.get_column("flipped").sum()) - lists.series.height
        > 0
    )
    tasks = lists.series.group_by("judge").agg(pl.col("task").n_unique())
    assert (tasks.get_column("task") == 2).all()  # taken round the tasks
    page = verdicts_page(_page_of(lists))
    assert page.count('<article class="pair list') == lists.series.height
    assert f"{lists.left_out:,} flipped series left out" in page
    assert "No pair changed" not in page and "Flips per judge" not in page
    with pytest.raises(ValueError, match="at least 1"):
        flipped_lists(judgments, max_series=0)
    none = flipped_lists(judgments.with_columns(mode=pl.lit("pairwise")))
    assert none.series.height == none.counts.height == 0


def _page_of(lists) -> FlippedPairs:
    """The viewer's table of a list-wise job: no pair, its series."""
    no_pairs = pl.DataFrame(
        schema={"benchmark": pl.String, "judge": pl.String, "pairs": pl.Int64,
                "flipped": pl.Int64, "shown": pl.Int64}
    )  # fmt: skip
    return FlippedPairs(pl.DataFrame(), no_pairs, lists=lists)


def test_each_permutations_prompt_is_rebuilt_as_sent(judgments, run_dir):
    from voirdire.analysis.results_dir import dir_benchmark
    from voirdire.layout import read_job_record

    lists = flipped_lists(judgments, per_judge=5)
    series = with_list_prompts(lists.series, dir_benchmark(read_job_record(run_dir)))
    sent = {(r["judge"], r["question_id"], tuple(r["shown"])): r["prompt_chars"] for r in judgments.iter_rows(named=True)}  # fmt: skip
    for r in series.iter_rows(named=True):
        assert r["instruction"] and len(r["prompts"]) == len(r["orders"]) == 3
        for o, p in zip(r["orders"], r["prompts"], strict=True):
            assert r["instruction"] in p
            assert len(p) == sent[(r["judge"], r["question_id"], tuple(o["shown"]))]
    page = verdicts_page(_page_of(dataclasses.replace(lists, series=series)))
    assert "Prompt (rebuilt from the benchmark)" in page
    bare = verdicts_page(_page_of(dataclasses.replace(lists, series=with_list_prompts(lists.series, None))))  # fmt: skip
    assert (
        "The prompt was not recorded" in bare
        and "The instruction is not in these results" in bare
    )


def hostile_lists(judgments: pl.DataFrame):
    """The flipped series with :data:`HOSTILE` as instruction, reply and one judge's
    name (test machinery, also for the browser test)."""
    first = judgments.get_column("judge").min()
    j = judgments.with_columns(
        judge=pl.when(pl.col("judge") == first)
        .then(pl.lit(HOSTILE))
        .otherwise("judge"),
        output=pl.lit(HOSTILE),
    )
    lists = flipped_lists(j)
    series = lists.series.with_columns(instruction=pl.lit(HOSTILE))
    return dataclasses.replace(lists, series=series)


def test_received_text_is_escaped(judgments):
    page = verdicts_page(_page_of(hostile_lists(judgments)))
    assert HOSTILE not in page and "<script>alert" not in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    block = re.search(r'<script type="application/json" id="viewer-config">(.*?)</script>', page, re.S).group(1)  # fmt: skip
    assert "</" not in block
    assert page.count("<script") == 3  # the config, the sorter, the viewer
