"""``voirdire serve`` on Ray Serve (``engine/serve/server.py``, ``voirdire.serve``): started on
a free loopback port with the job's judges (simulated ones, and an OpenAI-compatible judge
in front of the loopback API server of ``tests/fake_api_server.py``), asked through the
official ``openai`` SDK in Arena-Hard's and FastChat's own formats, read by those harnesses'
own verdict rules; OpenAI-shaped errors; every exchange in the record; stopped by the test."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import openai
import pytest

import voirdire
from tests.fake_api_server import FakeAPIServer, admin
from tests.test_serve_gate import arena_hard_score, fastchat_winner, messages
from voirdire.engine.serve.record import read_exchanges

pytestmark = pytest.mark.ray


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def api_server():
    srv = FakeAPIServer(
        slow_s=3.0,
        faults=[
            {"kind": "429", "match": "#busy#", "times": None},
            {"kind": "slow", "match": "#slow#", "times": None},
        ],
    )
    yield srv.start()
    srv.stop()


@pytest.fixture(scope="module")
def served(ray_local, api_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("served")
    job = {
        "name": "serve",
        "output_dir": str(out / "unused"),
        "benchmark": {"name": "pairs"},
        "judges": [
            {"name": "flips", "backend": "simulated", "primacy": 1.0,
             "sensitivity": 0.0},
            {"name": "sure", "backend": "simulated", "sensitivity": 1e9},
            # placed by Ray (SPREAD): hosted in an actor of its own, not in the replica
            {"name": "flips-actor", "backend": "simulated", "primacy": 1.0,
             "sensitivity": 0.0, "scheduling": "SPREAD"},
            {"name": "api", "backend": "openai_compatible", "model": "m",
             "base_url": api_server.url + "/v1", "max_retries": 0, "cache": "off"},
            {"name": "api-quick", "backend": "openai_compatible", "model": "m",
             "base_url": api_server.url + "/v1", "max_retries": 0, "cache": "off",
             "timeout_s": 0.5},
        ],
    }  # fmt: skip
    server = voirdire.serve(job, port=free_port(), out=out)
    yield server
    server.stop()


@pytest.fixture
def client(served):
    return openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0)


@pytest.mark.parametrize(
    ("template", "read", "tie"),
    [("arena-hard", arena_hard_score, "A=B"), ("fastchat", fastchat_winner, "tie")],
)
def test_the_harness_reads_a_tie_for_a_flip_and_the_verdict_for_agreement(
    client, template, read, tie
):
    raw = client.chat.completions.with_raw_response.create(
        model="flips", messages=messages(template), temperature=0, max_tokens=4096
    )
    flip = raw.parse()
    assert raw.headers["x-voirdire-outcome"] == "disagree"
    assert read(flip.choices[0].message.content) == tie
    gate = flip.model_extra["voirdire"]
    assert (gate["outcome"], gate["verdict"], gate["template"]) == (
        "disagree",
        "tie",
        template,
    )
    assert [o["prefers"] for o in gate["orders"]] == ["output_1", "output_2"]

    agree = client.chat.completions.create(model="sure", messages=messages(template))
    gate = agree.model_extra["voirdire"]
    assert gate["outcome"] == "agree"
    assert gate["orders"][0]["prefers"] == gate["orders"][1]["prefers"] != "tie"
    letter = {"output_1": "A", "output_2": "B"}[gate["verdict"]]
    want = {"arena-hard": {"A": "A>B", "B": "B>A"}, "fastchat": {"A": "A", "B": "B"}}
    assert read(agree.choices[0].message.content) == want[template][letter]


def test_a_judge_in_an_actor_is_gated_as_one_in_the_replica(client, served):
    assert set(served._actors) == {"flips-actor"}  # the others are in the replica
    done = client.chat.completions.create(
        model="flips-actor", messages=messages("arena-hard")
    )
    assert arena_hard_score(done.choices[0].message.content) == "A=B"
    gate = done.model_extra["voirdire"]
    assert (gate["judge"], gate["outcome"]) == ("flips-actor", "disagree")


def test_an_api_judge_is_asked_both_orders_once_each(client, api_server):
    values = {"instruction": "Sum 2 and 2.", "output_1": "4", "output_2": "5"}
    done = client.chat.completions.create(
        model="api", messages=messages("fastchat", values)
    )
    gate = done.model_extra["voirdire"]
    assert gate["calls"] == 2 and len(gate["orders"]) == 2
    assert all(o["letter"] in ("A", "B", "C") for o in gate["orders"])
    assert fastchat_winner(done.choices[0].message.content) in ("A", "B", "tie")
    assert done.usage.prompt_tokens > 0
    # the judge's server got the request's prompt and its twin, once each
    swapped = {**values, "output_1": "5", "output_2": "4"}
    asked = admin(api_server.url, "/_admin/stats")["attempts"]
    for m in (messages("fastchat", values), messages("fastchat", swapped)):
        assert asked["\n".join(t["content"] for t in m)] == 1


def test_models_and_errors(client, served):
    assert [m.id for m in client.models.list()] == [
        "flips",
        "sure",
        "flips-actor",
        "api",
        "api-quick",
    ]
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="sure", messages=[])
    assert bad.value.status_code == 400
    assert bad.value.body["param"] == "messages"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="nobody", messages=[{"role": "user", "content": "x"}]
        )
    # a judge's rate limit reaches the client as a retryable 429
    busy = messages(
        "fastchat", {"instruction": "#busy#", "output_1": "a", "output_2": "b"}
    )
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="api", messages=busy)
    # a judge's timeout: a 504, which the SDKs retry
    slow = messages(
        "fastchat", {"instruction": "#slow#", "output_1": "a", "output_2": "b"}
    )
    with pytest.raises(openai.InternalServerError) as late:
        client.chat.completions.create(model="api-quick", messages=slow)
    assert late.value.status_code == 504
    assert late.value.body["code"] == "judge_timeout"
    # not JSON, and too large: one 4xx each, OpenAI-shaped
    url = served.base_url + "/chat/completions"
    for data, status in ((b"{nope", 400), (b"x" * (4 * 1024 * 1024 + 10), 413)):
        req = urllib.request.Request(url, data=data, method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=30)
        assert err.value.code == status
        assert set(json.loads(err.value.read())["error"]) == {
            "message", "type", "param", "code"
        }  # fmt: skip


def test_every_exchange_is_recorded(client, served):
    client.chat.completions.create(model="flips", messages=messages("arena-hard"))
    records, skipped = read_exchanges(served.out)
    assert skipped == 0
    assert records and records[-1]["judge"] == "flips"
    assert records[-1]["response"]["voirdire"]["outcome"] == "disagree"
    assert {r["status"] for r in records} >= {200}
    assert len(records[-1]["orders"]) == 2
