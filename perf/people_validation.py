"""Human boards from a few labels, validated on every public release with human or gold
labels on all pairs, and on a simulation with a known truth (``docs/people.md``).

    python -m perf.people_validation [--draws 500] [--shares 0.05,0.1,0.2,1] [--unit question|pair]
                                     [--only simulation,clustered,pandalm,prd,...]
    python -m perf.people_validation --smoke      # the simulations at tiny sizes (CI); releases skipped

The judges' verdicts come through the product (:mod:`perf.people_releases`: ``voirdire.run``
replaying recorded judges, ``voirdire.audit`` on fetched logs, with the questions the
benchmark declares: PandaLM's instructions, the audits' questions). Then, per judge, the full
labels are the truth and, ``--draws`` times per share:

- ``--unit question`` (default): the release's questions are drawn with replacement (a
  question drawn twice is two), all but the share of the labels hidden at random, and the
  intervals clustered by question (the product's default) checked against the full-label
  estimate on the questions at hand: the population the resampled studies come from (a
  team's next study asks new questions). ``--unit pair``: the pairs kept, the intervals
  unclustered (the validation before issue 44);
- coverage of the 90 % intervals (PPI++) of the win rates and of the Bradley–Terry board
  (named models only), mean and least over the models, and of the rank sets (all models at
  once, Chatzi et al.);
- the width of PPI++'s interval against labels alone on the same labels (median over draws
  of the mean ratio of standard errors over the models);
- the selective judge (the product's confidence, ``auto``) at agreement 0.7, 0.8 and 0.9
  (δ 0.1), at test time (:func:`selective_draw`, :func:`selective_summary`): the agreement on
  the *unlabelled* pairs it keeps (the guarantee's quantity) and the share of draws at or above
  the target, with and without the draws that keep nothing; the share it keeps and how often
  it keeps nothing; the labelled slice's agreement apart (the calibration pairs: optimistic).

Two simulations with a known truth: ``simulation`` draws a new study from Bradley–Terry
strengths for every draw (pairs independent, :func:`tests.people_simulate.study`);
``clustered`` a round robin on every question with question effects
(:func:`tests.people_simulate.shared_questions`), new questions every study, the intervals
clustered and not.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy.special import expit

from perf.people_releases import RELEASES
from voirdire.analysis.people.boards import (
    bt_estimate,
    cluster_codes,
    cluster_dof,
    design,
    interval,
    win_rate_estimate,
)
from voirdire.analysis.people.pairs import judge_pairs, with_confidence, with_labels
from voirdire.analysis.people.rank_sets import point_ranks, rank_sets
from voirdire.analysis.people.selective import fixed_sequence
from voirdire.analysis.people.study import _auto_confidence, _with_clusters
from voirdire.analysis.position.gold import gold_grading

LEVEL, DELTA, TARGETS = 0.9, 0.1, (0.7, 0.8, 0.9)


def _cover(est, truth, n_model, skip=None, dof=None):
    """Whether each coordinate's interval (the product's, :func:`interval`: win rates with
    the jackknife covariance, boards with HC1; clustered: ``dof`` the clustered degrees of
    freedom) holds the truth."""
    board = skip is not None
    lo, hi, _, _ = interval(
        est,
        n_model,
        LEVEL,
        n_model.size - 1 if board else None,
        unbiased=board,
        dof=dof,
    )
    hit = (lo <= truth) & (truth <= hi)
    return np.delete(hit, skip) if skip is not None else hit


def _ratio(est, people, skip=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(np.diag(est.cov)) / np.sqrt(np.diag(people.cov))
    r = np.delete(r, skip) if skip is not None else r
    return np.nanmean(np.where(np.isfinite(r), r, np.nan))


def _resample(
    clusters: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The questions drawn with replacement (as many as there are): the pairs' indices and
    each drawn copy's own cluster code (a question drawn twice is two questions)."""
    order = np.argsort(clusters, kind="stable")
    sizes = np.bincount(clusters)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    pick = rng.integers(0, sizes.size, sizes.size)
    idx = np.concatenate([order[starts[g] : starts[g] + sizes[g]] for g in pick])
    return idx, np.repeat(np.arange(pick.size), sizes[pick])


