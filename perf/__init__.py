"""voirdire's speed benchmarks: scripts that print figures (never installed with the package).

Run them as modules from the repository root, ``python -m perf.bench_scheduler`` (the
repository root is then on the import path, so they may reuse the test suite's machinery,
``tests.tiny_llama`` and ``tests.fake_api_server``, with no ``sys.path`` edits). Every
script has ``--smoke``: tiny sizes, seconds, figures meaningless, but every code path
runs; ``make perf-smoke`` (part of ``.ci/run``) runs them all so none can rot.
"""
