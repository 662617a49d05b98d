"""``perf/log_findings.py``'s readers of what the sources publish and of what the commands
wrote, on files built here in each source's exact layout (SYNTHETIC: nothing of the real logs
is committed; the script runs on the real ones). Each reader is checked against an
independent computation: JudgeBench's score from the outcomes drawn, Auto-J's README and
scenario groups read (never run) and its groups pooled from cells, PRD's notebook outputs read
as literals (never run), AlpacaEval's counts by its own rule and the switch's split."""

from __future__ import annotations

import json

import polars as pl

from perf import log_alpaca_eval, log_autoj, log_judgebench, log_prd
from tests.audit_logs import draws, write_judgebench
from tests.test_audit_autoj import TABLE, autoj_figures, expand


def test_judgebench_score_from_the_file_is_its_rule(tmp_path):
    """``compute_final_metrics`` (+1 per order choosing the label's response, −1 the other,
    correct when the sum is positive) from the outcomes drawn: the second game shows
    response_B first, so "first" there chooses B; a null judgment counts 0 and is named."""
    outcomes = draws(40, 3)
    outcomes[5] = (None, "first")
    outcomes[9] = ("tie", None)
    labels = ["A>B" if i % 3 else "B>A" for i in range(40)]
    f = (
        tmp_path
        / "dataset=judgebench,response_model=m,judge_name=arena_hard,judge_model=j.jsonl"
    )
    write_judgebench(f, outcomes, labels, judge_model="j")
    pick = {0: {"first": "A", "second": "B"}, 1: {"first": "B", "second": "A"}}
    correct = 0
    for (g1, g2), lab in zip(outcomes, labels):
        right = lab[0]
        s = sum(
            0 if g in (None, "tie") else (1 if pick[k][g] == right else -1)
            for k, g in enumerate((g1, g2))
        )
        correct += s > 0
    got = log_judgebench.file_scores([f]).row(0, named=True)
    assert got["judge"] == "arena_hard:j" and got["file_pairs"] == 40
    assert got["null_decisions"] == 2
    assert got["file_score"] == 100 * correct / 40


README = """# How to use the leaderboard

- type = "pairwise"
```text
Group Name      Agreement       Consistency
----------------------------
Summarization   45.83   73.61
Code    47.5    75.83
----------------------------
Overall 54.96   83.41
```

- type = "single"
```text
Group Name      Agreement       Consistency
----------------------------
Summarization   56.94   -
Code    54.17   -
----------------------------
Overall 59.99   -
```
"""
CONSTANTS = """import json
import openai  # never imported: the file is parsed, not run
scenario_group = {
    "Summarization": ["post_summarization", "text_summarization"],
    "Code": ["code_generation", ],
}
raise SystemExit("run")
"""


def test_autoj_readme_and_groups_read_not_run(tmp_path):
    """The README's two tables and ``scenario_group`` are read as text and literals (the
    constants file would exit if run); the groups pooled from per-scenario cells equal
    ``pairwise_eval.py``'s Agreement, Consistency and single Agreement on the same rows."""
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "utils_constants.py").write_text(CONSTANTS)
    pub = log_autoj.published(tmp_path / "README.md")
    assert pub.rows() == [("Summarization", 45.83, 73.61, 56.94), ("Code", 47.5, 75.83, 54.17),
                          ("Overall", 54.96, 83.41, 59.99)]  # fmt: skip
    assert log_autoj.scenario_groups(tmp_path / "utils_constants.py") == {
        "post_summarization": "Summarization",
        "text_summarization": "Summarization",
        "code_generation": "Code",
    }
    rows = expand(TABLE)
    by_task = {"post_summarization": rows[::3], "text_summarization": rows[1::3], "code_generation": rows[2::3]}  # fmt: skip
    cells = []
    for task, rs in by_task.items():
        n = len(rs)
        both, cons, single = autoj_figures(rs)
        cells.append({"task": task, "n": n, "consistent": round(cons * n / 100),
                      "both_correct": both / 100, "accuracy_shown": single / 100})  # fmt: skip
    (tmp_path / "metrics").mkdir()
    pl.DataFrame(cells).write_csv(tmp_path / "metrics" / "cell_metrics.csv")
    got = {r["group"]: r for r in log_autoj.groups(tmp_path, tmp_path / "utils_constants.py").iter_rows(named=True)}  # fmt: skip
    assert list(got) == ["Summarization", "Code", "Overall"]
    for group, rs in (("Summarization", rows[::3] + rows[1::3]), ("Code", rows[2::3]), ("Overall", rows[::3] + rows[1::3] + rows[2::3])):  # fmt: skip
        want = [round(x, 2) for x in autoj_figures(rs)]
        assert [got[group][c] for c in ("agreement", "consistency", "single")] == want
        assert got[group]["pairs"] == len(rs)


