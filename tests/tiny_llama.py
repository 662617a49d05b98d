"""A tiny random Llama for smoke tests of the vLLM judge on a CPU (no download); test machinery.

:func:`build_tiny_llama` trains a small byte-level BPE tokenizer (``tokenizers``) on the
given texts, wraps it as a transformers fast tokenizer with a Llama-3-style chat template,
and saves it next to a randomly initialised ``LlamaForCausalLM`` (head dimension 64, the
smallest that vLLM's CPU attention accepts). The model's answers are noise: it exists to
exercise the engine, the chat template, the verdict modes and the context window, not to
judge anything. Needs ``transformers``, ``tokenizers`` and ``torch`` (the ``vllm`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

#: Llama-3-style chat template: one header per turn, the generation prompt opens the assistant turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
SPECIAL_TOKENS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
]


def build_tiny_llama(
    out_dir: str | Path,
    texts: Iterable[str],
    *,
    vocab_size: int = 2048,
    hidden_size: int = 128,
    layers: int = 2,
    heads: int = 2,
    max_position_embeddings: int = 8192,
    seed: int = 0,
) -> Path:
    """Write a tiny random Llama (weights, config, tokenizer, chat template) to ``out_dir``.

    Args:
        out_dir: directory to create (a Hugging Face model directory afterwards).
        texts: training text for the tokenizer (a few hundred KB is plenty).
        vocab_size: BPE vocabulary size in tokens (byte-level, so no text is unknown).
        hidden_size: model width; the head dimension is ``hidden_size // heads`` (keep 64).
        layers, heads: depth and attention heads.
        max_position_embeddings: the model's context window in tokens.
        seed: torch seed of the random weights.

    Returns:
        the directory, loadable by ``vllm`` and ``transformers.AutoTokenizer``.

    Raises:
        ValueError: the head dimension is not 32, 64 or 128 (vLLM's CPU attention refuses it).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    if hidden_size // heads not in (32, 64, 128):
        raise ValueError(
            f"head dimension {hidden_size // heads} is not one of 32, 64, 128"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
        pad_token="<|end_of_text|>",
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    (out / "generation_config.json").unlink(
        missing_ok=True
    )  # no sampling defaults of our own
    return out


__all__ = ["CHAT_TEMPLATE", "build_tiny_llama"]
