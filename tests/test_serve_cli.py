"""``voirdire serve`` on the command line: what it refuses in one line before Ray starts
(in this process), and the console script serving a FastChat request through the
``openai`` SDK, recording it, and ending on SIGTERM with its Ray node (a process of its
own)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest

from tests.cli import voirdire
from tests.processes import end_marked, marked_env, no_process_marked
from tests.test_serve import free_port
from tests.test_serve_gate import fastchat_winner, messages
from voirdire.engine.serve.record import read_exchanges

JOB = """
name = "serve"
output_dir = "runs/serve"
[benchmark]
name = "pairs"
[[judges]]
name = "flips"
backend = "simulated"
primacy = 1.0
sensitivity = 0.0
"""


@pytest.fixture
def job(tmp_path) -> Path:
    p = tmp_path / "job.toml"
    p.write_text(JOB)
    return p


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--host", "0.0.0.0"],
            "--host '0.0.0.0': voirdire serve listens on a loopback",
        ),
        (
            ["--judge", "other"],
            "--judge 'other': the job has no such judge; it has flips",
        ),
        (["--strategy", "average"], "--strategy 'average': known tie"),
    ],
)
def test_refused_in_one_line_before_ray(job, args, said):
    ran = voirdire("serve", job, *args)
    assert ran.returncode == 2
    (line,) = ran.stderr.strip().splitlines()  # one line; Ray not started (_tier_guard)
    assert line.startswith(f"error: {said}")


@pytest.mark.process
@pytest.mark.slow
def test_the_console_script_serves_records_and_stops_on_sigterm(job, tmp_path):
    mark, env = marked_env()
    port, out = free_port(), tmp_path / "served"
    exe = Path(sys.executable).with_name("voirdire")
    proc = subprocess.Popen(
        [str(exe), "serve", str(job), "--port", str(port), "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        # a thread reads the lines (a selector on the pipe misses lines its text
        # buffer already holds)
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(
            target=lambda: [lines.put(line) for line in proc.stdout], daemon=True
        )
        reader.start()
        seen, deadline = [], time.monotonic() + 180
        while not any(line.startswith("serving") for line in seen):
            assert time.monotonic() < deadline, "".join(seen)
            assert proc.poll() is None, "".join(seen)
            with contextlib.suppress(queue.Empty):
                seen.append(lines.get(timeout=1))
        serving = next(line for line in seen if line.startswith("serving"))
        assert f"at http://127.0.0.1:{port}/v1" in serving
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0
        )
        done = client.chat.completions.create(
            model="gpt-4", messages=messages("fastchat")
        )
        assert fastchat_winner(done.choices[0].message.content) == "tie"
        assert done.model_extra["voirdire"]["outcome"] == "disagree"
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)
        reader.join(timeout=60)  # to the end of the output
        while not lines.empty():
            seen.append(lines.get())
        rest = "".join(seen)
        assert proc.returncode == 0, rest
        assert "stopped" in rest
        records, skipped = read_exchanges(out)
        assert (len(records), skipped) == (1, 0)
        assert records[0]["judge"] == "flips"
        (results,) = out.glob("results-*")  # the record as a results directory
        assert f"results → {results}" in rest
        assert (results / "job.json").is_file()
        assert no_process_marked(mark)  # the Ray node ended with the command
    finally:
        if proc.poll() is None:
            proc.kill()
        end_marked(mark)
