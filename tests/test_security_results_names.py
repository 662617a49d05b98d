"""Names and cells from a results directory are data (``docs/security.md``): the analysis's
own names are refused as judge names, a directory given twice is refused, long labels and
``$`` make valid file names and figures, string cells a spreadsheet would run as formulas
are written as text, and raw parts with extra or retyped columns are ignored or named."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import voirdire
from voirdire.analysis.report.files import NAME_PART, file_part, write_csv
from voirdire.analysis.report.plotting import _save
from voirdire.core import ConfigError
from voirdire.engine.judge_names import check_judge_name
from voirdire.engine.spec import parse_job
from voirdire.engine.store import ResultStore
from voirdire.ownership import distinct_dirs


@pytest.mark.parametrize("name", ["gold", "people", "panel-2", "panel-10"])
def test_the_analysis_own_names_are_refused(name):
    with pytest.raises(ConfigError, match="voirdire's own") as err:
        check_judge_name(name)
    assert "\n" not in str(err.value)
    check_judge_name("people-judge")  # only the exact names
    check_judge_name("gold-judge")
    check_judge_name("panel")


def test_a_directory_given_twice_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(ConfigError, match="given twice"):
        distinct_dirs([tmp_path / "a", tmp_path / "." / "a"])
    with pytest.raises(ConfigError, match="given twice"):
        voirdire.rank([tmp_path / "a", tmp_path / "a"], out=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_long_labels_make_short_distinct_file_names():
    a, b = "b" * 250 + "1", "b" * 250 + "2"
    assert len(file_part(a)) == NAME_PART and file_part(a) != file_part(b)
    assert file_part("gpt-4/x y") == "gpt-4_x_y"  # short names as before
    assert file_part("..") == "_"


def test_dollar_labels_are_drawn_literally(tmp_path):
    fig, ax = plt.subplots()
    ax.bar([r"judge $\foo$ x", "b"], [1, 2])
    ax.set_title(r"judge $\foo$ x")
    assert _save(fig, tmp_path / "f.png").stat().st_size > 0


def test_formula_cells_are_written_as_text(tmp_path):
    df = pl.DataFrame(
        {
            "judge": ["=HYPERLINK(1)", "+1", "-2", "@SUM(A1)", "ok", "a=b"],
            "pf": [-0.5, 0.25, -1.0, 0.0, 1.0, -0.125],
            "n": [-3, 1, 2, 3, 4, 5],
        }
    )
    lines = write_csv(df, tmp_path / "x.csv").read_text().splitlines()
    assert lines[1:] == [
        "'=HYPERLINK(1),-0.5,-3",
        "'+1,0.25,1",
        "'-2,-1.0,2",
        "'@SUM(A1),0.0,3",
        "ok,1.0,4",
        "a=b,-0.125,5",
    ]


def _store_with_part(tmp_path: Path, edit) -> Path:
    """An output directory with one raw part, edited by ``edit(table) -> table``."""
    from voirdire.schema import RAW_SCHEMA

    n = 2
    data = {f.name: [None] * n for f in RAW_SCHEMA}
    data.update(
        unit_id=["u1", "u2"], query_id=["q1", "q2"], judge=["j"] * n,
        benchmark=["B"] * n, question_id=["1"] * n, task=["t"] * n,
        instance_id=["i"] * n, candidates=[["a", "b"]] * n, shown=[["a", "b"]] * n,
        permutation=[0, 1], repetition=[1] * n, mode=["pairwise"] * n,
        option_mode=[3] * n, input_chars=[1] * n, output_chars=[1] * n,
        prompt_chars=[1] * n, perturbation=["control"] * n,
        perturbation_kind=["control"] * n, output=["[[A]]"] * n,
    )  # fmt: skip
    d = tmp_path / "raw" / "j"
    d.mkdir(parents=True)
    pq.write_table(
        edit(pa.Table.from_pydict(data, schema=RAW_SCHEMA)), d / "part-1.parquet"
    )
    return tmp_path


def test_extra_raw_column_is_ignored(tmp_path):
    out = _store_with_part(
        tmp_path, lambda t: t.append_column("evil", pa.array(["=1"] * t.num_rows))
    )
    raw = ResultStore(out).read_raw()
    assert raw.height == 2 and "evil" not in raw.columns


def test_retyped_raw_column_is_one_line(tmp_path):
    def retype(t):
        i = t.schema.get_field_index("repetition")
        return t.set_column(i, "repetition", pa.array(["1", "1"]))

    out = _store_with_part(tmp_path, retype)
    with pytest.raises(ConfigError, match="column 'repetition' has type string") as err:
        ResultStore(out).read_raw()
    assert "\n" not in str(err.value) and "part-1.parquet" in str(err.value)


@pytest.mark.ray
def test_report_and_rank_of_odd_names(tmp_path, data_dir, ray_local):
    """A judge named with ``$`` and one starting with ``=``: report and rank finish, the
    figures exist, and the CSV cells are text."""
    odd, formula = r"judge $\foo$ x", "=cmd|' /C calc'!A0"
    job = parse_job(
        {
            "name": "odd",
            "output_dir": str(tmp_path / "out"),
            "benchmark": {
                "name": "mtbench",
                "questions": ["81", "111", "82"],
                "candidates": ["alpaca-13b", "gpt-4", "llama-13b"],
            },
            "comparison": {"option_mode": 3, "permutations": "both"},
            "run": {"batch_size": 8, "flush_seconds": 0.05},
            "judges": [
                {"name": odd, "backend": "simulated", "primacy": 0.6, "seed": 1},
                {"name": formula, "backend": "simulated", "primacy": 0.5, "seed": 2},
            ],
        }
    )
    out = voirdire.run(job, show_progress=False).output_dir
    jm = (out / "metrics" / "judge_metrics.csv").read_text()
    assert ",'=cmd" in jm and ",=cmd" not in jm
    html = voirdire.report([out], out=tmp_path / "rep", replicates=20)
    assert html.exists() and any((tmp_path / "rep" / "figures").glob("*.png"))
    _, paths = voirdire.rank([out], out=tmp_path / "rank", replicates=20)
    lb = paths["leaderboard"].read_text()
    assert ",'=cmd" in lb and ",=cmd" not in lb
    assert any(k.startswith(f"figure:MTBench/{odd}") for k in paths)
