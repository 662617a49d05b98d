"""Arena-Hard-Auto's judgment logs (lmarena/arena-hard-auto): ``model_judgment/<judge>/<model>.jsonl``.

One JSON object a line, as ``gen_judgment.py`` writes it: ``uid`` (v2; ``question_id`` in
v0.1), ``category`` (v2), ``judge``, ``model``, ``baseline`` (v2; v0.1 files have none: the
``baseline`` setting, default ``gpt-4-0314``, ``show_result.py``'s default) and ``games``, two
games. **Order shown** (``gen_judgment.py``, ``judgment()``): game 1 shows the baseline as
assistant A and the model as B; game 2 shows the model as A and the baseline as B. Each game
holds ``score`` (the label the tool read from the judge's text with its regex: ``A>>B``,
``A>B``, ``A=B``, ``B>A``, ``B>>A``, or null), ``judgment`` (the judge's output: v2 a dict
whose ``answer`` is the text, v0.1 the text itself) and the prompt; a null game is a failed
call. **Reading** (``show_result.py``, ``label_to_score``): ``A>B``, ``A>>B``, ``B<A``,
``B<<A`` → A (the answer shown first wins); ``A=B``, ``B=A`` → C (tie); ``A<B``, ``A<<B``,
``B>A``, ``B>>A`` → B; any other or null score → no verdict. The strength (``>>``) stays in
the recorded text; Arena-Hard's weight for strong verdicts (``--weight 3``) is not applied.

Instances: one per line, ``question_id`` = ``"<uid>|<model>|<baseline>"``, the model as the
candidate (``model_a``) and the baseline as the reference (``model_b``), as voirdire's cells
and win rates take them (the candidate against the reference, like MT-Bench's release), so
permutation 0 is game 2 and permutation 1 game 1; the question (``uid``) is its bootstrap cluster, ``task`` the ``category``
(``"all"`` in v0.1). The log holds no question or answer text apart from the prompt it sent:
``instruction`` and the outputs are empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import Rows, iter_jsonl, need
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError

#: Arena-Hard's labels (show_result.py's label_to_score) as voirdire's letters, A = shown first
LETTERS = {
    "A>B": "A", "A>>B": "A", "B<A": "A", "B<<A": "A",
    "A=B": "C", "B=A": "C",
    "A<B": "B", "A<<B": "B", "B>A": "B", "B>>A": "B",
}  # fmt: skip


class ArenaHardOptions(BaseModel):
    """``[benchmark.log]``: ``baseline``, the baseline model of lines without a ``baseline``
    field (v0.1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline: str = "gpt-4-0314"


def game_text(game: dict[str, Any], where: str, i: int) -> str:
    """The judge's text of a game: ``judgment`` itself (v0.1) or its ``answer`` (v2).

    Raises:
        ConfigError: no ``judgment``, or a v2 one without a text ``answer``.
    """
    j = need(game, "judgment", f"{where}, games[{i}]", ArenaHard.name)
    if isinstance(j, str):
        return j
    if isinstance(j, dict) and isinstance(j.get("answer"), str):
        return j["answer"]
    raise ConfigError(
        f"{ArenaHard.name} log {where}: field 'games[{i}].judgment' is neither the judge's text nor an object with a text 'answer'"
    )


@BENCHMARKS.register
class ArenaHard(LogBenchmark):
    """Arena-Hard-Auto's judgment logs (module docstring); ``[benchmark.log]``: :class:`ArenaHardOptions`."""

    name = "ArenaHard"
    Options = ArenaHardOptions

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs and both games' verdicts of one ``model_judgment`` file."""
        for n, obj in iter_jsonl(path, cls.name):
            where = f"{path}: line {n}"
            uid = obj.get("uid", obj.get("question_id"))
            if uid is None:
                need(obj, "uid", where, cls.name)
            model = str(need(obj, "model", where, cls.name, (str, int)))
            judge = str(need(obj, "judge", where, cls.name, (str, int)))
            base = obj.get("baseline") or options.baseline
            games = need(obj, "games", where, cls.name, list)
            if len(games) != 2:
                raise ConfigError(
                    f"{cls.name} log {where}: field 'games' holds {len(games)} games, not 2"
                )
            qid = f"{uid}|{model}|{base}"
            rows.pair(
                qid, str(uid), model, base, task=str(obj.get("category") or "all")
            )
            for i, (game, shown) in enumerate(
                zip(games, ((base, model), (model, base)))
            ):
                if game is None:  # the call failed: show_result drops the item
                    rows.verdict(qid, judge, shown, None, "", where)
                    continue
                if not isinstance(game, dict):
                    raise ConfigError(
                        f"{cls.name} log {where}: field 'games[{i}]' is not an object"
                    )
                score = need(game, "score", f"{where}, games[{i}]", cls.name)
                text = game_text(game, where, i)
                rows.verdict(
                    qid,
                    judge,
                    shown,
                    text,
                    LETTERS.get(str(score), "") if score else "",
                    where,
                )


__all__ = ["LETTERS", "ArenaHard", "ArenaHardOptions", "game_text"]
