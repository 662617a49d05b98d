"""Inspect AI eval logs (UK AISI's ``inspect_ai``): ``.eval`` and ``.json`` files, read by
``inspect_ai.log.read_eval_log`` (the optional extra: ``pip install 'voirdire[inspect]'``).

One judgment per sample (``EvalLog.samples``, the epoch ``[benchmark.log] epoch``, default 1):
the judge is either the task's model, whose text is the sample's ``output.completion`` (an
eval whose model judges a pair), or, with ``[benchmark.log] scorer = NAME``, the scorer
``scores[NAME]`` (a model-graded scorer, the grader), whose text is the score's
``explanation`` (the grader's transcript; ``field = "answer"`` or ``"value"`` reads those).

**The pair and order shown**: the sample's ``metadata`` fields ``instance``, ``model_a``,
``model_b``, ``first`` and optionally ``label`` (the values as in
:mod:`~voirdire.benchmarks.logs.batch_ids`); or, with ``mapping`` or ``custom_id``, the
sample's ``id`` in the place of a ``custom_id``. **Reading**: the verdict pattern and labels
of :mod:`~voirdire.benchmarks.logs.batch_ids`, by the engine. **Failures** (with their
reason): a sample ``error`` (its message), an empty text (the score's ``reason`` named), a
sample without the named score. **Judge**: ``[benchmark.log] judge``, else the scorer's name,
else the eval's ``model``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from voirdire.benchmarks.logs.batch_ids import (
    BatchLog,
    BatchOptions,
    Mapper,
    Result,
    add_verdict,
)
from voirdire.benchmarks.logs.reading import (
    MAX_BYTES_SETTING,
    MAX_LOG_BYTES,
    Rows,
    read_json,
)
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.bounds import check_zip
from voirdire.core import ConfigError


class InspectOptions(BatchOptions):
    """``[benchmark.log]``: :class:`~voirdire.benchmarks.logs.batch_ids.BatchOptions` (the
    mapping optional: the sample metadata), and ``scorer`` (the grader's score name; else
    the model's output), ``field`` (the score's ``explanation``, ``answer`` or ``value``),
    ``epoch`` (the epoch read)."""

    scorer: str | None = None
    field: Literal["explanation", "answer", "value"] = "explanation"
    epoch: int = 1


def read_log(path: Path, fmt: str, max_bytes: int = MAX_LOG_BYTES) -> Any:
    """The ``EvalLog`` of one file, by ``inspect_ai``'s reader, bounded first: a ``.json``
    log's nesting (:func:`~voirdire.benchmarks.logs.reading.read_json`), an ``.eval`` log (a
    zip archive) by its uncompressed size, at most ``max_bytes`` (``[benchmark.log]
    max_bytes``), and its JSON members' nesting (:func:`voirdire.bounds.check_zip`).

    Raises:
        ConfigError: ``inspect_ai`` not installed (the extra named), a ``.json`` that is not
            JSON (line named), a log over a bound, a file ``inspect_ai`` cannot read (its
            field named)."""
    if path.suffix == ".json":
        read_json(path, fmt)  # a truncated file: its line named
    else:
        check_zip(str(path), f"{fmt} log {path}", max_bytes, MAX_BYTES_SETTING)
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError(
            f"{fmt}: reading Inspect logs needs inspect_ai: pip install 'voirdire[inspect]'"
        ) from None
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect_ai's own errors: pydantic, zip, key errors
        errs = getattr(exc, "errors", None)
        if callable(errs):
            e = errs()[0]
            where = ".".join(str(p) for p in e["loc"])
            raise ConfigError(
                f"{fmt} log {path}: field {where!r}: {e['msg']} (is this an Inspect eval log?)"
            ) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ConfigError(
            f"{fmt} log {path}: not an Inspect eval log ({type(exc).__name__}: {first[:200]})"
        ) from None


def sample_result(sample: Any, options: InspectOptions, where: str) -> Result:
    """One sample's text or failure (module docstring)."""
    if sample.error is not None:
        msg = str(sample.error.message).strip().splitlines()
        return Result(
            None, f"the sample failed ({msg[0] if msg else 'no message'})", "", where
        )
    if options.scorer is None:
        text = sample.output.completion if sample.output else ""
        why = "the model gave no text"
    else:
        score = (sample.scores or {}).get(options.scorer)
        if score is None:
            have = ", ".join(sample.scores or {}) or "none"
            return Result(
                None, f"no score {options.scorer!r} (scores: {have})", "", where
            )
        raw = getattr(score, options.field)
        text = raw if isinstance(raw, str) or raw is None else json.dumps(raw)
        why = f"the score's {options.field} is empty (reason {score.reason!r})"
    return Result(text, "", "", where) if text else Result(None, why, "", where)


def sample_pair(sample: Any, mapper: Mapper, where: str, fmt: str) -> dict[str, str]:
    """The pair and order shown of one sample: by its ``id`` (a mapping given) or its
    ``metadata``.

    Raises:
        ConfigError: naming the sample and the missing metadata field."""
    if mapper.given:
        return mapper(str(sample.id), where)
    md = sample.metadata or {}
    pair = {}
    for k in ("instance", "model_a", "model_b", "first", "label"):
        if k not in md and k != "label":
            raise ConfigError(
                f"{fmt} log {where}: no field 'metadata.{k}' (give the pair in the sample metadata, "
                "or [benchmark.log] mapping or custom_id for the sample ids)"
            )
        pair[k] = "" if md.get(k) is None else str(md[k])
    return pair


@BENCHMARKS.register
class Inspect(BatchLog):
    """Inspect AI eval logs (module docstring); ``[benchmark.log]``: :class:`InspectOptions`."""

    name = "Inspect"
    Options = InspectOptions
    suffixes = (".eval", ".json")

    def read_logs(self, files: list[Path], rows: Rows) -> None:
        """One judgment per sample of the epoch read, in every file."""
        self._read, self._failed = True, []
        opts: InspectOptions = self.settings  # type: ignore[assignment]
        mapper = Mapper(opts, self.name, optional=True)
        mapper.key = "sample id"
        canon: dict[tuple[str, frozenset[str]], tuple[str, str]] = {}
        # a log directory's listing (Inspect's logs.json) is no eval log
        for f in [f for f in files if f.name != "logs.json"] or files:
            log = read_log(f, self.name, opts.max_bytes)
            judge = opts.judge or opts.scorer or str(log.eval.model)
            for i, s in enumerate(log.samples or []):
                if s.epoch != opts.epoch:
                    continue
                where = f"{f}: sample {i + 1} (id {s.id!r})"
                res = sample_result(s, opts, where)
                pair = sample_pair(s, mapper, where, self.name)
                add_verdict(rows, self.name, str(s.id), pair, judge, res, canon, "")
                if res.text is None:
                    self._failed.append((str(rows.n_verdicts - 1), res.why))


__all__ = ["Inspect", "InspectOptions", "read_log", "sample_pair", "sample_result"]
