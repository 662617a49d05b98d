"""``voirdire audit`` of provider batch files: an OpenAI Batch API (``vllm run-batch``) input
and output, and an Anthropic Message Batch's requests and results, built here in each API's
exact line format from seeded draws (SYNTHETIC), the Anthropic lines validated by the
``anthropic`` SDK's own models and the chat completions by ``openai``'s. The order shown
comes from the user's ``custom_id`` mapping (a table or a named-group regex) and is checked
against the judge's raw text; failed requests are failures with their reason; malformed
files are one line naming file, line and field (exit 2); an audit directory passes report,
mitigate and rank."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import polars as pl
import pytest

import voirdire
from tests.cli import voirdire as voirdire_cli
from voirdire.benchmarks.logs.anthropic_batch import AnthropicBatch
from voirdire.benchmarks.logs.batch_ids import FAILURES
from voirdire.benchmarks.logs.openai_batch import OpenAIBatch
from voirdire.benchmarks.logs.reading import RECORDED
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("alpha", "beta", "gamma")
RX = r"(?P<instance>q\d+)__(?P<model_a>[a-z]+)__(?P<model_b>[a-z]+)__(?P<first>[ab])"
LABELS = {"A": "[[A]]", "B": "[[B]]", "C": "[[C]]"}
ANGLE = {"A": "<<1>>", "B": "<<2>>", "C": "<<tie>>"}  # a judge writing 1/2/tie


def draws(n: int, seed: int, p_first: float = 0.3):
    """Per (question, pair, order shown): ``(cid, instance, model_a, model_b, first,
    second, winner)``, ``winner`` the model the judge picked or ``"tie"``: the better model
    (fixed per pair) unless, with probability ``p_first``, the one shown first; 5 % ties."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        for a, b in (("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")):
            better = a if rng.random() < 0.5 else b
            for side in "ab":
                first, second = (a, b) if side == "a" else (b, a)
                r = rng.random()
                win = "tie" if r < 0.05 else first if r < 0.05 + p_first else better
                out.append(
                    (f"q{i}__{a}__{b}__{side}", f"q{i}", a, b, first, second, win)
                )
    return out


def judge_text(d, labels=None) -> str:
    """The judge's text: an explanation, then the label (``labels``: letter -> text,
    default ``[[A]]``...) of the model it picked as shown."""
    *_, first, second, win = d
    letter = "C" if win == "tie" else "A" if win == first else "B"
    return f"Assistant A ({first}) and Assistant B ({second}) compared.\nVerdict: {(labels or LABELS)[letter]}"


def write_openai(d: Path, ds, failed=()) -> tuple[Path, Path]:
    """``batch_input.jsonl`` and ``batch_output.jsonl`` in the Batch API's line format;
    ``failed``: custom_ids given an error (``error`` set, ``response`` null), a 500 status,
    or no output line at all (in that order)."""
    from openai.types.chat import ChatCompletion

    inp, outp = d / "batch_input.jsonl", d / "batch_output.jsonl"
    with open(inp, "w") as fi, open(outp, "w") as fo:
        for k, x in enumerate(ds):
            cid = x[0]
            body = {
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": f"judge {cid}"}],
            }
            fi.write(json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}) + "\n")  # fmt: skip
            comp = {"id": f"chatcmpl-{k}", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": judge_text(x), "refusal": None}}]}  # fmt: skip
            ChatCompletion.model_validate(comp)  # the exact body format
            line = {"id": f"batch_req_{k}", "custom_id": cid, "error": None,
                    "response": {"status_code": 200, "request_id": f"r{k}", "body": comp}}  # fmt: skip
            if cid in failed[:1]:
                line["response"], line["error"] = (
                    None,
                    {"code": "server_error", "message": "boom"},
                )
            elif cid in failed[1:2]:
                line["response"] = {"status_code": 500, "request_id": "r", "body": {"error": {"message": "overloaded", "type": "server_error"}}}  # fmt: skip
            elif cid in failed[2:]:
                continue
            fo.write(json.dumps(line) + "\n")
    return inp, outp


def write_anthropic(
    d: Path, ds, kinds: dict[str, str] | None = None, labels=None
) -> tuple[Path, Path]:
    """``requests.jsonl`` (``custom_id``, ``params``) and ``results.jsonl`` in the Message
    Batches results format, each line validated by the SDK's models; ``kinds``: custom_id
    -> ``errored``/``canceled``/``expired``."""
    from anthropic.types.messages import MessageBatchIndividualResponse
    from anthropic.types.messages.batch_create_params import Request  # noqa: F401

    req, res = d / "requests.jsonl", d / "results.jsonl"
    with open(req, "w") as fq, open(res, "w") as fr:
        for k, x in enumerate(ds):
            cid = x[0]
            params = {"model": "claude-sonnet-4-5", "max_tokens": 512,
                      "messages": [{"role": "user", "content": f"judge {cid}"}]}  # fmt: skip
            fq.write(json.dumps({"custom_id": cid, "params": params}) + "\n")
            kind = (kinds or {}).get(cid, "succeeded")
            result: dict = {"type": kind}
            if kind == "succeeded":
                result["message"] = {
                    "id": f"msg_{k}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "thinking", "thinking": "[[B]] hmm", "signature": "s"},
                                {"type": "text", "text": judge_text(x, labels)}],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 20},
                }  # fmt: skip
            elif kind == "errored":
                result["error"] = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}  # fmt: skip
            line = {"custom_id": cid, "result": result}
            MessageBatchIndividualResponse.model_validate(line)  # the exact line format
            fr.write(json.dumps(line) + "\n")
    return req, res


