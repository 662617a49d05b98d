"""Bootstrap clusters a benchmark declares: PandaLM's items are drawn by question, not one by one."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import voirdire
from tests.pandalm_synthetic import MODELS, synthetic_items, write_release
from voirdire.analysis.biases.perturbed import control_rows
from voirdire.analysis.outputs import compute_dir
from voirdire.analysis.position.clusters import benchmark_clusters
from voirdire.analysis.position.gold import gold_judges
from voirdire.analysis.position.uncertainty import bootstrap_ci
from voirdire.analysis.ranking.boards import fit_boards
from voirdire.analysis.ranking.order_views import COMPARISON_SCHEMA
from voirdire.analysis.ranking.rank import rank_judgments
from voirdire.analysis.stats.bootstrap import cluster_bootstrap, in_clusters
from voirdire.benchmarks.pandalm import PandaLM
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.benchmarks.releases.catalogue import fetch_release

QUESTIONS = 12


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """A fetched PandaLM data directory: 12 synthetic questions, 10 items (pairings) each."""
    where = tmp_path_factory.mktemp("clusters")
    man = write_release(where / "release", synthetic_items(QUESTIONS))
    return fetch_release(
        where / "data",
        release="pandalm",
        source=where / "release",
        manifest=man,
        progress=False,
    ).dest


def test_pandalm_declares_its_questions_and_others_declare_none(data):
    c = PandaLM.clusters(data)
    pairs = pl.read_parquet(data / "pairs.parquet")
    assert (
        c.height == pairs.height == 10 * QUESTIONS
        and c["cluster"].n_unique() == QUESTIONS
    )
    # items share a cluster exactly when they share the instruction and input
    key = pl.concat_str("instruction", "input", separator="\x00")
    j = pairs.select(question_id="id", key=key).join(c, on="question_id")
    assert (
        j.group_by("cluster").agg(pl.col("key").n_unique())["key"].to_list()
        == [1] * QUESTIONS
    )
    assert (
        BENCHMARKS.find("MTBench").clusters() is None
        and benchmark_clusters(["MTBench", "my-own-pairs"]) is None
    )


def test_the_bootstrap_draws_clusters_not_items(data):
    """Each replicate gives every item of a question the same weight (the question's count)
    and the counts of the questions sum to their number: the draw is of 12 questions, not
    of 120 items."""
    clusters = benchmark_clusters(["PandaLM"], {"PandaLM": str(data)})
    rows = clusters.select(
        "benchmark", "question_id", item="question_id", one=pl.lit(1.0)
    )
    seen = []
    cluster_bootstrap(in_clusters(rows, clusters), ["one"], lambda s: seen.append(s["one"]) or {}, cells=["item"],
                      replicates=300)  # fmt: skip
    w = seen[1]  # (B, items): the weight of each item in each replicate
    of = dict(clusters.select("question_id", "cluster").iter_rows())
    items = rows["item"].to_list()
    first = {}
    for i, q in enumerate(items):
        first.setdefault(of[q], i)
    for i, q in enumerate(items):
        assert np.array_equal(w[:, i], w[:, first[of[q]]])
    assert np.all(w[:, list(first.values())].sum(axis=1) == QUESTIONS)
    assert w.std() > 0  # the replicates do vary


def _comps(copies: int, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A round robin of four models on 40 questions with random outcomes; each question's
    comparisons repeated ``copies`` times as items ``q017-0``, ``q017-1`` ... (perfectly
    correlated items of one question), and the items' clusters."""
    rng = np.random.default_rng(seed)
    rows, clusters = [], []
    for q in range(40):
        outcome = {
            p: rng.choice([1.0, 0.0, 0.5], p=[0.45, 0.4, 0.15])
            for p in combinations("wxyz", 2)
        }
        for i in range(copies):
            item = f"q{q:03d}-{i}" if copies > 1 else f"q{q:03d}"
            clusters.append(("B", item, f"q{q:03d}"))
            rows += [
                (
                    "B",
                    "j",
                    "single",
                    "pooled",
                    item,
                    a,
                    b,
                    float(s == 1.0),
                    float(s == 0.5),
                )
                for (a, b), s in outcome.items()
            ]
    comps = pl.DataFrame(rows, schema=COMPARISON_SCHEMA, orient="row")
    return comps, pl.DataFrame(
        clusters, schema=["benchmark", "question_id", "cluster"], orient="row"
    )


def test_copies_of_a_question_give_the_interval_of_the_question_itself():
    """By construction: k identical items per question, drawn as one cluster, scale every
    count of a replicate by k, which leaves the Bradley–Terry fit unchanged; so the
    intervals equal those of one item per question. Drawn item by item they are narrower."""
    one, _ = _comps(1)
    three, clusters = _comps(3)
    kw = dict(anchor="w", replicates=300)
    base = fit_boards(one, **kw).table.sort("model")
    clustered = fit_boards(three, clusters=clusters, **kw).table.sort("model")
    items = fit_boards(three, **kw).table.sort("model")
    for c in ("rating", "lo", "hi"):
        assert np.allclose(
            clustered[c].to_numpy(),
            base[c].to_numpy(),
            rtol=0,
            atol=1e-6,
            equal_nan=True,
        )
    width = lambda t: (t["hi"] - t["lo"]).to_numpy()[1:]  # noqa: E731 - the anchor's is NaN
    assert np.all(width(items) < 0.8 * width(base))  # about 1/sqrt(3) as wide


def test_rank_on_pandalm_draws_its_questions(data, tmp_path, ray_local):
    """End to end: ``voirdire.rank`` on a PandaLM job gives the gold board the intervals
    of the question-level bootstrap, wider than the item-level one."""
    qualities = {m: q for m, q in zip(MODELS, [-0.7, -1.3, 0.0, -1.0, -0.6])}
    res = voirdire.run({
        "name": "pandalm-clusters", "output_dir": str(tmp_path / "o"),
        "benchmark": {"name": "pandalm", "data_dir": str(data)},
        "comparison": {"mode": "pairwise", "permutations": "both"},
        "judges": [{"name": "sim", "backend": "simulated", "primacy": 0.6, "qualities": qualities}],
    }, show_progress=False)  # fmt: skip
    ranking, _ = voirdire.rank(
        [tmp_path / "o"], out=tmp_path / "r", anchor="llama-7b", replicates=200
    )
    gold = lambda t: (  # noqa: E731
        t.filter(pl.col("judge") == "gold").sort("model").select("model", "lo", "hi")
    )
    want = rank_judgments(res.judgments, anchor="llama-7b", replicates=200,
                          clusters=benchmark_clusters(["PandaLM"], {"PandaLM": str(data)}))  # fmt: skip
    by_item = rank_judgments(
        res.judgments, anchor="llama-7b", replicates=200, clusters=pl.DataFrame()
    )
    assert gold(ranking.leaderboard).equals(gold(want.leaderboard))
    assert not gold(ranking.leaderboard).equals(gold(by_item.leaderboard))


def test_per_judge_intervals_draw_the_clusters(data, tmp_path, ray_local):
    """PC/PF and gold accuracy: three copies of every item, each copy drawn with its
    original item as one cluster, give the intervals of the original items (every count of
    a replicate times 3; the figures are ratios of sums); drawn copy by copy they differ (RS,
    a mean over queries asked twice, is left out: copies repeat a query). A
    PandaLM directory's results carry the questions as clusters."""
    res = voirdire.run({
        "name": "pandalm-per-judge", "output_dir": str(tmp_path / "o"),
        "benchmark": {"name": "pandalm", "data_dir": str(data)},
        "comparison": {"mode": "pairwise", "permutations": "both"},
        "judges": [{"name": "sim", "backend": "simulated", "primacy": 0.7, "tie_rate": 0.1}],
    }, show_progress=False)  # fmt: skip
    d = compute_dir(tmp_path / "o")
    assert d.clusters is not None and d.clusters["cluster"].n_unique() == QUESTIONS
    j = control_rows(res.judgments)
    copies = pl.concat(
        [j.with_columns(question_id=pl.col("question_id") + f"-{i}") for i in range(3)]
    )
    same = copies.select(
        "benchmark",
        "question_id",
        cluster=pl.col("question_id").str.replace(r"-\d$", ""),
    )

    def pc_pf(x, **k):
        return bootstrap_ci(x, replicates=200, **k).filter(
            pl.col("metric").is_in(["pc", "pf"])
        )

    for f in (pc_pf, lambda x, **k: gold_judges(x, replicates=200, **k)):
        base, clustered, by_copy = f(j), f(copies, clusters=same), f(copies)
        num = [c for c, t in base.schema.items() if t == pl.Float64]
        assert np.allclose(
            clustered.select(num).to_numpy(),
            base.select(num).to_numpy(),
            atol=1e-12,
            equal_nan=True,
        )
        assert not np.allclose(
            by_copy.select(num).to_numpy(),
            base.select(num).to_numpy(),
            atol=1e-12,
            equal_nan=True,
        )
    # the directory's accuracy interval is the question-level one
    by_question = gold_judges(j, replicates=1000, clusters=d.clusters)
    assert (
        d.judge_metrics["accuracy_lo"].to_list() == by_question["accuracy_lo"].to_list()
    )
    assert (
        d.judge_metrics["accuracy_lo"].to_list()
        != gold_judges(j, replicates=1000)["accuracy_lo"].to_list()
    )
