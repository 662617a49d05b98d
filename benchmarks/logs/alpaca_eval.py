"""AlpacaEval's annotations (tatsu-lab/alpaca_eval): ``results/<model>/<annotator>/annotations.json``.

A JSON array of objects, as ``PairwiseAnnotator`` saves them: ``instruction``, ``output_1``,
``generator_1`` (the reference, e.g. ``gpt4_1106_preview``), ``output_2``, ``generator_2`` (the
model), ``dataset``, ``annotator`` and ``preference``: 1 (``output_1`` better) to 2
(``output_2`` better), already mapped back to ``output_1``/``output_2``; continuous for the
log-probability annotators (``weighted_alpaca_eval_gpt4_turbo``: ``2 - P(first)``, read from the
tokens ``m``/``M``), 1.5 or 0 a draw, null a failed annotation. Where the annotator keeps it,
``raw_completion`` is its output (the token log-probabilities, a function call, or text).

**Order shown**: one order per pair, randomised and recoverable. AlpacaEval does not store
it; ``annotators/pairwise_evaluator.py`` (``SinglePairwiseAnnotator``) adds
``processors.RandomSwitchTwoColumnsProcessor(two_columns_to_switch=["output_1", "output_2"],
random_seed_columns=["instruction"], _switch_column="is_switched_outputs")``, whose
``preprocess`` switches a row when ``utils.random_seeded_choice(seed="is_switched_outputs" +
"".join(row[sorted(random_seed_columns)]) + str(seed), choices=[False, True])``, that is
``random.Random(that string).choices([False, True], k=1)[0]``, is true. ``seed`` is the
annotator's, which ``annotators/base.py``'s ``BaseAnnotator`` passes to each single annotator
(default 0; ``SingleAnnotator``'s own default 123 is overridden). A switched row showed
``output_2`` first (in the prompt's first slot, ``{output_1}``: ``m`` of
``alpaca_eval_clf.txt``) and its preference was mapped back by ``3 - x``
(``_fn_replace_if_switch``). ``[benchmark.log] seed`` and ``seed_columns`` set them for a run
made otherwise. The rule was checked against the raw completions of the published logs:
with seed 0 it reproduces every weighted annotation from its ``m``/``M`` log-probabilities,
with 123 about half.

**Reading**: the preference in the order shown, ``p = 3 - preference`` if switched else
``preference``: ``p < 1.5`` → A (the output shown first wins), ``p > 1.5`` → B, ``p = 1.5`` or
0 (AlpacaEval's draws) → C; null or NaN → a failed annotation. The continuous preference is
kept in the normalised copy's ``preferences.parquet`` (:data:`PREFERENCES`): per verdict
``question_id``, ``judge``, ``first``, ``second``, ``preference`` (as logged, ``output_1``'s
frame), ``switched`` and ``p_first``, the probability that the output shown first wins
(``2 - p``; 0.5 for a draw; null for a failure).

Instances: one per (instruction, generator pair): ``question_id`` =
``"<hash of the instruction>|<generator_1>|<generator_2>"``; the roles as AlpacaEval's
leaderboard has them: ``model_a`` (the candidate) the annotated model ``generator_2``,
``model_b`` (the reference) the baseline ``generator_1`` (``gpt4_1106_preview``,
``text_davinci_003``), ``output_a``/``output_b`` their outputs; the instruction its bootstrap
cluster, ``task`` the ``dataset``; instruction and outputs kept. The judge is
``annotator``. Each verdict keeps the order shown (the seeded switch): permutation 0 (the
model first) where switched, 1 (the baseline first) where not; the judge is asked that
unit only (its records': :attr:`~.base.LogBenchmark.asks_own_records`), so an audit's
design is ``randomised`` (about half of the pairs each way) and the first-versus-second
effect is a randomised comparison (``docs/one-order-and-calibration.md``).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
from pydantic import ConfigDict

from voirdire import bounds
from voirdire.benchmarks.logs.alpaca_eval_release import (
    RELEASE_SCHEMA,
    release_files,
    release_rows,
)
from voirdire.benchmarks.logs.base import LogBenchmark
from voirdire.benchmarks.logs.reading import (
    RECORDED,
    LogLimits,
    Rows,
    log_settings,
    need,
    read_json,
    temp_name,
)
from voirdire.benchmarks.recorded import Recorded, RecordKey
from voirdire.benchmarks.registry import BENCHMARKS
from voirdire.core import ConfigError, content_hash

#: the normalised copy's table of continuous preferences (module docstring)
PREFERENCES = "preferences.parquet"
#: AlpacaEval's switch column name, the first part of the switching seed
SWITCH_COLUMN = "is_switched_outputs"
#: the annotation columns one instruction fixes (its ``dataset`` too): a switch seeded by
#: them alone is shared by every model on the instruction
PER_INSTRUCTION = frozenset({"instruction", "dataset"})
#: the normalised copy's table of length-controlled win rate weights (:func:`read_weights`)
LC_WEIGHTS = "lc_weights.parquet"
#: the normalised copy's table of the whole release's comparisons for the audited annotators
#: (:mod:`~voirdire.benchmarks.logs.alpaca_eval_release`: what the instruction difficulty
#: is fitted on, whichever of the release's models are audited)
LC_RELEASE = "lc_release.parquet"
WEIGHTS_DIR = Path("src/alpaca_eval/metrics/weights")
LC_V1 = "length_controlled_v1"
#: AlpacaEval's weight columns (its patsy terms) -> voirdire's names
WEIGHT_COLUMNS = {
    "np.tanh(std_delta_len)": "length", "instruction_difficulty": "difficulty",
    "not_gamed_baseline.astype(float)": "not_gamed",
}  # fmt: skip
WEIGHTS_SCHEMA = {
    "baseline": pl.String, "model": pl.String, "length": pl.Float64,
    "difficulty": pl.Float64, "not_gamed": pl.Float64,
}  # fmt: skip
PREFERENCE_SCHEMA = {
    "question_id": pl.String, "judge": pl.String, "first": pl.String, "second": pl.String,
    "preference": pl.Float64, "switched": pl.Boolean, "p_first": pl.Float64,
}  # fmt: skip


class AlpacaEvalOptions(LogLimits):
    """``[benchmark.log]``: ``seed`` (the annotator's seed, AlpacaEval's default 0),
    ``seed_columns`` (the columns seeding the switch, default ``["instruction"]``) and
    ``lc_weights`` (a length-controlled win rate weights CSV, :func:`read_weights`; default:
    found where the repository keeps it beside the logs, :func:`weights_file`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    seed_columns: tuple[str, ...] = ("instruction",)
    lc_weights: str | None = None


def weights_file(log: Path, baseline: str) -> Path | None:
    """Where AlpacaEval's repository keeps the length-controlled win rate's weights for a
    log at ``results/<model>/<annotator>/annotations.json``:
    ``src/alpaca_eval/metrics/weights/<annotator>/length_controlled_v1/baseline_<baseline>.csv``
    (the file ``voirdire data fetch alpaca_eval`` brings), or None (not there)."""
    log = Path(log)
    if len(log.parts) < 4 or log.parents[2].name != "results":
        return None
    path = (
        log.parents[3]
        / WEIGHTS_DIR
        / log.parent.name
        / LC_V1
        / f"baseline_{baseline}.csv"
    )
    return path if path.is_file() else None


def read_weights(path: Path, baseline: str) -> pl.DataFrame:
    """AlpacaEval's ``length_controlled_v1`` weights CSV (``glm_winrate.py`` saves it: the
    model as index, then the columns of :data:`WEIGHT_COLUMNS`) as :data:`WEIGHTS_SCHEMA`.

    Raises:
        ConfigError: not a CSV of those columns, a weight that is no finite number, over
            1 MB (a weights file is ~16 KB)."""
    if path.stat().st_size > 1_000_000:
        raise ConfigError(f"AlpacaEval weights {path}: over 1 MB, not a weights file")
    try:
        df = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"AlpacaEval weights {path}: not a CSV ({exc})") from None
    missing = [c for c in ("", *WEIGHT_COLUMNS) if c not in df.columns]
    if missing:
        raise ConfigError(
            f"AlpacaEval weights {path}: no column {missing[0]!r} (is this a length_controlled_v1 weights file?)"
        )
    out = df.select(
        model=pl.col(""),
        **{
            v: pl.col(k).cast(pl.Float64, strict=False)
            for k, v in WEIGHT_COLUMNS.items()
        },
    )
    bad = out.filter(
        pl.any_horizontal(
            pl.col(WEIGHT_COLUMNS.values()).is_null()
            | ~pl.col(WEIGHT_COLUMNS.values()).is_finite()
        )
    )
    if bad.height or out["model"].null_count():
        raise ConfigError(
            f"AlpacaEval weights {path}: a weight is no finite number (model {bad['model'][0] if bad.height else None!r})"
        )
    return out.with_columns(baseline=pl.lit(baseline)).select(list(WEIGHTS_SCHEMA)).cast(WEIGHTS_SCHEMA)  # fmt: skip


