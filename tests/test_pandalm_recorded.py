"""PandaLM's two recorded judges (PandaLM-7B, GPT-3.5): fetched and verified with the test set
from a synthetic copy in the release's exact format, read into ``recorded.parquet``, and
handed to the replay judge with the letter each recorded result means."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tests.pandalm_synthetic import synthetic_items, write_release
from voirdire.benchmarks.pandalm import PandaLM
from voirdire.benchmarks.recorded import record_key
from voirdire.benchmarks.releases.catalogue import fetch_release
from voirdire.benchmarks.releases.mirror import blob_id
from voirdire.benchmarks.releases.pandalm import RECORDED_FILES
from voirdire.core import ConfigError, DataError

RESULTS = {"pandalm-7b": [1, 2, 0], "gpt-3.5-turbo": ["1", "2", "Tie", "garbage"]}


def _release(tmp_path, judges=RESULTS, bad: bytes | None = None):
    items = synthetic_items()
    man = write_release(tmp_path / "release", items)
    lines = man.read_text()
    for judge, results in judges.items():
        path, field, why = RECORDED_FILES[judge]
        recs = [
            {"idx": it["idx"], field: results[n % len(results)], why: f"reason {n}"}
            for n, it in enumerate(items)
        ]
        data = bad if bad is not None else json.dumps(recs).encode()
        (tmp_path / "release" / path).write_bytes(data)
        lines += f"{path}\t{blob_id(data)}\t{len(data)}\n"
    man.write_text(lines)
    return fetch_release(
        tmp_path / "data",
        release="pandalm",
        source=tmp_path / "release",
        manifest=man,
        progress=False,
    )


def test_the_recorded_judges_are_fetched_and_replayable(tmp_path):
    rep = _release(tmp_path)
    d = rep.dest
    rec = pl.read_parquet(d / "recorded.parquet")
    assert (
        sorted(rec["judge"].unique()) == ["gpt-3.5-turbo", "pandalm-7b"]
        and rec.height == 60
    )
    assert PandaLM.recorded_judges(d, "position_bias") == [
        "gpt-3.5-turbo",
        "pandalm-7b",
    ]
    path = PandaLM.recorded_file(d, "position_bias", "gpt-3.5-turbo", "gpt")
    got = PandaLM.read_recorded(path, "gpt-3.5-turbo")
    pairs = pl.read_parquet(d / "pairs.parquet")
    letters = []
    for r in pairs.sort("idx").head(4).iter_rows(named=True):
        letters.append(got[record_key(r["id"], (r["model_1"], r["model_2"]))].choice)
    assert letters == ["A", "B", "C", ""]  # 1, 2, Tie, garbage (no verdict read)
    assert (
        got[
            record_key(
                "0",
                tuple(
                    pairs.filter(pl.col("idx") == 0).select("model_1", "model_2").row(0)
                ),
            )
        ].output
        == "reason 0"
    )
    p7 = PandaLM.read_recorded(path, "pandalm-7b")
    assert {r.choice for r in p7.values()} == {"A", "B", "C"}  # 0 is a tie
    with pytest.raises(
        ConfigError,
        match="no recorded verdicts of 'gpt-4'.*recorded there: gpt-3.5-turbo, pandalm-7b",
    ):
        PandaLM.recorded_file(d, "position_bias", "gpt-4", "x")


def test_a_malformed_recorded_file_is_one_line(tmp_path):
    with pytest.raises(
        DataError,
        match=r"data/pandalm-7b-testset-v1.json: record 0 is not an object with an integer 'idx'",
    ):
        _release(
            tmp_path, {"pandalm-7b": [1]}, bad=b'[{"idx": "0", "pandalm_result": 1}]'
        )


def test_a_release_without_the_judges_still_converts(tmp_path):
    d = _release(tmp_path, {}).dest
    assert (
        not (d / "recorded.parquet").exists()
        and PandaLM.recorded_judges(d, "position_bias") == []
    )
