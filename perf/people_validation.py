"""People's boards from a few labels, validated on every public release with people's or gold
labels on all pairs, and on a simulation with a known truth (``docs/people.md``).

    python -m perf.people_validation [--draws 500] [--shares 0.05,0.1,0.2] [--only pandalm,prd,...]
    python -m perf.people_validation --smoke      # the simulation at tiny sizes (CI); releases skipped

The judges' verdicts come through the product (:mod:`perf.people_releases`: ``voirdire.run``
replaying recorded judges, ``voirdire.audit`` on fetched logs). Then, per judge, the full
labels are the truth (people's score of every pair) and for each share all but that share are
hidden at random, ``--draws`` times:

- coverage of the 90 % intervals (PPI++) of the win rates and of the Bradley–Terry board
  (named models only), mean and least over the models, and of the rank sets (all models at
  once, Chatzi et al.), against the full-label estimates;
- the width of PPI++'s interval against people alone on the same labels (median over draws
  of the mean ratio of standard errors over the models);
- the selective judge (the product's confidence, ``auto``) at agreement 0.8 and 0.9 (δ 0.1):
  the share of draws whose kept pairs agree with people at least that much over all pairs
  (the guarantee's coverage; a draw keeping nothing holds it), the mean agreement and share
  kept.

The simulation draws a new study from Bradley–Terry strengths for every draw (people's labels
with ties, a judge with order bias, :mod:`tests.people_simulate`) and checks coverage of the
model's own win rates and strengths (the super-population truth) exactly.
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
    design,
    interval,
    win_rate_estimate,
)
from voirdire.analysis.people.pairs import judge_pairs, with_confidence, with_labels
from voirdire.analysis.people.rank_sets import point_ranks, rank_sets
from voirdire.analysis.people.selective import fixed_sequence
from voirdire.analysis.people.study import _auto_confidence
from voirdire.analysis.position.gold import gold_grading

LEVEL, DELTA, TARGETS = 0.9, 0.1, (0.7, 0.8, 0.9)


def _cover(est, truth, n_model, skip=None):
    """Whether each coordinate's interval (the product's, :func:`interval`: win rates with
    the jackknife covariance, boards with HC1) holds the truth."""
    board = skip is not None
    lo, hi, _, _ = interval(
        est, n_model, LEVEL, n_model.size - 1 if board else None, unbiased=board
    )
    hit = (lo <= truth) & (truth <= hi)
    return np.delete(hit, skip) if skip is not None else hit


def _ratio(est, people, skip=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(np.diag(est.cov)) / np.sqrt(np.diag(people.cov))
    r = np.delete(r, skip) if skip is not None else r
    return np.nanmean(np.where(np.isfinite(r), r, np.nan))


def validate(
    pairs: pl.DataFrame, named: bool, shares, draws: int, seed: int
) -> list[dict]:
    """The figures of the module docstring for one judge's pairs (every pair labelled)."""
    models, a, b = design(pairs)
    k, y, yhat = len(models), pairs["y"].to_numpy(), pairs["yhat"].to_numpy()
    conf, agree = pairs["confidence"].to_numpy(), pairs["agree"].to_numpy()
    every = np.ones(y.size, dtype=bool)
    true_wr = win_rate_estimate(a, b, y, yhat, every, k, 0.0).theta
    anc = int(np.argmax(np.bincount(np.r_[a, b], minlength=k)))
    true_bt = bt_estimate(a, b, y, yhat, every, k, anc, 0.0).theta if named else None
    judge_wr = win_rate_estimate(a, b, yhat, yhat, every, k, 0.0, jackknife=True)
    n_all = np.bincount(np.r_[a, b], minlength=k)
    rng, out = np.random.default_rng(seed), []
    for share in shares:
        acc: dict[str, list] = {
            x: [] for x in ("wr", "bt", "rs_wr", "rs_bt", "w_wr", "w_bt", "judge")
        }
        sel = {t: [] for t in TARGETS}
        n = max(1, round(share * y.size))
        for _ in range(draws):
            lab = np.zeros(y.size, dtype=bool)
            lab[rng.choice(y.size, n, replace=False)] = True
            wr, wr0 = (
                win_rate_estimate(a, b, y, yhat, lab, k, jackknife=True),
                win_rate_estimate(a, b, y, yhat, lab, k, 0.0, jackknife=True),
            )
            nm = np.bincount(np.r_[a[lab], b[lab]], minlength=k)
            acc["wr"].append(_cover(wr, true_wr, nm))
            acc["w_wr"].append(_ratio(wr, wr0))
            _, lo, hi = rank_sets(
                np.nan_to_num(wr.theta),
                np.nan_to_num(interval(wr, nm, LEVEL, unbiased=False)[3]),
                LEVEL,
            )
            acc["rs_wr"].append(
                np.all((lo <= point_ranks(true_wr)) & (point_ranks(true_wr) <= hi))
            )
            acc["judge"].append(_cover(judge_wr, true_wr, n_all))
            if named:
                bt, bt0 = (
                    bt_estimate(a, b, y, yhat, lab, k, anc),
                    bt_estimate(a, b, y, yhat, lab, k, anc, 0.0),
                )
                acc["bt"].append(_cover(bt, true_bt, nm, anc))
                acc["w_bt"].append(_ratio(bt, bt0, anc))
                _, lo, hi = rank_sets(
                    bt.theta, interval(bt, nm, LEVEL, k - 1)[3], LEVEL, k - 1
                )
                acc["rs_bt"].append(
                    np.all((lo <= point_ranks(true_bt)) & (point_ranks(true_bt) <= hi))
                )
            for t in TARGETS:
                th = fixed_sequence(conf[lab], agree[lab], 1 - t, DELTA)
                keep = conf >= th
                ag = agree[keep].mean() if keep.any() else np.nan
                sel[t].append((keep.mean(), ag, (not keep.any()) or ag >= t))
        row = {"share": share, "labels": n, "pairs": y.size, "models": k}
        per_model = np.mean(acc["wr"], axis=0)
        row |= {"cov_wr": per_model.mean(), "cov_wr_min": per_model.min(), "rankset_wr": np.mean(acc["rs_wr"]),
                "width_wr": float(np.nanmedian(acc["w_wr"])), "judge_cov_wr": np.mean(acc["judge"])}  # fmt: skip
        if named:
            per_model = np.mean(acc["bt"], axis=0)
            row |= {"cov_bt": per_model.mean(), "cov_bt_min": per_model.min(), "rankset_bt": np.mean(acc["rs_bt"]),
                    "width_bt": float(np.nanmedian(acc["w_bt"]))}  # fmt: skip
        for t in TARGETS:
            s = np.array(sel[t], dtype=float)
            row |= {f"guar_{t}": s[:, 2].mean(), f"agree_{t}": np.nanmean(s[:, 1]) if np.isfinite(s[:, 1]).any() else np.nan,
                    f"kept_{t}": s[:, 0].mean()}  # fmt: skip
        out.append(row)
    return out