def validate(
    pairs: pl.DataFrame,
    named: bool,
    shares,
    draws: int,
    seed: int,
    unit: str = "question",
) -> list[dict]:
    """The figures of the module docstring for one judge's pairs (every pair labelled).

    ``unit="question"``: each draw resamples the questions (``cluster``, else
    ``question_id``) with replacement before hiding labels, and the intervals are clustered
    by question: the truth is the full-label estimate on the questions at hand, the
    population the resampled studies are drawn from (a team's next study: new questions).
    ``unit="pair"``: the pairs kept, the intervals unclustered (the earlier validation).
    ``unit="naive"``: the questions resampled, the intervals unclustered (what the
    unclustered intervals cover of studies with new questions)."""
    models, a0, b0 = design(pairs)
    k, y0, yhat0 = len(models), pairs["y"].to_numpy(), pairs["yhat"].to_numpy()
    conf0, agree0 = pairs["confidence"].to_numpy(), pairs["agree"].to_numpy()
    cl0 = cluster_codes(
        pairs["cluster" if "cluster" in pairs.columns else "question_id"].to_numpy()
    )
    every0 = np.ones(y0.size, dtype=bool)
    true_wr = win_rate_estimate(a0, b0, y0, yhat0, every0, k, 0.0).theta
    anc = int(np.argmax(np.bincount(np.r_[a0, b0], minlength=k)))
    true_bt = (
        bt_estimate(a0, b0, y0, yhat0, every0, k, anc, 0.0).theta if named else None
    )
    rng, out = np.random.default_rng(seed), []
    clustered, resample = unit == "question", unit in ("question", "naive")
    for share in shares:
        acc: dict[str, list] = {
            x: [] for x in ("wr", "bt", "rs_wr", "rs_bt", "w_wr", "w_bt", "judge")
        }
        sel = {t: [] for t in TARGETS}
        for _ in range(draws):
            idx, c = _resample(cl0, rng) if resample else (np.arange(y0.size), None)
            c = c if clustered else None
            a, b, y, yhat = a0[idx], b0[idx], y0[idx], yhat0[idx]
            conf, agree = conf0[idx], agree0[idx]
            n = max(1, round(share * y.size))
            lab = np.zeros(y.size, dtype=bool)
            lab[rng.choice(y.size, n, replace=False)] = True
            every = np.ones(y.size, dtype=bool)
            dof = cluster_dof(a, b, lab, c, k) if clustered else None
            wr, wr0 = (
                win_rate_estimate(a, b, y, yhat, lab, k, jackknife=True, clusters=c),
                win_rate_estimate(
                    a, b, y, yhat, lab, k, 0.0, jackknife=True, clusters=c
                ),
            )
            nm = np.bincount(np.r_[a[lab], b[lab]], minlength=k)
            acc["wr"].append(_cover(wr, true_wr, nm, dof=dof))
            acc["w_wr"].append(_ratio(wr, wr0))
            _, lo, hi = rank_sets(
                np.nan_to_num(wr.theta),
                np.nan_to_num(interval(wr, nm, LEVEL, unbiased=False, dof=dof)[3]),
                LEVEL,
            )
            acc["rs_wr"].append(
                np.all((lo <= point_ranks(true_wr)) & (point_ranks(true_wr) <= hi))
            )
            judge_wr = win_rate_estimate(
                a, b, yhat, yhat, every, k, 0.0, jackknife=True, clusters=c
            )
            n_all = np.bincount(np.r_[a, b], minlength=k)
            acc["judge"].append(
                _cover(
                    judge_wr,
                    true_wr,
                    n_all,
                    dof=cluster_dof(a, b, every, c, k) if clustered else None,
                )
            )
            if named:
                bt, bt0 = (
                    bt_estimate(a, b, y, yhat, lab, k, anc, clusters=c),
                    bt_estimate(a, b, y, yhat, lab, k, anc, 0.0, clusters=c),
                )
                acc["bt"].append(_cover(bt, true_bt, nm, anc, dof=dof))
                acc["w_bt"].append(_ratio(bt, bt0, anc))
                _, lo, hi = rank_sets(
                    bt.theta, interval(bt, nm, LEVEL, k - 1, dof=dof)[3], LEVEL, k - 1
                )
                acc["rs_bt"].append(
                    np.all((lo <= point_ranks(true_bt)) & (point_ranks(true_bt) <= hi))
                )
            for t in TARGETS:
                sel[t].append(selective_draw(conf, agree, lab, t))
        row = {
            "unit": unit,
            "share": share,
            "labels": max(1, round(share * y0.size)),
            "pairs": y0.size,
            "questions": int(cl0.max()) + 1,
            "models": k,
        }
        per_model = np.mean(acc["wr"], axis=0)
        row |= {"cov_wr": per_model.mean(), "cov_wr_min": per_model.min(), "rankset_wr": np.mean(acc["rs_wr"]),
                "width_wr": float(np.nanmedian(acc["w_wr"])), "judge_cov_wr": np.mean(acc["judge"])}  # fmt: skip
        if named:
            per_model = np.mean(acc["bt"], axis=0)
            row |= {"cov_bt": per_model.mean(), "cov_bt_min": per_model.min(), "rankset_bt": np.mean(acc["rs_bt"]),
                    "width_bt": float(np.nanmedian(acc["w_bt"]))}  # fmt: skip
        for t in TARGETS:
            row |= selective_summary(sel[t], t)
        out.append(row)
    return out