def _check_order(bench, ds, pattern=r"\[\[([ABC])\]\]") -> pl.DataFrame:
    """Every recorded text's letter, read by the pattern, names the drawn winner in the
    recorded order shown (and the letter is left to the engine: null)."""
    rec = pl.read_parquet(Path(bench.data_dir) / RECORDED)
    want = {(x[1], x[4], x[5]): x[6] for x in ds}
    ok = rec.filter(pl.col("output").is_not_null())
    assert ok["choice"].is_null().all()
    for q, first, second, text in ok.select(
        "question_id", "first", "second", "output"
    ).iter_rows():
        letter = re.search(pattern, text).group(1)
        got = {"A": first, "B": second, "C": "tie"}[letter]
        assert got == want[(q.split("|")[0], first, second)]
    return rec


def test_openai_batch_regex_order_shown_and_failures(tmp_path):
    ds = draws(6, seed=1)
    failed = (ds[0][0], ds[3][0], ds[7][0])
    inp, outp = write_openai(tmp_path, ds, failed)
    b = OpenAIBatch([outp, inp], data_dir=tmp_path / "c", log={"custom_id": RX})
    rec = _check_order(b, ds)
    assert rec.height == len(ds) and b.pairs.height == len(ds) // 2
    assert set(rec["judge"]) == {"gpt-4o"}  # the request's model, for failures too
    fail = pl.read_parquet(Path(b.data_dir) / FAILURES)
    assert fail.height == 3 and rec["output"].null_count() == 3
    whys = dict(zip(fail["first"] + fail["question_id"], fail["why"]))
    by = {x[4] + f"{x[1]}|{x[2]}|{x[3]}": x[0] for x in ds}
    why = {by[k]: v for k, v in whys.items()}
    assert "server_error: boom" in why[failed[0]]
    assert "status 500" in why[failed[1]] and "overloaded" in why[failed[1]]
    assert "no result" in why[failed[2]]
    recs = OpenAIBatch.read_recorded(Path(b.data_dir) / RECORDED, "gpt-4o")
    assert sum(r.output is None for r in recs.values()) == 3
    assert {r.why for r in recs.values() if r.output is None} == set(fail["why"])


