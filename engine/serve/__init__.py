"""``voirdire serve``: the gated judge behind an OpenAI-compatible endpoint (``docs/serve.md``).

- :mod:`~voirdire.engine.serve.gate`: the pairwise judge templates recognised in a request,
  its swapped twin, the two orders' verdicts read and combined, the reply in the harness's
  own format (pure code: no Ray, no HTTP);
- :mod:`~voirdire.engine.serve.openai_shapes`: the request read and bounded, the response,
  model list and errors in OpenAI's shapes;
- :mod:`~voirdire.engine.serve.exchange`: one exchange, the judge asked both orders at once;
- :mod:`~voirdire.engine.serve.record`: every exchange appended as one JSON line;
- :mod:`~voirdire.engine.serve.server`: the Ray Serve ingress deployment.
"""
