"""The CALM bias suite on the engine: perturbations as a unit dimension, rewriters, the
simulated judge's susceptibilities, resume after a killed driver (docs/biases.md)."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
import tomllib

import numpy as np
import polars as pl
import pytest
import tomli_w
from scipy.stats import binomtest

from voirdire.analysis.results_dir import load_judgments
from voirdire.core import ConfigError, content_hash
from voirdire.engine.plan import plan_job
from voirdire.engine.prompts import PromptCache
from voirdire.engine.rewrite import rewrite_store
from voirdire.engine.spec import parse_job
from voirdire.engine.store import ResultStore
from voirdire.engine.units import iter_unit_batches

REPO = pathlib.Path(__file__).resolve().parents[1]
OFFLINE = REPO / "examples" / "bias_suite_offline.toml"


def job_dict(tmp_path, **over):
    d = {
        "name": "t",
        "output_dir": str(tmp_path / "out"),
        "benchmark": {
            "name": "mtbench",
            "questions": ["81", "82", "130"],
            "candidates": ["gpt-4", "alpaca-13b"],
        },
        "comparison": {"repetitions": 2},
        "judges": [
            {"name": "r", "backend": "replay", "recorded": "gpt-4-0613"},
            {"name": "s", "backend": "simulated", "primacy": 0.7},
        ],
    }
    d.update(over)
    if d.get("perturbations") and d["judges"][0]["backend"] == "replay":
        d["judges"] = [
            {"name": "s", "backend": "simulated", "primacy": 0.7},
            {"name": "s2", "backend": "simulated", "seed": 3},
        ]
    return d


def units(job, plan, needs_prompt=True, rewrites=None):
    out = []
    for rj in plan.judges:
        for b in iter_unit_batches(
            plan.bench,
            plan.instances,
            job.comparison,
            judge=rj.name,
            identity_hash=rj.identity_hash,
            needs_prompt=needs_prompt,
            batch_size=7,
            prompts=PromptCache(plan.bench),
            variants=plan.variants,
            rewrites=rewrites,
        ):
            out += [
                {
                    **{k: v[i] for k, v in b.columns.items()},
                    "prompt": q.prompt,
                    "query": q,
                }
                for i, q in enumerate(b.queries)
            ]
    return out


def test_unit_ids_and_prompts_unchanged_without_perturbations(tmp_path, data_dir):
    """A job without [[perturbations]] has the ids and prompts of before the bias suite
    (pinned: computed on main before this change), so resume and replay keep working."""
    job = parse_job(job_dict(tmp_path))
    got = units(job, plan_job(job))
    assert len(got) == 48
    assert (
        content_hash(*[u["unit_id"] for u in got]) == "68a92867b2b419a27c4b6325efa9be18"
    )
    assert (
        content_hash(*[u["prompt"] for u in got]) == "c4aa145fca97cf3b89ba63f146d1461d"
    )
    assert {u["perturbation"] for u in got} == {"control"} and {
        u["target"] for u in got
    } == {None}
    # the same job with perturbations (simulated judges: replay cannot answer them): the
    # control units of judge "s" are exactly its units above
    pj = parse_job(
        job_dict(
            tmp_path,
            perturbations=[{"kind": "bandwagon", "shares": [80]}, {"kind": "cot"}],
        )
    )
    with_p = units(pj, plan_job(pj))
    assert len(with_p) == 3 * 48 == plan_job(pj).units_per_judge * 2
    assert len({u["unit_id"] for u in with_p}) == len(with_p)
    sim = [u["unit_id"] for u in got if u["judge"] == "s"]
    assert [
        u["unit_id"]
        for u in with_p
        if u["judge"] == "s" and u["perturbation"] == "control"
    ] == sim


def test_variants_expand_and_prompts_carry_them(tmp_path, data_dir):
    d = job_dict(
        tmp_path,
        perturbations=[
            {
                "kind": "bandwagon",
                "target": ["candidate", "slot:B"],
                "shares": [60, 90],
            },
            {"kind": "diversity", "identities": ["female"]},
            {"kind": "compassion_fade"},
            {"kind": "distraction", "target": "better", "statements": ["jazz"]},
        ],
        benchmark={**job_dict(tmp_path)["benchmark"], "quality": "simulated:s"},
    )
    job = parse_job(d)
    plan = plan_job(job)
    labels = [v.label for v in plan.variants]
    assert labels == [
        "control",
        "bandwagon:share=60:target=candidate",
        "bandwagon:share=60:target=slot:B",
        "bandwagon:share=90:target=candidate",
        "bandwagon:share=90:target=slot:B",
        "diversity:identity=female:target=candidate",
        "compassion_fade",
        "distraction:statement=jazz:target=better",
    ]
    got = units(job, plan)
    assert len(got) == 2 * plan.units_per_judge == 2 * 6 * 2 * 2 * len(labels)
    bench = plan.bench
    for u in got:
        shown = u["shown"]
        base = bench.build_prompt(u["question_id"], tuple(shown), 3)
        if u["perturbation"] == "control":
            assert u["prompt"] == base and u["query"].perturbation_kind is None
            continue
        assert (
            u["query"].perturbation_kind == u["perturbation_kind"]
            and u["query"].control_query_id
        )
        assert u["query"].target_slot == u["target_slot"]
        if u["target"] is not None:
            assert (
                shown["AB".index(u["target_slot"])] == u["target"]
            )  # the slot letter matches `shown`
        label = f"Assistant {u['target_slot']}"
        if u["perturbation_kind"] == "bandwagon":
            assert (
                f"{u['perturbation_param']}% of people believe that {label} is better in this question."
                in u["prompt"]
            )
            if u["target_rule"] == "slot:B":
                assert u["target_slot"] == "B"
            else:
                assert u["target"] == u["candidate"]
        elif u["perturbation_kind"] == "diversity":
            assert f"{label}'s true identity is female." in u["prompt"]
        elif u["perturbation_kind"] == "distraction":
            assert (
                u["target"] == u["better"]
                and f"{label} likes to listen to jazz" in u["prompt"]
            )
        elif u["perturbation_kind"] == "compassion_fade":
            assert (
                f"### Assistant A ({shown[0]}):" in u["prompt"] and u["target"] is None
            )
        # the sentence sits after the instructions, before the first block, and nothing else moved
        head, _, rest = u["prompt"].partition("\n\n<|The Start of ")
        assert base.partition("\n\n<|The Start of ")[0] in head
    # the better candidate is the simulated judge's latent best (same for every order)
    assert {u["better"] for u in got} <= {"gpt-4", "alpaca-13b", "vicuna-13b-v1.3"}


@pytest.mark.parametrize(
    "change, match",
    [
        (
            {"perturbations": [{"kind": "flattery"}]},
            "unknown perturbation kind 'flattery'",
        ),
        ({"perturbations": [{"kind": "authority"}]}, "needs a rewriter"),
        (
            {"perturbations": [{"kind": "authority", "rewriter": "nope"}]},
            "rewriter 'nope' is not a \\[\\[rewriters\\]\\]",
        ),
        (
            {"perturbations": [{"kind": "bandwagon", "target": "slot:C"}]},
            "target 'slot:C' does not exist",
        ),
        (
            {"perturbations": [{"kind": "bandwagon", "target": "best"}]},
            "target 'best' does not exist",
        ),
        (
            {"perturbations": [{"kind": "bandwagon", "target": "worse"}]},
            "needs a quality source",
        ),
        (
            {"perturbations": [{"kind": "cot", "target": "better"}]},
            "'cot' has no target",
        ),
        (
            {"perturbations": [{"kind": "bandwagon", "emotions": ["sad"]}]},
            "'emotions' is not a parameter",
        ),
        (
            {
                "perturbations": [
                    {"kind": "sentiment", "emotions": ["bored"], "rewriter": "t"}
                ],
                "rewriters": [{"name": "t", "backend": "simulated"}],
            },
            "unknown emotion 'bored'",
        ),
        (
            {
                "perturbations": [
                    {"kind": "fallacy", "target": "candidate", "rewriter": "t"}
                ],
                "rewriters": [{"name": "t", "backend": "template"}],
            },
            "cannot do 'fallacy'",
        ),
        (
            {
                "perturbations": [
                    {"kind": "sentiment", "target": "candidate", "rewriter": "t"}
                ],
                "rewriters": [{"name": "t", "backend": "template"}],
            },
            "cannot do 'sentiment'",
        ),
        (
            {"rewriters": [{"name": "t", "backend": "replay", "recorded": "x"}]},
            "cannot rewrite answers",
        ),
        (
            {
                "perturbations": [{"kind": "cot", "rewriter": "t"}],
                "rewriters": [{"name": "t", "backend": "template"}],
            },
            "rewrites no answer",
        ),
        (
            {"perturbations": [{"kind": "cot", "strength": 2}]},
            "'strength' is not a parameter of this kind",
        ),
        ({"perturbations": [{"kind": "cot"}, {"kind": "cot"}]}, "listed twice"),
        (
            {
                "perturbations": [{"kind": "cot"}],
                "judges": [
                    {"name": "r", "backend": "replay", "recorded": "gpt-4-0613"}
                ],
            },
            "cannot answer perturbations",
        ),
        (
            {
                "judges": [
                    {
                        "name": "s",
                        "backend": "simulated",
                        "susceptibility": {"charm": 0.2},
                    }
                ]
            },
            "unknown perturbation kind 'charm'",
        ),
        (
            {
                "benchmark": {"name": "mtbench", "quality": "simulated:nobody"},
                "perturbations": [{"kind": "bandwagon", "target": "worse"}],
            },
            "not a simulated judge",
        ),
    ],
)
def test_bad_perturbations_are_config_errors(tmp_path, data_dir, change, match):
    d = job_dict(tmp_path, judges=[{"name": "s", "backend": "simulated"}])
    d.update(change)
    with pytest.raises(ConfigError, match=match):
        plan_job(parse_job(d))
    assert not (tmp_path / "out").exists()  # nothing was started


def test_listwise_targets(tmp_path, data_dir):
    d = job_dict(
        tmp_path,
        comparison={"mode": "listwise", "list_size": 3, "permutations": "cyclic"},
        benchmark={
            "name": "mtbench",
            "questions": ["81"],
            "candidates": ["gpt-4", "alpaca-13b", "claude-v1", "llama-13b"],
            "lists_per_question": 2,
        },
        judges=[{"name": "s", "backend": "simulated"}],
    )
    with pytest.raises(ConfigError, match="only in pairwise"):
        plan_job(parse_job({**d, "perturbations": [{"kind": "bandwagon"}]}))
    job = parse_job(
        {
            **d,
            "perturbations": [
                {"kind": "bandwagon", "target": "slot:C", "shares": [70]}
            ],
        }
    )
    plan = plan_job(job)
    got = units(job, plan)
    pert = [u for u in got if u["perturbation"] != "control"]
    assert len(pert) == len(got) // 2 == 2 * 3  # 2 lists x 3 cyclic orders
    assert all(
        u["target"] == u["shown"][2]
        and "70% of people believe that Assistant C" in u["prompt"]
        for u in pert
    )


def test_template_rewriter_texts():
    from voirdire.benchmarks.prompt_edits import original_of, rewrite_prompt
    from voirdire.judges.rewriters import CITATIONS, add_citation, lengthen

    answer = "First paragraph.\n\nSecond paragraph."
    p = rewrite_prompt("authority", "book", "Why?", answer)
    assert original_of(p) == answer
    cited = add_citation(answer, "book")
    assert cited.startswith("First paragraph. (") and cited.endswith(
        "\n\nSecond paragraph."
    )
    assert (
        any(c in cited for c in CITATIONS["book"])
        and add_citation(answer, "book") == cited
    )
    long = lengthen(answer, 3.0)
    assert (
        long.startswith(answer)
        and len(long) >= 3 * len(answer)
        and "[Restated for completeness]" in long
    )


def _mcnemar_delta(df: pl.DataFrame) -> tuple[float, float, float]:
    """(Δ, 99 % bootstrap CI bounds over questions, exact McNemar p) on paired rows with
    columns question_id, w_c, w_p (target wins: 1, tie 0.5, loses 0)."""
    d = (df["w_p"] - df["w_c"]).to_numpy()
    up, down = int((d > 0).sum()), int((d < 0).sum())
    p = binomtest(up, up + down, 0.5).pvalue if up + down else 1.0
    per_q = df.group_by("question_id", maintain_order=True).agg(
        (pl.col("w_p") - pl.col("w_c")).sum().alias("s"), pl.len().alias("n")
    )
    rng = np.random.default_rng(0)
    s, n = per_q["s"].to_numpy(), per_q["n"].to_numpy()
    boots = [
        s[i].sum() / n[i].sum()
        for i in (rng.integers(0, len(s), len(s)) for _ in range(2000))
    ]
    lo, hi = np.percentile(boots, [0.5, 99.5])
    return float(d.mean()), float(lo), float(hi), p  # type: ignore[return-value]


def test_offline_suite_end_to_end(tmp_path, data_dir, ray_local):
    """The offline example: columns and values, rewrites with provenance, and the quick
    sanity check of the directional effect: Δ ≈ 0 for the robust judge, Δ > 0 (p < 0.01)
    for the susceptible judge's kinds, RR ≈ CR for the robust judge."""
    import voirdire

    d = tomllib.loads(OFFLINE.read_text())
    d["output_dir"] = str(tmp_path / "out")
    job = parse_job(d, str(OFFLINE))
    outcome = voirdire.run(job, show_progress=False)
    j = load_judgments(outcome.output_dir)
    plan = plan_job(job)
    assert j.height == 2 * plan.units_per_judge and j["unit_id"].n_unique() == j.height
    assert set(j["perturbation_kind"]) == {
        "control",
        "bandwagon",
        "distraction",
        "diversity",
        "compassion_fade",
        "cot",
        "refinement_aware",
        "authority",
        "verbosity",
    }
    t = j.filter(pl.col("target").is_not_null())
    slot_model = pl.col("shown").list.get(
        pl.col("target_slot").replace_strict({"A": 0, "B": 1}, return_dtype=pl.Int64)
    )
    assert t.select((slot_model == pl.col("target")).all()).item()
    assert (
        j.filter(pl.col("perturbation") == "control")
        .select(
            pl.col("target").is_null().all()
            & pl.col("perturbation_param").is_null().all()
        )
        .item()
    )
    worse = j.filter(pl.col("target_rule") == "worse")
    assert (worse["target"] != worse["better"]).all() and j["better"].null_count() == 0
    # perturbed prompts are longer than their control (instruction sentence, rewritten answer)
    ctl = j.filter(pl.col("perturbation") == "control").select(
        "judge",
        "instance_id",
        "permutation",
        "repetition",
        pl.col("prompt_chars").alias("pc0"),
    )
    longer = j.filter(pl.col("perturbation") != "control").join(
        ctl, on=["judge", "instance_id", "permutation", "repetition"]
    )
    assert (longer["prompt_chars"] > longer["pc0"]).all()
    # rewrites: stored with provenance, citations and lengthening as labelled
    rw = rewrite_store(outcome.output_dir).read_raw()
    assert (
        rw.height == rw["unit_id"].n_unique() > 0
        and rw["failure"].null_count() == rw.height
    )
    assert set(rw["kind"]) == {"authority", "verbosity"} and set(rw["rewriter"]) == {
        "tmpl"
    }
    assert all(
        o.startswith(orig.split("\n\n")[0])
        for o, orig in zip(rw["output"], rw["original"])
    )
    assert (
        rw.filter(pl.col("kind") == "verbosity")["output"].str.len_chars()
        >= 2 * rw.filter(pl.col("kind") == "verbosity")["original"].str.len_chars()
    ).all()
    assert rw["prompt"].str.contains("[The Start of Response]", literal=True).all()

    # quick sanity check of the directional effect (the analysis stage computes it properly)
    win = lambda c: (  # noqa: E731
        pl.when(pl.col(c) == pl.col("target"))
        .then(1.0)
        .when(pl.col(c).is_null())
        .then(0.5)
        .otherwise(0.0)
    )  # noqa: E731
    control = j.filter(pl.col("perturbation") == "control").select(
        "judge",
        "instance_id",
        "permutation",
        "repetition",
        pl.col("chosen").alias("chosen_c"),
    )
    pairs = t.join(
        control, on=["judge", "instance_id", "permutation", "repetition"]
    ).with_columns(w_c=win("chosen_c"), w_p=win("chosen"))
    sus = {"bandwagon", "distraction", "authority", "verbosity"}
    for (judge, kind), g in pairs.group_by("judge", "perturbation_kind"):
        delta, lo, hi, p = _mcnemar_delta(g)
        if judge == "robust" or kind not in sus:
            # ~17 null checks: McNemar (the percentile bootstrap is unreliable with a handful
            # of discordant pairs, so it is not asserted here; the analysis stage reports it)
            assert p > 0.001 and abs(delta) < 0.05, (judge, kind, delta, lo, hi, p)
        else:
            assert delta > 0 and lo > 0 and p < 0.01, (judge, kind, delta, lo, p)
    # RR of the robust judge is its CR (the noise floor), within sampling error
    rob = j.filter(pl.col("judge") == "robust")
    c = rob.filter(pl.col("perturbation") == "control")
    cr = (
        c.pivot("repetition", index=["instance_id", "permutation"], values="chosen")
        .select(pl.col("1").eq_missing(pl.col("2")).mean())
        .item()
    )
    rr = (
        pairs.filter(pl.col("judge") == "robust")
        .select(pl.col("chosen").eq_missing(pl.col("chosen_c")).mean())
        .item()
    )
    assert abs(rr - cr) < 0.05, (rr, cr)
    # cot: the susceptible judge picks the better answer more often when told to reason
    cot = (
        j.filter(
            pl.col("judge") == "susceptible",
            pl.col("perturbation_kind").is_in(["control", "cot"]),
        )
        .group_by("perturbation_kind")
        .agg((pl.col("chosen") == pl.col("better")).mean().alias("acc"))
    )
    acc = dict(cot.iter_rows())
    expected = acc["control"] + 0.3 * (
        1 - acc["control"]
    )  # susceptibility cot = 0.3: the best answer w.p. 0.3
    assert acc["cot"] > acc["control"] and abs(acc["cot"] - expected) < 0.04, (
        acc,
        expected,
    )


