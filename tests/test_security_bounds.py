"""Bounds on what a user's pairs and template may cost (issue 26, item 4): memory and time grow
with what the job asked for, and past a stated limit the job is refused in one line before
the data is decoded or a prompt is built. A saved Hugging Face dataset may not name a file,
or hold a link, outside its folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from voirdire import cli
from voirdire.benchmarks.own_pairs.data import read_source
from voirdire.benchmarks.own_pairs.limits import MAX_BYTES, MAX_ROWS
from voirdire.benchmarks.own_pairs.prompts import PairTemplate
from voirdire.core import ConfigError

TEMPLATE = "{% block user %}Q: {{ instruction }}\n1: {{ output_1 }}\n2: {{ output_2 }}\n[[1]] or [[2]]{% endblock %}"


def _job(tmp_path: Path, data: Path, template: str, extra: str = "") -> Path:
    (tmp_path / "tpl.jinja").write_text(template, encoding="utf-8")
    job = tmp_path / "job.toml"
    job.write_text(
        f'name = "bounds"\noutput_dir = "{tmp_path / "out"}"\n[benchmark]\nname = "pairs"\n'
        f'[benchmark.pairs]\npath = "{data}"\ntemplate = "{tmp_path / "tpl.jinja"}"\n{extra}'
        'verdict_pattern = "\\\\[\\\\[(1|2)\\\\]\\\\]"\nverdict_labels = ["1", "2"]\n'
        '[benchmark.pairs.columns]\nid = "id"\ninstruction = "q"\noutput_a = "a"\noutput_b = "b"\n'
        '[comparison]\nmode = "pairwise"\npermutations = "both"\n'
        '[[judges]]\nname = "sim"\nbackend = "simulated"\n',
        encoding="utf-8",
    )
    return job


def _csv(path: Path, n: int) -> Path:
    path.write_text(
        "id,q,a,b\n" + "".join(f"r{i},q{i},x{i},y{i}\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setattr(cli.err_console, "width", 10_000)  # no wrapping of the one line


def _dry_run(job: Path):
    res = CliRunner().invoke(cli.app, ["run", str(job), "--dry-run"])
    return res.exit_code, res.output.strip()


# --- rows -------------------------------------------------------------------------------


def test_a_csv_over_the_row_limit_is_refused_in_one_line_at_plan_time(tmp_path):
    job = _job(tmp_path, _csv(tmp_path / "p.csv", 11), TEMPLATE, "max_rows = 10\n")
    code, out = _dry_run(job)
    assert code == 2 and "\n" not in out, out
    assert "rows or more, over the limit of 10 ([benchmark.pairs] max_rows)" in out
    ok = _job(tmp_path, _csv(tmp_path / "p.csv", 10), TEMPLATE, "max_rows = 10\n")
    assert _dry_run(ok)[0] == 0


def test_the_default_row_limit_applies_without_a_setting(tmp_path):
    with pytest.raises(
        ConfigError,
        match=rf"over the limit of {MAX_ROWS:,} \(\[benchmark.pairs\] max_rows\)",
    ):
        read_source(str(_csv(tmp_path / "p.csv", MAX_ROWS + 1)), None)


def test_json_lines_are_counted_before_they_are_parsed(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text("".join(f'{{"id": "{i}"}}\n' for i in range(6)), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"^pairs data .*: 6 rows or more, over the limit of 5"
    ):
        read_source(str(p), None, max_rows=5)


# --- Parquet decoding ---------------------------------------------------------------------


def _bomb(path: Path, rows: int, width: int) -> Path:
    """A Parquet file whose column ``b`` holds one ``width``-character string on every row,
    dictionary-encoded: a few KB on disk, ``rows * width`` bytes decoded."""
    text = pa.array(["y" * width])
    idx = pa.array([0] * rows, pa.int32())
    table = pa.table({
        "id": pa.array([f"r{i}" for i in range(rows)]),
        "q": pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["q"])),
        "a": pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x"])),
        "b": pa.DictionaryArray.from_arrays(idx, text),
    })  # fmt: skip
    pq.write_table(table, path, compression="zstd")
    return path


def test_a_small_parquet_that_decodes_past_the_limit_is_refused_before_decoding(
    tmp_path,
):
    p = _bomb(tmp_path / "bomb.parquet", rows=40_000, width=60_000)  # 2.4 GB decoded
    assert p.stat().st_size < 200_000
    with pytest.raises(
        ConfigError,
        match=rf"^pairs data '.*bomb.parquet': 2,40\d,\d{{3}},\d{{3}} bytes decoded, over the limit of {MAX_BYTES:,} "
        r"\(\[benchmark.pairs\] max_bytes\); refused$",
    ):
        read_source(str(p), None)


def test_parquet_limits_are_settings_and_a_file_within_them_reads(tmp_path):
    p = _bomb(tmp_path / "b.parquet", rows=100, width=1000)
    job = _job(tmp_path, p, TEMPLATE, "max_bytes = 50000\n")
    code, out = _dry_run(job)
    assert (
        code == 2
        and "\n" not in out
        and "bytes decoded, over the limit of 50,000" in out
    ), out
    df, _ = read_source(str(p), None, max_bytes=200_000)
    assert df.shape == (100, 4) and df["b"].to_list() == ["y" * 1000] * 100
    with pytest.raises(ConfigError, match="100 rows or more, over the limit of 99"):
        read_source(str(p), None, max_rows=99)


# --- a saved Hugging Face dataset -----------------------------------------------------------


# --- JSON nesting (issue 34, item 7: one mechanism for pairs and logs) -------------------


def _depth(value) -> int:
    """The nesting of a decoded JSON value, by recursion (the reference)."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 24])
