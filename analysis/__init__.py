"""voirdire.analysis: judgments in, tables out, by stage.

- :mod:`~voirdire.analysis.position`: position bias (PC, PF, RS, list-wise), uncertainty
  (the one cluster-bootstrap engine), regression, agreement, the simulator.
- :mod:`~voirdire.analysis.biases`: CALM's biases beyond position, self-enhancement.
- :mod:`~voirdire.analysis.mitigation`: strategies that remove position bias, graded.
- :mod:`~voirdire.analysis.outputs` / :mod:`~voirdire.analysis.study`: one / several output
  directories as tables (computed in memory).
- :mod:`~voirdire.analysis.report`: Markdown, HTML (Jinja2 templates), figures, and the one
  place that writes files.

A stage imports only from the stages before it (``tests/test_imports.py``).
"""
