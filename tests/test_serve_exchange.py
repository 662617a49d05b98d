"""One exchange of ``voirdire serve`` without Ray or HTTP (``engine/serve/exchange.py``): the
job's simulated judges, bound as ``voirdire run`` binds them and hosted in the engine's
``JudgeWorker``, asked both orders of an Arena-Hard and a FastChat request; the record line
and the OpenAI-shaped errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.test_serve_gate import arena_hard_score, fastchat_winner, messages
from voirdire.engine.serve.exchange import ServedJudge, exchange, served_judges
from voirdire.engine.serve.record import Recorder, read_exchanges
from voirdire.engine.spec import parse_job

#: a judge that always answers the first slot (it flips on every pair), one that always
#: sees the better answer (it never flips)
JOB = {
    "name": "serve",
    "output_dir": "runs/serve",
    "benchmark": {"name": "pairs"},
    "judges": [
        {"name": "flips", "backend": "simulated", "primacy": 1.0, "sensitivity": 0.0},
        {"name": "sure", "backend": "simulated", "sensitivity": 1e9},
    ],
}


def judges(job=JOB, names=None) -> dict[str, ServedJudge]:
    return {h.name: h.local() for h in served_judges(parse_job(job), names)}


def ask(served, body) -> tuple:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    ex = asyncio.run(exchange(raw, served))
    return ex.status, ex.body, ex.record, ex.headers


@pytest.mark.parametrize(
    ("template", "read", "tie"),
    [("arena-hard", arena_hard_score, "A=B"), ("fastchat", fastchat_winner, "tie")],
)
def test_a_flipping_judge_gets_the_tie_and_a_sure_one_its_verdict(template, read, tie):
    served = judges()
    status, body, record, headers = ask(
        served, {"model": "flips", "messages": messages(template)}
    )
    assert status == 200
    content = body["choices"][0]["message"]["content"]
    assert read(content) == tie
    gate = body["voirdire"]
    assert (gate["outcome"], gate["verdict"], gate["calls"]) == ("disagree", "tie", 2)
    assert [o["letter"] for o in gate["orders"]] == ["A", "A"]
    assert [o["prefers"] for o in gate["orders"]] == ["output_1", "output_2"]
    assert "voirdire" not in content and "output_1" not in content
    assert headers == {"x-voirdire-gated": "true", "x-voirdire-outcome": "disagree"}
    # both orders recorded: the request's prompt and its twin, the judge's raw outputs
    assert record["judge"] == "flips" and record["status"] == 200
    assert [o["shown"] for o in record["orders"]] == [
        record["orders"][0]["shown"],
        record["orders"][0]["shown"][::-1],
    ]
    assert all("[[A]]" in o["output"] for o in record["orders"])

    status, body, _, _ = ask(served, {"model": "sure", "messages": messages(template)})
    gate = body["voirdire"]
    assert gate["outcome"] == "agree"
    assert gate["orders"][0]["prefers"] == gate["orders"][1]["prefers"] != "tie"
    assert {o["letter"] for o in gate["orders"]} == {"A", "B"}
    want = {
        ("arena-hard", "output_1"): "A>B",
        ("arena-hard", "output_2"): "B>A",
        ("fastchat", "output_1"): "A",
        ("fastchat", "output_2"): "B",
    }[template, gate["verdict"]]
    assert read(body["choices"][0]["message"]["content"]) == want


def test_an_unrecognised_request_is_passed_through_and_marked():
    served = judges(names=["sure"])
    plain = [{"role": "user", "content": "Which is better, A or B?"}]
    status, body, record, headers = ask(served, {"model": "gpt-4", "messages": plain})
    assert status == 200  # one judge: every model name asks it
    assert body["model"] == "gpt-4"
    assert body["voirdire"] == {
        "gated": False,
        "reason": "not one system turn and one user turn",
        "judge": "sure",
        "calls": 1,
    }
    assert body["choices"][0]["message"]["content"].startswith("Simulated verdict.")
    assert headers == {"x-voirdire-gated": "false"}
    assert len(record["orders"]) == 1


@pytest.mark.parametrize(
    ("raw", "status", "param"),
    [
        (b"{not json", 400, None),
        (b"[1, 2]", 400, None),
        (json.dumps({"messages": [{"role": "user", "content": "x"}]}), 400, "model"),
        (json.dumps({"model": "sure", "messages": []}), 400, "messages"),
        (json.dumps({"model": "sure", "messages": [{"role": "user"}]}), 400, "messages"),
        (json.dumps({"model": "sure", "stream": True,
                     "messages": [{"role": "user", "content": "x"}]}), 400, "stream"),
        (json.dumps({"model": "sure", "n": 2,
                     "messages": [{"role": "user", "content": "x"}]}), 400, "n"),
        (json.dumps({"model": "nobody",
                     "messages": [{"role": "user", "content": "x"}]}), 404, "model"),
        (json.dumps({"model": "sure", "messages": [
            {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},
            {"role": "user", "content": "z"}]}), 400, "messages"),
        (b" " * (4 * 1024 * 1024 + 1), 413, None),
    ],
)  # fmt: skip
def test_a_bad_request_is_one_openai_shaped_4xx(raw, status, param):
    got, body, record, _ = ask(judges(), raw.encode() if isinstance(raw, str) else raw)
    assert got == status
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["param"] == param
    assert record["status"] == status and record["orders"] == []


def test_every_exchange_is_one_line(tmp_path):
    served = judges()
    rec = Recorder(tmp_path)
    for body in (
        {"model": "flips", "messages": messages("fastchat")},
        {"model": "sure", "messages": messages("arena-hard")},
        b"{cut",
    ):
        rec.append(ask(served, body if isinstance(body, bytes) else body)[2])
    rec.close()
    with open(tmp_path / "exchanges.jsonl", "a") as f:
        f.write('{"id": "cut sho')  # a crash mid-line
    records, skipped = read_exchanges(tmp_path)
    assert [r["status"] for r in records] == [200, 200, 400]
    assert [r["judge"] for r in records] == ["flips", "sure", None]
    assert records[0]["response"]["voirdire"]["outcome"] == "disagree"
    assert skipped == 1


def test_a_judge_the_job_lacks_is_refused():
    from voirdire.core import ConfigError

    with pytest.raises(ConfigError, match="--judge 'other': the job has no such judge"):
        served_judges(parse_job(JOB), ["other"])


def test_a_body_declared_too_large_is_refused_unread():
    ex = asyncio.run(exchange(b"", judges(), declared=4 * 1024 * 1024 + 1))
    assert ex.status == 413 and ex.body["error"]["code"] == "request_too_large"
    assert ex.record["request_bytes"] == 4 * 1024 * 1024 + 1


def test_a_recorded_judge_is_refused_naming_the_judges_that_can_serve():
    """The README's job has a replay judge beside a simulated one: ``serve`` refuses the
    replay judge in one line that names the ``--judge`` options serving the others."""
    from voirdire.core import ConfigError

    job = {**JOB, "benchmark": {"name": "mtbench"}, "judges": [
        {"name": "gpt-4-0613", "backend": "replay", "recorded": "gpt-4-0613"}, *JOB["judges"]]}  # fmt: skip
    with pytest.raises(ConfigError, match="answers from recordings.*serve the others with --judge flips --judge sure$"):  # fmt: skip
        served_judges(parse_job(job), None)
