"""``voirdire audit``: judgment logs other tools wrote, in each tool's exact format (files built
here from seeded draws, tests/audit_logs.py), read by the owning tool's order-shown rule and
checked against the judge's raw text; both-orders audits through the engine give the flip
count and PC computed here from the draws; an audit directory passes report, mitigate and
rank; a malformed log is one line naming the file, the line and the field (exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.audit_logs import (
    draws,
    write_arena_hard,
    write_fastchat,
    write_judgebench,
)
from tests.cli import voirdire as voirdire_cli
from voirdire.benchmarks.logs.arena_hard import ArenaHard
from voirdire.benchmarks.logs.fastchat import FastChat
from voirdire.benchmarks.logs.judgebench import JudgeBench
from voirdire.benchmarks.logs.reading import RECORDED
from voirdire.benchmarks.logs.table import LogTable
from voirdire.benchmarks.registry import load_benchmark
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]
#: the letter the judge's own text says (the tools' verdict tags), A = shown first
TEXT_LETTER = {"A>>B": "A", "A>B": "A", "A=B": "C", "B>A": "B", "B>>A": "B"}


def _recorded(bench) -> pl.DataFrame:
    return pl.read_parquet(Path(bench.data_dir) / RECORDED)


def _winner(shown, letter):
    return {"A": shown[0], "B": shown[1], "C": "tie"}.get(letter)


# ------------------------------------------------------------------ each format's reading


@pytest.mark.parametrize("v2", [True, False])
def test_arena_hard_game1_shows_the_baseline_first(tmp_path, v2):
    """Game 1 shows the baseline as A: its text's [[A>>B]] is a win of the baseline; game 2
    shows the model as A. The reading of `score` agrees with the tag in the raw text."""
    log = tmp_path / "model-x.jsonl"
    write_arena_hard(log, draws(40, 3) + [("first", None)], v2=v2)
    bench = ArenaHard([log], data_dir=tmp_path / "copy")
    rec = _recorded(bench)
    assert rec.height == 82 and bench.pairs.height == 41
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        uid = obj["uid" if v2 else "question_id"]
        qid = f"{uid}|model-x|gpt-4-0314"
        for i, game in enumerate(obj["games"]):
            first = "gpt-4-0314" if i == 0 else "model-x"
            row = rec.filter(
                (pl.col("question_id") == qid) & (pl.col("first") == first)
            ).row(0, named=True)
            if game is None:
                assert row["output"] is None
                continue
            text = game["judgment"]["answer"] if v2 else game["judgment"]
            assert row["output"] == text  # raw judge text kept, strength included
            tag = re.findall(r"\[\[([AB<>=]+)\]\]", text)[-1]
            assert row["choice"] == TEXT_LETTER[tag]
            # the winner as Arena-Hard's show_result.py counts it for that game
            baseline_wins = tag.startswith("A>") if i == 0 else tag.startswith("B>")
            assert (
                _winner((row["first"], row["second"]), row["choice"]) == "gpt-4-0314"
            ) == baseline_wins
    assert set(bench.clusters(bench.data_dir)["cluster"]) == {
        o["uid" if v2 else "question_id"] for o in lines
    }


def test_a_log_read_in_chunks_gives_the_copy_read_in_one(tmp_path, monkeypatch):
    """The reader moves its rows into frames every CHUNK_ROWS verdicts (a 2 × 10⁶-verdict
    log within the audit's memory bound): the normalised copy, its pairs, prompt keys and
    the failed calls' rows are those of one chunk, in the same order."""
    from polars.testing import assert_frame_equal

    from voirdire.benchmarks.logs import reading

    logs = tmp_path / "logs"
    logs.mkdir()
    for m in range(3):
        write_arena_hard(logs / f"m{m}.jsonl", draws(9, m) + [("first", None)],
                         model=f"m{m}", seed=m)  # fmt: skip
    whole = ArenaHard([logs], data_dir=tmp_path / "whole")
    monkeypatch.setattr(reading, "CHUNK_ROWS", 4)  # 60 verdicts: 15 chunks
    parts = ArenaHard([logs], data_dir=tmp_path / "parts")
    assert_frame_equal(parts.pairs, whole.pairs)
    assert parts.pairs.height == 30
    assert_frame_equal(_recorded(parts), _recorded(whole))
    assert _recorded(parts)["output"].null_count() == 3
    assert parts._keys == whole._keys and len(parts._keys) == 30
    rows = reading.Rows()
    assert rows.n_verdicts == 0 and [f.height for f in rows.frames()] == [0, 0]
    for i in range(9):
        rows.verdict(str(i), "j", ("a", "b"), None, "", "here")
    assert rows.n_verdicts == 9 and rows.frames()[1]["question_id"].to_list() == [
        str(i) for i in range(9)
    ]


def test_fastchat_game2_shows_model_2_first(tmp_path):
    """play_a_match_pair: game 1 shows model_1 as A, game 2 model_2; a stored g2_winner
    "model_1" was the judge's [[B]]."""
    log = tmp_path / "gpt-4_pair.jsonl"
    out = draws(30, 4) + [("error", "tie")]
    write_fastchat(log, out)
    bench = FastChat([log], data_dir=tmp_path / "copy")
    rec = _recorded(bench)
    for obj in map(json.loads, log.read_text().splitlines()):
        qid = f"{obj['question_id']}|t1|vicuna-13b|gpt-3.5-turbo"
        for g, first in (("g1", obj["model_1"]), ("g2", obj["model_2"])):
            row = rec.filter(
                (pl.col("question_id") == qid) & (pl.col("first") == first)
            ).row(0, named=True)
            assert row["output"] == obj[f"{g}_judgment"] and row["judge"] == "gpt-4"
            tags = re.findall(r"\[\[([ABC])\]\]", row["output"])
            assert row["choice"] == (tags[0] if tags else "")
            if tags:  # the letter read names the model FastChat stored as the winner
                won = _winner((row["first"], row["second"]), row["choice"])
                stored = obj[f"{g}_winner"]
                assert won == ("tie" if stored == "tie" else obj[stored])
    with pytest.raises(ConfigError, match="no judgments"):  # every line is turn 1
        FastChat([log], data_dir=tmp_path / "copy2", log={"turn": 2})


def test_judgebench_second_judgment_is_stored_as_seen(tmp_path):
    """judgments[1] shows response_B first and keeps its decision as the judge saw it: its
    "A>B" is a win of response_B (JudgeBench's metrics flip it before comparing)."""
    log = (
        tmp_path
        / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=gpt-4o-2024-05-13.jsonl"
    )
    out = draws(20, 5)
    labels = ["A>B" if i % 3 else "B>A" for i in range(20)]
    write_judgebench(log, out, labels)
    bench = JudgeBench([log], data_dir=tmp_path / "copy")
    rec = _recorded(bench)
    assert set(rec["judge"]) == {"arena_hard:gpt-4o-2024-05-13"}
    for obj in map(json.loads, log.read_text().splitlines()):
        for i, j in enumerate(obj["judgments"]):
            first = "response_A" if i == 0 else "response_B"
            row = rec.filter(
                (pl.col("question_id") == obj["pair_id"]) & (pl.col("first") == first)
            ).row(0, named=True)
            assert row["output"] == j["judgment"]["response"]
            tag = re.findall(r"\[\[([AB<>=]+)\]\]", row["output"])[-1]
            assert row["choice"] == TEXT_LETTER[tag]
            # JudgeBench's own reading in the original frame: flip the second decision
            d = (
                j["decision"]
                if i == 0
                else {"A>B": "B>A", "B>A": "A>B"}.get(j["decision"], j["decision"])
            )
            want = {"A>B": "response_A", "B>A": "response_B", "A=B": "tie"}[d]
            assert _winner((row["first"], row["second"]), row["choice"]) == want
    gold = dict(zip(bench.pairs["question_id"], bench.pairs["gold"]))
    assert gold["p0"] == "response_B" and gold["p1"] == "response_A"
    assert JudgeBench.named_models is False


def test_table_first_column_and_verdicts(tmp_path):
    """A plain table: the `first` column says which model was shown first; a position verdict
    B is the model shown second; the pair keeps the order of its first row."""
    csv = tmp_path / "v.csv"
    pl.DataFrame(
        {
            "item": ["1", "1", "2", "2"],
            "m1": ["x", "y", "x", "x"],
            "m2": ["y", "x", "y", "y"],
            "shown_first": ["x", "y", "a", "b"],
            "v": ["A", "B", "tie", "1"],
            "grader": ["g", "g", "g", "g"],
            "gold": ["x", "x", "y", "y"],
        }
    ).write_csv(csv)
    cols = {"instance": "item", "model_a": "m1", "model_b": "m2", "first": "shown_first",
            "verdict": "v", "judge": "grader", "label": "gold"}  # fmt: skip
    bench = LogTable([csv], data_dir=tmp_path / "copy", log={"columns": cols})
    rec = _recorded(bench).sort("question_id", "first")
    assert bench.pairs["question_id"].to_list() == ["1|x|y", "2|x|y"]
    assert rec.select("question_id", "first", "second", "choice").rows() == [
        ("1|x|y", "x", "y", "A"), ("1|x|y", "y", "x", "B"),
        ("2|x|y", "x", "y", "C"), ("2|x|y", "y", "x", "A"),
    ]  # fmt: skip
    # row 2 (y shown first) says B: x wins, consistent with row 1
    assert _winner(("y", "x"), "B") == "x"
    model = LogTable(
        [csv],
        data_dir=tmp_path / "c2",
        log={"columns": {**cols, "verdict": "m1"}, "verdicts": "model"},
    )
    assert set(_recorded(model)["choice"]) <= {"A", "B"}


# ------------------------------------------------------------------ malformed logs


def _bad(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_truncated_json_names_file_and_line(tmp_path):
    good = tmp_path / "ok.jsonl"
    write_arena_hard(good, draws(3, 1))
    p = _bad(tmp_path, "cut.jsonl", good.read_text()[:-40])
    with pytest.raises(ConfigError, match=r"cut\.jsonl: line 3: not valid JSON") as e:
        ArenaHard([p], data_dir=tmp_path / "c")
    assert "\n" not in str(e.value)


def test_missing_field_names_file_line_and_field(tmp_path):
    good = tmp_path / "ok.jsonl"
    write_fastchat(good, draws(3, 1))
    lines = good.read_text().splitlines()
    obj = json.loads(lines[1])
    del obj["g2_winner"]
    p = _bad(
        tmp_path, "pair.jsonl", "\n".join([lines[0], json.dumps(obj), lines[2]]) + "\n"
    )
    with pytest.raises(ConfigError, match=r"pair\.jsonl: line 2: no field 'g2_winner'"):
        FastChat([p], data_dir=tmp_path / "c")
    g = tmp_path / "ah.jsonl"
    write_arena_hard(g, draws(2, 1))
    ah = [json.loads(x) for x in g.read_text().splitlines()]
    del ah[1]["games"][1]["score"]
    p = _bad(tmp_path, "ah2.jsonl", "\n".join(map(json.dumps, ah)) + "\n")
    with pytest.raises(
        ConfigError, match=r"ah2\.jsonl: line 2, games\[1\]: no field 'score'"
    ):
        ArenaHard([p], data_dir=tmp_path / "c")


def test_wrong_format_named(tmp_path):
    p = tmp_path / "model-x.jsonl"
    write_arena_hard(p, draws(2, 1))
    # the format the file reads as is named too (issue 40, item 10)
    for fmt in (FastChat, JudgeBench):
        with pytest.raises(
            ConfigError,
            match=rf"model-x\.jsonl: not a log of the {fmt.name} format: it reads as arenahard \(give --format arenahard\)",
        ):
            fmt([p], data_dir=tmp_path / "c")


def test_the_commands_format_help_names_every_log_format():
    """``voirdire audit --help`` lists every log format the registry has, as written
    on the command line (it had fallen behind: four of ten)."""
    import typer

    from voirdire.benchmarks.logs.base import LogBenchmark
    from voirdire.benchmarks.registry import BENCHMARKS, canonical_name
    from voirdire.cli import app

    audit = typer.main.get_command(app).commands["audit"]
    (fmt,) = [p for p in audit.params if p.name == "format"]
    listed = fmt.help.split(": ", 1)[1].rstrip(".").split(", ")
    formats = {
        k
        for k, c in BENCHMARKS.available().items()
        if isinstance(c, type) and issubclass(c, LogBenchmark)
    }
    assert len(formats) >= 10 and sorted(map(canonical_name, listed)) == sorted(formats)
    assert all(BENCHMARKS.known(n) for n in listed)


def test_cli_malformed_log_exits_2_with_one_line(tmp_path):
    p = _bad(
        tmp_path, "x.jsonl", '{"uid": "q1", "model": "m", "judge": "j", "games": ['
    )
    r = voirdire_cli("audit", str(p), "--format", "arena-hard", "--out", str(tmp_path / "o"), cwd=ROOT, env={"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    err = " ".join(r.stderr.split())
    assert "x.jsonl: line 1: not valid JSON" in err
    assert "Traceback" not in r.stderr
    r2 = voirdire_cli("audit", str(p), "--format", "mtbench", cwd=ROOT)  # fmt: skip
    assert r2.returncode == 2 and "not a judgment log format" in " ".join(
        r2.stderr.split()
    )


def test_table_unknown_verdict_names_the_row(tmp_path):
    csv = tmp_path / "v.csv"
    pl.DataFrame(
        {
            "i": ["1", "2"],
            "a": ["x", "x"],
            "b": ["y", "y"],
            "f": ["x", "x"],
            "v": ["A", "maybe"],
        }
    ).write_csv(csv)
    cols = {
        "instance": "i",
        "model_a": "a",
        "model_b": "b",
        "first": "f",
        "verdict": "v",
    }
    with pytest.raises(ConfigError, match=r"v\.csv: row 2: column 'v' holds 'maybe'"):
        LogTable([csv], data_dir=tmp_path / "c", log={"columns": cols})


# ------------------------------------------------------------------ through the engine


def _expected(outcomes):
    """(flips, PC, PF) of a one-cell audit computed from the draws: a pair is consistent
    when the same model wins in both orders, or both are ties (docs/metrics.md)."""
    cc = pc = rc = 0
    for g1, g2 in outcomes:
        a = {"first": "A", "second": "B", "tie": "C"}[g1]
        b = {"first": "A", "second": "B", "tie": "C"}[g2]
        if (a, b) in {("A", "B"), ("B", "A"), ("C", "C")}:
            cc += 1
        elif (a, b) in {("A", "A"), ("A", "C"), ("C", "A")}:
            pc += 1
        else:
            rc += 1
    n = len(outcomes)
    return n - cc, cc / n, (rc - pc) / n


def test_audit_end_to_end_report_mitigate_rank(tmp_path, ray_local, monkeypatch):
    """Two Arena-Hard model files audited through the engine: PC and PF equal those
    computed from the draws; the raw judge text is in the judgments; the directory passes
    report, mitigate and rank unchanged; a rerun asks nothing again. The inter-pass
    kappa's bootstrap counts were drawn while the judge answered, for as many questions
    as the analysis resamples (the log's clusters), and taken by it."""
    from voirdire.analysis.stats import draws as bootstrap_draws

    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    d1, d2 = draws(60, 11, p_flip=0.25), draws(60, 12, p_flip=0.4)
    write_arena_hard(tmp_path / "model-x.jsonl", d1, model="model-x")
    write_arena_hard(tmp_path / "model-y.jsonl", d2, model="model-y", seed=1)
    out = tmp_path / "audit"
    made, real = [], bootstrap_draws.Draws.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        made.append((self.sizes, self.replicates, self.prepared))

    monkeypatch.setattr(bootstrap_draws.Draws, "__init__", spy)
    res = voirdire.audit([tmp_path], "arena-hard", out=out)
    monkeypatch.setattr(bootstrap_draws.Draws, "__init__", real)
    # drawn for the questions the interval resamples: the log's clusters (one Arena-Hard
    # uid, judged for both models, is one question), not its 120 question ids
    assert res.judgments["question_id"].n_unique() == 120
    assert [m for m in made if m[2]] == [((60,), 1000, True)]
    assert bootstrap_draws.prepared_keys() == []
    jm = res.judge_metrics.row(0, named=True)
    flips, pc, _ = _expected(d1 + d2)
    assert jm["judge"] == "gpt-4-1106-preview"
    assert jm["pc"] == pytest.approx(pc)
    cells = (
        res.cell_metrics.sort("candidate")
        if "candidate" in res.cell_metrics.columns
        else None
    )
    if cells is not None:
        for cand, d in (("model-x", d1), ("model-y", d2)):
            row = cells.filter(pl.col("candidate") == cand).row(0, named=True)
            assert row["pf"] == pytest.approx(_expected(d)[2])
    j = res.judgments
    assert j.height == 240
    raw = pl.read_parquet(list((out / "raw").rglob("*.parquet")))
    assert raw["output"].str.contains(r"\[\[(A>>B|A>B|A=B|B>A|B>>A)\]\]").all()
    # report, mitigate, rank: unchanged commands on the audit directory
    for cmd in (["report", str(out), "--out", str(tmp_path / "rep")],
                ["mitigate", str(out), "--out", str(tmp_path / "mit")],
                ["rank", str(out), "--out", str(tmp_path / "rank")]):  # fmt: skip
        r = voirdire_cli(*cmd, cwd=ROOT)
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
    assert (tmp_path / "rep" / "report.html").is_file()
    assert (tmp_path / "rank" / "ranking.md").is_file()
    board = pl.read_csv(tmp_path / "rank" / "metrics" / "leaderboard.csv")
    assert set(board["model"]) == {"gpt-4-0314", "model-x", "model-y"}
    again = voirdire.audit(
        [tmp_path / "model-x.jsonl", tmp_path / "model-y.jsonl"], "arenahard", out=out
    )
    assert again.stats.queries == 0
    # the job-file route reaches the same benchmark
    job = voirdire.api.audit_job([tmp_path], "arena-hard", out=out)
    assert job.benchmark.name == "ArenaHard" and job.judges[0].backend_settings == {
        "recorded": "*"
    }
    b = load_benchmark(
        "ArenaHard", res.job["data_dir"]
    )  # read again from the copy alone
    assert b.pairs.height == 120


def test_a_job_file_reaches_a_log_format(tmp_path, monkeypatch):
    """``[benchmark] name = "fastchat"`` with ``logs`` and a replay judge ``recorded = "*"``:
    planned (nothing sent) as one replay judge per judge in the logs, two queries per pair."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    write_fastchat(tmp_path / "gpt-4_pair.jsonl", draws(12, 7), judge="gpt-4")
    write_fastchat(
        tmp_path / "claude-v1_pair.jsonl", draws(12, 8), judge="claude-v1", turn=2
    )
    job = tmp_path / "audit.toml"
    job.write_text(
        f'name = "a"\noutput_dir = "{tmp_path / "out"}"\n[benchmark]\nname = "fastchat"\n'
        f'logs = ["{tmp_path}"]\n[benchmark.log]\nturn = 2\n[comparison]\noption_mode = 3\n'
        '[[judges]]\nname = "*"\nbackend = "replay"\nrecorded = "*"\n'
    )
    plan = voirdire.plan(job)
    assert [j.name for j in plan.judges] == [
        "claude-v1"
    ]  # turn 2 only: claude-v1's file
    assert plan.instances.height == 12 and plan.units_per_judge == 24
    bad = (
        job.read_text()
        .replace('recorded = "*"', 'recorded = "gpt-5"')
        .replace('name = "*"', 'name = "g5"')
    )
    job.write_text(bad)
    with pytest.raises(
        ConfigError, match=r"hold no verdicts of 'gpt-5'; judges in them: claude-v1"
    ):
        voirdire.plan(job)


def test_the_api_audit_starts_ray_before_it_reads_the_logs(
    tmp_path, ray_local, monkeypatch
):
    """``voirdire.audit`` starts no Ray for its recorded verdicts (joined with the units in
    the driver, ``engine/recorded.py``); given a cluster address, it begins joining it in
    the background once the format and the log list are valid, so that reading the logs
    overlaps it (the node is up here: the call is recorded, nothing starts)."""
    import voirdire.engine.ray_start as ray_start
    from voirdire.benchmarks.logs.base import LogBenchmark

    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    write_arena_hard(tmp_path / "model-x.jsonl", draws(5, 3), model="model-x")
    seen: list[str] = []
    real_init, real_read = ray_start.init_ray, LogBenchmark.read_logs

    def init(address=None, *, background=False):
        seen.append(f"init_ray(background={background})")
        return real_init(address, background=background)

    def read(self, files, rows):
        seen.append("read_logs")
        return real_read(self, files, rows)

    monkeypatch.setattr(ray_start, "init_ray", init)
    monkeypatch.setattr(LogBenchmark, "read_logs", read)
    with pytest.raises(ConfigError):
        voirdire.audit([tmp_path], "no-such-format", out=tmp_path / "x")
    assert seen == []  # a bad format: nothing started
    voirdire.audit([tmp_path], "arena-hard", out=tmp_path / "a")
    assert seen == ["read_logs"], seen  # no cluster named: no Ray
    seen.clear()
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache-b"))  # read again
    address = ray_local.get_runtime_context().gcs_address
    voirdire.audit([tmp_path], "arena-hard", out=tmp_path / "b", address=address)
    assert seen[:2] == ["init_ray(background=True)", "read_logs"], seen
