"""Judgment logs other tools wrote, audited as benchmarks (``voirdire audit``, ``docs/audit.md``):
the shared reader (:mod:`.base`, :mod:`.reading`) and one module per format (:mod:`.arena_hard`,
:mod:`.fastchat`, :mod:`.judgebench`, :mod:`.table`), each registered as a benchmark kind."""
