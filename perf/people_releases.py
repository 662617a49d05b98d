"""The judges' verdicts and human labels of every public release that labels all its pairs,
through the product (``perf/people_validation.py`` validates the human boards on them).

- PandaLM: the test set and its two recorded judges fetched by ``voirdire data fetch``'s code
  from a loopback server over the local mirror, replayed by ``voirdire.run``;
- PRD: the reviewers' logs fetched likewise and audited (``voirdire.audit``), human votes
  as the gold label;
- JudgeBench: the two arena-hard judges' files, each audited alone (one judge's own pairs);
- Auto-J: its example predictions in both orders on its pairwise test data, audited from the
  user's copy (the repository has no licence file: never fetched);
- LLMBar: its six evaluators with their Vanilla prompt, replayed from the located release.

Each reader takes the script's arguments (``mirror``, ``autoj``) and a work directory and
returns the judgments (``JUDGMENT_SCHEMA`` rows, ``gold`` the human label).
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import polars as pl

PANDALM_COMMIT = "3871806e72b4832f815ecafd24d3503c73403f48"
LLMBAR_JUDGES = [
    f"{e}/Vanilla"
    for e in ("ChatGPT-0301", "ChatGPT", "Falcon", "GPT-4", "LLaMA2", "PaLM2")
]


def _serve(repos: dict) -> tuple[http.server.ThreadingHTTPServer, str]:
    from perf.log_sources import _GitServer

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_GitServer, repos=repos)
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def _declared(judgments: pl.DataFrame, out: Path) -> pl.DataFrame:
    """``judgments`` with ``cluster``: the questions the audit at ``out`` declares (an audited
    log's ``question_id`` is an item; its question is what the intervals resample), read as
    ``voirdire people`` reads them (:func:`voirdire.analysis.together.read_together`)."""
    from voirdire.analysis.together import read_together

    c = read_together([out], ["judgments", "clusters"]).clusters
    if c is None:
        return judgments
    c = c.unique(["benchmark", "question_id"])
    return judgments.join(c, on=["benchmark", "question_id"], how="left")


def pandalm(args, work: Path) -> pl.DataFrame:
    """PandaLM's test set and its two recorded judges, fetched and replayed (``voirdire.run``)."""
    import voirdire
    from voirdire.benchmarks.releases.catalogue import fetch_release
    from voirdire.engine.spec import parse_job

    httpd, url = _serve(
        {"pandalm": (args.mirror / "WeOpenML+PandaLM" / "repo", PANDALM_COMMIT)}
    )
    try:
        dest = fetch_release(
            work / "pandalm", f"{url}/pandalm/", release="pandalm", progress=False
        ).dest
    finally:
        httpd.shutdown()
    spec = parse_job({
        "name": "pandalm-replay", "output_dir": str(work / "pandalm-replay"),
        "benchmark": {"name": "pandalm", "data_dir": str(dest)},
        "comparison": {"mode": "pairwise", "option_mode": 3, "permutations": "original"},
        "judges": [{"name": "*", "backend": "replay", "recorded": "*"}],
    }, "pandalm-replay")  # fmt: skip
    from voirdire.benchmarks.pandalm import PandaLM

    # the items' questions (PandaLM's declared clusters): what the intervals resample
    clusters = PandaLM.clusters(dest).unique("question_id")
    return voirdire.run(spec).judgments.join(clusters, on="question_id", how="left")


def prd(args, work: Path) -> pl.DataFrame:
    """PRD's reviewers, fetched and audited (``voirdire.audit``); human votes are gold."""
    import voirdire
    from perf.log_sources import fetch, serve

    httpd, url = serve(args.mirror)
    try:
        d = fetch("prd", url, work / "prd", [])
    finally:
        httpd.shutdown()
    out = work / "audit-prd"
    files = sorted((d / "data" / "vicuna80").glob("ratings-*"))
    return _declared(voirdire.audit(files, "prd", out=out).judgments, out)


def judgebench(args, work: Path) -> pl.DataFrame:
    """JudgeBench's two arena-hard judges, each file audited alone (``voirdire.audit``)."""
    import voirdire
    from perf.log_sources import fetch, serve

    httpd, url = serve(args.mirror)
    try:
        d = fetch("judgebench", url, work / "judgebench", ["--judge", "arena_hard"])
    finally:
        httpd.shutdown()
    files = sorted((d / "outputs").glob("*judge_name=arena_hard*.jsonl"))
    parts = [
        _declared(
            voirdire.audit([f], "judgebench", out=work / f"audit-jb-{i}").judgments,
            work / f"audit-jb-{i}",
        )
        for i, f in enumerate(files)
    ]
    # the two files judge different responses: one benchmark each, so each judge is its own study
    return pl.concat(
        [
            p.with_columns(benchmark=pl.lit(f"JudgeBench-{i}"))
            for i, p in enumerate(parts)
        ],
        how="diagonal_relaxed",
    )


def autoj(args, work: Path) -> pl.DataFrame:
    """Auto-J's example predictions (both orders) on its pairwise test data (``voirdire.audit``)."""
    import voirdire

    root = args.autoj / "data"
    files = [root / "test" / "testdata_pairwise.jsonl", root / "outputs" / "pairwise_example_output.jsonl",
             root / "outputs" / "pairwise_exchange_example_output.jsonl"]  # fmt: skip
    out = work / "audit-autoj"
    return _declared(voirdire.audit(files, "autoj", out=out).judgments, out)


def llmbar(args, work: Path) -> pl.DataFrame:
    """LLMBar's six evaluators (Vanilla prompt) on the five LLMBar sets, replayed."""
    import voirdire
    from voirdire.engine.spec import parse_job

    spec = parse_job({
        "name": "llmbar-six", "output_dir": str(work / "llmbar-six"),
        "benchmark": {"name": "llmbar", "subsets": ["LLMBar/Natural", "LLMBar/Adversarial/GPTInst",
                      "LLMBar/Adversarial/GPTOut", "LLMBar/Adversarial/Manual", "LLMBar/Adversarial/Neighbor"]},
        "judges": [{"name": j, "backend": "replay", "recorded": j} for j in LLMBAR_JUDGES],
    }, "llmbar-six")  # fmt: skip
    return voirdire.run(spec).judgments


#: name -> (reader, named models: a board exists)
RELEASES = {"pandalm": (pandalm, True), "prd": (prd, True), "autoj": (autoj, False),
            "llmbar": (llmbar, False), "judgebench": (judgebench, False)}  # fmt: skip
