"""The record of ``voirdire serve`` as a results directory (``engine/serve/log_table.py``,
``voirdire.api.serving.served_results``): each gated exchange's two orders become two rows
of a log table, audited into a directory that ``voirdire report`` reads, with the
position consistency each served judge showed through the gate."""

from __future__ import annotations

import json

from tests.cli import voirdire
from tests.test_serve_exchange import ask, judges
from tests.test_serve_gate import messages
from voirdire.api.serving import served_results
from voirdire.engine.serve.log_table import TABLE, write_log_table
from voirdire.engine.serve.record import Recorder


def record(out, pairs: int, tag: str = "") -> None:
    served, rec = judges(), Recorder(out)
    for i in range(pairs):
        for template in ("arena-hard", "fastchat"):
            values = {
                "instruction": f"Question {i}{tag} ({template})?",
                "output_1": f"first answer {i}",
                "output_2": f"second answer {i}",
            }
            for judge in ("flips", "sure"):
                body = {"model": judge, "messages": messages(template, values)}
                rec.append(ask(served, body)[2])
    # left out of the table: a repeat, a pass-through, a refusal
    rec.append(ask(served, {"model": "sure", "messages": messages("fastchat")})[2])
    rec.append(ask(served, {"model": "sure", "messages": messages("fastchat")})[2])
    plain = [{"role": "user", "content": "hello"}]
    rec.append(ask(served, {"model": "sure", "messages": plain})[2])
    rec.append(ask(served, b"{cut")[2])
    rec.close()


def test_each_gated_exchange_is_two_rows(tmp_path):
    record(tmp_path, 3)
    path, n = write_log_table(tmp_path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.name == TABLE and n == len(rows) == 2 * (3 * 2 * 2 + 1)
    flips = [r for r in rows if r["judge"] == "flips" and r["task"] == "fastchat"]
    assert [r["first"] for r in flips[:2]] == [flips[0]["model_a"], flips[0]["model_b"]]
    assert [r["verdict"] for r in flips] == ["A"] * len(flips)


def test_report_reads_the_served_directory(tmp_path):
    record(tmp_path, 6)
    res = served_results(tmp_path)
    pc = dict(res.judge_metrics.select("judge", "pc").iter_rows())
    assert pc == {"flips": 0.0, "sure": 1.0}
    gate = dict(res.judge_metrics.select("judge", "pass_kappa_gate").iter_rows())
    assert gate == {"flips": "fail", "sure": "pass"}
    again = served_results(tmp_path)  # the same record: the same directory
    assert again.output_dir == res.output_dir
    record(tmp_path, 1, tag=" more")  # grown: a directory of its own
    grown = served_results(tmp_path)
    assert grown.output_dir != res.output_dir

    ran = voirdire("report", res.output_dir, "--out", tmp_path / "report")
    assert ran.returncode == 0, ran.output
    shown = (tmp_path / "report" / "report.md").read_text()
    assert "flips" in shown and "sure" in shown
