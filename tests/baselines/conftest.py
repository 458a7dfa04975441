"""A tiny randomly initialised causal LM + tokenizer built offline (nothing from a hub)."""

from __future__ import annotations

import pytest

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_model(path, seed: int = 0, hidden: int = 32, layers: int = 2) -> str:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import gymnasium as gym
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    import ragen_envs  # noqa: F401

    corpus = []
    for env_id in ("ragen/Bandit-v0",):
        env = gym.make(env_id)
        for s in range(20):
            obs, info = env.reset(seed=s)
            corpus += [obs, info["instructions"], env.unwrapped.oracle_response()]
    corpus += ["<think>", "</think>", "<answer>", "</answer>", "Reward: Turn State:"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus, trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|end|>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
        pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id, bos_token_id=None, tie_word_embeddings=True,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-lm"))