def _write_toml(path: pathlib.Path, d: dict) -> None:
    path.write_text(tomli_w.dumps(d))


@pytest.mark.slow
@pytest.mark.process
def test_killed_driver_mid_suite_rewrites_and_asks_nothing_twice(tmp_path, data_dir):
    """SIGKILL the driver during the rewrite stage, then (a judge kills it) during judging;
    each rerun keeps what was saved: no answer is rewritten twice, no unit asked twice."""
    d = job_dict(tmp_path)
    d["benchmark"] = {
        "name": "mtbench",
        "max_instances": 30,
        "quality": "simulated:sim",
    }
    d["comparison"] = {"repetitions": 1}
    d["run"] = {"batch_size": 4, "flush_seconds": 0.01}
    d["rewriters"] = [
        {"name": "rw", "backend": "simulated", "latency_s": 0.15, "concurrency": 1}
    ]
    d["perturbations"] = [
        {"kind": "sentiment", "emotions": ["sad", "angry"], "rewriter": "rw"},
        {"kind": "bandwagon", "shares": [80], "target": "worse"},
    ]
    d["judges"] = [
        {
            "name": "sim",
            "backend": "tests.backends:CrashingSimulated",
            "kill_driver_after": 150,
            "concurrency": 1,
            "susceptibility": {"bandwagon": 0.5},
        }
    ]  # fault injection: a test-only backend
    job_path = tmp_path / "job.toml"
    _write_toml(job_path, d)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    cmd = [sys.executable, "-m", "voirdire", "run", str(job_path), "--no-progress"]
    rstore = rewrite_store(tmp_path / "out")
    # 1. killed during the rewrite stage (from outside, once some rewrites are saved)
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and rstore.read_raw(["unit_id"]).height < 8:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    before = rstore.read_raw()
    total_rewrites = (
        plan_job(parse_job(tomllib.loads(job_path.read_text())))
        .rewrites["unit_id"]
        .n_unique()
    )
    assert 8 <= before.height < total_rewrites, (before.height, total_rewrites)
    # 2. rerun: the rewrite stage finishes, then the judge kills the driver mid-judging
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == -9, second.stdout + second.stderr
    after = rstore.read_raw()
    assert after.height == after["unit_id"].n_unique() == total_rewrites
    kept = after.join(
        before.select("unit_id", "finished_at"), on="unit_id", suffix="_before"
    )
    assert (
        kept.height == before.height
        and (kept["finished_at"] == kept["finished_at_before"]).all()
    )
    saved = ResultStore(tmp_path / "out").read_raw()
    assert 0 < saved.height and saved["unit_id"].n_unique() == saved.height
    # 3. rerun without the fault: every unit once, the saved ones not asked again
    d["judges"][0].pop(
        "kill_driver_after"
    )  # faults are not part of the judge's identity:
    d["judges"][0]["backend"] = "simulated"  # the plain judge asks the same units
    _write_toml(job_path, d)
    third = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stdout + third.stderr
    n = plan_job(parse_job(tomllib.loads(job_path.read_text()))).units_per_judge
    final = load_judgments(tmp_path / "out")
    assert final.height == n == final["unit_id"].n_unique()
    assert f"{n - saved.height:,} queries in" in third.stdout
    kept = final.join(
        saved.select("unit_id", "finished_at"), on="unit_id", suffix="_before"
    )
    assert (
        kept.height == saved.height
        and (kept["finished_at"] == kept["finished_at_before"]).all()
    )
    end = rstore.read_raw()
    assert (
        end.height == total_rewrites
        and (
            end.sort("unit_id")["finished_at"] == after.sort("unit_id")["finished_at"]
        ).all()
    )


