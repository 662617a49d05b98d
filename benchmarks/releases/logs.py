"""Public judgment logs fetched and verified like the releases: PRD, AlpacaEval, JudgeBench.

``voirdire data fetch prd|alpaca_eval|judgebench`` downloads, file by file from the
raw-content URLs of a pinned commit (or a mirror serving the same paths, or a local copy),
the log files the user picks, verifies each against the git blob id of the package manifest
(``<name>-logs-manifest.tsv``: ``blob_sha1<TAB>path[<TAB>size]``, generated from the
repository at the commit: ``git ls-tree -r -l <commit>`` filtered to the files below), and
writes them **unchanged at their repository paths** into the data directory (with
``RELEASE.json``), where ``voirdire audit`` reads them (:attr:`LogRelease.audit_paths`). The
steps (temporary directory, size caps, atomic swap) are :func:`voirdire.benchmarks.releases.catalogue.fetch_release`'s.

The sources (:data:`LOG_RELEASES`):

- ``prd``: ``bcdnlp/PRD`` (MIT, copyright 2023 bcdnlp), the Vicuna-80 reviews
  ``data/vicuna80/ratings-<reviewer>/answer_<m1>-vs-answer_<m2>-*.jsonl`` of five reviewers and
  the people (``ratings-human``); ``--judge`` picks reviewers (the people always come: they
  are the gold label). Audit format ``prd``.
- ``alpaca_eval``: ``tatsu-lab/alpaca_eval`` (Apache-2.0), ``results/<model>/<annotator>/annotations.json``,
  the annotators' leaderboards ``src/alpaca_eval/leaderboards/data_AlpacaEval*/<annotator>_leaderboard.csv``
  and the length-controlled win rate's weights ``src/alpaca_eval/metrics/weights/<annotator>/length_controlled_v1/baseline_<baseline>.csv``;
  ``--annotator`` (default ``weighted_alpaca_eval_gpt4_turbo``, AlpacaEval 2's) and ``--model``
  pick the files. Audit format ``alpacaeval``.
- ``judgebench``: ``ScalerLab/JudgeBench``, ``outputs/dataset=judgebench,response_model=...,judge_name=...,judge_model=....jsonl``;
  ``--judge`` picks by judge name or judge model. The repository has **no licence file**: its
  logs are fetched for the user to read, never to be redistributed (the fetch says so, and
  ``RELEASE.json`` records it). Audit format ``judgebench``.

Nothing of these logs is committed: the tests build files in the exact formats and serve
them from a loopback server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from voirdire.benchmarks.releases import mirror
from voirdire.benchmarks.releases.fetch import FetchReport, Release, fetch_release
from voirdire.benchmarks.releases.jtj import LICENSE_FILE, Converted
from voirdire.benchmarks.releases.mirror import NotOnMirror
from voirdire.core import ConfigError

_HERE = Path(__file__).resolve().parent
#: what the fetch says of a repository without a licence file
NO_LICENCE = "{repo} has no licence file: its logs are fetched for you to read, never redistribute them"


def copy_files(
    get: Callable[[str], bytes],
    manifest: dict[str, str],
    out: Path,
    *,
    log: Callable[[str], None] = lambda s: None,
    **_,
) -> Converted:
    """Write every manifest file, verified by ``get``, unchanged at its path under ``out``.

    Returns:
        :class:`Converted`: ``files`` the paths written with their blob ids, ``judges``
        ``{directory: [file names]}``, ``skipped`` one line per file the mirror lacks.
    """
    done = Converted()
    for path in sorted(manifest):
        try:
            data = get(path)
        except NotOnMirror as exc:
            done.skipped.append(f"{path} is not on the mirror ({exc})")
            continue
        dest = out / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        done.files[path] = manifest[path]
        if path != LICENSE_FILE:
            folder, _, name = path.rpartition("/")
            done.judges.setdefault(folder, []).append(name)
    out.mkdir(parents=True, exist_ok=True)
    return done


@dataclass(frozen=True)
class Picks:
    """What the user picked: ``annotator`` (AlpacaEval), ``models`` (AlpacaEval's models),
    ``judges`` (PRD's reviewers; JudgeBench's judge names or models). Empty: all."""

    annotator: str | None = None
    models: tuple[str, ...] = ()
    judges: tuple[str, ...] = ()


@dataclass(frozen=True)
class LogRelease(Release):
    """A public log source (:class:`~voirdire.benchmarks.releases.catalogue.Release` with the files
    copied unchanged, :func:`copy_files`).

    Attributes (besides a release's):
        audit_format: the ``voirdire audit --format`` name of its files.
        audit_paths: the folders under the data directory to give ``voirdire audit``.
        licence: the licence of the repository (its ``LICENSE``), or None: no licence file,
            fetched for the user to read only (:data:`NO_LICENCE`).
        pick: ``(manifest, Picks) -> manifest``: the files the user picked.
    """

    audit_format: str = ""
    audit_paths: tuple[str, ...] = ()
    licence: str | None = None
    pick: Callable[[dict[str, str], Picks], dict[str, str]] = field(
        default=lambda m, p: dict(m)
    )

    def marker_extra(self) -> dict[str, object]:
        """What ``RELEASE.json`` adds for a log: its audit format, its licence and whether
        it may be passed on."""
        return {
            "audit_format": self.audit_format,
            "licence": self.licence or "none (no licence file in the repository)",
            "redistribute": self.licence is not None,
        }

    def terms(self) -> str:
        """One line on what the user may do with the fetched files."""
        if self.licence is None:
            return NO_LICENCE.format(repo=self.repo)
        return (
            f"{self.repo} is {self.licence}; the model outputs inside its logs come under "
            "their generators' terms"
        )


def _known(kind: str, asked: Sequence[str], have: set[str], name: str) -> None:
    missing = [a for a in asked if a not in have]
    if missing:
        known = sorted(have)
        more = f", ... ({len(known)} in all)" if len(known) > 8 else ""
        raise ConfigError(
            f"{name}: unknown {kind} {missing[0]!r}; known: {', '.join(known[:8])}{more}"
        )


_PRD = re.compile(r"^data/vicuna80/ratings-(?P<r>[^/]+)/answer_[^/]+\.jsonl$")


def pick_prd(manifest: dict[str, str], picks: Picks) -> dict[str, str]:
    """PRD's review files of the reviewers picked (all by default) and the human votes.

    Raises:
        ConfigError: an unknown reviewer (the known ones named), or a model/annotator pick.
    """
    if picks.models or picks.annotator:
        raise ConfigError(
            "prd: pick reviewers with --judge (no --model or --annotator)"
        )
    have = {m["r"] for p in manifest if (m := _PRD.match(p))}
    _known("reviewer", picks.judges, have - {"human"}, "prd")
    keep = set(picks.judges or have) | {"human"}
    return {
        p: b
        for p, b in manifest.items()
        if p == LICENSE_FILE or ((m := _PRD.match(p)) and m["r"] in keep)
    }


_AE = re.compile(r"^results/(?P<model>[^/]+)/(?P<ann>[^/]+)/annotations\.json$")
_AE_BOARD = re.compile(
    r"^src/alpaca_eval/leaderboards/data_AlpacaEval[^/]*/(?P<ann>[^/]+)_leaderboard\.csv$"
)
#: the length-controlled win rate's fitted weights (AlpacaEval's ``length_controlled_v1``)
_AE_WEIGHTS = re.compile(
    r"^src/alpaca_eval/metrics/weights/(?P<ann>[^/]+)/length_controlled_v1/baseline_[^/]+\.csv$"
)
#: AlpacaEval 2's annotator, picked when none is named
AE_ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"


def pick_alpaca_eval(manifest: dict[str, str], picks: Picks) -> dict[str, str]:
    """AlpacaEval's ``annotations.json`` of one annotator (:data:`AE_ANNOTATOR` by default)
    for the models picked (all it annotated by default), its leaderboard CSV, the weights of
    its length-controlled win rate (``metrics/weights/<annotator>/length_controlled_v1/``,
    read by ``voirdire rank --style``: ``docs/ranking.md``) and the licence.

    Raises:
        ConfigError: an unknown annotator, or a model without that annotator's annotations
            (the known ones named), or a ``--judge`` pick.
    """
    if picks.judges:
        raise ConfigError("alpaca_eval: pick --annotator and --model (no --judge)")
    ann = picks.annotator or AE_ANNOTATOR
    files = [(p, m) for p in manifest if (m := _AE.match(p))]
    _known("annotator", [ann], {m["ann"] for _, m in files}, "alpaca_eval")
    models = {m["model"] for _, m in files if m["ann"] == ann}
    _known(f"model for the annotator {ann!r}", picks.models, models, "alpaca_eval")
    keep = set(picks.models or models)
    out = {p: manifest[p] for p, m in files if m["ann"] == ann and m["model"] in keep}
    for p, b in manifest.items():
        if p == LICENSE_FILE or any(
            (m := r.match(p)) and m["ann"] == ann for r in (_AE_BOARD, _AE_WEIGHTS)
        ):
            out[p] = b
    return out


_JB = re.compile(
    r"^outputs/dataset=[^,/]+,response_model=[^,/]+,judge_name=(?P<name>[^,/]+),judge_model=(?P<model>[^,/]+)\.jsonl$"
)


def pick_judgebench(manifest: dict[str, str], picks: Picks) -> dict[str, str]:
    """JudgeBench's outputs files whose judge name or judge model is picked (all by default).

    Raises:
        ConfigError: a name that is no judge's name or model (the known ones named), or a
            model/annotator pick.
    """
    if picks.models or picks.annotator:
        raise ConfigError(
            "judgebench: pick judges with --judge (no --model or --annotator)"
        )
    files = [(p, m) for p in manifest if (m := _JB.match(p))]
    _known(
        "judge", picks.judges, {v for _, m in files for v in m.groups()}, "judgebench"
    )
    want = set(picks.judges)
    return {p: manifest[p] for p, m in files if not want or want & set(m.groups())}


PRD_LOGS = LogRelease(
    name="prd", repo="bcdnlp/PRD", commit="35fb99e5d5c7a2f3535811f1edbe417da7563957",
    manifest=_HERE / "prd-logs-manifest.tsv", dir_name="logs-prd",
    data_env="VOIRDIRE_PRD_LOGS", url_env="VOIRDIRE_PRD_URL", convert=copy_files,
    audit_format="prd", audit_paths=("data/vicuna80/ratings-*",),
    licence="MIT licensed, copyright 2023 bcdnlp", pick=pick_prd,
)  # fmt: skip
ALPACA_EVAL_LOGS = LogRelease(
    name="alpaca_eval", repo="tatsu-lab/alpaca_eval",
    commit="cd543a149df89434d8a54582c0151c0b945c3d20",
    manifest=_HERE / "alpaca-eval-logs-manifest.tsv", dir_name="logs-alpaca-eval",
    data_env="VOIRDIRE_ALPACA_EVAL_LOGS", url_env="VOIRDIRE_ALPACA_EVAL_URL",
    convert=copy_files, audit_format="alpacaeval", audit_paths=("results/*/{annotator}/annotations.json",),
    licence="Apache-2.0 licensed", pick=pick_alpaca_eval,
)  # fmt: skip
JUDGEBENCH_LOGS = LogRelease(
    name="judgebench", repo="ScalerLab/JudgeBench",
    commit="e2c52c284e735e139b3daa61c206ee208f36c461",
    manifest=_HERE / "judgebench-logs-manifest.tsv", dir_name="logs-judgebench",
    data_env="VOIRDIRE_JUDGEBENCH_LOGS", url_env="VOIRDIRE_JUDGEBENCH_URL",
    convert=copy_files, audit_format="judgebench", audit_paths=("outputs",),
    licence=None, pick=pick_judgebench,
)  # fmt: skip
#: the log sources by name
LOG_RELEASES = {r.name: r for r in (PRD_LOGS, ALPACA_EVAL_LOGS, JUDGEBENCH_LOGS)}


def fetch_logs(
    release: str | LogRelease,
    dest: str | os.PathLike[str] | None = None,
    base_url: str | None = None,
    *,
    picks: Picks = Picks(),
    manifest: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] = lambda s: None,
    **kwargs,
) -> FetchReport:
    """Fetch the picked files of a log source (verified, unchanged) into ``dest``.

    Args:
        release: a :class:`LogRelease` or its name (:data:`LOG_RELEASES`).
        dest, base_url, log and ``kwargs`` (``source``, ``strict``, ``progress``,
            ``deadline``): as :func:`~voirdire.benchmarks.releases.catalogue.fetch_release`.
        picks: the files wanted (:class:`Picks`; each source's ``pick_*``).
        manifest: another manifest TSV to pick from (default the package's).

    Raises:
        ConfigError: an unknown source or pick; nothing picked.
        DataError: as :func:`~voirdire.benchmarks.releases.catalogue.fetch_release`.
    """
    rel = LOG_RELEASES.get(release) if isinstance(release, str) else release
    if rel is None:
        raise ConfigError(
            f"unknown log source {release!r}; known: {', '.join(LOG_RELEASES)}"
        )
    path = manifest or rel.manifest
    chosen = rel.pick(mirror.read_manifest(path), picks)
    if not [p for p in chosen if p != LICENSE_FILE]:
        raise ConfigError(f"{rel.name}: the manifest {path} lists no file picked")
    sizes = mirror.read_sizes(path)
    log(rel.terms())
    report = fetch_release(
        dest, base_url, release=rel, manifest=chosen, log=log,
        sizes={p: s for p, s in sizes.items() if p in chosen}, **kwargs,
    )  # fmt: skip
    where = rel.audit_paths[0].format(annotator=picks.annotator or AE_ANNOTATOR)
    log(
        f"audit them with: voirdire audit {report.dest}/{where} --format {rel.audit_format}"
    )
    return report


__all__ = [
    "AE_ANNOTATOR", "ALPACA_EVAL_LOGS", "JUDGEBENCH_LOGS", "LOG_RELEASES", "NO_LICENCE",
    "PRD_LOGS", "LogRelease", "Picks", "copy_files", "fetch_logs", "pick_alpaca_eval",
    "pick_judgebench", "pick_prd",
]  # fmt: skip