def test_anthropic_batch_mapping_table_labels_and_failures(tmp_path):
    ds = draws(5, seed=2)
    kinds = {ds[1][0]: "errored", ds[2][0]: "canceled", ds[4][0]: "expired"}
    req, res = write_anthropic(tmp_path, ds, kinds, labels=ANGLE)
    # opaque ids: the table maps them; first given as a/b
    ids = {x[0]: f"req-{i:03d}" for i, x in enumerate(ds)}
    for p in (req, res):
        p.write_text("".join(json.dumps({**o, "custom_id": ids[o["custom_id"]]}) + "\n"
                             for o in map(json.loads, p.read_text().splitlines())))  # fmt: skip
    table = tmp_path / "map.csv"
    pl.DataFrame({"custom_id": [ids[x[0]] for x in ds], "instance": [x[1] for x in ds],
                  "model_a": [x[2] for x in ds], "model_b": [x[3] for x in ds],
                  "first": [x[0][-1] for x in ds],
                  "label": [x[2] if x[1] == "q0" else "" for x in ds]}).write_csv(table)  # fmt: skip
    log = {
        "mapping": str(table),
        "verdict": r"<<(1|2|tie)>>",
        "labels": "1,2,tie",
    }
    b = AnthropicBatch([res, req], data_dir=tmp_path / "c", log=log)
    rec = pl.read_parquet(Path(b.data_dir) / RECORDED)
    ok = rec.filter(pl.col("output").is_not_null())
    assert ok.height == len(ds) - 3 and not ok["output"].str.contains("hmm").any()
    want = {(x[1], x[4], x[5]): x[6] for x in ds}
    for q, first, second, text in ok.select(
        "question_id", "first", "second", "output"
    ).iter_rows():
        lab = re.search(r"<<(1|2|tie)>>", text).group(1)
        assert {"1": first, "2": second, "tie": "tie"}[lab] == want[
            (q.split("|")[0], first, second)
        ]
    assert b.verdict_pattern == r"<<(1|2|tie)>>"
    assert b.verdict_labels == {"1": "A", "2": "B", "tie": "C"}
    assert set(b.pairs.filter(pl.col("cluster") == "q0")["gold"]) == {"alpha", "beta"}
    whys = set(pl.read_parquet(Path(b.data_dir) / FAILURES)["why"])
    assert any("invalid_request_error: bad" in w for w in whys)
    assert any("'canceled'" in w for w in whys) and any("'expired'" in w for w in whys)
    again = AnthropicBatch(
        None, data_dir=b.data_dir
    )  # the copy alone keeps the pattern
    assert (
        again.verdict_pattern == b.verdict_pattern
        and again.verdict_labels == b.verdict_labels
    )


def test_batch_malformed_names_file_line_and_field(tmp_path):
    ds = draws(2, seed=3)
    inp, outp = write_openai(tmp_path, ds)
    lines = outp.read_text().splitlines()
    outp.write_text("\n".join(lines[:2] + [lines[2][:40]]) + "\n")
    log = {"custom_id": RX}
    with pytest.raises(
        ConfigError, match=r"batch_output\.jsonl: line 3: not valid JSON"
    ) as e:
        OpenAIBatch([inp, outp], data_dir=tmp_path / "c", log=log)
    assert "\n" not in str(e.value)
    bad = json.loads(lines[1])
    del bad["response"]["body"]["choices"][0]["message"]["content"]
    outp.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n")
    with pytest.raises(
        ConfigError,
        match=r"line 2, response\.body\.choices\[0\]: no field 'message\.content'",
    ):
        OpenAIBatch([outp], data_dir=tmp_path / "c", log=log)
    outp.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ConfigError,
        match=r"batch_output\.jsonl: not a log of the AnthropicBatch format: it reads as openaibatch \(give --format openaibatch\)",
    ):
        AnthropicBatch([outp], data_dir=tmp_path / "c", log=log)
    req, res = write_anthropic(tmp_path, ds)
    with pytest.raises(
        ConfigError,
        match=r"results\.jsonl: not a log of the OpenAIBatch format: it reads as anthropicbatch \(give --format anthropicbatch\)",
    ):
        OpenAIBatch([res], data_dir=tmp_path / "c", log=log)
    with pytest.raises(
        ConfigError,
        match=r"batch_output\.jsonl: line 1: custom_id 'q0__alpha__beta__a' is not in the mapping table",
    ):
        table = tmp_path / "m.csv"
        pl.DataFrame({"custom_id": ["x"], "instance": ["1"], "model_a": ["a"], "model_b": ["b"], "first": ["a"]}).write_csv(table)  # fmt: skip
        OpenAIBatch([outp], data_dir=tmp_path / "c", log={"mapping": str(table)})
    with pytest.raises(
        ConfigError, match=r"give \[benchmark.log\] mapping .* or custom_id"
    ):
        OpenAIBatch([outp], data_dir=tmp_path / "c")
    with pytest.raises(
        ConfigError,
        match=r"benchmark\.log\.custom_id: .*no named group model_a, model_b, first",
    ):
        OpenAIBatch(
            [outp], data_dir=tmp_path / "c", log={"custom_id": "(?P<instance>.)"}
        )


def _cli(*args, env=None):
    return voirdire_cli(*map(str, args), cwd=ROOT, env=env)  # fmt: skip