def test_prd_notebook_outputs_read_as_literals(tmp_path):
    """The win rates of the notebook's ``compute_winrates`` cells come from their printed
    outputs, the notebook's names mapped to PRD's files'; other cells are not read, no cell
    is run."""

    def cell(src, text):
        out = (
            [{"output_type": "execute_result", "data": {"text/plain": [text]}}]
            if text
            else []
        )
        return {"cell_type": "code", "source": [src], "outputs": out}

    nb = {"cells": [
        cell("import os; os.remove('x')", ""),
        cell("compute_winrates(gpt4_reviews)", "{'gpt-4': 0.85625,\n 'vicuna': 0.25}"),
        cell("compute_winrates(human_reviews)", "{'gpt-3.5': 0.5, 'bard': 0.125}"),
        cell("compute_winrates(other)", "{'claude': 1.0}"),
    ]}  # fmt: skip
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    got = log_prd.notebook(tmp_path / "nb.ipynb")
    assert got.rows() == [("gpt4", "gpt4", 0.85625), ("gpt4", "vicuna-13b", 0.25),
                          ("gold", "gpt35", 0.5), ("gold", "bard", 0.125)]  # fmt: skip
    assert log_prd.notebook(tmp_path / "none.ipynb") is None


def test_alpaca_eval_counts_and_split_from_the_judgments(tmp_path):
    """AlpacaEval's counts (``describe_head2head``: the model's preference above 0.5 a win,
    below a base win, 0.5 a draw) from the judgments' probabilities as shown, or their
    letters where an annotator gave none; failed verdicts left out; the split of the
    instructions by the switch (shown first for one model and second for another: mixed)."""
    rows = [  # (instruction, model, shown first is the model, P(first wins), letter, failed)
        ("i1", "m1", True, 0.9, "A", False), ("i1", "m2", True, 0.2, "B", False),
        ("i2", "m1", False, 0.9, "A", False), ("i2", "m2", False, 0.5, "C", False),
        ("i3", "m1", True, None, "C", False), ("i3", "m2", False, None, "A", False),
        ("i4", "m1", True, None, None, True),
    ]  # fmt: skip
    j = pl.DataFrame(
        [{"question_id": f"{i}|base|{m}", "candidate": m,
          "shown": [m, "base"] if first else ["base", m],
          "option_probs": None if p is None else {"A": p, "B": 1 - p},
          "choice": c, "failed": f} for i, m, first, p, c, f in rows],
        schema={"question_id": pl.String, "candidate": pl.String, "shown": pl.List(pl.String),
                "option_probs": pl.Map(pl.String, pl.Float64),
                "choice": pl.String, "failed": pl.Boolean},
    )  # fmt: skip
    j.write_parquet(tmp_path / "judgments.parquet")
    board = tmp_path / "board.csv"
    board.write_text(
        ",win_rate,n_wins,n_wins_base,n_draws,n_total\nm1,50,1,1,1,3\nm2,40,0,1,2,3\n"
    )
    t = log_alpaca_eval.against_board(tmp_path, None, board)
    assert t.select("model", "n_wins", "n_wins_base", "n_draws", "n_total").rows() == [
        ("m1", 1, 1, 1, 3), ("m2", 0, 2, 1, 3)
    ]  # fmt: skip
    assert t["counts_equal"].to_list() == [True, False]
    split = log_alpaca_eval.shown_first(tmp_path)
    assert split["mixed"] == 1 and split["instructions"] == 4
    assert (split["first_min"], split["first_max"]) == (1, 3)


