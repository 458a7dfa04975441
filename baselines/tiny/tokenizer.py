"""The tiny model's tokenizer: byte-level BPE trained with ``tokenizers`` on our envs' chat text.

Byte-level, so any string a user or an env produces can be encoded (no unknown token). Pre-tokenization
isolates each digit and each newline but, unlike GPT-2's regex, lets merges run across spaces and
punctuation: the instructions and the observation frames, repeated in every episode, collapse into a few
long tokens (short sequences are what make CPU training affordable), while coordinates and counts stay one
digit per token, so the model can copy ``(2, 3)`` from its input into its reasoning.

Special tokens follow the ChatML convention many open models use (``<|im_start|>``, ``<|im_end|>``, which is
also the end-of-sequence token); the response tags (``<think>``, ``</think>``, ``<answer>``, ``</answer>``)
are single, non-special tokens, so they survive ``skip_special_tokens`` and stop criteria can match one id.
"""

from __future__ import annotations

from collections.abc import Iterable

IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|pad|>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END)
TAG_TOKENS = ("<think>", "</think>", "<answer>", "</answer>")

# ChatML. The generation prompt ends after "assistant\n"; the caller appends the response prefix ("<think>").
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096, max_token_chars: int = 24):
    """Train the BPE on ``texts`` and wrap it as a ``PreTrainedTokenizerFast`` with the chat template set."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\d|\n"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=max_token_chars,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token=IM_END,
        pad_token=PAD,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    # The tags are plain (non-special) added tokens: always one id each, and kept by skip_special_tokens=True.
    fast.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in TAG_TOKENS])
    fast.chat_template = CHAT_TEMPLATE
    return fast
