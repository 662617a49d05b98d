"""The machinery of the report's interactive figures: Vega-Lite specifications built with
Vega-Altair, embedded in the page with the Vega libraries inline, and written as static PNG
and SVG for papers by vl-convert (no browser, no network).

Why Vega-Altair (``docs/analysis.md``, "Figures"): polars frames go in as they are
(narwhals); the page carries one copy of Vega, Vega-Lite and Vega-Embed (about 0.9 MB,
:func:`vega_bundle`, shipped inside ``vl-convert-python``) and each figure as a JSON
specification, so it opens offline from one file; vl-convert renders the same
specification to PNG and SVG without a browser. Hover shows a point's judge (tooltips), and
every figure declares the page's :data:`SEARCH` parameter: the page's search box sets it and
the judges whose names contain it are drawn highlighted (:data:`HIT`).

A figure shows a legend of judges only up to :data:`MAX_LEGEND` of them; beyond that each
figure function switches to a form that needs none (heatmaps, hover and search).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import altair as alt

from voirdire.analysis.report.scale import cut_text
from voirdire.escape import visible

__all__ = [
    "MAX_LEGEND",
    "WIDTH",
    "SEARCH",
    "HIT",
    "vega_bundle",
    "search_param",
    "judge_color",
    "row_height",
    "in_order",
    "write_static",
    "spec_of",
    "keyed_by_index",
    "NAME_FIELDS",
    "data_rows",
    "shown_text",
]

#: the most judges a figure names in a legend (beyond: heatmaps, hover, search)
MAX_LEGEND = 12
#: the widest a figure is drawn (CSS pixels): the page's column at a 1400 px viewport
WIDTH = 1080
#: the page's search parameter (a judge's name, or part of one; "" highlights nothing)
SEARCH = "search"
#: a Vega expression: the datum's judge matches the search (case-insensitive substring)
HIT = f"{SEARCH} != '' && indexof(lower(datum.judge), lower({SEARCH})) >= 0"
#: the same, true for every judge when nothing is searched
SHOWN = f"{SEARCH} == '' || indexof(lower(datum.judge), lower({SEARCH})) >= 0"


@cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (``vl_convert.javascript_bundle``:
    defines ``window.vegaEmbed``), inlined once in the page."""
    import vl_convert

    return vl_convert.javascript_bundle()


def search_param() -> alt.Parameter:
    """The :data:`SEARCH` parameter every figure declares (set by the page's search box)."""
    return alt.param(name=SEARCH, value="")


def judge_color(judges: Sequence[str], *, legend: bool = True) -> alt.Color:
    """A colour per judge, the same in every figure of a report (``judges``: all of them,
    in their fixed order): Tableau 10 up to 10 judges, else Tableau 20 (repeating past 20,
    where no legend is drawn). The legend only up to :data:`MAX_LEGEND` judges."""
    names = list(dict.fromkeys(judges))
    scheme = "tableau10" if len(names) <= 10 else "tableau20"
    show = legend and len(names) <= MAX_LEGEND
    return alt.Color(
        "judge:N",
        scale=alt.Scale(domain=names, scheme=scheme),
        legend=alt.Legend(title="judge", labelLimit=260, orient="right")
        if show
        else None,
    )


def in_order(order: Sequence[str], names: Iterable[str]) -> list[str]:
    """The judges of ``names`` in the order of ``order`` (the summary's ranking)."""
    present = set(names)
    return [j for j in order if j in present]


def row_height(n: int) -> int:
    """Pixels per judge of a figure with one row per judge (heatmaps, horizontal bars)."""
    return 14 if n > 40 else 18


def spec_of(chart: alt.TopLevelMixin, *, validate: bool = False) -> dict[str, Any]:
    """The Vega-Lite specification of ``chart`` as a dict (its data inline); ``validate``
    checks it against Vega-Lite's schema (seconds for a large figure: the tests do). No row
    limit: the report's figures carry a few thousand rows at most (the page's size is
    measured by ``perf/bench_report.py``)."""
    with alt.data_transformers.disable_max_rows():
        spec = chart.configure_view(stroke=None).to_dict(validate=validate)
    return keyed_by_index(_as_data(spec))


