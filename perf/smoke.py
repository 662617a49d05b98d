"""Every perf script at its ``--smoke`` size, one after another in this one process.

    python -m perf.smoke bench_scheduler bench_analysis ...   (``make perf-smoke`` names them all)

Each script runs as ``python -m perf.NAME --smoke`` would run it (its ``main()``, with
that command line), so a refactor that breaks one fails here; the
interpreter, the analysis imports and a Ray cluster a script leaves running are paid once
instead of once per script. Prints each script's wall time (seconds) and exits 1 naming
the scripts that failed (an exception, or ``SystemExit`` with a non-zero code or a
message).
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback


def run_one(name: str) -> tuple[bool, float]:
    """Run ``perf.NAME --smoke``: the module imported under its own name (so that what it
    hands to a spawned process pickles) and its ``main()`` called with that command line;
    ``(succeeded, wall seconds)``."""
    argv = sys.argv
    sys.argv = [f"perf/{name}.py", "--smoke"]
    t0 = time.perf_counter()
    ok = True
    try:
        code = importlib.import_module(f"perf.{name}").main()
        ok = code in (None, 0)
        if not ok:
            print(f"perf.{name}: exit {code}", flush=True)
    except SystemExit as exc:
        ok = exc.code in (None, 0)
        if not ok:
            print(f"perf.{name}: exit {exc.code}", flush=True)
    except BaseException:  # noqa: BLE001 - reported, the next script still runs
        ok = False
        traceback.print_exc()
    finally:
        sys.argv = argv
    return ok, time.perf_counter() - t0


def main(names: list[str]) -> int:
    """Run ``names`` in order; 0 when every one succeeded, else 1."""
    if not names:
        print("usage: python -m perf.smoke NAME [NAME ...]", file=sys.stderr)
        return 2
    times: list[tuple[str, bool, float]] = []
    for name in names:
        print(f"== perf.{name} --smoke", flush=True)
        ok, secs = run_one(name)
        times.append((name, ok, secs))
    print("\nperf smoke: wall seconds per script", flush=True)
    for name, ok, secs in sorted(times, key=lambda t: -t[2]):
        print(f"  {secs:7.1f}  {'ok    ' if ok else 'FAILED'}  perf.{name}")
    print(f"  {sum(t[2] for t in times):7.1f}  total")
    failed = [n for n, ok, _ in times if not ok]
    if failed:
        print(f"perf smoke failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