def test_alpaca_eval_lc_summary_leaves_out_a_model_without_a_published_lc():
    """The leaderboard CSV may list a model without an LC figure (AlpacaEval 1's
    ghost-7b-alpha): it is counted apart, and the differences and Kendall's τ are those of
    the other models (a null made τ NaN), checked against scipy on the models kept."""
    from scipy.stats import kendalltau

    t = pl.DataFrame({
        "model": ["a", "b", "c", "d", "e"], "formula": ["v1", "v1", "minimal", "v1", "v1"],
        "wr": [10.0, 20.0, 30.0, 40.0, 50.0], "counts_equal": [True] * 5,
        "lc": [12.0, 18.0, 35.0, 41.0, 60.0], "lc_pub": [11.0, 19.0, None, 40.6, 45.0],
    }).with_columns(wr_diff=pl.lit(0.0), lc_diff=pl.col("lc") - pl.col("lc_pub"))  # fmt: skip
    s = log_alpaca_eval.summary(t)
    kept = t.filter(pl.col("model") != "c")
    assert (s["lc_models"], s["lc_not_published"]) == (4, 1)
    assert s["lc_within"] == 1 and s["lc_largest"] == 15.0
    assert abs(s["lc_mean"] - (1.0 - 1.0 + 0.4 + 15.0) / 4) < 1e-12
    assert s["tau_lc"] == kendalltau(kept["lc"], kept["lc_pub"]).statistic
    assert s["tau_raw"] == kendalltau(kept["wr"], kept["lc_pub"]).statistic
    assert s["formulas"] == {"v1": 4}


def test_prd_boards_read_an_older_rank_that_named_the_gold_board_people(tmp_path):
    """``log_prd.boards`` on ``voirdire rank``'s CSVs: the gold board's row and each judge's
    τ and flips against it; an older rank's files, where the gold board was judge and view
    ``people``, read to the same tables (``read_gold``)."""
    from tests.test_ranking import _primacy_judge
    from voirdire.analysis.ranking.rank import rank_judgments
    from voirdire.analysis.report.ranking import write_ranking

    gap = (
        pl.col("reference").str.slice(1).cast(pl.Int64)
        - pl.col("candidate").str.slice(1).cast(pl.Int64)
    ).abs()
    j = _primacy_judge().with_columns(  # a tie between neighbours, else the stronger model
        gold=pl.when(gap == 1)
        .then(pl.lit("tie"))
        .otherwise(pl.max_horizontal(pl.col("candidate"), pl.col("reference")))
    )
    paths = write_ranking(rank_judgments(j, replicates=20), tmp_path / "new")
    old = tmp_path / "old" / "metrics"
    old.mkdir(parents=True)
    for name in ("leaderboard", "rank_flips"):
        t = pl.read_csv(paths[name])
        cols = [c for c in ("judge", "view", "judge_b", "view_b") if c in t.columns]
        t.with_columns(pl.col(c).replace("gold", "people") for c in cols).write_csv(
            old / paths[name].name
        )
    places, flips = log_prd.boards(tmp_path / "new")
    assert places["judge"].to_list() == ["gold", "sim"]
    gold = places.filter(pl.col("judge") == "gold").row(0, named=True)
    assert [gold[f"m{i}"].split()[0] for i in range(5)] == ["5", "4", "3", "2", "1"]
    assert flips["judge"].to_list() == ["sim"] and flips["tau_gold"][0] is not None
    got = log_prd.boards(tmp_path / "old")
    assert got[0].equals(places) and got[1].equals(flips)
    table = log_prd.boards_markdown(tmp_path / "new")
    assert table == log_prd.boards_markdown(tmp_path / "old")
    assert table[2].startswith("| gold | 1 (") and "τ vs gold" in table[0]
