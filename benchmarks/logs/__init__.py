"""Judgment logs other tools wrote, audited as benchmarks (``voirdire audit``, ``docs/audit.md``):
the shared reader (:mod:`.base`, :mod:`.reading`, :mod:`.sniff`) and one module per format,
each registered as a benchmark kind (the formats: the ``voirdire.benchmarks`` entry points of
``pyproject.toml``; adding one: ``docs/contributing.md``, "Adding a log format")."""
