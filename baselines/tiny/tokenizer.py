"""The tiny model's tokenizer: byte-level BPE trained with ``tokenizers`` on our envs' chat text.

Byte-level, so any string a user or an env produces can be encoded (no unknown token). Pre-tokenization is
GPT-2's (words with their leading space, punctuation runs) with every digit on its own: an arm's name is the
same token in the observation and in the reasoning. Every board cell ``(row, col)`` with one-digit row and
column is one added token (with its leading space, where it has one): the model reads and writes cells as
words, so copying "Player: (3, 1)" into its reasoning is the one-token copy small transformers learn first,
"is (2, 1) a hole?" is a match between equal tokens, and "the cell above (3, 1)" is a lookup between two
embeddings. (The first shipped model, which saw cells as five tokens each, never learned to copy them.)
Larger coordinates fall back to digits. The labels that start the observations' lines (``Player:``,
``Goal:``, ``Boxes:``…, found in the training text by :func:`field_labels`) are one token each too, so a value
follows a token that names it: "copy what followed ``Player:``" is a one-token match, where with ``Player``
``:`` the model would have to match two tokens back to tell the player's line from the goal's. Each env's
fixed system prompt is one added token (short sequences are what make CPU training affordable).

Special tokens follow the ChatML convention many open models use (``<|im_start|>``, ``<|im_end|>``, which is
also the end-of-sequence token); the response tags (``<think>``, ``</think>``, ``<answer>``, ``</answer>``)
are single, non-special tokens, so they survive ``skip_special_tokens`` and stop criteria can match one id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|pad|>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END)
TAG_TOKENS = ("<think>", "</think>", "<answer>", "</answer>")
CELL_TOKENS = tuple(f"{space}({row}, {col})" for space in (" ", "") for row in range(10) for col in range(10))

# ChatML. The generation prompt ends after "assistant\n"; the caller appends the response prefix ("<think>").
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


_LINE_LABEL = re.compile(r"^([A-Z][A-Za-z ]{0,24}:)(?= )", re.MULTILINE)


def field_labels(texts: Iterable[str], min_count: int = 50) -> tuple[str, ...]:
    """The ``Label:`` prefixes (a capitalised word or words, a colon, then a space) that start at least
    ``min_count`` lines of ``texts``, sorted: the field names of the envs' observations."""
    counts = Counter(label for text in texts for label in _LINE_LABEL.findall(text))
    return tuple(sorted(label for label, count in counts.items() if count >= min_count))


def train_tokenizer(
    texts: Iterable[str], vocab_size: int = 2048, whole_texts: Iterable[str] = (), labels: Iterable[str] = ()
):
    """Train the BPE on ``texts`` and wrap it as a ``PreTrainedTokenizerFast`` with the chat template set.

    ``whole_texts`` (the envs' fixed system prompts) become one token each, so the rules every prompt repeats
    cost one position instead of hundreds; any other text, a changed prompt included, is tokenized normally.
    ``labels`` (see :func:`field_labels`) and the board cells become one token each.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
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
    fast.add_tokens([AddedToken(cell, special=False, normalized=False) for cell in CELL_TOKENS])
    fast.add_tokens([AddedToken(label, special=False, normalized=False) for label in sorted(set(labels))])
    fast.add_tokens([AddedToken(text, special=False, normalized=False) for text in sorted(set(whole_texts))])
    fast.chat_template = CHAT_TEMPLATE
    return fast