def test_the_nesting_scan_is_exact_wherever_its_blocks_end(monkeypatch, block):
    """Brackets, quotes and backslashes inside strings do not count, whatever block ends
    inside an escape or a string: checked against the decoded value on random JSON."""
    import random

    from voirdire import bounds

    monkeypatch.setattr(bounds, "BLOCK", block)
    rnd = random.Random(block)
    texts = ['a"]]\\', "\\\\", "[[{", '\\"[', 'x\\\\"', "}", "é]"]

    def draw(d):
        if d == 0 or rnd.random() < 0.2:
            return rnd.choice([*texts, 1, None, 2.5])
        if rnd.random() < 0.5:
            return [draw(d - 1) for _ in range(rnd.randint(0, 3))]
        return {rnd.choice(texts): draw(d - 1) for _ in range(rnd.randint(0, 3))}

    for _ in range(100):
        value = draw(rnd.randint(0, 12))
        assert bounds.json_depth(json.dumps(value)) == _depth(value)
        assert bounds.json_depth(json.dumps(value, ensure_ascii=False)) == _depth(value)
    assert bounds.json_depth("[" * 500) == 500  # unclosed: as deep as a decoder goes


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deeply_nested_pairs_json_is_refused_before_it_is_decoded(tmp_path, suffix):
    """Polars gives up at 1,024 levels and the reader then tried Python's decoder, whose
    RecursionError was a traceback."""
    row = {"id": "r1", "q": "q", "a": "x", "b": "y"}
    deep = "[" * 50_000 + "]" * 50_000
    text = json.dumps(row)[:-1] + f', "extra": {deep}}}'
    p = tmp_path / f"p{suffix}"
    p.write_text(
        f"[{text}]" if suffix == ".json" else json.dumps(row) + "\n" + text + "\n"
    )
    where = "line 2: " if suffix == ".jsonl" else ""
    with pytest.raises(
        ConfigError, match=rf"p\{suffix}'?: {where}JSON nested more than 100 levels"
    ):
        read_source(str(p), None)


def test_a_received_job_record_nested_deep_is_one_line(tmp_path):
    from voirdire.layout import read_job_record

    (tmp_path / "job.json").write_text('{"job": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match="JSON nested more than 100 levels"):
        read_job_record(tmp_path)


def _saved(tmp_path: Path) -> Path:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"id": ["r1"], "q": ["q"], "a": ["x"], "b": ["y"]})
    ds.save_to_disk(str(tmp_path / "ds"))
    return tmp_path / "ds"


def test_a_saved_dataset_naming_a_file_outside_its_folder_is_refused(tmp_path):
    d = _saved(tmp_path)
    arrow = next(d.glob("*.arrow"))
    shutil.move(arrow, tmp_path / "elsewhere.arrow")
    state = json.loads((d / "state.json").read_text())
    state["_data_files"] = [{"filename": "../elsewhere.arrow"}]
    (d / "state.json").write_text(json.dumps(state))
    with pytest.raises(
        ConfigError,
        match=r"the data file '\.\./elsewhere\.arrow' lies outside the dataset folder; refused$",
    ):
        read_source(str(d), None)


def test_a_saved_dataset_with_a_link_out_of_its_folder_is_refused(tmp_path):
    d = _saved(tmp_path)
    arrow = next(d.glob("*.arrow"))
    shutil.move(arrow, tmp_path / "elsewhere.arrow")
    arrow.symlink_to(tmp_path / "elsewhere.arrow")
    with pytest.raises(
        ConfigError, match=r"is a link to outside the dataset folder; refused$"
    ):
        read_source(str(d), None)
    arrow.unlink()
    shutil.move(tmp_path / "elsewhere.arrow", arrow)
    df, _ = read_source(str(d), None)  # the same dataset, in its folder, reads
    assert df["q"].to_list() == ["q"]


