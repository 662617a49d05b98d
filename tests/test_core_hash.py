"""The core's canonical JSON and content hash: the bytes every id is made of."""

from __future__ import annotations

import hashlib
import json

import pytest

from voirdire.core import canonical_json, content_hash

VALUES = [
    ["q1", "k" * 32, 'text é \u2028 "x" \x1f'],
    {"b": 1, "a": [1.5, None, True, float("nan"), -0.0, 1e300]},
    {"z": {"y": [{"b": 2, "a": 1}], "é": "ü"}},
    "plain",
    3,
    [],
    {},
    [["q", "m", ["turn 1", "turn 2"]]],
    # lists are written without the encoder: strings, None and nested lists directly
    ['é"\\\n\t\x00', "\u2028", "😀", "", None, [], [[]], ["x", [None, "y"]]],
    [1, 2.5, -0.0, 10**20, True, ("t", 1), {"b": [1, "é"], "a": None}, [1e-7]],
]


@pytest.mark.parametrize("value", VALUES)
def test_canonical_json_is_compact_sorted_json(value):
    """One shared encoder gives the text of ``json.dumps`` with sorted keys and compact
    separators (the text ids were hashed from before it was shared)."""
    assert canonical_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":")
    )


def test_content_hash_joins_parts_and_encodes_the_others_as_json():
    """BLAKE2b-128 of the parts joined by U+001F, non-strings as canonical JSON; the
    all-string path and the mixed path give one id for the same text."""
    parts = ["a", ["b", {"y": 1, "x": 2}], 3]
    text = 'a\x1f["b",{"x":2,"y":1}]\x1f3'
    want = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    assert content_hash(*parts) == want
    assert content_hash("a", '["b",{"x":2,"y":1}]', "3") == want
    with pytest.raises(TypeError):
        canonical_json({"a": object()})
