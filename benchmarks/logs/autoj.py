"""Auto-J's pairwise leaderboard files (GAIR-NLP/auto-j, ``codes/leaderboard``): the test
data and a judge's predictions on it, in one or both orders.

Three JSON Lines files, read as ``codes/leaderboard/pairwise_eval.py`` reads them
(``utils_constants.read_jsonl``: blank lines skipped, the k-th record of each file is the
k-th pair):

- **test data** (``data/test/testdata_pairwise.jsonl``): per pair ``scenario``, ``label``
  (human preference: 0 = ``response 1`` better, 1 = ``response 2`` better, 2 = a tie;
  an int, or the same digit as a string), ``prompt``, ``response 1``, ``response 2``;
- **predictions** (``--pred_file_path``, e.g. ``data/outputs/pairwise_example_output.jsonl``):
  ``{"output": 0|1|2}`` per pair, ``response 1`` shown first;
- **exchanged predictions**, optional (``--exchange_pred_file_path``, e.g.
  ``pairwise_exchange_example_output.jsonl``): the same with ``response 2`` shown first,
  stored **as the judge saw the pair** (0 = the response shown first, ``response 2``):
  ``pairwise_eval.py``'s ``exchange_to_ori_label`` maps 0 ↔ 1 before comparing.

**Which file is which**: the test data is the file whose first record has ``label``, a
prediction file one whose first record has ``output``; of two prediction files the
exchanged one is ``[benchmark.log] exchanged`` (a path or a file name), else the one whose
name holds ``exchange`` (Auto-J's own naming). One prediction file is the original order
(``pairwise_eval.py --type single``): the judge's records then hold that order only, and
it is asked that order only (a log's judge is asked its own records,
:mod:`voirdire.engine.completion`).

**Reading**: ``output`` 0 → A (the response shown first wins), 1 → B, 2 → C (a tie); any
other value is an error naming the file and the line, as ``pairwise_eval.py``'s assert.
The judge's text is the prediction line (the files keep no judge text). The judge is
``[benchmark.log] judge``, else the original predictions' file name without ``.jsonl``.

Instances: one per pair, ``question_id`` its record number (1-based; its own bootstrap
cluster); ``task`` = ``scenario``; ``instruction`` = ``prompt``; the two answers are
anonymous slots, ``response 1`` (``model_a``, shown first in permutation 0) and
``response 2``, so no leaderboard is built; ``gold``: label 0 → ``response 1``, 1 →
``response 2``, 2 → ``tie``.

Auto-J's figures in voirdire's (``docs/findings.md``): its pairwise "Agreement" is
``correct_both / total``, both orders (mapped back) equal to the label, ties included:
voirdire's ``both_correct``; its "Consistency" is ``1 - exchange_dont_agree / total``, the
two orders' mapped labels equal (a tie in both counts): voirdire's PC, every pair having a
verdict in both orders. ``--type single``'s Agreement is ``accuracy_shown``.

The repository has no licence file: nothing of it is shipped (no prompt; a live judge
completing the swap asks FastChat's pair-v2, :data:`~.tool_prompts.TOOL_OF`'s default).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import (
    LogLimits,
    Rows,
    iter_jsonl,
    need,
)
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: the two answers' slots, named as Auto-J's test data names them
SLOTS = ("response 1", "response 2")
#: a prediction's ``output`` as voirdire's letter, A = the response shown first
LETTERS = {0: "A", 1: "B", 2: "C"}
#: the test data's ``label`` as the gold answer
GOLD = {0: SLOTS[0], 1: SLOTS[1], 2: "tie"}
#: the test data's fields (besides ``label``), all strings
FIELDS = ("scenario", "prompt", "response 1", "response 2")


class AutoJOptions(LogLimits):
    """``[benchmark.log]``: ``exchanged``, the prediction file with ``response 2`` shown first
    (a path or a file name; else the one whose name holds ``exchange``); ``judge``, the
    judge's name (else the original predictions' file name without ``.jsonl``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exchanged: str | None = None
    judge: str | None = None


def _kind(path: Path, fmt: str) -> str:
    """``"test"`` or ``"pred"``: what the first record of ``path`` holds.

    Raises:
        ConfigError: an empty file, or a record with neither ``label`` nor ``output``."""
    for n, obj in iter_jsonl(path, fmt):
        if "label" in obj:
            return "test"
        if "output" in obj:
            return "pred"
        raise ConfigError(
            f"{fmt} log {path}: line {n}: no field 'label' (test data) or 'output' (predictions) (is this an Auto-J file?)"
        )
    raise ConfigError(f"{fmt} log {path}: no records")


