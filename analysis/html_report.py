"""One self-contained HTML report of a :class:`~voirdire.analysis.study.Study`.

Figures are embedded as base64 PNG, styles and a 20-line table sorter are inline: the file
opens offline in any browser and can be mailed as is. Tables sort by clicking a header
(numbers numerically). Nothing in it names a key, a host or a path outside the output
directories.
"""

from __future__ import annotations

import base64
import html
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl
from voirdire.analysis.bias_report import bias_section
from voirdire.analysis.evaluation import report_section
from voirdire.analysis.report import write_study_markdown
from voirdire.analysis.study import MAX_ERROR, RS_MIN, Study, analyze_study, write_study

__all__ = ["render_html", "write_html", "html_table", "build_report"]

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1250px;padding:0 24px 60px;color:#222;line-height:1.45}
h1{margin-top:28px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:42px}h3{margin-top:26px}
table{border-collapse:collapse;margin:10px 0 18px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px}th{background:#f3f3f3;cursor:pointer;user-select:none;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}
tr.flag td{background:#fdecea}.note{color:#555;font-size:13px}.warn{background:#fdecea;border-left:4px solid #d33;padding:8px 12px}
.ok{background:#eaf6ea;border-left:4px solid #3a3;padding:8px 12px}img{max-width:100%;border:1px solid #eee;margin:6px 0}
.grid{display:flex;flex-wrap:wrap;gap:12px}.grid>div{flex:1 1 520px}code{background:#f3f3f3;padding:0 3px}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}nav a{margin-right:14px}
"""

_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
 var t=th.closest('table'),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
 var asc=th.getAttribute('data-asc')!=='1';th.parentNode.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-asc')});
 th.setAttribute('data-asc',asc?'1':'0');
 var rows=Array.prototype.slice.call(b.rows);
 function key(r){var c=r.cells[i];var v=c.getAttribute('data-v');if(v===null)v=c.textContent;var n=parseFloat(v);return isNaN(n)?v.toLowerCase():n}
 rows.sort(function(x,y){var a=key(x),c=key(y);if(typeof a!==typeof c){a=String(a);c=String(c)}return (a<c?-1:a>c?1:0)*(asc?1:-1)});
 rows.forEach(function(r){b.appendChild(r)});});});
"""


def _cell(v: Any, fmt: str | None) -> tuple[str, str | None, bool]:
    """(text, sort value, numeric) of one cell."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "", "", False
    if isinstance(v, bool):
        return ("yes" if v else "no"), None, False
    if isinstance(v, (int, float)):
        if fmt:
            text = fmt.format(v)
        elif isinstance(v, int):
            text = f"{v:,}"
        else:
            text = f"{v:.4g}" if abs(v) < 1e4 else f"{v:,.1f}"
        return text, repr(float(v)), True
    return str(v), None, False


def html_table(
    df: pl.DataFrame,
    formats: dict[str, str] | None = None,
    *,
    rename: dict[str, str] | None = None,
    flag_col: str | None = None,
    sortable: bool = True,
) -> str:
    """A DataFrame as an HTML table (escaped). ``formats``: column -> ``str.format`` spec;
    ``rename``: column -> header; rows whose ``flag_col`` is truthy get the ``flag`` class."""
    formats, rename = formats or {}, rename or {}
    cols = df.columns
    head = "".join(f"<th>{html.escape(rename.get(c, c))}</th>" for c in cols)
    body = []
    for r in df.iter_rows(named=True):
        cls = ' class="flag"' if flag_col and r.get(flag_col) else ""
        tds = []
        for c in cols:
            text, sv, num = _cell(r[c], formats.get(c))
            attr = (' class="num"' if num else "") + (f' data-v="{sv}"' if sv is not None else "")
            tds.append(f"<td{attr}>{html.escape(text)}</td>")
        body.append(f"<tr{cls}>{''.join(tds)}</tr>")
    return f'<table class="{"sortable" if sortable else ""}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _img(path: Path | None, alt: str) -> str:
    if path is None or not Path(path).is_file():
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


F3 = "{:.3f}"
SIGNED = "{:+.3f}"
PCT = "{:.2%}"


def render_html(study: Study, written: dict[str, Any], title: str = "voirdire report") -> str:
    """The report as one HTML string. ``study``: :class:`~voirdire.analysis.study.Study`;
    ``written``: the return value of :func:`~voirdire.analysis.study.write_study`."""
    figs = written.get("figures", {})
    p: list[str] = []
    e = html.escape
    p.append(f"<h1>{e(title)}</h1>")
    p.append(
        f'<p class="note">Generated {datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")} by voirdire. '
        "Definitions: Shi et al., “Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge” "
        "(PC position consistency, PF preference fairness −1 primacy … +1 recency, RS repetition stability); "
        "conventions in voirdire's <code>docs/metrics.md</code>. Click a table header to sort.</p>"
    )
    p.append('<nav><a href="#settings">Settings</a><a href="#judges">Judges</a><a href="#bench">Per benchmark</a>'
             '<a href="#regression">Factor regression</a><a href="#agreement">Agreement</a><a href="#power">Power</a></nav>')

    # ---------------------------------------------------------------- settings
    p.append('<h2 id="settings">Jobs, settings and counts</h2>')
    settings = pl.DataFrame([d.settings for d in study.dirs])
    p.append(html_table(settings))
    fails = []
    for d in study.dirs:
        f = d.judgments.filter(pl.col("failure").is_not_null()).group_by("judge", "failure").len().sort("judge", "failure")
        fails += [(d.name, j, c, n) for j, c, n in f.iter_rows()]
    if fails:
        p.append("<h3>Failures by class</h3>")
        p.append(html_table(pl.DataFrame(fails, schema=["directory", "judge", "failure", "count"], orient="row")))
    if study.tokenizer:
        p.append(f'<p class="note">Token lengths counted with tokenizer <code>{e(str(study.tokenizer))}</code>.</p>')

    # ---------------------------------------------------------------- judges
    p.append('<h2 id="judges">Judges</h2>')
    bad = study.panel.filter(~pl.col("readable"))
    if bad.height:
        items = "".join(f"<li><b>{e(b)} / {e(j)}</b>: {e(f)}</li>" for b, j, f in bad.select("benchmark", "judge", "flag").iter_rows())
        p.append(
            f'<div class="warn">Too unstable for their PC and PF to be read (RS below {study.rs_min:.2f} or error rate above '
            f"{study.max_error:.0%}): a judge whose verdict on the same prompt changes between askings mixes position bias "
            f"with noise.<ul>{items}</ul></div>"
        )
    else:
        p.append(f'<div class="ok">Every judge with a measured RS has RS ≥ {study.rs_min:.2f} and error rate ≤ {study.max_error:.0%}.</div>')
    no_rs = study.panel.filter(pl.col("rs").is_null())
    if no_rs.height:
        p.append(f'<p class="note">RS not measured (no repeated queries) for: {e(", ".join(f"{b}/{j}" for b, j in no_rs.select("benchmark", "judge").iter_rows()))}.</p>')
    cols = ["benchmark", "judge", "pc", "pc_lo", "pc_hi", "pf", "pf_lo", "pf_hi", "accuracy", "accuracy_lo", "accuracy_hi",
            "accuracy_shown", "accuracy_swapped", "both_correct", "error_rate", "rs", "rs_lo", "rs_hi", "primacy", "recency",
            "p_value", "direction", "pass_kappa", "pass_kappa_lo", "pass_kappa_hi", "pass_kappa_gate", "n_judgments", "source",
            "rs_source", "flag"]  # accuracy: where gold labels exist
    tab = study.panel.select([c for c in cols if c in study.panel.columns])
    p.append(
        html_table(
            tab,
            {"accuracy": F3, "accuracy_lo": F3, "accuracy_hi": F3, "accuracy_shown": F3, "accuracy_swapped": F3, "both_correct": F3,
             "pc": F3, "pc_lo": F3, "pc_hi": F3, "pf": SIGNED, "pf_lo": SIGNED, "pf_hi": SIGNED, "error_rate": PCT, "rs": F3, "rs_lo": F3, "rs_hi": F3, "p_value": "{:.2g}", "pass_kappa": F3, "pass_kappa_lo": F3, "pass_kappa_hi": F3},
            rename={"pc_lo": "PC lo", "pc_hi": "PC hi", "pf_lo": "PF lo", "pf_hi": "PF hi", "rs_lo": "RS lo", "rs_hi": "RS hi", "primacy": "primacy pairs", "recency": "recency pairs", "p_value": "sign test p", "pass_kappa": "κ passes", "pass_kappa_lo": "κ lo", "pass_kappa_hi": "κ hi", "pass_kappa_gate": "κ ≥ 0.6", "source": "PC/PF from", "rs_source": "RS from"},
            flag_col="flag",
        )
    )
    p.append(
        '<p class="note">lo/hi: 95% cluster-bootstrap percentile interval (questions resampled, '
        f"{study.dirs[0].ci.get_column('replicates').max() if study.dirs[0].ci.height else 0} replicates). "
        "Sign test: exact two-sided binomial test of primacy-preferred against recency-preferred pairs among the inconsistent ones. "
        "κ passes: Cohen's kappa over {win, tie, loss} between the verdicts of the original and of the swapped order, pair by pair "
        "(statsmodels), with its interval; the practitioners' gate trusts the judge for the task only at κ ≥ 0.6. It needs no "
        "reference and is not the kappa against a reference of the mitigation table (an agreement figure, no gate).</p>"
    )

    # ---------------------------------------------------------------- per benchmark
    p.append('<h2 id="bench">Per benchmark</h2>')
    for b in study.benchmarks:
        p.append(f"<h3>{e(b)}</h3>")
        p.append('<div class="grid">')
        for key, alt in (("radar", "PC radar"), ("pf_bars", "PF bars"), ("pc_pf", "PC vs PF"), ("accuracy_pc", "accuracy vs PC"), ("rs", "RS per judge")):
            im = _img(figs.get(f"{key}:{b}"), f"{b} {alt}")
            if im:
                p.append(f"<div>{im}</div>")
        p.append("</div>")
        p.append(_img(figs.get(f"owr:{b}"), f"{b} PC and PF vs overall win rate"))
        jt = study.judge_task.filter(pl.col("benchmark") == b).drop("benchmark")
        p.append(f"<details><summary>PC and PF per (judge, task), with bootstrap intervals ({jt.height} rows)</summary>")
        p.append(html_table(jt, {"pc": F3, "pc_std": F3, "pf": SIGNED, "pf_std": F3, "pc_lo": F3, "pc_hi": F3, "pf_lo": SIGNED, "pf_hi": SIGNED}))
        p.append("</details>")

    # ---------------------------------------------------------------- regression
    p.append('<h2 id="regression">Factor regression</h2>')
    p.append(
        '<p class="note">One observation per cell (judge, candidate, task); response PC or PF of the cell. '
        "Bidirectional stepwise selection by AIC from the full model (R's <code>step()</code>: AIC = n·ln(RSS/n) + 2k); "
        "the final model as R's <code>drop1</code> table: dropping a term raises RSS by <i>Sum of Sq</i>; the terms whose "
        "removal raises AIC most matter most. Terms aliased with others (0 Df, e.g. judge family next to judge) are dropped "
        "first. Numeric terms are standardised.</p>"
    )
    for r in study.regressions:
        p.append(f"<h3>{e(r.scope)} — {e(r.response.upper())} (n = {r.n}, R² = {r.r_squared:.3f})</h3>")
        p.append(f'<p class="note">Candidate terms: {e(", ".join(r.start))}. Selected: <b>{e(", ".join(r.terms) or "(intercept only)")}</b>.</p>')
        p.append(html_table(r.drop1, {"Sum of Sq": "{:.4f}", "RSS": "{:.4f}", "AIC": "{:.2f}"}))
        p.append("<details><summary>Selection path and coefficients</summary>")
        p.append(html_table(r.path, {"RSS": "{:.4f}", "AIC": "{:.2f}"}))
        p.append(html_table(r.coefficients, {"estimate": "{:+.4f}", "std_error": "{:.4f}", "p_value": "{:.2g}"}))
        p.append("</details>")
    if not study.regressions:
        p.append("<p>No regression (too few cells).</p>")

    # ---------------------------------------------------------------- agreement
    p.append('<h2 id="agreement">Agreement between judges</h2>')
    p.append(
        '<p class="note">Over the queries both judges answered (first repetition). Agreement without ties: queries where '
        "neither chose the tie. Kappa: Cohen's, chance-corrected. Disagreement of a query: judges whose choice differs from "
        "the most frequent one. Majority: a strict majority of the panel's choices agree.</p>"
    )
    any_agr = False
    for d in study.dirs:
        if d.agreement is None:
            continue
        any_agr = True
        p.append(f"<h3>{e(d.name)}</h3>")
        p.append(_img(figs.get(f"agreement:{d.name}"), f"{d.name} agreement heatmaps"))
        p.append('<div class="grid"><div>')
        p.append(_img(figs.get(f"disagreement:{d.name}"), f"{d.name} disagreement histogram"))
        p.append("</div><div>")
        p.append("<b>Fleiss' kappa of the panel</b>" + html_table(d.fleiss, {"kappa": F3}))
        p.append("<b>Majority vote</b>" + html_table(d.majority, {"majority_share": PCT, "unanimous_share": PCT}))
        p.append("<b>Disagreement histogram</b>" + html_table(d.disagreement, {"share": PCT, "cumulative_share": PCT}))
        p.append("</div></div>")
        pairs = d.agreement.filter(pl.col("judge_a") < pl.col("judge_b"))
        p.append(f"<details><summary>Judge pairs ({pairs.height})</summary>")
        p.append(html_table(pairs, {"agreement": F3, "agreement_no_tie": F3, "kappa": F3}))
        p.append("</details>")
    if not any_agr:
        p.append("<p>One judge per directory: no agreement to measure.</p>")

    # ---------------------------------------------------------------- power
    p.append('<h2 id="power">How many queries are enough?</h2>')
    if study.power.height:
        pc = study.power.get_column("pc")[0]
        wide = study.power.pivot(on="pf", index=["n_pairs", "queries"], values="power").sort("n_pairs")
        wide = wide.rename({c: f"PF {float(c):+.2f}" for c in wide.columns if c not in ("n_pairs", "queries")})
        p.append(
            f'<p class="note">Power of the sign test (α = 0.05) to detect a given |PF| for a judge with PC = {pc:.2f} '
            "(the median PC of the readable judges), from the simulated judge of known bias; rows: judgment pairs "
            "(each pair is two queries). 0.8 is the usual target.</p>"
        )
        p.append(html_table(wide, {c: PCT for c in wide.columns if c.startswith("PF")}))

    p.append(written.get("mitigation_html", ""))  # analysis/evaluation.py: report_section
    p.append(bias_section(written, html_table, _img))  # CALM biases, self-enhancement

    # ---------------------------------------------------------------- files
    p.append("<h2>Files</h2><ul>")
    for name, path in sorted(written.get("tables", {}).items()):
        p.append(f"<li><code>metrics/{e(Path(path).name)}</code></li>")
    p.append("</ul>")
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>{''.join(p)}<script>{_JS}</script></body></html>"
    )


def write_html(study: Study, written: dict[str, Any], path: str | os.PathLike, title: str = "voirdire report") -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8) and return it."""
    out = Path(path)
    out.write_text(render_html(study, written, title), encoding="utf-8")
    return out


def build_report(
    dirs: list[str | os.PathLike],
    out: str | os.PathLike | None = None,
    *,
    judge_attributes: pl.DataFrame | None = None,
    replicates: int = 1000,
    rs_min: float | None = None,
    max_error: float | None = None,
    tokenizer: str | None = None,
    title: str | None = None,
) -> Path:
    """Analyse ``dirs`` together and write ``report.html``, ``report.md``, ``metrics/*.csv``
    and ``figures/*.png`` under ``out`` (default: the directory itself when there is one,
    else ``report/`` next to the first). With ``out`` given, nothing is written outside it
    (the inputs may be read-only); without it, each directory's own ``judgments.parquet``,
    ``metrics/*.csv`` and ``report.md`` are refreshed too. Returns the path of
    ``report.html``.

    Raises:
        FileNotFoundError: a directory is not a voirdire output directory.
        ValueError: no directory, or a tokenizer that cannot be loaded.
    """
    if not dirs:
        raise ValueError("no output directory given")
    paths = [Path(d) for d in dirs]
    out_dir = Path(out) if out is not None else (paths[0] if len(paths) == 1 else paths[0].parent / "report")
    out_dir.mkdir(parents=True, exist_ok=True)
    study = analyze_study(
        paths,
        judge_attributes=judge_attributes,
        replicates=replicates,
        rs_min=RS_MIN if rs_min is None else rs_min,
        max_error=MAX_ERROR if max_error is None else max_error,
        tokenizer=tokenizer,
        refresh=out is None,
    )
    written = write_study(study, out_dir)
    written["mitigation_html"] = report_section([d.judgments for d in study.dirs], out_dir, replicates=min(replicates, 200))
    name = title or ("voirdire report: " + ", ".join(p.name for p in paths))
    if len(paths) > 1 or out is not None:
        write_study_markdown(study, out_dir / "report.md", name)
    return write_html(study, written, out_dir / "report.html", name)