#: the fields whose values are names (judges, models): keyed by index in a specification
NAME_FIELDS = ("judge_a", "judge_b", "judge", "model")
#: the parameter holding the names by key index (axes, legends and headers show them)
NAMES_PARAM = "voirdire_names"
#: where a name is shown rather than grouped by: it stays the name (``<field>_name``)
_SHOWN_CHANNELS = ("tooltip", "text")
_LEGEND_CHANNELS = ("color", "fill", "stroke", "shape", "opacity", "strokeDash", "size")
_AXIS_CHANNELS = ("x", "y")
_HEADER_CHANNELS = ("row", "column", "facet")
_DATUM_NAME = re.compile(
    r"datum\.(" + "|".join(NAME_FIELDS) + r")\b"
    r"|datum\[\s*(['\"])(" + "|".join(NAME_FIELDS) + r")\2\s*\]"
)


def keyed_by_index(spec: dict[str, Any]) -> dict[str, Any]:
    """A Vega-Lite specification whose names (judges, models: :data:`NAME_FIELDS`) enter
    its data as keys by index (``k0``, ``k1``... in the names' sorted order), never as
    JavaScript object keys: Vega groups rows in plain objects, so a judge named
    ``__proto__`` or ``constructor`` broke the figure ("Operator not defined"). Each row
    keeps the name as ``<field>_name``: tooltips, text marks and every expression (the
    page's search, the picked judges, the menus' filters) read the name; axes, legends and
    headers show it (``labelExpr``); sort orders, scale domains and ``oneOf`` filters are
    given in keys. A specification without names is returned as it is."""
    rows = [r for values in _datasets(spec) for r in values if isinstance(r, dict)]
    drawn = {r[f] for r in rows for f in NAME_FIELDS if isinstance(r.get(f), str)}
    if not drawn:
        return spec
    # a colour scale's domain holds every judge of the report (one colour per judge in
    # every figure): those keys too, and a legend lists only the names drawn
    names = sorted(drawn | set(_domain_names(spec)))
    width = len(str(len(names) - 1))
    key = {n: f"k{i:0{width}d}" for i, n in enumerate(names)}
    shown_keys = [key[n] for n in names if n in drawn]
    for r in rows:
        for f in NAME_FIELDS:
            if isinstance(r.get(f), str):
                r[f"{f}_name"] = r[f]
                r[f] = key[r[f]]
    # the names as a parameter's value (data), never as literals of an expression: an
    # array literal holding "__proto__" in a labelExpr failed as the keys did
    label = f"{NAMES_PARAM}[toNumber(slice(datum.label, 1))]"
    out = _rekey(spec, key, label, None, shown_keys)
    out["params"] = [*out.get("params", []), {"name": NAMES_PARAM, "value": names}]
    return out


def _domain_names(node: Any) -> Iterator[str]:
    """The names in the scale domains of encodings on a name field (:data:`NAME_FIELDS`)."""
    if isinstance(node, dict):
        scale = node.get("scale")
        if node.get("field") in NAME_FIELDS and isinstance(scale, dict):
            yield from (v for v in scale.get("domain") or [] if isinstance(v, str))
        for v in node.values():
            yield from _domain_names(v)
    elif isinstance(node, list):
        for v in node:
            yield from _domain_names(v)