def test_quality_sources_replay_and_labels(tmp_path, data_dir):
    """replay: the release judge's verdicts that agree in both orders; labels: a CSV. Units
    of better/worse variants exist only where the better candidate is known."""
    d = job_dict(
        tmp_path,
        perturbations=[{"kind": "bandwagon", "target": "worse", "shares": [80]}],
        benchmark={
            "name": "mtbench",
            "quality": "replay:gpt-4-0613",
            "candidates": ["gpt-4", "llama-13b"],
        },
    )
    plan = plan_job(parse_job(d))
    inst = plan.instances
    known = inst.filter(pl.col("better").is_not_null())
    assert 0 < known.height < inst.height
    # GPT-4's answers beat vicuna-13b's in almost every pair GPT-4-0613 judged consistently
    share = (
        known.filter(pl.col("candidate") == "gpt-4")
        .select((pl.col("better") == "gpt-4").mean())
        .item()
    )
    assert share > 0.9
    assert (known["worst"] != known["better"]).all()
    assert (
        plan.units_per_judge == (inst.height + known.height) * 2 * 2
    )  # 2 orders x 2 repetitions
    labels = tmp_path / "labels.csv"
    pl.DataFrame(
        {"instance_id": ["81;gpt-4;vicuna-13b-v1.3"], "better": ["gpt-4"]}
    ).write_csv(labels)
    d["benchmark"]["quality"] = f"labels:{labels}"
    plan = plan_job(parse_job(d))
    assert plan.instances["better"].drop_nulls().to_list() == ["gpt-4"]
    pl.DataFrame(
        {"instance_id": ["81;gpt-4;vicuna-13b-v1.3"], "better": ["claude-v1"]}
    ).write_csv(labels)
    with pytest.raises(ConfigError, match="not a candidate"):
        plan_job(parse_job(d))


