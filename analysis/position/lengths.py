"""Lengths in tokens (ours; ``docs/metrics.md``, *Lengths*: characters always, tokens when a
tokenizer is configured).

The judgments table carries lengths in characters. When a job names a tokenizer
(``[analysis] tokenizer = "path"``, loaded with ``transformers.AutoTokenizer``), the
prompts and shown answers are rebuilt from the benchmark (no judge is called) and counted
once per distinct query. Task *input* length in tokens is not measured: the benchmark
interface exposes prompts and answers but not the question texts on their own.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = ["load_tokenizer", "query_token_lengths", "cell_token_lengths"]

TOKEN_COLUMNS = ["prompt_tokens", "output_tokens"]


def load_tokenizer(path: str) -> Callable[[list[str]], list[int]]:
    """A counter ``texts -> token counts`` from ``AutoTokenizer.from_pretrained(path)``
    (special tokens not added).

    Raises:
        ValueError: the tokenizer cannot be loaded (the message names the path).
    """
    # transformers is heavy and optional (the vllm/gpu extras): imported only when used
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path)
    except Exception as exc:  # transformers raises OSError/ValueError/... by cause
        raise ValueError(f"cannot load tokenizer {path!r}: {exc}") from exc

    def count(texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]

    return count


def query_token_lengths(
    judgments: pl.DataFrame, bench, count: Callable[[list[str]], list[int]]
) -> pl.DataFrame:
    """Token lengths of each distinct query of ``judgments`` (one benchmark).

    Args:
        judgments: rows with ``question_id``, ``shown`` (list[str]), ``option_mode``, ``mode``.
        bench: the loaded :class:`~voirdire.benchmarks.base.Benchmark`.
        count: texts -> token counts (e.g. :func:`load_tokenizer`).

    Returns:
        DataFrame: ``question_id``, ``shown``, ``option_mode``, ``prompt_tokens`` (int: the
        full judge prompt), ``output_tokens`` (int: the shown answers, summed over models
        and turns).
    """
    q = judgments.select("question_id", "shown", "option_mode", "mode").unique(
        ["question_id", "shown", "option_mode", "mode"]
    )
    prompts, outputs = [], []
    for qid, shown, om, mode in q.iter_rows():
        prompts.append(bench.build_prompt(qid, tuple(shown), om, mode=mode))
        outputs.append([t for m in shown for t in bench.answers(qid, m)])
    flat = [t for ts in outputs for t in ts]
    counts = iter(count(flat))
    out_tokens = [sum(next(counts) for _ in ts) for ts in outputs]
    return q.select("question_id", "shown", "option_mode").with_columns(
        prompt_tokens=pl.Series(count(prompts), dtype=pl.Int64),
        output_tokens=pl.Series(out_tokens, dtype=pl.Int64),
    )


def cell_token_lengths(
    judgments: pl.DataFrame, per_query: pl.DataFrame
) -> pl.DataFrame:
    """Mean token lengths per cell (benchmark, judge, candidate, task) over its judgment
    rows (pairwise rows; both orders of a pair weigh equally). Columns: the cell keys,
    ``prompt_tokens``, ``output_tokens`` (float)."""
    return (
        judgments.filter(pl.col("mode") == "pairwise")
        .join(per_query, on=["question_id", "shown", "option_mode"], how="left")
        .group_by("benchmark", "judge", "candidate", "task")
        .agg(pl.col(c).mean().cast(pl.Float64) for c in TOKEN_COLUMNS)
    )
