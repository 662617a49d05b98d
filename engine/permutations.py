"""Permutation schemes: the orders in which an instance's candidates are shown.

A permutation is a tuple of indices into the instance's canonical candidate list; slot
``k`` shows ``candidates[perm[k]]``. Pairwise schemes: ``both`` (the original and the
swapped order, as in Shi et al. 2024) and ``original``.
"""

from __future__ import annotations

from voirdire.judges.base import ConfigError

Permutation = tuple[int, ...]


def pairwise_permutations(scheme: str) -> list[Permutation]:
    """Pairwise orders: ``both`` -> ``[(0, 1), (1, 0)]``, ``original`` -> ``[(0, 1)]``.

    Raises:
        ConfigError: unknown scheme.
    """
    if scheme == "both":
        return [(0, 1), (1, 0)]
    if scheme == "original":
        return [(0, 1)]
    raise ConfigError(f"unknown pairwise permutation scheme {scheme!r}; use 'both' or 'original'")


def permutations_for(mode: str, scheme: str, p: int, seed: int = 0) -> list[Permutation]:
    """The orders of a scheme for lists of ``p`` candidates.

    Raises:
        ConfigError: unknown mode or scheme.
    """
    if mode == "pairwise":
        return pairwise_permutations(scheme)
    raise ConfigError(f"comparison mode {mode!r} is not supported by this version")