def test_failed_rewrite_stops_before_judging(tmp_path, data_dir):
    """A rewrite recorded as failed (or missing) raises RewriteFailed: no perturbed unit is
    judged on a missing rewrite; the failure stays recorded for the rerun to retry."""
    from voirdire.engine.rewrite import RewriteFailed, rewrites_for_units
    from voirdire.engine.worker import results_to_columns
    from voirdire.judges.base import Result

    d = job_dict(
        tmp_path,
        perturbations=[
            {
                "kind": "authority",
                "target": "candidate",
                "citations": ["url"],
                "rewriter": "t",
            }
        ],
        rewriters=[{"name": "t", "backend": "simulated"}],
    )
    plan = plan_job(parse_job(d))
    store = rewrite_store(tmp_path / "out", flush_rows=1)
    with pytest.raises(RewriteFailed, match="not done"):
        rewrites_for_units(plan.bench, plan.rewrites, store)
    from voirdire.engine.rewrite import iter_rewrite_batches

    for b in iter_rewrite_batches(plan.rewrites, "t", 100):
        res = [Result(unit_id=q.unit_id, output="rewritten") for q in b.queries]
        res[0] = Result.failed(b.queries[0].unit_id, "server_error", "boom")
        store.append("t", store.to_table(b.columns, results_to_columns(b.queries, res)))
    store.flush()
    with pytest.raises(RewriteFailed, match="boom"):
        rewrites_for_units(plan.bench, plan.rewrites, store)
    assert store.completed_ids("t", include_failures=False) == set(
        plan.rewrites["unit_id"][1:]
    )
