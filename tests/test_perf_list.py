"""``make perf-smoke`` runs every perf script that has a ``--smoke`` size: the Makefile's
``PERF`` list cannot drift from ``perf/`` (a script left out would break unseen)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: scripts run only at full size, on the public logs a CI machine does not have
FULL_SIZE_ONLY = {"alpaca_eval_lc", "bench_input_bounds"}


def _perf_list() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    m = re.search(r"^PERF := (.*?)(?<!\\)\n", text, re.M | re.S)
    assert m, "the Makefile has no PERF list"
    return m.group(1).replace("\\\n", " ").split()


def test_every_perf_script_with_a_smoke_size_is_in_the_smoke_run():
    listed = _perf_list()
    assert len(listed) == len(set(listed)), "a script listed twice"
    scripts = {
        p.stem
        for p in (ROOT / "perf").glob("*.py")
        if '__name__ == "__main__"' in p.read_text() and p.stem != "smoke"
    }
    smoke = {s for s in scripts if "--smoke" in (ROOT / "perf" / f"{s}.py").read_text()}
    assert set(listed) <= smoke, f"listed without a --smoke size: {set(listed) - smoke}"
    missing = smoke - set(listed)
    assert not missing, f"perf scripts with --smoke left out of PERF: {sorted(missing)}"
    assert scripts - smoke <= FULL_SIZE_ONLY, sorted(scripts - smoke - FULL_SIZE_ONLY)
