"""Verdict extraction: raw outputs (RAW_SCHEMA) -> judgments (JUDGMENT_SCHEMA).

The release's conventions (``docs/metrics.md``, "Reading a verdict"): the
verdict is the first match of the benchmark's pattern in the judge's output (MT-Bench
``\\[\\[([ABCD])\\]\\]``, DevBench ``(?:选择：|Choice: )([ABCD])``); no match or no output is
a failed judgment. A letter outside the slots (``D`` in three-option mode) is extracted but
chooses no model. A ``choice`` a backend decided itself (constrained decoding,
log-probabilities) takes precedence over the text.
"""

from __future__ import annotations

import polars as pl


def extract_verdicts(raw: pl.DataFrame, patterns: dict[str, str]) -> pl.DataFrame:
    """Add ``extracted``, ``chosen``, ``tie`` and ``failed`` to raw rows, vectorised.

    Args:
        raw: rows with at least ``benchmark`` (str), ``shown`` (list[str]), ``option_mode``
            (int), ``output`` (str|null), ``choice`` (str|null).
        patterns: benchmark name -> verdict regex whose group 1 is the letter.

    Returns:
        ``raw`` with ``extracted`` (str|null), ``chosen`` (str|null: the model in the chosen
        slot), ``tie`` (bool: the letter right after the last slot, when the option mode
        offers it) and ``failed`` (bool: nothing extracted).

    Raises:
        KeyError: a benchmark in ``raw`` has no pattern.
    """
    missing = set(raw["benchmark"].unique().to_list()) - set(patterns)
    if missing:
        raise KeyError(f"no verdict pattern for benchmark(s): {', '.join(sorted(missing))}")
    text = pl.lit(None, dtype=pl.String)
    for bench, pattern in patterns.items():
        text = pl.when(pl.col("benchmark") == bench).then(pl.col("output").str.extract(pattern, 1)).otherwise(text)
    letter = pl.coalesce(pl.col("choice"), text)
    idx = letter.str.len_bytes().eq(1) & letter.is_not_null()
    code = (letter.str.encode("hex").str.to_integer(base=16, strict=False) - ord("A")).cast(pl.Int32)
    p = pl.col("shown").list.len().cast(pl.Int32)
    in_slots = idx & (code >= 0) & (code < p)
    return raw.with_columns(extracted=letter).with_columns(
        chosen=pl.when(in_slots).then(pl.col("shown").list.get(code.clip(0, 64), null_on_oob=True)).otherwise(None),
        tie=(idx & (code == p) & (pl.col("option_mode") > p)).fill_null(False),
        failed=pl.col("extracted").is_null(),
    )
