"""``voirdire audit --format inspect``: Inspect AI eval logs written by inspect_ai's own writer
(``write_eval_log``, ``.eval`` and ``.json``) from seeded draws (SYNTHETIC), read back by its
own reader. The judge is the task's model (the sample output) or a grader (a score's
explanation); the pair and order shown come from the sample metadata or its id, checked
against the raw judge text; failed samples are failures with their reason; malformed files
are one line naming the file and the line or field (exit 2). Needs the ``inspect`` extra
(``make install-dev`` installs it): imported, never skipped."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from inspect_ai._util.error import EvalError
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score

from tests.cli import voirdire as voirdire_cli
from tests.test_audit_batch import RX, _check_order, draws, judge_text
from voirdire.benchmarks.logs.batch_ids import FAILURES
from voirdire.benchmarks.logs.inspect_log import Inspect
from voirdire.core import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def write_inspect(
    path: Path, ds, grader_ds=None, *, metadata=True, errors=(), no_score=()
):
    """An eval log whose model (``openai/gpt-4o``) judged each drawn pair and order (its
    output the judge's text) and whose scorer ``grader`` graded it (its explanation the text
    of ``grader_ds``' draw); ``errors``/``no_score``: sample ids failed or left unscored."""
    spec = EvalSpec(created="2025-01-01T00:00:00+00:00", task="pairwise_judge",
                    dataset=EvalDataset(name="pairs"), model="openai/gpt-4o", config=EvalConfig())  # fmt: skip
    samples = []
    for k, x in enumerate(ds):
        cid, inst, a, b, first, *_ = x
        md = (
            {"instance": inst, "model_a": a, "model_b": b, "first": first}
            if metadata
            else {}
        )
        g = grader_ds[k] if grader_ds else x
        score = Score(value=0, explanation=judge_text(g))
        err = EvalError(
            message="RuntimeError: rate limited\nmore", traceback="", traceback_ansi=""
        )
        samples.append(EvalSample(
            id=cid, epoch=1, input=f"judge {cid}", target="", metadata=md,
            output=ModelOutput.from_content("openai/gpt-4o", judge_text(x)),
            scores=None if cid in no_score else {"grader": score},
            error=err if cid in errors else None,
        ))  # fmt: skip
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_output_and_grader_order_shown(tmp_path, suffix):
    ds, gs = draws(4, seed=7), draws(4, seed=8, p_first=0.6)
    p = tmp_path / f"log{suffix}"
    write_inspect(p, ds, gs, errors=(ds[2][0],), no_score=(ds[4][0],))
    b = Inspect([p], data_dir=tmp_path / "c")
    rec = _check_order(b, ds)
    assert set(rec["judge"]) == {"openai/gpt-4o"} and rec["output"].null_count() == 1
    why = pl.read_parquet(Path(b.data_dir) / FAILURES)["why"].to_list()
    assert why == ["the sample failed (RuntimeError: rate limited)"]
    g = Inspect([p], data_dir=tmp_path / "g", log={"scorer": "grader"})
    rec = _check_order(g, gs)
    assert set(rec["judge"]) == {"grader"} and rec["output"].null_count() == 2
    why = set(pl.read_parquet(Path(g.data_dir) / FAILURES)["why"])
    assert any(w.startswith("no score 'grader'") for w in why)


def test_inspect_sample_ids_by_regex(tmp_path):
    ds = draws(3, seed=9)
    p = tmp_path / "log.eval"
    write_inspect(p, ds, metadata=False)
    with pytest.raises(
        ConfigError,
        match=r"sample 1 \(id 'q0__alpha__beta__a'\): no field 'metadata\.instance'",
    ):
        Inspect([p], data_dir=tmp_path / "c")
    (tmp_path / "logs.json").write_text("{}")  # a log directory's listing: skipped
    b = Inspect([tmp_path], data_dir=tmp_path / "c", log={"custom_id": RX})
    _check_order(b, ds)
    assert b.pairs.height == len(ds) // 2


def test_inspect_malformed_names_file_line_and_field(tmp_path):
    p = tmp_path / "log.json"
    write_inspect(p, draws(1, seed=10))
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(ConfigError, match=r"log\.json: line \d+: not valid JSON"):
        Inspect([p], data_dir=tmp_path / "c")
    d = json.loads(text)
    del d["eval"]["model"]
    p.write_text(json.dumps(d, indent=2))
    with pytest.raises(
        ConfigError, match=r"log\.json: field 'eval\.model': Field required"
    ):
        Inspect([p], data_dir=tmp_path / "c")
    e = tmp_path / "log.eval"
    write_inspect(e, draws(1, seed=10))
    e.write_bytes(e.read_bytes()[:200])
    with pytest.raises(ConfigError, match=r"log\.eval: not an Inspect eval log") as exc:
        Inspect([e], data_dir=tmp_path / "c")
    assert "\n" not in str(exc.value)
    j = tmp_path / "batch.json"  # the wrong format named: a JSONL batch output
    j.write_text(
        '{"custom_id": "x", "response": null, "error": null}\n{"custom_id": "y"}\n'
    )
    env = {"VOIRDIRE_LOG_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    r = voirdire_cli("audit", str(j), "--format", "inspect",
                        "--out", str(tmp_path / "o"), cwd=ROOT, env=env)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "batch.json: line 2: not valid JSON" in " ".join(r.stderr.split())
