"""`voirdire report` on small real jobs: MT-Bench replays of the release's judges (a
position-bias job and a repetition job) run through Ray, then the deep analysis, the
figures and the self-contained HTML report; token lengths with a tokenizer built here.
Skipped when the benchmark data is missing."""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl
import pytest

import voirdire

pytestmark = pytest.mark.ray

PB_JUDGES = ["gemini-pro", "gpt-3.5-turbo-1106", "gpt-4-0613"]
REP_JUDGES = ["gemini-pro", "gpt-4-0613", "claude-3-haiku-20240307"]


def _job(
    tmp: Path,
    data_dir: Path,
    name: str,
    sample: str,
    reps: int,
    judges: list[str],
    study: str,
    tokenizer: str | None,
):
    from voirdire.engine.spec import parse_job

    spec = {
        "name": name,
        "output_dir": str(tmp / name),
        "benchmark": {
            "name": "mtbench",
            "data_dir": str(data_dir),
            "sample": sample,
            "tasks": ["writing", "math", "coding"],
        },
        "comparison": {
            "mode": "pairwise",
            "option_mode": 3,
            "permutations": "both",
            "repetitions": reps,
        },
        "judges": [
            {"name": j, "backend": "replay", "recorded": j, "study": study}
            for j in judges
        ],
    }
    if sample == "full":
        spec["benchmark"]["candidates"] = [
            "gpt-4",
            "alpaca-13b",
            "llama-13b",
            "claude-v1",
        ]
    if tokenizer:
        spec["analysis"] = {"tokenizer": tokenizer}
    return parse_job(spec, name)


def _tokenizer(path: Path) -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(
        path
    )
    return str(path)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory, data_dir, ray_local):

    tmp = tmp_path_factory.mktemp("report")
    tok = _tokenizer(tmp / "tokenizer")
    pb = _job(tmp, data_dir, "mt-pb", "full", 1, PB_JUDGES, "position_bias", tok)
    rep = _job(tmp, data_dir, "mt-rep", "repetition", 3, REP_JUDGES, "repetition", None)
    for j in (pb, rep):
        voirdire.run(j)
    return tmp, Path(pb.output_dir), Path(rep.output_dir), tok


