"""The agreement figures are one per (directory, benchmark), keyed by the directory's place
in the study and the benchmark (``analysis/report/agreement.py: agreement_key``): a
directory judged on two benchmarks keeps both heatmaps, and two directories of one folder
name keep one each, with their CSVs and static files apart."""

from __future__ import annotations

import html
import json
import re

import polars as pl
import pytest

from tests.study_simulate import simulated_study_log
from voirdire.analysis.report.agreement import agreement_key
from voirdire.analysis.report.coverage import drawn_judges

COLUMNS = ("instance", "model_a", "model_b", "first", "verdict", "judge", "label", "task", "cluster")  # fmt: skip
_FIGURE = re.compile(
    r'<div class="vega" id="fig\d+" data-key="([^"]*)"></div>'
    r'<script type="application/json" id="fig\d+-spec">(.*?)</script>',
    re.S,
)


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Two audited directories both named ``audit`` (under ``x/`` and ``y/``), of other
    judges: x three, y two."""
    import voirdire

    tmp = tmp_path_factory.mktemp("agreement_keys")
    log = simulated_study_log(5, questions=6)
    names = sorted(log.get_column("judge").unique().to_list())
    out = []
    for x, mine in (("x", names[:3]), ("y", names[3:])):
        (tmp / x).mkdir()
        log.filter(pl.col("judge").is_in(mine)).write_parquet(tmp / x / "log.parquet")
        done = voirdire.audit(
            [tmp / x / "log.parquet"], "logtable", out=tmp / x / "audit",
            log={"columns": {c: c for c in COLUMNS}},
        )  # fmt: skip
        out.append((done.output_dir, mine))
    return out


def test_two_directories_of_one_folder_name_keep_a_figure_each(twins, tmp_path):
    import voirdire

    page = voirdire.report([p for p, _ in twins], out=tmp_path / "rep", replicates=20)
    text = page.read_text()
    figs = {k: json.loads(s.replace("<\\/", "</")) for k, s in _FIGURE.findall(text)}
    for i, (path, judges) in enumerate(twins):
        (key,) = [k for k in figs if k.startswith(f"agreement:{i}:")]
        assert drawn_judges(figs[key]) == set(judges), key  # not the other's
        assert any(k.startswith(f"disagreement:{i}:") for k in figs)
        # the page tells them apart by path; their files are two
        assert f"<h3>{html.escape(str(path))}</h3>" in text
        m = tmp_path / "rep" / "metrics"
        got = pl.read_csv(m / f"agreement_audit_{i}.csv")
        assert set(got.get_column("judge_a")) == set(judges)
        assert (tmp_path / "rep" / "figures" / f"agreement_audit_{i}.png").is_file()
        assert f"agreement_audit_{i}.csv" in text
    assert not (tmp_path / "rep" / "metrics" / "agreement_audit.csv").exists()


def test_a_directory_judged_on_two_benchmarks_keeps_both_heatmaps(twins):
    from voirdire.analysis.biases.perturbed import control_rows
    from voirdire.analysis.choice import choose_judges
    from voirdire.analysis.report.agreement import agreement_view
    from voirdire.analysis.report.study_charts import study_charts
    from voirdire.analysis.report.vega import spec_of
    from voirdire.analysis.stats import agreement as agr
    from voirdire.analysis.study import analyze_study

    path, judges = twins[0]
    study = analyze_study([path], replicates=20, power_replicates=10)
    d = study.dirs[0]
    (bench,) = d.judgments.get_column("benchmark").unique().to_list()
    # the same directory's first two judges judged again on a second benchmark
    other = d.judgments.filter(pl.col("judge").is_in(judges[:2]))
    d.judgments = pl.concat(
        [d.judgments, other.with_columns(benchmark=pl.lit("Other"))]
    )
    position = control_rows(d.judgments)
    ch = agr.choices(position)
    per_query = agr.query_disagreement(position, ch=ch)
    d.agreement = agr.agreement_matrix(position, ch=ch)
    d.fleiss = agr.fleiss_panel(position, ch=ch)
    d.disagreement = agr.disagreement_histogram(per_query)
    d.majority = agr.majority_share(per_query)
    study.panel = pl.concat(
        [
            study.panel,
            study.panel.filter(pl.col("judge").is_in(judges[:2])).with_columns(
                benchmark=pl.lit("Other")
            ),
        ]
    )
    charts = study_charts(study, choose_judges(study.panel))
    want = {b: set(judges) if b == bench else set(judges[:2]) for b in (bench, "Other")}
    for b, mine in want.items():
        spec = spec_of(charts[agreement_key("agreement", 0, b)])
        assert drawn_judges(spec) == mine, b
        assert agreement_key("disagreement", 0, b) in charts
    specs = {k: spec_of(c) for k, c in charts.items()}
    view = agreement_view(study, specs, [0], ["agreement_audit.csv"])
    assert [v["name"] for v in view] == [f"audit: {b}" for b in sorted(want)]
    for v, b in zip(view, sorted(want)):
        assert drawn_judges(v["heatmaps"]["spec"]) == want[b]
        assert v["n_pairs"] == len(want[b]) * (len(want[b]) - 1) // 2