def is_switched(row: dict[str, Any], seed: int, columns=("instruction",)) -> bool:
    """Whether AlpacaEval showed ``output_2`` first (``RandomSwitchTwoColumnsProcessor``,
    module docstring): ``random.Random("is_switched_outputs" + "".join(row[c] for c in
    sorted(columns)) + str(seed)).choices([False, True], k=1)[0]``."""
    key = SWITCH_COLUMN + "".join(str(row[c]) for c in sorted(columns)) + str(seed)
    return random.Random(key).choices([False, True], k=1)[0]


def load_annotations(path: Path, fmt: str) -> list[Any]:
    """The JSON array of an ``annotations.json``.

    Raises:
        ConfigError: not UTF-8, not JSON (line and column named: a truncated file?), not an
            array."""
    data = read_json(path, fmt)
    if not isinstance(data, list):
        raise ConfigError(
            f"{fmt} log {path}: line 1: not a JSON array of annotations but a {type(data).__name__} (is this a {fmt} log?)"
        )
    return data


def completion_text(raw: Any) -> str:
    """The annotator's raw output as text: a string as is, else JSON (keys sorted); ``""``
    where the log keeps none."""
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)


def annotations(path: Path, options: Any, fmt: str):
    """Per annotation of one file: ``(where, row, question_id, shown, switched, preference,
    p_first, letter)`` (module docstring; ``preference`` null: a failed annotation). An
    annotation of a model against itself (``generator_1 == generator_2``: the reference's own
    file, ``results/gpt4_1106_preview/...``, all draws) is no pair and is skipped.

    Raises:
        ConfigError: naming the file, the JSON index and the field."""
    for i, obj in enumerate(load_annotations(path, fmt)):
        where = f"{path}: [{i}]"
        if not isinstance(obj, dict):
            raise ConfigError(
                f"{fmt} log {where}: not a JSON object (a {type(obj).__name__})"
            )
        for key in (
            "instruction",
            "output_1",
            "output_2",
            "generator_1",
            "generator_2",
            "annotator",
        ):
            need(obj, key, where, fmt, str)
        pref = need(obj, "preference", where, fmt, (int, float, type(None)))
        for c in options.seed_columns:
            need(obj, c, where, fmt)
        sw = is_switched(obj, options.seed, options.seed_columns)
        g1, g2 = obj["generator_1"], obj["generator_2"]
        if g1 == g2:  # the reference's own file: it against itself, no pair to audit
            continue
        qid = f"{content_hash(obj['instruction'])[:16]}|{g1}|{g2}"
        shown = (g2, g1) if sw else (g1, g2)
        if pref is None or (isinstance(pref, float) and math.isnan(pref)):
            yield where, obj, qid, shown, sw, None, None, None
            continue
        if pref == 0:
            p = 1.5
        elif 1 - 1e-3 <= pref <= 2 + 1e-3:
            p = 3 - pref if sw else pref
        else:
            raise ConfigError(
                f"{fmt} log {where}: field 'preference' is {pref!r}, not 1 to 2 (or 0, a draw)"
            )
        letter = "A" if p < 1.5 else "B" if p > 1.5 else "C"
        yield where, obj, qid, shown, sw, float(pref), min(1.0, max(0.0, 2 - p)), letter


