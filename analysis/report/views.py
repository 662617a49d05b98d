"""The views the report's templates take (``templates/``): a table, an embedded image and an
interactive figure as the page shows them, the number formats, and the template renderer.
Every section of the page (:mod:`voirdire.analysis.report.html` assembles them) builds its
view from these; the templates escape every value; a
long name is shown cut (:func:`~voirdire.analysis.report.scale.cut_text`)."""

from __future__ import annotations

import base64
import math
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import polars as pl

from voirdire.analysis.report.scale import TEXT_CHARS, cut_text

__all__ = [
    "F3",
    "SIGNED",
    "PCT",
    "render_template",
    "table_view",
    "image_view",
    "chart_view",
]

#: number formats of the report's tables
F3 = "{:.3f}"
SIGNED = "{:+.3f}"
PCT = "{:.2%}"


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("voirdire.analysis.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )


def _finalize(value: Any) -> Any:
    """Every value a template writes: a plain text (never markup the template built, such
    as a figure's JSON) over :data:`~voirdire.analysis.report.scale.TEXT_CHARS` characters
    cut, its length said (a caption listing 10,000 judges, a name not cut before)."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return cut_text(value, TEXT_CHARS)
    return value


def render_template(name: str, **context: Any) -> str:
    """Render the package template ``name`` (autoescaped) with ``context``."""
    return _env().get_template(name).render(**context)


def _cell(v: Any, fmt: str | None) -> dict[str, Any]:
    """One cell: ``text``, sort value ``v`` (None: sort by the text), ``num`` (right-aligned)."""
    if _empty(v):
        return {"text": "", "v": "", "num": False}
    if isinstance(v, bool):
        return {"text": "yes" if v else "no", "v": None, "num": False}
    if isinstance(v, (int, float)):
        if fmt:
            text = fmt.format(v)
        elif isinstance(v, int):
            text = f"{v:,}"
        else:
            text = f"{v:.4g}" if abs(v) < 1e4 else f"{v:,.1f}"
        return {"text": text, "v": repr(float(v)), "num": True}
    return {"text": cut_text(str(v)), "v": None, "num": False}


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def table_view(
    df: pl.DataFrame,
    formats: dict[str, str] | None = None,
    *,
    rename: dict[str, str] | None = None,
    flag_col: str | None = None,
    sortable: bool = True,
    keep_empty: bool = False,
) -> dict[str, Any]:
    """A DataFrame as the template's table: ``head`` (column names, ``rename``d), ``rows``
    (``flag``: the row's ``flag_col`` is truthy; ``judge``: the row's judge where the table
    has a ``judge`` column, for the page's search; ``cells``: text, sort value, numeric,
    ``name``: a judge's name, wrapped) and ``sortable``. ``formats``: column ->
    ``str.format`` spec for numbers. A column with no value in any row is left out unless
    ``keep_empty``."""
    formats, rename = formats or {}, rename or {}
    cols = [
        c
        for c in df.columns
        if keep_empty
        or not all(_empty(v) or v == "" for v in df.get_column(c).to_list())
    ]
    if df.height == 0:
        cols = list(df.columns)
    rows = [
        {
            "flag": bool(flag_col and r.get(flag_col)),
            "judge": cut_text(str(r["judge"])) if r.get("judge") is not None else None,
            "cells": [
                _cell(r[c], formats.get(c)) | {"name": c == "judge"} for c in cols
            ],
        }
        for r in df.iter_rows(named=True)
    ]
    return {
        "head": [rename.get(c, c) for c in cols],
        "rows": rows,
        "sortable": sortable,
    }


def image_view(path: Path | None, alt: str) -> dict[str, str] | None:
    """A PNG file as an embedded image (``alt``, ``src`` data URI); None when absent."""
    if path is None or not Path(path).is_file():
        return None
    return {
        "alt": alt,
        "src": "data:image/png;base64,"
        + base64.b64encode(Path(path).read_bytes()).decode("ascii"),
    }


def chart_view(charts: dict[str, Any], key: str, n: list[int]) -> dict[str, Any] | None:
    """One interactive figure as the template's ``chart`` macro takes it: its Vega-Lite
    specification (``charts[key]``), its key and a page-unique id (``n``: the page's
    counter, advanced); None when ``charts`` has no such figure."""
    if key not in charts:
        return None
    n[0] += 1
    return {"id": f"fig{n[0]}", "spec": charts[key], "key": key}