def selective_draw(
    conf, agree, lab, target: float
) -> tuple[float, float, float, float]:
    """One draw of the selective judge at ``target`` (δ = :data:`DELTA`), the threshold
    calibrated on the labelled pairs (:func:`fixed_sequence`): ``(share of the unlabelled
    pairs kept, agreement on the unlabelled pairs kept (the guarantee's quantity; NaN when none
    is kept), agreement on the labelled pairs kept (the calibration slice), share of all pairs
    kept)``."""
    th = fixed_sequence(conf[lab], agree[lab], 1 - target, DELTA)
    keep = conf >= th
    test, cal = keep & ~lab, keep & lab
    return (
        test.sum() / max((~lab).sum(), 1),
        agree[test].mean() if test.any() else np.nan,
        agree[cal].mean() if cal.any() else np.nan,
        keep.mean(),
    )


def selective_summary(draws: list, target: float) -> dict:
    """Over the draws of :func:`selective_draw`: ``test_holds_T`` (the share of draws whose
    kept unlabelled pairs agree with people at least ``T``; a draw keeping none holds it),
    ``test_holds_kept_T`` (the same over the draws keeping some),
    ``test_agree_T`` (mean agreement on the kept unlabelled pairs, over the draws keeping
    some), ``lab_agree_T`` (on the kept labelled pairs: the calibration slice, optimistic),
    ``kept_T`` (mean share of the unlabelled pairs kept), ``none_T`` (share of draws keeping
    nothing)."""
    s = np.array(draws, dtype=float)
    some = np.isfinite(s[:, 1])
    with np.errstate(invalid="ignore"):
        holds = np.where(some, s[:, 1] >= target - 1e-12, True)
    return {
        f"test_holds_{target}": holds.mean(),
        f"test_holds_kept_{target}": holds[some].mean() if some.any() else np.nan,
        f"test_agree_{target}": np.nanmean(s[:, 1]) if some.any() else np.nan,
        f"lab_agree_{target}": np.nanmean(s[:, 2])
        if np.isfinite(s[:, 2]).any()
        else np.nan,
        f"kept_{target}": s[:, 0].mean(),
        f"none_{target}": 1 - some.mean(),
    }


