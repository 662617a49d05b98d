"""Where the LC v1 formula's instruction difficulty comes from (issue #44 item 3:
``analysis/ranking/release_difficulty.py``, ``benchmarks/logs/alpaca_eval_release.py``):
fitted once on the whole AlpacaEval release the audited logs belong to, a subset's models
get exactly the LC win rate they have in the audit of the whole release; refitted on the
audited models (``--lc-difficulty audited``) they do not; the fit is cached by the hash of
its inputs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import polars as pl
import pytest

from tests.cli import voirdire as voirdire_cli
from voirdire import api
from voirdire.analysis.ranking.release_difficulty import (
    board_difficulty,
    cached_difficulty,
    difficulty_key,
    release_fit_rows,
)
from voirdire.benchmarks.logs.alpaca_eval import AlpacaEval
from voirdire.core import ConfigError

ANN = "weighted_alpaca_eval_gpt4_turbo"
BASE = "gpt4_1106_preview"
MODELS = [f"model-{k}" for k in range(6)]
N_INST = 30
HEADER = (
    ",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float)\n"
)


def _release(root: Path) -> list[Path]:
    """A small AlpacaEval release at its repository paths: every model of :data:`MODELS`
    annotated against the baseline on the same :data:`N_INST` instructions (the preference a
    planted ``σ(b_m + d_i − 0.5 tanh(Δ/400))``, Δ the baseline's minus the model's length),
    and the v1 weights of every model. Returns the annotation files."""
    rng = random.Random(7)
    inst = [f"Instruction {i}: {rng.random():.6f}" for i in range(N_INST)]
    d = [rng.gauss(0, 1.5) for _ in inst]
    base_len = [rng.randint(100, 900) for _ in inst]
    files = []
    for k, m in enumerate(MODELS):
        rows = []
        for i, ins in enumerate(inst):
            lm = rng.randint(100, 900)
            eta = 0.5 * (k - 2.5) + d[i] - 0.5 * math.tanh((base_len[i] - lm) / 400)
            p = min(0.99, max(0.01, 1 / (1 + math.exp(-eta)) + rng.gauss(0, 0.05)))
            rows.append({"instruction": ins, "output_1": "b" * base_len[i], "generator_1": BASE,
                         "dataset": "helpful_base", "output_2": "m" * lm, "generator_2": m,
                         "annotator": ANN, "preference": 1.0 + p})  # fmt: skip
        f = root / "results" / m / ANN / "annotations.json"
        f.parent.mkdir(parents=True)
        f.write_text(json.dumps(rows))
        files.append(f)
    w = root / f"src/alpaca_eval/metrics/weights/{ANN}/length_controlled_v1"
    w.mkdir(parents=True)
    lines = [f"{m},-0.8,{0.6 + 0.1 * k},{-1.0 + 0.4 * k}" for k, m in enumerate(MODELS)]
    (w / f"baseline_{BASE}.csv").write_text(
        HEADER + "\n".join(lines) + f"\n{BASE},0.0,0.0,0.0\n"
    )
    return files


def _lc(tmp_path: Path, files: list[Path], name: str, difficulty: str) -> pl.DataFrame:
    out = tmp_path / f"audit-{name}"
    api.audit([str(f) for f in files], "alpacaeval", out=out, data_dir=tmp_path / f"copy-{name}")  # fmt: skip
    ranking, _ = api.rank([out], out=tmp_path / f"rank-{name}-{difficulty}", replicates=10,
                          style=True, strategies=["single"], lc_difficulty=difficulty)  # fmt: skip
    lc = ranking.length.filter(
        (pl.col("strategy") == "single") & (pl.col("view") == "pooled")
    )
    return lc.select("model", "lc_win_rate", "formula", "difficulty").sort("model")


@pytest.fixture
def lc_cache(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "lc-cache"
    monkeypatch.setenv("VOIRDIRE_LC_CACHE", str(d))
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "log-cache"))
    return d


def test_lc_on_a_subset_equals_lc_on_the_whole_release_for_the_subsets_models(
    tmp_path, lc_cache
):
    files = _release(tmp_path / "repo")
    full = _lc(tmp_path, files, "full", "auto")
    assert full.height == len(MODELS)
    assert set(full["formula"]) == {"v1"} and set(full["difficulty"]) == {"release"}
    sub_files = [files[1], files[4]]
    sub = _lc(tmp_path, sub_files, "sub", "auto")
    assert sub["model"].to_list() == [MODELS[1], MODELS[4]]
    assert set(sub["difficulty"]) == {"release"}
    want = full.filter(pl.col("model").is_in(sub["model"].to_list()))
    # exactly: the same difficulty table, read from the cache the full audit wrote
    assert sub["lc_win_rate"].to_list() == want["lc_win_rate"].to_list()
    # the whole release audited, the release's difficulty is the audited models' own
    full_audited = _lc(tmp_path, files, "full", "audited")
    assert set(full_audited["difficulty"]) == {"audited"}
    assert full_audited["lc_win_rate"].to_list() == pytest.approx(
        full["lc_win_rate"].to_list(), abs=1e-9
    )
    # refitted on the two audited models, their LC moves with the company they keep
    sub_audited = _lc(tmp_path, sub_files, "sub", "audited")
    assert set(sub_audited["difficulty"]) == {"audited"}
    moved = [abs(a - b) for a, b in zip(sub_audited["lc_win_rate"], sub["lc_win_rate"])]
    assert max(moved) > 1e-3


def test_the_fit_is_cached_by_its_inputs(tmp_path):
    files = _release(tmp_path / "repo")
    bench = AlpacaEval(files, data_dir=tmp_path / "copy")
    release = AlpacaEval.length_control_release(bench.data_dir)
    assert release is not None
    assert release.group_by("model").len().sort("model")["len"].to_list() == [N_INST] * len(MODELS)  # fmt: skip
    rows, ref = release_fit_rows(release, ANN, BASE)
    assert ref == release.sort("order")["cluster"][0]
    assert release_fit_rows(release, "another-judge", BASE) is None
    cache = tmp_path / "c"
    first = cached_difficulty(rows, BASE, ref, cache)
    assert first == board_difficulty(rows, BASE, ref) and first[ref] == 0.0
    key = difficulty_key(rows, BASE, ref)
    (path,) = cache.glob("*.parquet")
    assert path.name == f"{key}.parquet"
    # the second call reads the file: a table written there is what it returns, not a refit
    planted = pl.DataFrame({"cluster": list(first), "difficulty": [7.0] * len(first)})
    planted.write_parquet(path)
    assert set(cached_difficulty(rows, BASE, ref, cache).values()) == {7.0}
    # any changed input is another key (and a fresh fit)
    edited = rows.with_columns(
        y=pl.when(pl.int_range(pl.len()) == 3).then(0.5).otherwise("y")
    )
    assert difficulty_key(edited, BASE, ref) != key
    assert difficulty_key(rows, "other-baseline", ref) != key
    assert difficulty_key(rows, BASE, rows["cluster"][-1]) != key
    assert set(cached_difficulty(edited, BASE, ref, cache).values()) != {7.0}
    assert len(list(cache.glob("*.parquet"))) == 2
    # a cache file that is no difficulty table is fitted again
    path.write_bytes(b"not parquet")
    assert cached_difficulty(rows, BASE, ref, cache) == first


def test_logs_outside_a_release_fit_the_audited_models(tmp_path):
    files = _release(tmp_path / "repo")
    loose = tmp_path / "loose" / "annotations.json"
    loose.parent.mkdir()
    loose.write_text(files[0].read_text())
    bench = AlpacaEval([loose], data_dir=tmp_path / "copy")
    assert AlpacaEval.length_control_release(bench.data_dir) is None


def test_the_option_and_the_output_name_the_source(tmp_path, lc_cache):
    files = _release(tmp_path / "repo")
    audit = tmp_path / "audit"
    api.audit([str(files[2])], "alpacaeval", out=audit, data_dir=tmp_path / "copy")
    h = voirdire_cli("rank", "--help", env={"COLUMNS": "400"})
    assert h.returncode == 0
    assert "--lc-difficulty" in h.stdout and "release" in h.stdout and "audited" in h.stdout  # fmt: skip
    r = voirdire_cli("rank", str(audit), "--style", "--strategies", "single", "--replicates", "10",
                     "--lc-difficulty", "release", "--out", str(tmp_path / "r"))  # fmt: skip
    assert r.returncode == 0, r.output
    assert "instruction difficulty fitted on the whole release" in " ".join(r.stdout.split())  # fmt: skip
    csv = pl.read_csv(tmp_path / "r" / "metrics" / "lc_win_rate.csv")
    assert csv.filter(pl.col("view") == "pooled")["difficulty"].to_list() == ["release"]
    bad = voirdire_cli("rank", str(audit), "--style", "--lc-difficulty", "nowhere",
                       "--out", str(tmp_path / "r2"))  # fmt: skip
    assert bad.returncode != 0
    assert "unknown LC difficulty source 'nowhere'" in " ".join(bad.output.split())
    # a log outside any release: "release" asked for is refused, "auto" fits the audited
    loose = tmp_path / "loose" / "annotations.json"
    loose.parent.mkdir()
    loose.write_text(files[2].read_text())
    weights = next((tmp_path / "repo").rglob(f"baseline_{BASE}.csv"))
    api.audit([str(loose)], "alpacaeval", out=tmp_path / "a2", data_dir=tmp_path / "c2",
              log={"lc_weights": str(weights)})  # fmt: skip
    with pytest.raises(ConfigError, match="--lc-difficulty release: .*no release"):
        api.rank([tmp_path / "a2"], out=tmp_path / "r3", replicates=10, style=True,
                 strategies=["single"], lc_difficulty="release")  # fmt: skip
    ranking, _ = api.rank([tmp_path / "a2"], out=tmp_path / "r4", replicates=10, style=True,
                          strategies=["single"])  # fmt: skip
    assert set(ranking.length["difficulty"].drop_nulls()) == {"audited"}


def test_a_received_release_table_is_checked_before_it_is_read(tmp_path):
    from voirdire.benchmarks.logs.alpaca_eval import LC_RELEASE

    pl.DataFrame({"judge": ["j"], "model": ["m"]}).write_parquet(tmp_path / LC_RELEASE)
    with pytest.raises(ConfigError, match=r"lc_release.parquet: no column 'baseline'"):
        AlpacaEval.length_control_release(tmp_path)
    (tmp_path / LC_RELEASE).write_bytes(b"PAR1 not parquet")
    with pytest.raises(ConfigError, match=r"not a readable Parquet file"):
        AlpacaEval.length_control_release(tmp_path)


def test_the_terminal_line_prints_a_received_judge_name_literally():
    from rich.console import Console

    from voirdire.analysis.report.ranking import lc_source_lines

    row = dict(benchmark="AlpacaEval", judge="[bold]j[/bold]\x1b[31m", strategy="single",
               view="pooled", formula="v1", difficulty="release")  # fmt: skip
    minimal = dict(row, judge="other", formula="minimal", difficulty=None)
    (line,) = lc_source_lines(pl.DataFrame([row, row, minimal]))  # no v1: no line
    console = Console(record=True, width=300, color_system=None)
    console.print(line)
    text = console.export_text()
    assert "[bold]j[/bold]\\x1b[31m" in text and "\x1b" not in text
    assert "2 models v1, instruction difficulty fitted on the whole release" in text
