"""A log judged in one order per pair is answered as one (issue 40, item 3): the command and
the report open on the randomised first-versus-second effect (pooled, its interval and
randomisation p, how many models differ after Holm's correction) with what would give PC,
PF and κ; the columns and figures that need both orders are absent, not empty. A directory
``voirdire data fetch`` wrote is audited as the files its ``RELEASE.json`` lists."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from tests.cli import voirdire
from tests.test_audit_logs2 import write_alpaca_eval
from voirdire.analysis.position.one_order import holm_rejections

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
MODELS = ("model-a", "model-b", "model-c")


@pytest.mark.parametrize("m", [1, 2, 5, 57, 200])
def test_holm_counts_what_statsmodels_rejects(m):
    """Holm's step-down count equals statsmodels' ``multipletests(method="holm")`` on
    p-values drawn from a mix of nulls and effects (and on ties at the threshold); NaNs
    are not hypotheses."""
    rng = np.random.default_rng(m)
    for _ in range(8):  # statsmodels' multipletests takes ~70 ms a call here
        p = np.concatenate([rng.uniform(size=m), rng.uniform(0, 1e-3, size=m // 2)])
        p[rng.uniform(size=p.size) < 0.1] = 0.05 / p.size  # exactly on a threshold
        want = int(multipletests(p, alpha=0.05, method="holm")[0].sum())
        assert holm_rejections(p) == want
        assert holm_rejections(np.append(p, np.nan)) == want


def _fetched_log(root, outside):
    """Three models' AlpacaEval annotations with a strong first-slot preference, laid out
    as ``voirdire data fetch alpaca_eval`` leaves them (``RELEASE.json`` listing the files),
    the record also naming a file outside the folder and one that does not exist."""
    files = {}
    for m in MODELS:
        rel = f"results/{m}/{ANNOTATOR}/annotations.json"
        write_alpaca_eval(root / rel, m, 80, seed=3, bias=6.0)
        files[rel] = "0" * 40
    write_alpaca_eval(outside, "model-outside", 80, seed=3, bias=6.0)
    files[f"../{outside.name}"] = "0" * 40
    files["results/gone/x/annotations.json"] = "0" * 40
    files["LICENSE"] = "0" * 40
    (root / "LICENSE").write_text("Apache-2.0")
    (root / "RELEASE.json").write_text(
        json.dumps({"audit_format": "alpacaeval", "files": files})
    )
    return root


@pytest.mark.slow
def test_a_one_order_audit_opens_on_its_effect_and_leaves_out_what_needs_both(tmp_path):
    logs = _fetched_log(tmp_path / "logs", tmp_path / "outside.json")
    before = {p: p.read_bytes() for p in logs.rglob("*") if p.is_file()}
    out = tmp_path / "audit"
    ran = voirdire("audit", logs, "--format", "alpacaeval", "--out", out)
    assert ran.returncode == 0, ran.output
    lines = [ln for ln in ran.stdout.splitlines() if ln.strip()]
    assert lines[0].startswith("audited 240 judgments")  # the record's three files only
    head = " ".join(" ".join(lines[1:6]).split())  # the terminal wraps the line
    assert head.startswith("AlpacaEval, one order per pair: shown first, a model wins ")
    assert (
        "points more than shown second" in head
    )  # bias > 1: the first slot is preferred
    k = re.search(r"(\d+) of 3 models differ at 0.05 after Holm's correction", head)
    assert k and int(k.group(1)) >= 1, head
    assert "PC, PF and κ need both orders" in head
    table = ran.stdout[ran.stdout.index("Position bias per judge") :]
    header = table.splitlines()[2]
    assert "errors" in header and "PC" not in header and "κ" not in header
    assert "Which judge to trust first" not in ran.stdout  # nothing to rank by
    assert "all models" in ran.stdout  # the effect table, the pooled row first
    assert before == {p: p.read_bytes() for p in logs.rglob("*") if p.is_file()}

    rep = voirdire("report", out)
    assert rep.returncode == 0, rep.output
    assert rep.stdout.splitlines()[0].startswith("AlpacaEval, one order per pair:")
    html = (out / "report.html").read_text()
    first = html[html.index('id="summary"') : html.index('id="judges"')]
    assert 'class="answer">AlpacaEval, one order per pair: shown first' in first
    assert "pass every gate" not in first and "every pair judged in one order" in first
    bench = html[html.index('id="bench"') : html.index('id="regression"')]
    assert "No PC or PF figures" in bench and 'class="vega"' not in bench
    assert "sign test" not in html.lower().split('id="settings"')[0].split("lo/hi:")[0]
    assert (
        "direction"
        not in html[html.index('id="judges"') : html.index('id="bench"')].split(
            "lo/hi:"
        )[0]
    )
