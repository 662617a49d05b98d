"""Permutation schemes: the orders in which an instance's candidates are shown.

A permutation is a tuple of indices into the instance's canonical candidate list; slot
``k`` shows ``candidates[perm[k]]``.

Pairwise schemes: ``both`` (the original and the swapped order, as in Shi et al. 2024)
and ``original``.

List-wise schemes (p candidates, 3 <= p <= 8):

- ``cyclic``: the p cyclic shifts; order ``i`` puts candidate ``i`` first
  (``(i, i+1, ..., i-1)``), so every candidate appears in every slot exactly once. This is
  the design of Shi et al. 2024 (list-wise section).
- ``all``: all p! orders in lexicographic order (40,320 for p = 8). Lazy: an
  :class:`AllOrders` sequence unranks the k-th order on demand (Lehmer code), so nothing
  of size p! is ever materialised.
- ``latin``: a balanced Latin square (Williams 1949, "Experimental designs balanced for
  the estimation of residual effects of treatments", Aust. J. Sci. Res. A2): for even p,
  p orders in which every candidate occupies every slot once and every ordered pair of
  candidates stands in adjacent slots (``x`` directly before ``y``) exactly once. For odd
  p no such p x p square exists for p = 3, 5, 7 (Williams' result); we use Williams'
  2p-order design instead: the p rows of the cyclic Williams square and their
  mirror images, so each candidate occupies each slot exactly twice and each ordered
  adjacent pair occurs exactly twice. **(ours: the choice of the 2p design for odd p.)**
- ``sample:k``: k distinct orders drawn uniformly without replacement from the p!
  (1 <= k <= p!), seeded: the same seed gives the same orders. The engine seeds each
  instance separately from ``permutation_seed`` and the instance id
  (:func:`instance_seed`), so different instances get different orders.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence

from voirdire.core import MAX_LIST, MIN_LIST, ConfigError, stable_int

Permutation = tuple[int, ...]

#: list-wise schemes (``sample:k`` takes a count)
LISTWISE_SCHEMES = ("cyclic", "all", "latin", "sample:k")


def pairwise_permutations(scheme: str) -> list[Permutation]:
    """Pairwise orders: ``both`` -> ``[(0, 1), (1, 0)]``, ``original`` -> ``[(0, 1)]``.

    Raises:
        ConfigError: unknown scheme.
    """
    if scheme == "both":
        return [(0, 1), (1, 0)]
    if scheme == "original":
        return [(0, 1)]
    raise ConfigError(
        f"unknown pairwise permutation scheme {scheme!r}; use 'both' or 'original'"
    )


def unrank(rank: int, p: int) -> Permutation:
    """The ``rank``-th permutation of ``range(p)`` in lexicographic order (0-based), the
    order :func:`itertools.permutations` yields (factorial number system / Lehmer code).

    Raises:
        IndexError: ``rank`` outside ``[0, p!)``.
    """
    if not 0 <= rank < math.factorial(p):
        raise IndexError(f"permutation rank {rank} out of range for p = {p}")
    pool = list(range(p))
    out = []
    for i in range(p - 1, -1, -1):
        f = math.factorial(i)
        q, rank = divmod(rank, f)
        out.append(pool.pop(q))
    return tuple(out)


class AllOrders(Sequence[Permutation]):
    """All p! orders of ``range(p)``, lexicographic, without materialising them.

    ``len`` is p!, indexing unranks (:func:`unrank`), iteration streams
    :func:`itertools.permutations`. Memory O(p).
    """

    def __init__(self, p: int) -> None:
        self.p = p
        self._n = math.factorial(p)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [unrank(i, self.p) for i in range(*k.indices(self._n))]
        if k < 0:
            k += self._n
        return unrank(k, self.p)

    def __iter__(self) -> Iterator[Permutation]:
        return itertools.permutations(range(self.p))

    def __repr__(self) -> str:
        return f"AllOrders(p={self.p}, n={self._n})"


def cyclic_orders(p: int) -> list[Permutation]:
    """The p cyclic shifts: order ``i`` is ``(i, i+1, ..., p-1, 0, ..., i-1)``."""
    return [tuple((i + k) % p for k in range(p)) for i in range(p)]


def williams_orders(p: int) -> list[Permutation]:
    """Williams' balanced Latin square design (p orders for even p, 2p for odd p).

    First row ``0, 1, p-1, 2, p-2, ...``; row ``i`` adds ``i`` mod p to every entry. For
    odd p the mirror image of every row is appended. See the module docstring for the
    balance properties (checked in the tests).
    """
    first = [0]
    lo, hi = 1, p - 1
    while len(first) < p:
        first.append(lo)
        lo += 1
        if len(first) < p:
            first.append(hi)
            hi -= 1
    rows = [tuple((x + i) % p for x in first) for i in range(p)]
    if p % 2:
        rows += [tuple(reversed(r)) for r in rows]
    return rows


def sampled_orders(p: int, k: int, seed: int) -> list[Permutation]:
    """``k`` distinct orders drawn uniformly without replacement from the p!, seeded.

    Raises:
        ConfigError: ``k`` outside ``[1, p!]``.
    """
    n = math.factorial(p)
    if not 1 <= k <= n:
        raise ConfigError(
            f"permutations 'sample:{k}': k must be between 1 and p! = {n} for lists of {p}"
        )
    ranks = random.Random(seed).sample(range(n), k)
    return [unrank(r, p) for r in ranks]


def parse_scheme(scheme: str) -> tuple[str, int | None]:
    """Split a list-wise scheme name: ``"sample:12"`` -> ``("sample", 12)``,
    ``"cyclic"`` -> ``("cyclic", None)``.

    Raises:
        ConfigError: unknown scheme or a malformed ``sample:k``.
    """
    if scheme in ("cyclic", "all", "latin"):
        return scheme, None
    if scheme.startswith("sample:"):
        raw = scheme.split(":", 1)[1]
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(
                f"permutations {scheme!r}: k in 'sample:k' must be a positive integer"
            )
        return "sample", int(raw)
    raise ConfigError(
        f"unknown list-wise permutation scheme {scheme!r}; use 'cyclic', 'all', 'latin' or 'sample:k'"
    )


def scheme_size(scheme: str, p: int) -> int:
    """How many orders a list-wise scheme gives for lists of ``p`` (without building them).

    Raises:
        ConfigError: unknown scheme, or ``sample:k`` with k > p!.
    """
    name, k = parse_scheme(scheme)
    if name == "cyclic":
        return p
    if name == "all":
        return math.factorial(p)
    if name == "latin":
        return p if p % 2 == 0 else 2 * p
    assert k is not None
    if k > math.factorial(p):
        raise ConfigError(
            f"permutations 'sample:{k}': k must be at most p! = {math.factorial(p)} for lists of {p}"
        )
    return k


def instance_seed(seed: int, instance_id: str) -> int:
    """The seed of one instance's sampled orders: a hash of the job's ``permutation_seed``
    and the instance id (64-bit)."""
    return stable_int(seed, instance_id)


def seeded_per_instance(scheme: str) -> bool:
    """Whether a scheme's orders differ per instance (``sample:k``) or are one fixed set."""
    return scheme.startswith("sample:")


def permutations_for(
    mode: str, scheme: str, p: int, seed: int = 0
) -> Sequence[Permutation]:
    """The orders of a scheme for lists of ``p`` candidates.

    Pairwise: see :func:`pairwise_permutations`. List-wise: see the module docstring;
    ``seed`` only matters for ``sample:k``. ``all`` returns a lazy :class:`AllOrders`.

    Raises:
        ConfigError: unknown mode or scheme, p outside 3..8 for list-wise, ``sample:k``
            with k > p!.
    """
    if mode in ("pairwise", "score"):
        return pairwise_permutations(scheme)
    if mode != "listwise":
        raise ConfigError(
            f"unknown comparison mode {mode!r}; use 'pairwise', 'score' or 'listwise'"
        )
    if not MIN_LIST <= p <= MAX_LIST:
        raise ConfigError(
            f"list-wise lists have {MIN_LIST} to {MAX_LIST} candidates, not {p}"
        )
    name, k = parse_scheme(scheme)
    if name == "cyclic":
        return cyclic_orders(p)
    if name == "all":
        return AllOrders(p)
    if name == "latin":
        return williams_orders(p)
    assert k is not None
    return sampled_orders(p, k, seed)
