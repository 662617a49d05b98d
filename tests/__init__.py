"""voirdire's test suite (a package, so test-only backends import as ``tests.backends:...``)."""