def test_a_folder_of_data_files_with_a_link_out_of_it_is_refused(tmp_path):
    pytest.importorskip("datasets")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "pairs.csv").symlink_to(_csv(tmp_path / "outside.csv", 2))
    with pytest.raises(
        ConfigError,
        match=r"'pairs.csv' is a link to outside the dataset folder; refused$",
    ):
        read_source(str(tmp_path / "folder"), None)


# --- templates ------------------------------------------------------------------------------


def test_center_999999999_is_refused_at_plan_time_in_one_line(tmp_path):
    job = _job(
        tmp_path,
        _csv(tmp_path / "p.csv", 2),
        "{{ instruction|center(999999999) }} [[1]]",
    )
    code, out = _dry_run(job)
    assert code == 2 and "\n" not in out, out
    assert (
        "fails on" in out
        and "SecurityError: a width over 1,000,000 is not allowed" in out
    )


@pytest.mark.parametrize(
    "source, says",
    [
        ("{{ instruction|center(999999999) }}", "a width over"),
        ("{{ instruction.ljust(10**9) }}", "a width over"),
        ("{{ instruction|indent(999999999) }}", "an indent over"),
        ("{{ '%999999999s'|format(instruction) }}", "a format width over"),
        ("{{ '%*s'|format(999999999, instruction) }}", "a format width over"),
        ("{{ '%999999999s' % instruction }}", "a format width over"),
        ("{{ '{:999999999}'.format(instruction) }}", "a format width over"),
        ("{{ '{:{w}}'.format(instruction, w=999999999) }}", "a format width over"),
        ("{{ '{x:{w}}'.format_map({'x': 1, 'w': 999999999}) }}", "a format width over"),
        ("{{ ('a' * 1000000)|replace('a', 'bb') }}", "a replaced text over"),
        ("{{ ([('x' * 1000000)] * 100)|join }}", "a joined text over"),
        ("{% set a = 'x' * 1000000 %}{% set b = a ~ a %}{{ b }}", "a concatenation (~) over"),
        ("{% set a = 'x' * 600000 %}{{ a + a }}", "a concatenation over"),
        ("{{ ('&' * 900000)|e|e }}", "the result of the filter 'e' over"),
        ("{{ [1, 2]|tojson(indent=999999999) }}", "a tojson indent over"),
        ("{{ range(3)|batch(999999999, 'x')|list }}", "a batch count over"),
        ("{{ ('\t' * 1000).expandtabs(999999) }}", "an expanded text over"),
        ("{{ instruction|wordwrap(1, wrapstring='z' * 100000) }}", "a wrapped text over"),
        ("{% for i in range(100000) %}{{ 'y' * 20 }}{% endfor %}", "the prompt is over 1,000,000 characters"),
    ],
)  # fmt: skip
def test_template_steps_that_build_past_the_bound_are_refused(source, says):
    t = PairTemplate("t", source, "x", ("1", "2"))
    with pytest.raises(
        ConfigError,
        match="SecurityError: " + says.replace("(", r"\(").replace(")", r"\)"),
    ):
        t.render({"instruction": "hello world " * 5, "output_1": "X", "output_2": "Y"})


def test_ordinary_filters_and_formats_still_render():
    src = "{{ instruction|center(30) }}|{{ '%5s' % 1 }}|{{ '{:>4}'.format(2) }}|{{ ['a', 'b']|join(', ') }}|{{ 'a' ~ 1 }}|{{ 7 % 3 }}|{{ instruction|indent(2) }}|{{ [1]|tojson(indent=2) }}"
    _, user = PairTemplate("t", src, "x", ("1", "2")).render({"instruction": "hi"})
    assert user == f"{'hi':^30}|    1|   2|a, b|a1|1|hi|[\n  1\n]"


def test_the_prompt_bound_is_a_setting(tmp_path):
    job = _job(
        tmp_path, _csv(tmp_path / "p.csv", 3), TEMPLATE, "max_prompt_chars = 20\n"
    )
    code, out = _dry_run(job)
    assert code == 2 and "\n" not in out, out
    assert "the user prompt is over 20 characters (max_prompt_chars)" in out
    job = _job(
        tmp_path, _csv(tmp_path / "p.csv", 3), TEMPLATE, "max_prompt_chars = 200\n"
    )
    assert _dry_run(job)[0] == 0