def test_report_html_has_every_part(jobs):
    from typer.testing import CliRunner

    from voirdire.cli import app

    tmp, pb, rep, _ = jobs
    out = tmp / "combined"
    attrs = tmp / "attrs.csv"
    pl.DataFrame({"judge": PB_JUDGES, "context_k": [32.0, 16.0, 8.0]}).write_csv(attrs)
    res = CliRunner().invoke(
        app,
        [
            "report",
            str(pb),
            str(rep),
            "--out",
            str(out),
            "--replicates",
            "100",
            "--judge-attributes",
            str(attrs),
        ],
    )
    assert res.exit_code == 0, res.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert (out / "report.md").is_file()
    # self-contained: figures inline (Vega-Lite specifications, Vega once), no external resource
    assert not re.search(r"""(src|href)=["']https?:""", page)
    assert page.count("window.vegaEmbed=") == 1
    n_vega = page.count('<div class="vega"')
    # per benchmark: radar, PF bars, PC vs PF, vs win rate, RS; per directory: agreement
    # heatmaps and the disagreement histogram
    assert n_vega == 5 + 2 * 2
    assert 'src="data:image/png;base64,' not in page
    # the answer first: the summary opens the page, its table in metrics/choice.csv
    assert page.index("Which judge to trust first") < page.index('id="judges"')
    choice = pl.read_csv(out / "metrics" / "choice.csv")
    assert set(choice.get_column("judge")) == set(PB_JUDGES) | set(REP_JUDGES)
    assert "Which judge to trust first: MTBench" in res.output
    # like with like (issue 40): the judges of the two jobs compared on the units they share
    assert "(question, pair, order) units" in res.output
    assert "(question, pair, order) units" in page
    assert {"board", "shared", "n_shared", "n_own", "tied"} <= set(choice.columns)
    for name in (
        "pc_radar_MTBench",
        "pf_bars_MTBench",
        "pc_vs_pf_MTBench",
        "vs_win_rate_MTBench",
        "rs_MTBench",
        "agreement_mt-pb",
        "disagreement_mt-rep",
    ):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    for heading in (
        "Jobs, settings and counts",
        "Factor regression",
        "Agreement between judges",
        "How many queries are enough?",
        "Fleiss",
    ):
        assert heading in page
    assert "<td>&lt;none&gt;</td>" in page  # a drop1 table
    # the panel: PC/PF from the position-bias job, RS from the repetition job
    panel = pl.read_csv(out / "metrics" / "panel.csv")
    g4 = panel.filter(pl.col("judge") == "gpt-4-0613").row(0, named=True)
    assert g4["source"] == "mt-pb" and g4["rs_source"] == "mt-rep"
    assert g4["pc_lo"] <= g4["pc"] <= g4["pc_hi"]
    haiku = panel.filter(pl.col("judge") == "claude-3-haiku-20240307").row(
        0, named=True
    )
    assert haiku["source"] == "mt-rep"  # only judged in the repetition job
    flagged = panel.filter(~pl.col("readable"))
    for r in flagged.iter_rows(named=True):
        assert html.escape(r["flag"]) in page
        assert (r["rs"] is not None and r["rs"] < 0.9) or r["error_rate"] > 0.05
    # regression tables as CSV, the attribute offered as a term
    d1 = pl.read_csv(out / "metrics" / "regression_drop1.csv")
    assert set(d1.get_column("response")) == {"pc", "pf"}
    path = pl.read_csv(out / "metrics" / "regression_path_MTBench_pc.csv")
    assert path.height >= 1
    for f in (
        "agreement_mt-pb",
        "fleiss_mt-rep",
        "bootstrap_mt-pb",
        "bootstrap_task_mt-pb",
        "sign_test_mt-pb",
        "power",
    ):
        assert (out / "metrics" / f"{f}.csv").is_file()


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: relative path -> (content, modification time in ns)."""
    return {
        str(f.relative_to(root)): (f.read_bytes(), f.stat().st_mtime_ns)
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


def _chmod_tree(root: Path, file_mode: int, dir_mode: int) -> None:
    for f in root.rglob("*"):
        f.chmod(dir_mode if f.is_dir() else file_mode)
    root.chmod(dir_mode)


def test_report_out_writes_only_under_out(jobs):
    """`voirdire report DIR… --out R` on read-only inputs: it works, and the inputs are
    byte-identical afterwards (no refreshed metrics/*.csv, judgments.parquet or report.md).
    The comparison of contents and modification times also holds where the permission
    bits do not bind (a root user)."""
    from typer.testing import CliRunner

    from voirdire.cli import app

    tmp, pb, rep, _ = jobs
    before = {d: _snapshot(d) for d in (pb, rep)}
    out = tmp / "read-only-inputs-report"
    for d in (pb, rep):
        _chmod_tree(d, 0o444, 0o555)
    try:
        res = CliRunner().invoke(
            app, ["report", str(pb), str(rep), "--out", str(out), "--replicates", "20"]
        )
    finally:
        for d in (pb, rep):
            _chmod_tree(d, 0o644, 0o755)
    assert res.exit_code == 0, res.output
    assert (out / "report.html").is_file() and (out / "metrics" / "panel.csv").is_file()
    for d in (pb, rep):
        assert _snapshot(d) == before[d], f"{d.name} changed"


def test_the_files_are_the_same_bytes_when_computed_twice(jobs):
    """A report's CSV tables, and a directory's own, are byte for byte the same from one
    computation to the next (Fleiss' kappa and the per-task spreads changed in their last
    digit with group_by's order)."""
    import shutil

    tmp, pb, rep, _ = jobs
    outs = [tmp / f"twice-{k}" for k in (1, 2)]
    for o in outs:
        voirdire.report([pb, rep], out=o, replicates=20, figures=())
    names = sorted(p.name for p in (outs[0] / "metrics").glob("*.csv"))
    assert names == sorted(p.name for p in (outs[1] / "metrics").glob("*.csv"))
    assert "fleiss_mt-rep.csv" in names and "judge_task.csv" in names
    for n in names:
        assert (outs[0] / "metrics" / n).read_bytes() == (
            outs[1] / "metrics" / n
        ).read_bytes(), n
    copy = tmp / "twice-dir"
    shutil.copytree(pb, copy)
    files = []
    for _ in range(2):
        voirdire.analyze(copy)
        files.append({p.name: p.read_bytes() for p in (copy / "metrics").glob("*.csv")})
    assert files[0] == files[1] and "judge_metrics.csv" in files[0]


def test_token_lengths_counted_with_the_jobs_tokenizer(jobs, data_dir):
    from voirdire.analysis.position.lengths import load_tokenizer, query_token_lengths
    from voirdire.benchmarks.registry import load_benchmark

    _, pb, _, tok = jobs
    judgments = pl.read_parquet(pb / "judgments.parquet")
    bench = load_benchmark("mtbench", str(data_dir), sample="full")
    q = query_token_lengths(judgments.head(40), bench, load_tokenizer(tok))
    words = re.compile(r"\w+|[^\w\s]+")  # what the Whitespace pre-tokenizer splits on
    for qid, shown, om, pt, ot in q.head(5).iter_rows():
        assert pt == len(words.findall(bench.build_prompt(qid, tuple(shown), om)))
        assert ot == sum(
            len(words.findall(t)) for m in shown for t in bench.answers(qid, m)
        )
    # a single-directory report picks the tokenizer up from the job and regresses on it
    from voirdire.analysis.build import build_report

    build_report([pb], replicates=50)
    cells = pl.read_csv(pb / "metrics" / "regression_cells.csv")
    assert cells.get_column("prompt_tokens").min() > 0
    assert (pb / "report.html").is_file() and (pb / "report.md").is_file()


def test_power_table_of_a_study_with_low_pc_leaves_out_what_no_judge_reaches():
    """A list-wise study's median PC (0.3 on the bundled p = 3 example) is one no simulated
    pairwise judge reaches with PF 0.05: the report used to stop there ('no judge has
    PC=0.3 and PF=0.05'); the power table now leaves such rows out."""
    from voirdire.analysis.study import _power

    low = _power(
        pl.DataFrame({"pc": [0.2, 0.3, 0.4], "readable": [True] * 3}), replicates=20
    )
    assert low.height == 0 or set(low.get_column("pc")) == {0.3}
    usual = _power(pl.DataFrame({"pc": [0.7], "readable": [True]}), replicates=20)
    assert set(usual.get_column("pf")) == {0.05, 0.1, 0.2, 0.3}
