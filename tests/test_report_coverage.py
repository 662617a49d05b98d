"""Every figure of the report covers every judge of the report or says which it leaves
out and why (issue 40, item 6; ``analysis/report/coverage.py``).

Two audited verdict logs of one benchmark (:mod:`tests.study_simulate`): the first holds
three judges, one of them (its name holding markup) judged in one order only; the second
two other judges. The report's PC and PF figures leave out the one-order judge (no point
at (0, 0) for it), each agreement figure the other directory's judges; each caption
names exactly those, escaped. A report whose figures draw every judge has no caption.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest

from tests.study_simulate import simulated_study_log
from voirdire.analysis.report.coverage import (
    NAMED,
    ONE_ORDER,
    OTHER_DIRECTORY,
    caption,
    drawn_judges,
)

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip
#: the one-order judge: a name the page must show as text
ONE = "atlas/<i>cot</i>&1"
_FIGURE = re.compile(
    r'<div class="vega" id="(fig\d+)" data-key="([^"]*)"></div>'
    r'<script type="application/json" id="fig\d+-spec">(.*?)</script>'
    r'(?:<figcaption class="note left-out" title="([^"]*)">([^<]*)</figcaption>)?',
    re.S,
)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory) -> tuple[list[Path], list[str], list[str]]:
    """Two audited directories and their judges (the first's first judged in one order)."""
    import voirdire

    tmp = tmp_path_factory.mktemp("coverage")
    log = simulated_study_log(5, questions=8)
    names = sorted(log.get_column("judge").unique().to_list())
    log = log.with_columns(pl.col("judge").replace({names[0]: ONE}))
    first, second = [ONE, *names[1:3]], names[3:]
    a = log.filter(pl.col("judge").is_in(first))
    a = a.filter(~((pl.col("judge") == ONE) & (pl.col("first") == "b")))
    out = []
    for x, part in (("a", a), ("b", log.filter(pl.col("judge").is_in(second)))):
        part.write_parquet(tmp / f"{x}.parquet")
        done = voirdire.audit(
            [tmp / f"{x}.parquet"], "logtable", out=tmp / f"audit_{x}",
            log={"columns": {c: c for c in COLUMNS}},
        )  # fmt: skip
        out.append(done.output_dir)
    return out, first, second


def _figures(page: Path) -> dict[str, tuple[set[str], str | None, str | None]]:
    """key -> (the judges its data draws, the caption's hover list, its text), unescaped."""
    out = {}
    for _, key, spec, title, text in _FIGURE.findall(page.read_text()):
        data = json.loads(spec.replace("<\\/", "</"))
        out[key] = (
            drawn_judges(data),
            html.unescape(title) if title else None,
            html.unescape(text) if text else None,
        )
    return out


def test_each_caption_names_exactly_the_judges_its_figure_leaves_out(dirs, tmp_path):
    import voirdire

    paths, first, second = dirs
    page = voirdire.report(paths, out=tmp_path / "both", replicates=20)
    raw = page.read_text()
    assert ONE not in raw and html.escape(ONE) in raw  # escaped wherever named
    figs = _figures(page)
    every = {*first, *second}
    pcpf = [k for k in figs if k.split(":")[0] in ("radar", "pf_bars", "pc_pf", "owr")]
    assert len(pcpf) == 4, sorted(figs)
    for key in pcpf:
        drawn, title, text = figs[key]
        assert drawn == every - {ONE}, key  # no point at (0, 0) for the one-order judge
        assert title == f"Left out: {ONE}", key
        assert text == f"Leaves out {ONE}: {ONE_ORDER}.", key
    for i, mine, other in ((0, first, second), (1, second, first)):
        for kind in ("agreement", "disagreement"):
            (key,) = [k for k in figs if k.startswith(f"{kind}:{i}:")]  # one benchmark
            drawn, title, text = figs[key]
            if kind == "agreement":
                assert drawn == set(mine)
            assert title == "Left out: " + ", ".join(sorted(other))
            assert text == f"Leaves out {', '.join(sorted(other))}: {OTHER_DIRECTORY}."
    # every figure that leaves a judge of the report out says so, and only those
    for key, (drawn, title, _) in figs.items():
        if key.startswith("disagreement:"):
            continue  # its data counts queries, no judge (checked above)
        left = sorted(every - drawn)
        assert title == ("Left out: " + ", ".join(left) if left else None), key


def test_a_figure_that_draws_every_judge_has_no_caption(dirs, tmp_path):
    import voirdire

    paths, _, second = dirs
    page = voirdire.report([paths[1]], out=tmp_path / "second", replicates=20)
    figs = _figures(page)
    assert figs and all(d == set(second) for d, _, _ in list(figs.values())[:1])
    assert "left-out" not in page.read_text()


def test_a_long_list_is_named_in_part_and_counted():
    judges = [f"judge-{i}" for i in range(NAMED + 4)]
    c = caption({**dict.fromkeys(judges, ONE_ORDER), "<other>": OTHER_DIRECTORY})
    assert c is not None
    assert c["text"] == (
        f"Leaves out {', '.join(judges[:NAMED])} and 4 more: {ONE_ORDER}; "
        f"<other>: {OTHER_DIRECTORY}."
    )
    assert c["all"] == "Left out: " + ", ".join(sorted([*judges, "<other>"]))
    assert caption({}) is None