def validate_cascade(
    pairs: pl.DataFrame, shares, draws: int, seed: int, unit: str = "question"
) -> list[dict]:
    """The cascade of one benchmark's judges at test time (Trust or Escalate §3.3, as
    :func:`~voirdire.analysis.people.cascade.run_cascade` runs it: the judges in the product's
    default order, by name for replayed logs without costs; each stage's threshold calibrated
    on the labelled pairs reaching it at δ/K), on the pairs every judge judged, the questions
    resampled as :func:`validate` does (``unit``). Per share and target: ``agree_T``, the
    agreement with people on the *unlabelled* pairs the judges decide; ``holds_T``, the share of
    draws where it is at least T (a draw deciding none holds it); ``judged_T``, the share of the
    pairs the judges decide (the rest go to people: ``to_people_T``); ``calls_T``, judge calls
    per pair (each stage's judge asked for the pairs reaching it)."""
    judges = sorted(pairs["judge"].unique().to_list())
    keys = ["question_id", "candidate", "reference"]
    wide = None
    for j in judges:
        part = pairs.filter(pl.col("judge") == j).select(*keys, "cluster", **{f"c{judges.index(j)}": "confidence",
                                                                           f"a{judges.index(j)}": "agree"})  # fmt: skip
        wide = (
            part
            if wide is None
            else wide.join(part.drop("cluster"), on=keys, how="inner")
        )
    wide = wide.sort(keys)
    conf = np.stack([wide[f"c{i}"].to_numpy() for i in range(len(judges))])
    agree = np.stack([wide[f"a{i}"].to_numpy() for i in range(len(judges))])
    cl0 = cluster_codes(wide["cluster"].to_numpy())
    rng, out, k = np.random.default_rng(seed), [], len(judges)
    for share in shares:
        acc = {t: [] for t in TARGETS}
        for _ in range(draws):
            idx, _ = (
                _resample(cl0, rng) if unit != "pair" else (np.arange(cl0.size), None)
            )
            c, a = conf[:, idx], agree[:, idx]
            lab = np.zeros(idx.size, dtype=bool)
            lab[
                rng.choice(idx.size, max(1, round(share * idx.size)), replace=False)
            ] = True
            for t in TARGETS:
                left, ok, calls = (
                    np.ones(idx.size, dtype=bool),
                    np.zeros(idx.size, dtype=bool),
                    0,
                )
                decided = np.zeros(idx.size, dtype=bool)
                for s in range(k):
                    calls += left.sum()
                    th = fixed_sequence(
                        c[s, left & lab], a[s, left & lab], 1 - t, DELTA / k
                    )
                    keep = left & (c[s] >= th)
                    ok |= keep & a[s]
                    decided |= keep
                    left &= ~keep
                test = decided & ~lab
                ag = ok[test].mean() if test.any() else np.nan
                acc[t].append((ag, decided.mean(), calls / idx.size))
        row = {
            "unit": unit,
            "share": share,
            "judges": ", ".join(judges),
            "pairs": cl0.size,
        }
        for t in TARGETS:
            v = np.array(acc[t], dtype=float)
            some = np.isfinite(v[:, 0])
            row |= {f"agree_{t}": np.nanmean(v[:, 0]) if some.any() else np.nan,
                    f"holds_{t}": np.where(some, v[:, 0] >= t - 1e-12, True).mean(),
                    f"judged_{t}": v[:, 1].mean(), f"to_people_{t}": 1 - v[:, 1].mean(),
                    f"calls_{t}": v[:, 2].mean()}  # fmt: skip
        out.append(row)
    return out


