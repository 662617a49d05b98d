"""What a benchmark is as a registered kind: the class-level hooks read before any data is loaded.

:class:`~voirdire.benchmarks.base.Benchmark` inherits them; a benchmark's module overrides
what differs from the defaults (the first release's layout and conventions):

- **where its data lies**: :attr:`BenchmarkKind.release` (the
  :class:`~voirdire.benchmarks.releases.catalogue.Release` record it reads, fetched by
  ``voirdire data fetch <release>``; ``None``: it reads files of its own, named by its
  options) and :meth:`BenchmarkKind.locate`;
- **what the job may set**: :attr:`BenchmarkKind.options` (``[benchmark]`` settings beyond
  ``data_dir`` and ``sample``: ``subsets``, ``prompt``, ``pairs``) and
  :meth:`BenchmarkKind.load`;
- **the release's recorded outputs**, read by the replay judge:
  :meth:`BenchmarkKind.recorded_judges`, :meth:`BenchmarkKind.recorded_file`,
  :meth:`BenchmarkKind.read_recorded`, :meth:`BenchmarkKind.recorded_mode`
  (default: :mod:`voirdire.benchmarks.recorded`, the first release's layout), and which
  units a recorded judge is asked (:attr:`BenchmarkKind.asks_own_records`,
  :meth:`BenchmarkKind.recorded_keys`);
- **the bootstrap's clusters**: :meth:`BenchmarkKind.clusters` (default: each question
  its own cluster);
- **the release's own statistics**: :meth:`BenchmarkKind.release_readings`, the winner
  the release counts in each order (:mod:`voirdire.analysis.position.release_stats`);
- **how its order was randomised** (:attr:`BenchmarkKind.order_unit`, under a job's
  settings :meth:`BenchmarkKind.order_unit_for`) and **the weights of a published
  length-controlled win rate** (:meth:`BenchmarkKind.length_control_weights`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from voirdire.benchmarks.recorded import (
    Recorded,
    RecordKey,
    jsonl_file,
    jsonl_judges,
    read_jsonl,
)


class BenchmarkKind:
    """Class-level hooks of a benchmark (see the module docstring); every one has a default."""

    #: the name in units and outputs (``"MTBench"``); its registry key is the name lower-cased
    #: with punctuation dropped (``"mtbench"``)
    name: str
    #: the release whose data directory the benchmark reads (a
    #: :class:`~voirdire.benchmarks.releases.catalogue.Release`), or None (a user's own data)
    release: ClassVar[Any] = None
    #: the unit its order shown was randomised over, for the one-order randomisation test
    #: (:mod:`~voirdire.analysis.stats.order_randomisation`): ``"pair"`` (default: a coin
    #: per pair), ``"cluster"`` (one coin per question cluster, :meth:`clusters`, or per
    #: question where it declares none, shared by every pair in it: AlpacaEval's seeded
    #: switch per instruction) or ``"none"`` (not randomised)
    order_unit: ClassVar[str] = "pair"
    #: ``[benchmark]`` settings the benchmark takes besides ``data_dir`` and ``sample``
    #: (passed to :meth:`load` as keywords when set)
    options: ClassVar[tuple[str, ...]] = ()
    #: the pair template a user's own pairs may name by this benchmark's registry key
    #: (``template = "<key>"``): ``(source, verdict pattern, verdict labels)``, ``source`` a
    #: function returning the Jinja2 text; None: the benchmark lends no pair template
    pair_prompt: ClassVar[tuple[Any, str, tuple[str, ...]] | None] = None
    #: which units a recorded judge (the replay judge) is asked: False (default), every unit
    #: of the job's scheme, a query the release lacks recorded as a failure ("no recorded
    #: output": a release that promises every judge on every query); True, exactly the units
    #: its own records hold (:meth:`recorded_keys`: a judgment log, where a judge's file holds
    #: some pairs, or one order of each; a record of a failed call stays a failure)
    asks_own_records: ClassVar[bool] = False

    @classmethod
    def locate(cls, data_dir: str | os.PathLike[str] | None = None) -> Any:
        """The data directory the benchmark reads: its release's
        (:meth:`~voirdire.benchmarks.releases.catalogue.Release.data_dir`; ``data_dir`` is a job's
        explicit one), or ``data_dir`` as given when it reads no release.

        Raises:
            ConfigError: no data directory found, or an explicit one that is not one.
        """
        return data_dir if cls.release is None else cls.release.data_dir(data_dir)

    @classmethod
    def load(cls, data_dir: Any, sample: str = "full", **options: Any) -> Any:
        """The loaded benchmark (a :class:`~voirdire.benchmarks.base.Benchmark`):
        ``cls(data_dir=..., sample=..., **options)`` (``options``:
        only names of :attr:`options` that the job set).

        Raises:
            ConfigError: what the constructor raises (no data, a malformed table ...).
        """
        return cls(data_dir=data_dir, sample=sample, **options)  # type: ignore[call-arg]

    @classmethod
    def clusters(
        cls, data_dir: str | os.PathLike[str] | None = None
    ) -> pl.DataFrame | None:
        """The clusters the bootstrap draws (:func:`~voirdire.analysis.position.uncertainty.in_clusters`):
        ``question_id`` -> ``cluster`` (str) for questions that are not independent (e.g. items
        sharing one question), or None (default): each ``question_id`` is its own cluster.
        ``data_dir``: as :meth:`locate` takes it.

        Raises:
            ConfigError: the data holding the clusters cannot be found.
        """
        return None

    @classmethod
    def order_unit_for(cls, settings: Mapping[str, Any] | None = None) -> str:
        """The unit its order shown was randomised over under a job's ``[benchmark]``
        settings (``settings``: the job record's ``job.benchmark`` table, ``log`` holding
        ``[benchmark.log]``; None: the defaults), for the one-order randomisation test.
        Default: :attr:`order_unit`, whatever the settings; a format whose switch the
        settings seed (AlpacaEval's ``seed_columns``) says which unit they make."""
        return cls.order_unit

    @classmethod
    def length_control_weights(
        cls, data_dir: str | os.PathLike[str] | None = None
    ) -> pl.DataFrame | None:
        """The fitted weights of a published length-controlled win rate the benchmark's
        data carries (AlpacaEval's ``length_controlled_v1``: ``baseline``, ``model`` (str),
        ``length``, ``difficulty``, ``not_gamed`` (float), one row per model and baseline),
        read by ``voirdire rank --style`` (:mod:`~voirdire.analysis.ranking.length_control_v1`);
        None (default): none, the minimal formula is fitted."""
        return None

    @classmethod
    def length_control_release(
        cls, data_dir: str | os.PathLike[str] | None = None
    ) -> pl.DataFrame | None:
        """Every model's comparisons with the baseline in the whole release the audited logs
        belong to, where the benchmark's data carries them (AlpacaEval's:
        :data:`~voirdire.benchmarks.logs.alpaca_eval_release.RELEASE_SCHEMA`), on which
        ``voirdire rank --style`` fits the v1 formula's instruction difficulty
        (:mod:`~voirdire.analysis.ranking.release_difficulty`); None (default): none, the
        difficulty is fitted on the audited models."""
        return None

    # ------------------------------------------------------------------ recorded outputs

    @classmethod
    def recorded_judges(
        cls, data_dir: str | Path, study: str, subsets: Sequence[str] | None = None
    ) -> list[str]:
        """The names of the judges whose outputs the release recorded for this benchmark in
        ``data_dir`` and ``study`` (``position_bias``, ``repetition``), sorted; ``subsets``:
        the job's subsets where the benchmark has them (None: its default; ``[]``: all).
        Default: the stems of ``judgments/<study>/<name>/*.jsonl.gz``."""
        return jsonl_judges(data_dir, study, cls.name)

    @classmethod
    def recorded_file(
        cls, data_dir: str | Path, study: str, recorded: str, judge: str
    ) -> Path:
        """The file holding the recorded outputs of judge ``recorded`` (``judge``: the job's
        name for it, for messages).

        Raises:
            ConfigError: nothing recorded under that name (the message lists what is).
        """
        return jsonl_file(data_dir, study, cls.name, recorded, judge)

    @classmethod
    def read_recorded(cls, path: Path, recorded: str) -> dict[RecordKey, Recorded]:
        """Every recorded output of judge ``recorded`` in ``path``:
        ``(";".join((question id, *shown)), repetition) ->`` :class:`~voirdire.benchmarks.recorded.Recorded`.

        Raises:
            ConfigError: nothing recorded for it.
        """
        return read_jsonl(path)

    @classmethod
    def recorded_keys(cls, path: Path, recorded: str) -> set[RecordKey]:
        """The keys of :meth:`read_recorded` (``(";".join((question id, *shown)),
        repetition)``) without the outputs: the units a recorded judge is asked where
        :attr:`asks_own_records`. Default: the keys of :meth:`read_recorded`.

        Raises:
            ConfigError: as :meth:`read_recorded`.
        """
        return set(cls.read_recorded(path, recorded))

    @classmethod
    def recorded_mode(cls, recorded: str) -> str | None:
        """The comparison mode of a recorded judge when it is not the job's (``"score"``:
        its outputs score each answer), or None."""
        return None

    # ------------------------------------------------------------------ release statistics

    @classmethod
    def release_readings(cls, pairs: pl.DataFrame) -> pl.DataFrame:
        """``pairs`` with ``r1``/``r2`` (str|null): the winner the release counts in the order
        shown / swapped. Input: the judgment pairs of
        :func:`~voirdire.analysis.position.release_stats.pair_outcomes` with ``candidate``,
        ``reference``, ``w1``/``w2`` (voirdire's winner: a model, ``"tie"`` or null),
        ``score`` (bool) and ``_out`` (the output with the candidate shown first). Default:
        voirdire's winner, a tie counted as no winner."""
        return pairs.with_columns(
            r1=pl.when(pl.col("w1") != "tie").then(pl.col("w1")),
            r2=pl.when(pl.col("w2") != "tie").then(pl.col("w2")),
        )


__all__ = ["BenchmarkKind"]