@BENCHMARKS.register
class AlpacaEval(LogBenchmark):
    """AlpacaEval's annotations (module docstring); ``[benchmark.log]``: :class:`AlpacaEvalOptions`."""

    name = "AlpacaEval"
    #: a record of the format (:meth:`~voirdire.benchmarks.logs.base.LogBenchmark.owns`)
    record_keys = (frozenset({"instruction", "output_1", "output_2"}),)
    layout = "json"
    Options = AlpacaEvalOptions
    #: by default the seeded switch depends on the instruction alone (``seed_columns``):
    #: every model is shown first on the same instructions, the clusters
    #: (:meth:`~.base.LogBenchmark.clusters`); other seed columns: :meth:`order_unit_for`
    order_unit: ClassVar[str] = "cluster"
    suffixes = (".json",)

    @classmethod
    def order_unit_for(cls, settings: Mapping[str, Any] | None = None) -> str:
        """The unit the switch's ``seed_columns`` (``settings["log"]``, the job's
        ``[benchmark.log]``) randomised the order over: ``"cluster"`` (per instruction, shared
        by every model) when they are the instruction and columns fixed by it
        (:data:`PER_INSTRUCTION`); ``"pair"`` when one may vary within an instruction (an
        output, a model's name: each pair its own coin); ``"none"`` when they leave the
        instruction out and vary with none of those (one coin for many instructions, e.g.
        ``["dataset"]``: no unit the test can permute).

        Raises:
            ConfigError: ``settings["log"]`` that :class:`AlpacaEvalOptions` refuses."""
        log = (settings or {}).get("log")
        cols = set(log_settings(cls.Options, log, cls.name).seed_columns)
        if not cols <= PER_INSTRUCTION:
            return "pair"
        return "cluster" if "instruction" in cols else "none"

    @classmethod
    def read(cls, path: Path, options: Any, rows: Rows) -> None:
        """The pairs (the model ``generator_2`` as ``model_a``, the baseline ``generator_1``
        as ``model_b``) and the one verdict each, in the order shown, of one
        ``annotations.json``."""
        for where, obj, qid, shown, _, pref, _, letter in annotations(
            path, options, cls.name
        ):
            rows.pair(
                qid, qid.split("|", 1)[0], obj["generator_2"], obj["generator_1"],
                task=str(obj.get("dataset") or "all"), instruction=obj["instruction"],
                output_a=obj["output_2"], output_b=obj["output_1"],
            )  # fmt: skip
            text = None if pref is None else completion_text(obj.get("raw_completion"))
            rows.verdict(qid, obj["annotator"], shown, text, letter or "", where)

    def _copy(
        self, files: list[Path], digest: str
    ) -> tuple[pl.DataFrame, dict[str, str]]:
        """The shared normalised copy, and :data:`PREFERENCES` next to it (written again when
        the verdicts were)."""
        pairs, keys = super()._copy(files, digest)
        d, path = self.data_dir, self.data_dir / PREFERENCES
        if (
            path.is_file()
            and (d / LC_RELEASE).is_file()
            and path.stat().st_mtime >= (d / RECORDED).stat().st_mtime
        ):
            return pairs, keys
        cols: dict[str, list[Any]] = {c: [] for c in PREFERENCE_SCHEMA}
        bases: dict[str, Path | None] = {}
        tried: set[tuple[Path, str]] = set()
        for f in files:
            for _, obj, qid, shown, sw, pref, p_first, _ in annotations(
                f, self.settings, self.name
            ):
                for c, v in zip(
                    cols, (qid, obj["annotator"], *shown, pref, sw, p_first)
                ):
                    cols[c].append(v)
                g1 = obj["generator_1"]
                if bases.get(g1) is None and (f, g1) not in tried:
                    tried.add((f, g1))
                    bases[g1] = weights_file(f, g1)
        self._write_weights(bases)
        self._write_release(files)
        tmp = temp_name(path)
        pl.DataFrame(cols, schema=PREFERENCE_SCHEMA).write_parquet(tmp)
        os.replace(tmp, path)
        return pairs, keys

    def _write_weights(self, bases: dict[str, Path | None]) -> None:
        """:data:`LC_WEIGHTS` in the normalised copy: each baseline's weights, from
        ``lc_weights`` or where the repository keeps them beside the logs; none found: no
        table (``voirdire rank --style`` then fits the minimal formula)."""
        given = self.settings.lc_weights
        parts = [
            read_weights(Path(given) if given else p, b)
            for b, p in sorted(bases.items())
            if given or p is not None
        ]
        out = self.data_dir / LC_WEIGHTS
        if not parts:
            out.unlink(missing_ok=True)
            return
        tmp = temp_name(out)
        pl.concat(parts).write_parquet(tmp)
        os.replace(tmp, out)

    def _write_release(self, files: list[Path]) -> None:
        """:data:`LC_RELEASE` in the normalised copy: the rows of every release the logs
        belong to (:func:`~voirdire.benchmarks.logs.alpaca_eval_release.release_files`),
        each file once; empty where no log sits in a release's layout (the difficulty is
        then fitted on the audited models)."""
        every = dict.fromkeys(r for f in files for r in release_files(f))
        rows = (
            release_rows(
                list(every),
                lambda f: annotations(f, self.settings, self.name),
                self.name,
                self.settings.max_bytes,
            )
            if every
            else pl.DataFrame(schema=RELEASE_SCHEMA)
        )
        out = self.data_dir / LC_RELEASE
        tmp = temp_name(out)
        rows.write_parquet(tmp)
        os.replace(tmp, out)

    @classmethod
    def length_control_release(
        cls, data_dir: str | os.PathLike[str] | None = None
    ) -> pl.DataFrame | None:
        """The whole release's comparisons the normalised copy holds (:data:`LC_RELEASE`,
        :data:`~voirdire.benchmarks.logs.alpaca_eval_release.RELEASE_SCHEMA`), or None (no
        table, or an empty one: no log in a release's layout)."""
        df = _received_table(data_dir, LC_RELEASE, RELEASE_SCHEMA, 64 << 20,
                             "AlpacaEval release table: ~0.5 MB for 58 models")  # fmt: skip
        return df if df is not None and df.height else None

    @classmethod
    def length_control_weights(
        cls, data_dir: str | os.PathLike[str] | None = None
    ) -> pl.DataFrame | None:
        """The published ``length_controlled_v1`` weights the normalised copy holds
        (:data:`LC_WEIGHTS`, :data:`WEIGHTS_SCHEMA`), or None."""
        return _received_table(data_dir, LC_WEIGHTS, WEIGHTS_SCHEMA, 1_000_000,
                               "AlpacaEval weights: a weights file is ~16 KB")  # fmt: skip

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """Judge ``recorded``'s verdicts (:meth:`~.base.LogBenchmark.read_recorded`), each with
        the annotator's continuous preference as its probabilities where the log holds one:
        ``probs = {"A": p_first, "B": 1 − p_first}`` (:data:`PREFERENCES`; a draw ½ each), so
        the win rate, the length-controlled win rate and calibration read AlpacaEval's own
        preference rather than the letter cut at 1.5."""
        out = super().read_recorded(path, recorded)
        pref = path.parent / PREFERENCES
        if not pref.is_file():
            return out
        df = (
            pl.scan_parquet(pref)
            .filter((pl.col("judge") == recorded) & pl.col("p_first").is_not_null())
            .select(k=pl.concat_str("question_id", "first", "second", separator=";"), p="p_first")
            .collect()
        )  # fmt: skip
        for k, p in df.iter_rows():
            rec = out.get((k, 1))
            if rec is not None and rec.output is not None:
                out[(k, 1)] = replace(rec, probs={"A": p, "B": 1.0 - p})
        return out


__all__ = [
    "LC_RELEASE",
    "LC_WEIGHTS",
    "PREFERENCES",
    "WEIGHTS_SCHEMA",
    "read_weights",
    "weights_file",
    "AlpacaEval",
    "AlpacaEvalOptions",
    "annotations",
    "completion_text",
    "is_switched",
    "load_annotations",
]


def _received_table(
    data_dir, name: str, schema: dict, limit: int, what: str
) -> pl.DataFrame | None:
    """``data_dir/name`` (a received directory's Parquet copy) bounded at ``limit`` bytes,
    read, checked against ``schema`` and cut to its columns; None where there is no such
    file. Raises ConfigError (one line naming the file) on a bound, an unreadable file or a
    schema mismatch."""
    path = Path(data_dir or ".") / name
    if not (data_dir and path.is_file()):
        return None
    bounds.check_size(path.stat().st_size, str(path), limit, "on disk", what)
    try:
        df = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(
            f"{path}: not a readable Parquet file ({first[:200]})"
        ) from None
    bounds.check_table(df, str(path), schema)
    return df.select(list(schema))
