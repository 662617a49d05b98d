"""Bad own-pairs files (issue 21, item 8): each refused as one line naming the file, the
1-based line or row and the column, at plan time; a byte-order mark is the encoding's mark."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

import voirdire
from voirdire.benchmarks.own_pairs.benchmark import OwnPairs, PairsSpec
from voirdire.core import ConfigError

COLUMNS = {
    "id": "uid",
    "instruction": "prompt",
    "output_a": "a",
    "output_b": "b",
    "gold": "label",
}
ROWS = [
    {"uid": f"q{i}", "prompt": f"Question {i}?", "a": f"x{i}", "b": f"y{i}", "label": 1}
    for i in range(1, 6)
]


def _lines(rows: list[dict]) -> list[str]:
    return [json.dumps(r) for r in rows]


def _bench(path: Path) -> OwnPairs:
    return OwnPairs(PairsSpec(path=str(path), columns=COLUMNS))


def _error(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    with pytest.raises(ConfigError) as exc:
        _bench(path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"pairs data {str(path)!r}: "), msg
    return msg[len(f"pairs data {str(path)!r}: ") :]


def test_jsonl_with_a_broken_middle_line_names_the_line_and_column(tmp_path):
    lines = _lines(ROWS)
    lines[2] = '{"uid": "q3", "prompt": "Question 3?", "a": "x3",'
    msg = _error(tmp_path / "p.jsonl", ("\n".join(lines) + "\n").encode())
    assert msg.startswith("line 3, column 50: not valid JSON ("), msg


def test_json_array_with_a_syntax_error_names_the_line_and_column(tmp_path):
    text = "[\n" + ",\n".join(_lines(ROWS[:2])) + ',\n{"uid": "q3" "prompt": "x"}\n]'
    msg = _error(tmp_path / "p.json", text.encode())
    assert msg.startswith(
        "line 4, column 14: not valid JSON (Expecting ',' delimiter)"
    ), msg


def test_a_jsonl_line_that_is_not_an_object_is_named(tmp_path):
    lines = _lines(ROWS)
    lines[1] = '["q2", "x"]'
    assert (
        _error(tmp_path / "p.jsonl", ("\n".join(lines) + "\n").encode())
        == "line 2 is not a JSON object (a list)"
    )


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_invalid_utf8_names_the_line_and_column(tmp_path, suffix):
    bad = "Caf\udce9 au lait?".encode("utf-8", "surrogateescape")  # a Latin-1 é
    if suffix == "jsonl":
        lines = [s.encode() for s in _lines(ROWS)]
        lines[3] = lines[3].replace(b"Question 4?", bad)
        data, where = b"\n".join(lines) + b"\n", "line 4, column 29"
    else:
        data, where = (
            b"uid,prompt,a,b,label\nq1,Q1,x,y,1\nq2," + bad + b",x,y,2\n",
            "line 3, column 7",
        )
    msg = _error(tmp_path / f"p.{suffix}", data)
    assert (
        msg
        == f"{where}: not valid UTF-8 (b'\\xe9': invalid continuation byte); save the file as UTF-8"
    ), msg


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv", "tsv"])
@pytest.mark.parametrize("bom", ["utf-8-sig", "utf-16"])
def test_a_byte_order_mark_is_read_as_the_encodings_mark(tmp_path, suffix, bom):
    if suffix == "jsonl":
        text = "\n".join(_lines(ROWS)) + "\n"
    elif suffix == "json":
        text = json.dumps(ROWS)
    else:
        sep = "," if suffix == "csv" else "\t"
        text = "\n".join(
            sep.join(str(r[k]) for k in ("uid", "prompt", "a", "b", "label"))
            for r in ROWS
        )
        text = sep.join(("uid", "prompt", "a", "b", "label")) + "\n" + text + "\n"
    data = text.encode(bom)
    assert data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    path = tmp_path / f"p.{suffix}"
    path.write_bytes(data)
    bench = _bench(path)
    assert bench.question_ids == ("q1", "q2", "q3", "q4", "q5")
    assert bench.fixed_instances()["gold"].to_list() == ["a"] * 5
    assert bench.question_text("q1") == "Question 1?"


def test_a_true_label_names_its_row_and_column(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[2]["label"] = True
    msg = _error(tmp_path / "p.jsonl", ("\n".join(_lines(rows)) + "\n").encode())
    assert msg.startswith(
        "gold label 'true' in column 'label', row 3, is not one of"
    ), msg


def test_a_label_list_with_one_fraction_names_that_row(tmp_path):
    rows = [dict(r, label=v) for r, v in zip(ROWS, [2, 1, 1.5, 1, 2])]
    msg = _error(tmp_path / "p.jsonl", ("\n".join(_lines(rows)) + "\n").encode())
    assert msg.startswith("gold label '1.5' in column 'label', row 3, is not one of"), (
        msg
    )
    rows[2]["label"] = 1.0  # 2, 1, 1.0, 1, 2: all fine
    (tmp_path / "q.jsonl").write_text("\n".join(_lines(rows)) + "\n")
    assert _bench(tmp_path / "q.jsonl").fixed_instances()["gold"].to_list() == [
        "b",
        "a",
        "a",
        "a",
        "b",
    ]


def test_a_bad_file_is_one_line_and_exit_2_in_a_dry_run(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from voirdire import cli

    monkeypatch.setattr(cli.err_console, "width", 10_000)
    lines = _lines(ROWS)
    lines[2] = "{oops"
    (tmp_path / "p.jsonl").write_text("\n".join(lines) + "\n")
    job = {"name": "bad", "output_dir": str(tmp_path / "out"),
           "benchmark": {"name": "pairs", "pairs": {"path": str(tmp_path / "p.jsonl"), "columns": COLUMNS}},
           "judges": [{"name": "s", "backend": "simulated"}]}  # fmt: skip
    with pytest.raises(
        ConfigError, match=r"p\.jsonl': line 3, column 2: not valid JSON"
    ):
        voirdire.plan(job)
    import tomli_w

    (tmp_path / "job.toml").write_bytes(tomli_w.dumps(job).encode())
    res = CliRunner().invoke(cli.app, ["run", str(tmp_path / "job.toml"), "--dry-run"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "line 3, column 2: not valid JSON" in res.output
