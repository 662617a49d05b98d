"""Token estimates for API requests (before sending: context-window check, TPM
reservations, dry-run cost bounds).

OpenAI models are counted with tiktoken where its encoding loads; every other model (and
OpenAI models offline without a cached BPE file) with ``ceil(chars / 3)``, which
over-counts English prose on purpose.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import tiktoken

#: Characters per token assumed where no tokenizer is available. English prose runs about
#: 4 characters per token with the GPT/Claude tokenizers; 3 over-counts on purpose, so a
#: context-window check errs towards refusing rather than paying for a 400.
CHARS_PER_TOKEN = 3.0
#: Chat formatting overhead per message and for the reply priming (OpenAI cookbook,
#: "How to count tokens with tiktoken").
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3


@lru_cache(maxsize=64)
def _tiktoken_encoding(model: str) -> Any:
    """tiktoken's encoding for an OpenAI model, or ``None`` (unknown model, or its BPE file
    cannot be loaded, e.g. offline without ``TIKTOKEN_CACHE_DIR``)."""
    try:
        return tiktoken.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - KeyError (unknown model) or a failed download
        return None


def count_tokens(text: str, model: str, use_tiktoken: bool) -> tuple[int, str]:
    """Tokens of ``text`` and the method used: ``("tiktoken:<encoding>")`` for OpenAI models
    whose encoding loads, else ``ceil(chars / CHARS_PER_TOKEN)`` (``"chars/3"``)."""
    if use_tiktoken:
        enc = _tiktoken_encoding(model)
        if enc is not None:
            return len(enc.encode(text, disallowed_special=())), f"tiktoken:{enc.name}"
    return math.ceil(len(text) / CHARS_PER_TOKEN), "chars/3"


def estimate_prompt_tokens(
    prompt: str, system: str | None, model: str, use_tiktoken: bool
) -> int:
    """Estimated input tokens of a chat request: the messages' text plus the chat format's
    overhead (:data:`TOKENS_PER_MESSAGE` per message, :data:`TOKENS_REPLY_PRIMING`)."""
    n, _ = count_tokens(prompt, model, use_tiktoken)
    messages = 1
    if system:
        n += count_tokens(system, model, use_tiktoken)[0]
        messages += 1
    return n + TOKENS_PER_MESSAGE * messages + TOKENS_REPLY_PRIMING