def test_cli_malformed_batch_exits_2_with_one_line(tmp_path):
    inp, outp = write_openai(tmp_path, draws(1, seed=4))
    outp.write_text(outp.read_text()[:60])
    env = {"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    r = _cli("audit", inp, outp, "--format", "openai-batch", "--option", f"custom_id={RX}",
             "--out", tmp_path / "o", env=env)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "batch_output.jsonl: line 1: not valid JSON" in " ".join(r.stderr.split())


def test_batch_audit_end_to_end_report_mitigate_rank(tmp_path, ray_local, monkeypatch):
    """An OpenAI batch audited through the engine: the verdicts read by the pattern name the
    drawn winners, PC equals the draws', failures carry their reason; report, mitigate and
    rank run unchanged on the directory."""
    monkeypatch.setenv("VOIRDIRE_LOG_CACHE", str(tmp_path / "cache"))
    ds = draws(10, seed=5, p_first=0.35)
    failed = (ds[5][0],)
    inp, outp = write_openai(tmp_path, ds, failed)
    out = tmp_path / "audit"
    res = voirdire.audit([inp, outp], "openai-batch", out=out, log={"custom_id": RX})
    j = res.judgments
    assert j.height == len(ds)
    want = {(x[1], x[4], x[5]): x[6] for x in ds}
    got = 0
    for q, shown, chosen, tie in j.select(
        "question_id", "shown", "chosen", "tie"
    ).iter_rows():
        w = want[(q.split("|")[0], shown[0], shown[1])]
        if (q.split("|")[0], *shown) == (ds[5][1], ds[5][4], ds[5][5]):
            assert chosen is None and not tie
            continue
        assert ("tie" if tie else chosen) == w
        got += 1
    assert got == len(ds) - 1
    raw = pl.read_parquet(list((out / "raw").rglob("*.parquet")))
    msg = raw.filter(pl.col("output").is_null())["failure_message"].to_list()
    assert len(msg) == 1 and "server_error: boom" in msg[0]
    pairs = {}
    for x in ds:
        if x[0] not in failed:
            pairs.setdefault((x[1], x[2], x[3]), []).append(x[6])
    done = [
        v for v in pairs.values() if len(v) == 2
    ]  # the failed pair is no valid pair
    pc = sum(v[0] == v[1] for v in done) / len(done)
    assert res.judge_metrics.row(0, named=True)["pc"] == pytest.approx(pc)
    for cmd in (("report", out, "--out", tmp_path / "rep"), ("mitigate", out, "--out", tmp_path / "mit"),
                ("rank", out, "--out", tmp_path / "rank")):  # fmt: skip
        r = _cli(*cmd)
        assert r.returncode == 0, (cmd, r.stderr[-2000:])
    assert (tmp_path / "rep" / "report.html").is_file()
    board = pl.read_csv(tmp_path / "rank" / "metrics" / "leaderboard.csv")
    assert set(board["model"]) == set(MODELS)
    # an Anthropic batch whose judge writes <<1>>/<<2>>/<<tie>>: the engine reads the labels
    req, results = write_anthropic(tmp_path, ds, {ds[5][0]: "expired"}, labels=ANGLE)
    log = {"custom_id": RX, "verdict": r"<<(1|2|tie)>>", "labels": "1,2,tie"}
    res2 = voirdire.audit(
        [results, req], "anthropic-batch", out=tmp_path / "a2", log=log
    )
    j2 = res2.judgments.sort("question_id", "shown")
    assert j2.select("question_id", "shown", "chosen", "tie").equals(
        j.sort("question_id", "shown").select("question_id", "shown", "chosen", "tie")
    )
    assert res2.judge_metrics.row(0, named=True)["pc"] == pytest.approx(pc)


def test_an_edited_judge_text_changes_the_query_ids(tmp_path):
    """The letters are left to the engine (null in the copy), yet each question's prompt key
    covers its texts: an edited batch is never answered from old results."""
    ds = draws(2, seed=6)
    inp, outp = write_openai(tmp_path, ds)
    b1 = OpenAIBatch([outp], data_dir=tmp_path / "c1", log={"custom_id": RX})
    outp.write_text(outp.read_text().replace("[[A]]", "[[B]]", 1))
    b2 = OpenAIBatch([outp], data_dir=tmp_path / "c2", log={"custom_id": RX})
    keys = [(b1.prompt_key(q), b2.prompt_key(q)) for q in b1.pairs["question_id"]]
    assert sum(k1 != k2 for k1, k2 in keys) == 1
    assert len({k1 for k1, _ in keys}) == len(keys)
