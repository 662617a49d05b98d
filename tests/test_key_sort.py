"""sort_by_keys: the order of polars' own sort, through one packed integer key."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from voirdire.analysis.key_sort import sort_by_keys


def _frame(n: int = 5000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    names = [f"model-{i:03d}" for i in range(40)]
    tasks = np.array(["coding", "math", "writing"], dtype=object)
    task = tasks[rng.integers(0, 3, n)]
    task[rng.random(n) < 0.2] = None
    return pl.DataFrame(
        {
            "strategy": rng.choice(["none", "gate", "swap_and_tie"], n),
            "candidate": rng.choice(names, n),
            "task": list(task),
            "question_id": [f"q{i}" for i in rng.integers(0, 300, n)],
            "rep": rng.integers(-3, 3, n),
            "score": rng.integers(0, 50, n) / 7.0,
            "row": np.arange(n),
        }
    )


@pytest.mark.parametrize("nulls_last", [False, True])
@pytest.mark.parametrize(
    "descending", [False, True, [False, True, False, True, False, False]]
)
def test_same_order_as_polars_stable_sort(descending, nulls_last):
    df = _frame()
    keys = ["strategy", "task", "candidate", "score", "question_id", "rep"]
    want = df.sort(
        keys, descending=descending, nulls_last=nulls_last, maintain_order=True
    )
    got = sort_by_keys(df, keys, descending=descending, nulls_last=nulls_last)
    assert got.equals(want)
    assert got.columns == df.columns


def test_unique_keys_match_the_default_sort():
    df = _frame().unique(["strategy", "candidate", "task", "question_id"])
    keys = ["strategy", "candidate", "task", "question_id"]
    assert sort_by_keys(df, keys).equals(df.sort(keys))


def test_ties_keep_their_order():
    df = pl.DataFrame({"k": ["b", "a", "b", "a", None], "row": [0, 1, 2, 3, 4]})
    assert sort_by_keys(df, ["k"])["row"].to_list() == [4, 1, 3, 0, 2]
    assert sort_by_keys(df, ["k"], nulls_last=True)["row"].to_list() == [1, 3, 0, 2, 4]


def test_nan_and_wide_keys_fall_back():
    df = pl.DataFrame({"x": [1.0, float("nan"), 0.5, None], "row": [0, 1, 2, 3]})
    assert sort_by_keys(df, ["x"]).equals(df.sort("x", maintain_order=True))
    # ten columns of 200 distinct values: 200¹⁰ places pass 2⁶³
    rng = np.random.default_rng(1)
    wide = pl.DataFrame({f"c{i}": rng.integers(0, 200, 3000) for i in range(10)})
    wide = wide.with_columns(pl.int_range(pl.len()).alias("row"))
    keys = [f"c{i}" for i in range(10)]
    assert sort_by_keys(wide, keys).equals(wide.sort(keys, maintain_order=True))


def test_empty_and_all_null_columns():
    empty = _frame().head(0)
    assert sort_by_keys(empty, ["candidate"]).equals(empty)
    df = pl.DataFrame(
        {"a": [None, None, None], "b": ["z", "y", "x"]},
        schema={"a": pl.String, "b": pl.String},
    )
    assert sort_by_keys(df, ["a", "b"])["b"].to_list() == ["x", "y", "z"]


def test_flags_must_match_keys():
    with pytest.raises(ValueError, match="2 descending flags for 3 keys"):
        sort_by_keys(_frame(), ["strategy", "task", "rep"], descending=[True, False])
