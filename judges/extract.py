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


def extract_verdicts(
    raw: pl.DataFrame,
    patterns: dict[str, str | list],
    labels: dict[str, dict[str, str]] | None = None,
) -> pl.DataFrame:
    """Add ``extracted``, ``chosen``, ``tie`` and ``failed`` to raw rows, vectorised.

    Args:
        raw: rows with at least ``benchmark`` (str), ``shown`` (list[str]), ``option_mode``
            (int), ``output`` (str|null), ``choice`` (str|null).
        patterns: benchmark name -> verdict regex whose group 1 is the letter (its first
            match counts), or a list of ``[letter, regex]`` rules: the letter of the first
            rule whose regex occurs anywhere in the stripped output (a release's own
            convention, e.g. ``Output (a)`` before ``Output (b)``).
        labels: benchmark name -> {label: letter} for benchmarks whose pattern reads other
            labels than the letters (a user's template: ``"1"`` -> ``A``); group 1 is
            stripped and looked up; a label not listed is kept as read (it chooses no
            model). Benchmarks not named read letters.

    Returns:
        ``raw`` with ``extracted`` (str|null), ``chosen`` (str|null: the model in the chosen
        slot), ``tie`` (bool: the letter right after the last slot, when the option mode
        offers it) and ``failed`` (bool: nothing extracted).

    Raises:
        KeyError: a benchmark in ``raw`` has no pattern.
    """
    missing = set(raw["benchmark"].unique().to_list()) - set(patterns)
    if missing:
        raise KeyError(
            f"no verdict pattern for benchmark(s): {', '.join(sorted(missing))}"
        )
    read = pl.lit(None, dtype=pl.String)
    for bench, pattern in patterns.items():
        read = (
            pl.when(pl.col("benchmark") == bench).then(_read(pattern)).otherwise(read)
        )
    # each step reads the column the step before wrote: an expression used twice would be
    # evaluated twice (the regexes of every later use, ~10x the work at 100,000 rows)
    text = pl.col(_TEXT)
    for bench, mapping in (
        labels or {}
    ).items():  # labels read by the pattern -> position letters
        mapped = text.str.strip_chars().replace(list(mapping), list(mapping.values()))
        text = pl.when(pl.col("benchmark") == bench).then(mapped).otherwise(text)
    # a backend's own verdict wins; "" is its "no verdict" (the text is not read again)
    letter = pl.coalesce(pl.col("choice"), text)
    letter = pl.when(letter == "").then(pl.lit(None, dtype=pl.String)).otherwise(letter)
    out = raw.with_columns(read.alias(_TEXT)).with_columns(extracted=letter).drop(_TEXT)
    x = pl.col("extracted")
    idx = x.str.len_bytes().eq(1) & x.is_not_null()
    code = (x.str.encode("hex").str.to_integer(base=16, strict=False) - ord("A")).cast(
        pl.Int32
    )
    p = pl.col("shown").list.len().cast(pl.Int32)
    in_slots = idx & (code >= 0) & (code < p)
    return out.with_columns(
        chosen=pl.when(in_slots)
        .then(pl.col("shown").list.get(code.clip(0, 64), null_on_oob=True))
        .otherwise(None),
        tie=(idx & (code == p) & (pl.col("option_mode") > p)).fill_null(False),
        failed=x.is_null(),
    )


#: the column that holds the text a pattern read while :func:`extract_verdicts` runs
_TEXT = "__verdict_text__"


def _read(pattern: str | list) -> pl.Expr:
    """The letter an output reads by one benchmark's pattern or rules (see extract_verdicts)."""
    if isinstance(pattern, str):
        return pl.col("output").str.extract(pattern, 1)
    out = pl.lit(None, dtype=pl.String)
    for letter, rx in reversed(pattern):
        out = (
            pl.when(pl.col("output").str.strip_chars().str.contains(rx))
            .then(pl.lit(letter))
            .otherwise(out)
        )
    return out


def extract_scores(
    raw: pl.DataFrame, patterns: dict[str, tuple[str, str] | list[str]]
) -> pl.DataFrame:
    """Score mode (Wang et al. 2023): read each slot's score (1-10 by default) and derive the verdict
    letter, vectorised.

    Args:
        raw: rows with ``benchmark`` (str), ``mode`` (str), ``output`` (str|null),
            ``choice`` (str|null); only rows with ``mode == "score"`` are read.
        patterns: benchmark name -> (regex for slot A's score, regex for slot B's), each
            with the score as group 1 (:func:`voirdire.benchmarks.scoring.score_patterns`),
            optionally followed by the lowest and highest valid score (default 1 and 10;
            a benchmark's own range: :func:`voirdire.benchmarks.scoring.score_range`). The
            LAST match in the output counts (an evidence-first judge may quote a score
            line in its explanation before the final lines).

    Returns:
        ``raw`` with ``slot_scores`` (list[f64] of length 2, slot order; null when either
        score is missing or outside the valid range) and, for score rows, ``choice`` set to the
        derived letter: ``A`` (slot A scored higher), ``B``, or ``C`` (equal: a tie); left
        null when the scores are missing, so the row is a failed judgment.

    Raises:
        KeyError: a benchmark of a score row has no patterns.
    """
    is_score = pl.col("mode") == "score"
    benches = set(raw.filter(is_score)["benchmark"].unique().to_list())
    missing = benches - set(patterns)
    if missing:
        raise KeyError(
            f"no score patterns for benchmark(s): {', '.join(sorted(missing))}"
        )

    def last(slot: int) -> pl.Expr:
        val = pl.lit(None, dtype=pl.Float64)
        for bench, pats in patterns.items():
            pat = pats[slot]
            lo, hi = (float(pats[2]), float(pats[3])) if len(pats) > 3 else (1.0, 10.0)
            got = (
                pl.col("output")
                .str.extract_all(pat)
                .list.last()
                .str.extract(pat, 1)
                .cast(pl.Float64, strict=False)
            )
            val = (
                pl.when(pl.col("benchmark") == bench)
                .then(pl.when(got.is_between(lo, hi)).then(got))
                .otherwise(val)
            )
        return pl.when(is_score).then(val).otherwise(None)

    out = raw.with_columns(_sa=last(0), _sb=last(1))
    ok = pl.col("_sa").is_not_null() & pl.col("_sb").is_not_null()
    derived = (
        pl.when(~ok).then(None)
        .when(pl.col("_sa") > pl.col("_sb")).then(pl.lit("A"))
        .when(pl.col("_sa") < pl.col("_sb")).then(pl.lit("B"))
        .otherwise(pl.lit("C"))
    )  # fmt: skip
    return out.with_columns(
        slot_scores=pl.when(ok).then(pl.concat_list("_sa", "_sb")).otherwise(None),
        choice=pl.when(is_score).then(derived).otherwise(pl.col("choice")),
    ).drop("_sa", "_sb")