def _datasets(spec: Any):
    """Every list of inline rows in ``spec`` (``datasets`` and ``data.values``)."""
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "datasets" and isinstance(v, dict):
                yield from (rows for rows in v.values() if isinstance(rows, list))
            elif k == "values" and isinstance(v, list):
                yield v
            else:
                yield from _datasets(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _datasets(v)


def data_rows(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every inline data row of a specification (``datasets`` and ``data.values``), as
    :func:`spec_of` left it (names keyed by index, each beside as ``<field>_name``)."""
    for values in _datasets(spec):
        yield from (r for r in values if isinstance(r, dict))


def shown_text(text: str) -> str:
    """``text`` as a specification of :func:`spec_of` holds it (control characters as
    escapes, what XML cannot hold as U+FFFD): a judge's name compared with the data's."""
    return _as_data(text)


def _keys(values: Any, key: dict[str, str]) -> Any:
    if isinstance(values, list):
        return [key.get(v, v) if isinstance(v, str) else v for v in values]
    return key.get(values, values) if isinstance(values, str) else values


def _rekey(
    node: Any, key: dict[str, str], label: str, channel: str | None, drawn: list[str]
) -> Any:
    """:func:`keyed_by_index`'s walk of the specification (data left as keyed);
    ``channel``: the encoding channel ``node`` is under; ``drawn``: the keys of the names
    the data holds (a legend lists those)."""
    if isinstance(node, str):
        return _DATUM_NAME.sub(lambda m: f"datum.{m.group(1) or m.group(3)}_name", node)
    if isinstance(node, list):
        return [_rekey(v, key, label, channel, drawn) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("datasets", "values"):
            out[k] = v
        elif k == "encoding" and isinstance(v, dict):
            out[k] = {c: _rekey(d, key, label, c, drawn) for c, d in v.items()}
        else:
            out[k] = _rekey(v, key, label, channel, drawn)
    field = out.get("field")
    if field not in NAME_FIELDS:
        return out
    if channel in _SHOWN_CHANNELS:  # a tooltip still titled "judge"
        out["field"] = f"{field}_name"
        if channel == "tooltip":
            out.setdefault("title", field)
        return out
    for k in ("oneOf", "equal", "sort"):
        if k in out:
            out[k] = _keys(out[k], key)
    if isinstance(out.get("scale"), dict) and "domain" in out["scale"]:
        out["scale"] = {**out["scale"], "domain": _keys(out["scale"]["domain"], key)}
    guide = (
        "axis" if channel in _AXIS_CHANNELS
        else "legend" if channel in _LEGEND_CHANNELS
        else "header" if channel in _HEADER_CHANNELS
        else None
    )  # fmt: skip
    if guide is not None and channel is not None and out.get(guide, {}) is not None:
        out[guide] = {**out.get(guide, {}), "labelExpr": label}
        if guide == "legend" and isinstance(out.get("scale"), dict):
            out["legend"]["values"] = drawn  # not the judges this figure has no data of
    return out


#: what XML (so SVG, and vl-convert's text layout) cannot hold once controls are escaped
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


#: the keys whose text is a Vega expression, never a name shown (so never cut)
_EXPRESSIONS = frozenset({"expr", "labelExpr", "calculate", "filter", "test", "signal", "update"})  # fmt: skip


def _as_data(node: Any, cut: bool = True) -> Any:
    """Every text of a specification shown as data (:func:`voirdire.escape.visible`:
    control characters as escapes, then what XML cannot hold as U+FFFD; a judge named with
    an escape byte would otherwise stop vl-convert's SVG) and every float to 4 decimals
    (more than any figure shows: a smaller page); a text over
    :data:`~voirdire.analysis.report.scale.NAME_CHARS` characters (a judge's or task's
    name) cut (:func:`~voirdire.analysis.report.scale.cut_text`; expressions are whole).
    The same names everywhere in the spec
    (data, sort orders, parameters), so they still match."""
    if isinstance(node, str):
        return _NOT_XML.sub("\ufffd", visible(cut_text(node) if cut else node))
    if isinstance(node, float):  # NaN and infinities as null: JSON has neither
        return round(node, 4) if math.isfinite(node) else None
    if isinstance(node, dict):
        return {
            _as_data(k, False): _as_data(v, cut and k not in _EXPRESSIONS)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_as_data(v, cut) for v in node]
    return node


def write_static(
    spec: dict[str, Any], stem: Path, formats: Sequence[str] = ("png",)
) -> dict[str, Path]:
    """Write the specification ``spec`` (:func:`spec_of`) as ``<stem>.png`` (2× pixels)
    and/or ``<stem>.svg`` by vl-convert (the figure as drawn with nothing searched; the
    page's own menu exports it as drawn); returns the paths by format."""
    import vl_convert

    stem.parent.mkdir(parents=True, exist_ok=True)
    text, out = json.dumps(spec), {}
    if "png" in formats:
        out["png"] = p = stem.with_suffix(".png")
        p.write_bytes(vl_convert.vegalite_to_png(text, scale=2))
    if "svg" in formats:
        out["svg"] = p = stem.with_suffix(".svg")
        p.write_text(vl_convert.vegalite_to_svg(text), encoding="utf-8")
    return out