def sort_files(
    files: Sequence[Path], options: Any, fmt: str = "AutoJ"
) -> tuple[Path, Path, Path | None]:
    """``(test data, predictions, exchanged predictions or None)`` of the given files
    (module docstring, *Which file is which*).

    Raises:
        ConfigError: not one test data file, not one or two prediction files, an
            ``exchanged`` file not among them, two prediction files not told apart."""
    kinds = {f: _kind(f, fmt) for f in files}
    tests = [f for f, k in kinds.items() if k == "test"]
    preds = [f for f, k in kinds.items() if k == "pred"]
    if len(tests) != 1:
        raise ConfigError(
            f"{fmt}: give one test data file (records with 'label'), not {len(tests)}: {', '.join(map(str, tests)) or 'none'}"
        )
    if not 1 <= len(preds) <= 2:
        raise ConfigError(
            f"{fmt}: give one or two prediction files (records with 'output'), not {len(preds)}"
        )
    if options.exchanged is not None:
        want = Path(options.exchanged)
        exch = [p for p in preds if p.name == options.exchanged or p == want.resolve()]
        if len(exch) != 1 or len(preds) != 2:
            raise ConfigError(
                f"{fmt}: benchmark.log.exchanged {options.exchanged!r} names none of two prediction files "
                f"({', '.join(map(str, preds))})"
            )
    elif len(preds) == 2:
        exch = [p for p in preds if "exchange" in p.name]
        if len(exch) != 1:
            raise ConfigError(
                f"{fmt}: which of {preds[0]} and {preds[1]} shows response 2 first? "
                'name it: --option exchanged=FILE ([benchmark.log] exchanged = "FILE")'
            )
    else:
        return tests[0], preds[0], None
    return tests[0], next(p for p in preds if p != exch[0]), exch[0]


def _label(obj: dict[str, Any], where: str, fmt: str) -> str:
    """The gold answer of a test record's ``label`` (0, 1, 2 or the digit as a string)."""
    raw = need(obj, "label", where, fmt, (int, str))
    value = raw if type(raw) is int else (int(raw) if raw in ("0", "1", "2") else None)
    if value not in GOLD:
        raise ConfigError(f"{fmt} log {where}: field 'label' is {raw!r}, not 0, 1 or 2")
    return GOLD[value]


def _predictions(path: Path, fmt: str) -> list[tuple[str, int, str]]:
    """``(where, output, line as JSON)`` of each record of a prediction file.

    Raises:
        ConfigError: no ``output``, or one not 0, 1 or 2 (the line named)."""
    out = []
    for n, obj in iter_jsonl(path, fmt):
        where = f"{path}: line {n}"
        v = need(obj, "output", where, fmt)
        if type(v) is not int or v not in LETTERS:
            raise ConfigError(
                f"{fmt} log {where}: field 'output' is {v!r}, not 0, 1 or 2"
            )
        out.append((where, v, json.dumps(obj, ensure_ascii=False)))
    return out


@BENCHMARKS.register
class AutoJ(LogBenchmark):
    """Auto-J's pairwise test data and a judge's predictions (module docstring);
    ``[benchmark.log]``: :class:`AutoJOptions`."""

    name = "AutoJ"
    named_models = False
    Options = AutoJOptions

    def read_logs(self, files: list[Path], rows: Rows) -> None:
        """The pairs of the test data and the verdicts of the one or two prediction files,
        joined by record number.

        Raises:
            ConfigError: a malformed record (file, line and field named), a prediction file
                with another number of records than the test data (both named)."""
        f = self.name
        test, pred, exch = sort_files(files, self.settings, f)
        judge = self.settings.judge or pred.name.removesuffix(".jsonl")
        orders = [(pred, SLOTS)] + ([(exch, SLOTS[::-1])] if exch else [])
        verdicts = [(_predictions(p, f), shown) for p, shown in orders]
        k = 0
        for n, obj in iter_jsonl(test, f):
            where = f"{test}: line {n}"
            text = [need(obj, c, where, f, str) for c in FIELDS]
            gold = _label(obj, where, f)
            k += 1
            qid = str(k)
            rows.pair(
                qid, qid, *SLOTS, task=text[0], instruction=text[1],
                output_a=text[2], output_b=text[3], gold=gold,
            )  # fmt: skip
            for preds, shown in verdicts:
                if k <= len(preds):
                    w, v, line = preds[k - 1]
                    rows.verdict(qid, judge, shown, line, LETTERS[v], w)
        for (preds, _), (p, _) in zip(verdicts, orders):
            if len(preds) != k:
                raise ConfigError(
                    f"{f}: predictions {p} hold {len(preds)} records, test data {test} holds {k}: "
                    "the k-th prediction is the k-th pair's"
                )


__all__ = [
    "GOLD",
    "LETTERS",
    "SLOTS",
    "AutoJ",
    "AutoJOptions",
    "sort_files",
]
