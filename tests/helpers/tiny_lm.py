"""One offline builder for the tiny randomly initialised Llama + BPE tokenizer that LM tests use (no hub)."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_llama(
    path: Path | str,
    *,
    corpus_seeds: int = 20,
    vocab_size: int = 400,
    hidden: int = 32,
    intermediate: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
) -> Path:
    """Train a byte-level BPE tokenizer on Bandit text, save it with a config-initialised Llama under ``path``."""
    import gymnasium as gym
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    import ragen_envs  # noqa: F401  (the corpus is env text)

    env = gym.make("ragen/Bandit-v0")
    corpus = []
    for seed in range(corpus_seeds):
        obs, info = env.reset(seed=seed)
        corpus += [obs, info["instructions"], env.unwrapped.oracle_response()]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<pad>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=4096,
        pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id, bos_token_id=fast.eos_token_id,
    )  # fmt: skip
    path = Path(path)
    LlamaForCausalLM(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path
