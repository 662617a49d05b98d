"""Check the Bradley–Terry fit against statsmodels on replayed release directories.

    python -m perf.ranking_release_check DIR...   # e.g. outputs of examples/*_position_bias.toml
    python -m perf.ranking_release_check --smoke  # a simulated board

For every (benchmark, judge, strategy, view) board of the directories' judgments, the
ratings of :func:`~voirdire.analysis.ranking.bt.fit_bt` are compared with an independent fit:
statsmodels' ``Logit`` on the expanded design (one row per comparison and side: a win
``y = 1`` twice, a tie once ``1`` and once ``0``; a column ``+1``/``−1`` per model, the
anchor's column dropped). Prints the largest |Δθ| per board and overall (target < 1e-6).
Boards where some model has no finite maximum (statsmodels reports perfect separation, e.g.
the gate's) are listed as skipped.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import polars as pl
import statsmodels.api as sm

from voirdire.analysis.ranking.board_checks import default_anchor
from voirdire.analysis.ranking.bt import fit_bt
from voirdire.analysis.ranking.strengths import win_parts


def check(comps: pl.DataFrame) -> list[tuple[str, float | None]]:
    out = []
    for key, c in comps.group_by(
        ["benchmark", "judge", "strategy", "view"], maintain_order=True
    ):
        models = sorted(
            set(c.get_column("a").to_list()) | set(c.get_column("b").to_list())
        )
        ix = {m: i for i, m in enumerate(models)}
        anc = ix[default_anchor(c)]
        a = np.array([ix[m] for m in c.get_column("a").to_list()])
        b = np.array([ix[m] for m in c.get_column("b").to_list()])
        win, tie = c.get_column("win").to_numpy(), c.get_column("tie").to_numpy()
        k = len(models)
        w, t = np.zeros((k, k)), np.zeros((k, k))
        np.add.at(w, (a, b), win)
        np.add.at(w, (b, a), 1 - win - tie)
        np.add.at(t, (a, b), tie)
        np.add.at(t, (b, a), tie)
        ours = fit_bt(w, t, anchor=anc)
        x = np.zeros((2 * a.size, k))
        x[np.arange(a.size), a], x[np.arange(a.size), b] = 1.0, -1.0
        x[a.size + np.arange(a.size), a], x[a.size + np.arange(a.size), b] = 1.0, -1.0
        y = np.r_[win + tie, win]  # a win: 1 and 1; a tie: 1 and 0; a loss: 0 and 0
        name = " / ".join(key)
        if np.unique(win_parts(w[None], t[None])[0]).size > 1:  # no finite maximum
            out.append((name, None))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = (
                sm.Logit(y, np.delete(x, anc, axis=1))
                .fit(disp=0, tol=1e-12, maxiter=500, method="newton")
                .params
            )
        out.append((name, float(np.abs(np.delete(ours, anc) - ref).max())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke or not a.dirs:
        from tests.ranking_sim import round_robin

        comps = round_robin(np.linspace(-1, 1, 5), 20, np.random.default_rng(0))
    else:
        from voirdire.analysis.outputs import compute_dir
        from voirdire.analysis.ranking.order_views import order_views

        comps = pl.concat(
            [
                order_views(
                    compute_dir(d).judgments.filter(pl.col("mode") == "pairwise")
                )
                for d in a.dirs
            ]
        )
    res = check(comps)
    for name, d in res:
        print(
            f"{name:70s} {'skipped (no finite maximum)' if d is None else f'{d:.2e}'}"
        )
    done = [d for _, d in res if d is not None]
    print(
        f"largest |Δθ| over {len(done)} boards: {max(done):.2e} (target < 1e-6); {len(res) - len(done)} skipped"
    )


if __name__ == "__main__":
    main()
