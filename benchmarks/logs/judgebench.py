"""JudgeBench's judge outputs (ScalerLab/JudgeBench): ``outputs/dataset=judgebench,response_model=<m>,judge_name=<j>,judge_model=<jm>.jsonl``.

One JSON object a line, as ``run_judge.py`` writes it: the pair's fields (``pair_id``,
``original_id``, ``source``, ``question``, ``response_model``, ``response_A``,
``response_B``, ``label``: ``A>B`` or ``B>A``), ``judge_name`` and ``judgments``: the
judge's output for the pair as given and, unless run with ``--single_game``, for the
responses swapped. **Order shown** (``run_judge.py``, ``judge_pairs``): ``judgments[0]`` =
``get_judgment(question, response_A, response_B)``, ``judgments[1]`` =
``get_judgment(question, response_B, response_A)``; each is ``{"judgment": {...},
"decision": ...}`` or null (a failed call). The ``decision`` is stored as the judge saw the
pair: ``utils/metrics.py`` flips the second one (``flip_judgment``: ``A>B`` ↔ ``B>A``) before
comparing with the label. **Reading**: ``A>B`` → A (the response shown first wins), ``B>A``
→ B, ``A=B`` → C (a tie, which JudgeBench counts as neither right nor wrong), any other or
null decision → no verdict. The judge's text is ``judgment["response"]``; a judge without
one (a reward model's ``scores``) is recorded as the ``judgment`` object in JSON.

Instances: one per ``pair_id``; the two answers are anonymous slots of one response model
(``response_A`` first, ``response_B``), so no leaderboard is built; ``gold`` from ``label``;
``instruction`` = ``question``; ``task`` = ``source``; the bootstrap cluster the original
question (``source`` and ``original_id``). The judge is ``<judge_name>:<judge_model>``
(``judge_model`` from the file name, else from the judgment).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import Rows, iter_jsonl, need
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: the two answers' slots, named as JudgeBench names them
SLOTS = ("response_A", "response_B")
#: a stored decision as voirdire's letter, A = the response shown first
LETTERS = {"A>B": "A", "B>A": "B", "A=B": "C"}
GOLD = {"A>B": SLOTS[0], "B>A": SLOTS[1]}


def judgment_text(j: dict[str, Any]) -> str:
    """The judge's text of one judgment: ``judgment["response"]``, else the ``judgment``
    object as JSON (keys sorted)."""
    inner = j.get("judgment")
    if isinstance(inner, dict) and isinstance(inner.get("response"), str):
        return inner["response"]
    return json.dumps(inner, sort_keys=True, ensure_ascii=False)


@BENCHMARKS.register
class JudgeBench(LogBenchmark):
    """JudgeBench's judge outputs (module docstring)."""

    name = "JudgeBench"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (frozenset({"pair_id", "judge_name", "judgments"}),)
    named_models = False

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pair and its one or two judgments of each line of one outputs file."""
        f = cls.name
        named = re.search(r"judge_model=([^,]+?)\.jsonl$", path.name)
        for n, obj in iter_jsonl(path, f):
            where = f"{path}: line {n}"
            pid = str(need(obj, "pair_id", where, f, (str, int)))
            label = need(obj, "label", where, f, (str, type(None)))
            jname = str(need(obj, "judge_name", where, f, str))
            js = need(obj, "judgments", where, f, list)
            if not 1 <= len(js) <= 2:
                raise ConfigError(
                    f"{f} log {where}: field 'judgments' holds {len(js)} judgments, not 1 or 2"
                )
            for i, j in enumerate(js):
                if j is not None and not isinstance(j, dict):
                    raise ConfigError(
                        f"{f} log {where}: field 'judgments[{i}]' is not an object"
                    )
                if j is not None:
                    need(j, "decision", f"{where}, judgments[{i}]", f)
            model = named.group(1) if named else next(
                (j["judgment"].get("judge_model") for j in js if j and isinstance(j.get("judgment"), dict)),
                None,
            )  # fmt: skip
            judge = f"{jname}:{model}" if model else jname
            source = str(obj.get("source") or "all")
            rows.pair(
                pid, f"{source}:{obj.get('original_id', pid)}", *SLOTS, task=source,
                instruction=str(obj.get("question") or ""), output_a=str(obj.get("response_A") or ""),
                output_b=str(obj.get("response_B") or ""), gold=GOLD.get(str(label)),
            )  # fmt: skip
            for j, shown in zip(js, (SLOTS, SLOTS[::-1])):
                if j is None:
                    rows.verdict(pid, judge, shown, None, "", where)
                else:
                    letter = LETTERS.get(str(j["decision"]), "")
                    rows.verdict(pid, judge, shown, judgment_text(j), letter, where)


__all__ = ["GOLD", "LETTERS", "SLOTS", "JudgeBench", "judgment_text"]
