"""Whether a prompt request fits a benchmark's comparison modes: the mode offered, the option
mode it allows, as many models as it has slots, none twice."""

from __future__ import annotations

from collections.abc import Sequence

from voirdire.benchmarks.scoring import SCORE_OPTION_MODE

#: Number of models shown per comparison mode (``None``: any number >= 2).
SLOTS_PER_MODE: dict[str, int | None] = {"pairwise": 2, "score": 2, "listwise": None}
#: List sizes list-wise prompts support (verdict letters A..H, tie up to I).
LISTWISE_SIZES = range(3, 9)


def check_shape(
    name: str,
    mode: str,
    shown: Sequence[str],
    option_mode: int,
    comparison_modes: Sequence[str],
    option_modes: Sequence[int],
) -> None:
    """Validate the shape of a request to benchmark ``name`` (offering ``comparison_modes``
    and pairwise ``option_modes``): ``mode`` offered; its option mode (score: 3; list-wise
    of p models: p or p + 1; pairwise: one of ``option_modes``); as many models as the mode
    has slots (list-wise: 3 to 8); no model twice.

    Raises:
        ValueError: any of these fails (the message names the benchmark and the value).
    """
    if mode not in comparison_modes:
        raise ValueError(
            f"{name}: comparison mode {mode!r} is not offered "
            f"(offered: {', '.join(comparison_modes)})"
        )
    if isinstance(shown, str):
        raise ValueError(
            f"{name}: shown must be a sequence of model names, not a string"
        )
    if mode == "score":
        if option_mode != SCORE_OPTION_MODE:
            raise ValueError(
                f"{name}: score mode offers option mode {SCORE_OPTION_MODE}, not {option_mode!r}"
            )
    elif mode == "listwise":
        p = len(shown)
        if p not in LISTWISE_SIZES:
            raise ValueError(
                f"{name}: listwise shows {LISTWISE_SIZES.start} to {LISTWISE_SIZES.stop - 1} models, got {p}"
            )
        if option_mode not in (p, p + 1):
            raise ValueError(
                f"{name}: list-wise option mode {option_mode!r} is not offered for {p} candidates "
                f"(offered: {p}, {p + 1} with a tie)"
            )
    elif option_mode not in option_modes:
        raise ValueError(
            f"{name}: option mode {option_mode!r} is not offered "
            f"(offered: {', '.join(map(str, option_modes))})"
        )
    slots = SLOTS_PER_MODE.get(mode)
    if slots is not None and len(shown) != slots:
        raise ValueError(f"{name}: {mode} shows {slots} models, got {len(shown)}")
    if slots is None and len(shown) < 2:
        raise ValueError(f"{name}: {mode} needs at least 2 models, got {len(shown)}")
    if len(set(shown)) != len(shown):
        raise ValueError(f"{name}: a model is shown twice in {tuple(shown)!r}")