def judge_tables(judgments: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Every judge's pairs with the full labels and the product's automatic confidence,
    restricted to the labelled pairs (the releases label all, PRD's people all but a few)."""
    pairs = with_labels(judge_pairs(judgments), gold_grading(judgments))
    declared = (
        judgments.select("benchmark", "question_id", "cluster").unique()
        if "cluster" in judgments.columns
        else None
    )
    pairs = _with_clusters(pairs, declared)
    source = _auto_confidence(pairs)
    pairs = with_confidence(pairs, judgments, source).filter(pl.col("y").is_not_null())
    return pairs, source


def run_release(
    name: str,
    judgments: pl.DataFrame,
    named: bool,
    args,
    rows: list[dict],
    cascades: list[dict],
) -> None:
    pairs, source = judge_tables(judgments)
    for (_, judge), g in pairs.group_by("benchmark", "judge", maintain_order=True):
        t = time.perf_counter()
        for r in validate(
            g.sort("question_id", "candidate", "reference"),
            named,
            args.shares,
            args.draws,
            args.seed,
            args.unit,
        ):
            rows.append(
                {
                    "release": name,
                    "judge": judge,
                    "confidence": source,
                    "agreement_all": g["agree"].mean(),
                    **r,
                }
            )
        print(f"{name} / {judge}: {g.height} pairs, {args.draws} draws x {len(args.shares)} shares, "
              f"{time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
    for bench, g in pairs.group_by("benchmark", maintain_order=True):
        if g["judge"].n_unique() < 2:
            continue
        for r in validate_cascade(g, args.shares, args.draws, args.seed, args.unit):
            cascades.append({"release": name, "benchmark": bench[0], **r})


# ---------------------------------------------------------------------------- the known truth


def simulation(args) -> pl.DataFrame:
    """Coverage of the super-population truth (the generating model), a fresh study per draw."""
    from tests.people_simulate import study, truth

    k, tie, questions = 5, 0.1, 12 if args.smoke else 100
    strengths = np.linspace(0.8, -0.8, k)
    d = strengths[:, None] - strengths[None, :]
    true_wr = (((1 - tie) * expit(d) + tie / 2).sum(1) - 0.5) / (
        k - 1
    )  # against the k - 1 others
    # Bradley–Terry's truth: the population minimiser of its loss (a tie half a win), the
    # fit on the expected outcome of every pair of the balanced round robin; ties pull it
    # towards 0 from the strengths that generate the labels
    i, j = np.triu_indices(k, 1)
    p = (1 - tie) * expit(strengths[i] - strengths[j]) + tie / 2
    true_bt = bt_estimate(i, j, p, p, np.ones(i.size, dtype=bool), k, 0, 0.0).theta
    rng = np.random.default_rng(args.seed)
    hits = {s: {"wr": [], "bt": [], "rs": [], "w": []} for s in args.shares}
    for _ in range(args.draws):
        j = study(
            rng,
            k=k,
            questions=questions,
            strengths=strengths,
            tie=tie,
            judges={"j": (0.6, 0.75)},
        )
        p = with_labels(judge_pairs(j), truth(j))
        _, a, b = design(p)
        y, yhat = p["y"].to_numpy(), p["yhat"].to_numpy()
        for s in args.shares:
            lab = np.zeros(y.size, dtype=bool)
            lab[rng.choice(y.size, max(2, round(s * y.size)), replace=False)] = True
            wr = win_rate_estimate(a, b, y, yhat, lab, k, jackknife=True)
            nm = np.bincount(np.r_[a[lab], b[lab]], minlength=k)
            hits[s]["wr"].append(_cover(wr, true_wr, nm))
            hits[s]["w"].append(
                _ratio(
                    wr, win_rate_estimate(a, b, y, yhat, lab, k, 0.0, jackknife=True)
                )
            )
            bt = bt_estimate(a, b, y, yhat, lab, k, 0)
            hits[s]["bt"].append(_cover(bt, true_bt, nm, 0))
            _, lo, hi = rank_sets(
                bt.theta, interval(bt, nm, LEVEL, k - 1)[3], LEVEL, k - 1
            )
            hits[s]["rs"].append(
                np.all((lo <= np.arange(1, k + 1)) & (np.arange(1, k + 1) <= hi))
            )
    return pl.DataFrame([{
        "share": s, "pairs": y.size, "cov_wr": np.mean(h["wr"]), "cov_wr_min": np.mean(h["wr"], 0).min(),
        "cov_bt": np.mean(h["bt"]), "cov_bt_min": np.mean(h["bt"], 0).min(), "rankset_bt": np.mean(h["rs"]),
        "width_wr": float(np.nanmedian(h["w"])),
    } for s, h in hits.items()])  # fmt: skip


def clustered_simulation(args) -> pl.DataFrame:
    """Coverage of the population's truth when pairs share questions
    (:func:`tests.people_simulate.shared_questions`: a round robin of 5 models on every
    question, each question moving every model by ``N(0, 1.5²)``), new questions every study;
    the intervals clustered by question (the product's default) and not (``pair``)."""
    from tests.people_simulate import shared_questions, shared_questions_truth

    strengths, questions = np.linspace(0.6, -0.6, 5), 12 if args.smoke else 60
    true_wr, true_bt = shared_questions_truth(strengths)
    k, rng, rows = strengths.size, np.random.default_rng(args.seed), []
    hits = {
        (s, u): {"wr": [], "bt": [], "rs": []}
        for s in args.shares
        for u in ("question", "pair")
    }
    for _ in range(args.draws):
        q, a, b, y, yhat = shared_questions(rng, questions, strengths=strengths)
        for s in args.shares:
            lab = np.zeros(y.size, dtype=bool)
            lab[rng.choice(y.size, max(2, round(s * y.size)), replace=False)] = True
            nm = np.bincount(np.r_[a[lab], b[lab]], minlength=k)
            for unit, c in (("question", q), ("pair", None)):
                dof = cluster_dof(a, b, lab, c, k) if c is not None else None
                wr = win_rate_estimate(
                    a, b, y, yhat, lab, k, jackknife=True, clusters=c
                )
                hits[s, unit]["wr"].append(_cover(wr, true_wr, nm, dof=dof))
                bt = bt_estimate(a, b, y, yhat, lab, k, 0, clusters=c)
                hits[s, unit]["bt"].append(_cover(bt, true_bt, nm, 0, dof=dof))
                _, lo, hi = rank_sets(
                    bt.theta, interval(bt, nm, LEVEL, k - 1, dof=dof)[3], LEVEL, k - 1
                )
                hits[s, unit]["rs"].append(
                    np.all((lo <= point_ranks(true_bt)) & (point_ranks(true_bt) <= hi))
                )
    for (s, unit), h in hits.items():
        rows.append({"unit": unit, "share": s, "questions": questions, "pairs": questions * 10,
                     "cov_wr": np.mean(h["wr"]), "cov_wr_min": np.mean(h["wr"], 0).min(),
                     "cov_bt": np.mean(h["bt"]), "cov_bt_min": np.mean(h["bt"], 0).min(),
                     "rankset_bt": np.mean(h["rs"])})  # fmt: skip
    return pl.DataFrame(rows).sort("unit", "share")


def _show(title: str, df: pl.DataFrame) -> None:
    print(f"\n{title}")
    with pl.Config(tbl_rows=200, tbl_cols=40, float_precision=3, tbl_width_chars=400):
        print(df)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--smoke", action="store_true", help="the simulation at tiny sizes; no release"
    )
    ap.add_argument(
        "--draws",
        type=int,
        default=None,
        help="draws per share (default 500; smoke 20)",
    )
    ap.add_argument("--shares", default="0.05,0.1,0.2,1")
    ap.add_argument(
        "--unit",
        default="question",
        choices=["question", "pair", "naive"],
        help="question: resample the questions, intervals clustered (default); pair: the pairs kept, unclustered; "
        "naive: the questions resampled, intervals unclustered",
    )
    ap.add_argument(
        "--only",
        default=",".join(["simulation", "clustered", *RELEASES]),
        help="simulation and releases, comma-separated",
    )
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument(
        "--autoj",
        type=Path,
        default=Path("/work/data/autoj"),
        help="the user's copy of GAIR-NLP/auto-j",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--out", type=Path, default=None, help="write the tables as CSV here"
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="where to fetch and audit (default: a temporary one)",
    )
    args = ap.parse_args(argv)
    args.draws = args.draws or (20 if args.smoke else 500)
    args.shares = [float(s) for s in args.shares.split(",")]
    only = args.only.split(",")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    if "simulation" in only or args.smoke:
        t = time.perf_counter()
        sim = simulation(args)
        _show(
            f"Simulation with a known truth ({args.draws} studies per share; nominal {LEVEL:.0%})",
            sim,
        )
        print(f"simulation: {time.perf_counter() - t:.1f} s", flush=True)
        if args.out:
            sim.write_csv(args.out / "people_simulation.csv")
        floor = LEVEL - 3 * np.sqrt(LEVEL * (1 - LEVEL) / args.draws)
        if not args.smoke and sim.filter(pl.col("cov_wr") < floor).height:
            sys.exit(f"simulation coverage below {floor:.3f}")
    if "clustered" in only or args.smoke:
        t = time.perf_counter()
        sim = clustered_simulation(args)
        _show(
            f"Simulation, pairs sharing questions ({args.draws} studies per share; nominal {LEVEL:.0%})",
            sim,
        )
        print(f"clustered simulation: {time.perf_counter() - t:.1f} s", flush=True)
        if args.out:
            sim.write_csv(args.out / "people_simulation_clustered.csv")
    names = [n for n in only if n in RELEASES]
    if args.smoke or not names:
        return
    rows: list[dict] = []
    cascades: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for name in names:
            reader, named = RELEASES[name]
            run_release(name, reader(args, work), named, args, rows, cascades)
            print(
                pl.DataFrame(rows).filter(pl.col("release") == name).write_csv(),
                flush=True,
            )
        import ray

        ray.shutdown()
    if cascades:
        casc = pl.DataFrame(cascades)
        _show(
            f"The cascade at test time ({args.draws} draws; judges by name, then people)",
            casc,
        )
        if args.out:
            casc.write_csv(args.out / "people_cascade.csv")
    table = pl.DataFrame(rows)
    _show(
        f"Releases: the full labels as truth, all but a share hidden ({args.draws} draws; nominal {LEVEL:.0%})",
        table,
    )
    if args.out:
        table.write_csv(args.out / "people_releases.csv")


if __name__ == "__main__":
    main()
