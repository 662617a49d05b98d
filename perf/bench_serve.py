"""The gate's added latency and its throughput against calling the judge directly
(``voirdire serve``, ``docs/serve.md``).

Setup: the fake OpenAI server (``tests/fake_api_server.py``) in its own process, answering
every request after ``--latency`` seconds. Both runs send the same ``--pairs`` FastChat
pair-v2 requests (distinct pairs) from ``--clients`` concurrent threads, each one blocking
``openai.OpenAI`` call at a time:

1. direct: the clients call the fake server (one call per request);
2. gated: the clients call ``voirdire serve`` on Ray Serve, in front of an
   ``openai_compatible`` judge on the same server: each request is asked in both orders,
   at once (two calls per request).

Prints, per run, requests/s and the mean and median latency per request (seconds), then
the gate's latency ratio and throughput ratio (the issue's goal: <= 1.05 and >= 0.95 at 16
clients) and the judge calls per pair the server counted.

    python -m perf.bench_serve [--pairs 400 --clients 16 --latency 0.2]
    python -m perf.bench_serve --smoke          # 16 pairs, 4 clients (CI)
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import openai

import voirdire
from perf.bench_api import start_server
from tests.fake_api_server import admin
from voirdire.benchmarks.logs.tool_prompts import tool_prompts


def _messages(i: int) -> list[dict]:
    system, user = tool_prompts()["fastchat"].render(
        {
            "instruction": f"Question {i}: name a prime number.",
            "output_1": f"{2 * i + 3} might be prime.",
            "output_2": f"{2 * i + 4} is prime.",
        }
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _drive(base_url: str, model: str, pairs: int, clients: int) -> dict:
    """``pairs`` requests from ``clients`` threads: requests/s and latencies."""
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)

    def one(i: int) -> float:
        t0 = time.perf_counter()
        client.chat.completions.create(
            model=model, messages=_messages(i), temperature=0, max_tokens=64
        )
        return time.perf_counter() - t0

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(-clients, 0)))  # warm: connections, the replica
        t0 = time.perf_counter()
        lat = list(pool.map(one, range(pairs)))
        wall = time.perf_counter() - t0
    return {
        "rps": pairs / wall,
        "mean_s": statistics.fmean(lat),
        "median_s": statistics.median(lat),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2, help="the judge's seconds")
    ap.add_argument("--smoke", action="store_true", help="16 pairs, 4 clients")
    args = ap.parse_args()
    if args.smoke:
        args.pairs, args.clients, args.latency = 16, 4, 0.05
    proc, url = start_server({"latency_s": args.latency})
    server = None
    try:
        direct = _drive(url + "/v1", "m", args.pairs, args.clients)
        before = admin(url, "/_admin/stats")["requests"]
        job = {
            "name": "bench-serve",
            "output_dir": tempfile.mkdtemp(prefix="bench-serve-"),
            "benchmark": {"name": "pairs"},
            "judges": [
                {"name": "judge", "backend": "openai_compatible", "model": "m",
                 "base_url": url + "/v1", "cache": "off", "max_retries": 0,
                 "concurrency": 4 * args.clients},
            ],
        }  # fmt: skip
        server = voirdire.serve(job, port=_free_port())
        gated = _drive(server.base_url, "judge", args.pairs, args.clients)
        calls = admin(url, "/_admin/stats")["requests"] - before
    finally:
        if server is not None:
            server.stop()
        proc.terminate()
        proc.wait(30)
    for name, r in (("direct", direct), ("gated", gated)):
        print(
            f"{name:7s} {r['rps']:8.1f} requests/s   latency mean {r['mean_s']:.3f} s, "
            f"median {r['median_s']:.3f} s"
        )
    print(
        f"gate / direct at {args.clients} clients, judge latency {args.latency} s: "
        f"latency x{gated['mean_s'] / direct['mean_s']:.3f}, "
        f"throughput x{gated['rps'] / direct['rps']:.3f}; "
        f"judge calls per pair {(calls - args.clients * 2) / args.pairs:.2f}"
    )


if __name__ == "__main__":
    main()