def judge_tables(judgments: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Every judge's pairs with the full labels and the product's automatic confidence,
    restricted to the labelled pairs (the releases label all, PRD's people all but a few)."""
    pairs = with_labels(judge_pairs(judgments), gold_grading(judgments))
    source = _auto_confidence(pairs)
    pairs = with_confidence(pairs, judgments, source).filter(pl.col("y").is_not_null())
    return pairs, source


def run_release(
    name: str, judgments: pl.DataFrame, named: bool, args, rows: list[dict]
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
    ap.add_argument("--shares", default="0.05,0.1,0.2")
    ap.add_argument(
        "--only",
        default=",".join(["simulation", *RELEASES]),
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
    names = [n for n in only if n in RELEASES]
    if args.smoke or not names:
        return
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for name in names:
            reader, named = RELEASES[name]
            run_release(name, reader(args, work), named, args, rows)
            print(
                pl.DataFrame(rows).filter(pl.col("release") == name).write_csv(),
                flush=True,
            )
        import ray

        ray.shutdown()
    table = pl.DataFrame(rows)
    _show(
        f"Releases: the full labels as truth, all but a share hidden ({args.draws} draws; nominal {LEVEL:.0%})",
        table,
    )
    if args.out:
        table.write_csv(args.out / "people_releases.csv")


if __name__ == "__main__":
    main()
