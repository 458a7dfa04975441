"""``python -m baselines.tiny.train``: train the tiny shipped model from scratch on CPU, deterministically.

Steps: record behaviour-cloning episodes from the envs' oracles (``baselines.tiny.data``), train a byte-level
BPE tokenizer on their text (``baselines.tiny.tokenizer``), initialise a small Llama-architecture causal LM
from a config, train it with teacher forcing on the target assistant turns (loss on the response after the
pre-filled ``<think>``, the way the model is prompted at rollout time), evaluate it greedily against
``random`` on held-out seeds, and save weights, tokenizer, chat template and ``training_log.json`` to
``--out`` (default: ``baselines/tiny/model``), loadable offline with ``from_pretrained(dir)``.

Determinism: one seed drives the data (env seeds and perturbations), the initial weights and the batch
order; ``torch.use_deterministic_algorithms(True)`` and a fixed thread count (``--threads``, default 1:
matmul reductions may be ordered differently with more threads) make two runs byte-identical.
``training_log.json`` records the runtime; see docs/benchmarks.md for the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baselines.tiny import MODEL_DIR
from baselines.tiny.data import SHIPPED_ENVS, TRAINABLE_ENVS, DataConfig, Episode, record_all
from baselines.tiny.tokenizer import IM_END, IM_START, field_labels, train_tokenizer
from harness.transcript import prefill_for
from ragen_envs.core import check_range


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on; recorded in ``training_log.json``."""

    seed: int = 0
    data: DataConfig = field(default_factory=DataConfig)
    vocab_size: int = 2048
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 640
    max_seq_len: int = 1024
    """Episodes longer than this (in tokens) are left out of training."""
    batch_tokens: int = 4096
    """Tokens per batch, padding included (episodes of similar length are batched together)."""
    epochs: int = 6
    lr: float = 2e-3
    warmup_steps: int = 20
    weight_decay: float = 0.01
    env_text_loss: float = 0.25
    """Weight of an auxiliary next-token loss on the env's own text (observations, feedback; not the model's
    responses, perturbed ones included). Consecutive observations repeat most of their lines, so predicting
    them is copying from the context: the loss that grows the attention heads the responses' copies need.
    0 trains on target responses only (the first shipped model, which never learned to copy a cell)."""
    threads: int = 1
    eval_seeds: int = 50
    """Held-out seeds 0..N-1 per env for the final greedy evaluation against ``random`` (0 skips it)."""

    def __post_init__(self) -> None:
        check_range("vocab_size", self.vocab_size, 512, integer=True)
        for name in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_seq_len", "epochs"):
            check_range(name, getattr(self, name), 1, integer=True)
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be divisible by num_heads ({self.num_heads})")
        check_range("batch_tokens", self.batch_tokens, self.max_seq_len, integer=True)
        check_range("lr", self.lr, 0.0)
        check_range("warmup_steps", self.warmup_steps, 0, integer=True)
        check_range("weight_decay", self.weight_decay, 0.0)
        check_range("env_text_loss", self.env_text_loss, 0.0)
        check_range("threads", self.threads, 1, integer=True)
        check_range("eval_seeds", self.eval_seeds, 0, integer=True)


def tokenizer_corpus(episodes: list[Episode]) -> list[str]:
    """The texts the BPE is trained on: every message as the chat template writes it (role line + content)."""
    return [f"{m['role']}\n{m['content']}" for episode in episodes for m in episode.messages]


def encode_episode(tokenizer, episode: Episode) -> tuple[list[int], list[int], list[bool]]:
    """Token ids of the whole chat, labels (``-100`` except on target responses after their prefix), and a flag
    per token saying whether it is env text (system and user messages), which gets the auxiliary loss.

    Pieces are cut at special tokens and newlines, where the BPE never merges, so their concatenation is
    exactly the tokenization of the chat template's rendering (``tests/baselines/tiny/test_tiny_model.py``).
    """
    ids: list[int] = []
    labels: list[int] = []
    env_text: list[bool] = []

    def add(text: str, learn: bool, from_env: bool = False) -> None:
        piece = tokenizer.encode(text, add_special_tokens=False)
        ids.extend(piece)
        labels.extend(piece if learn else [-100] * len(piece))
        env_text.extend([from_env] * len(piece))

    prefix = prefill_for("think")
    targets = iter(episode.targets)
    for message in episode.messages:
        role, content = message["role"], message["content"]
        if role != "assistant":
            add(f"{IM_START}{role}\n{content}{IM_END}\n", False, from_env=True)
            continue
        learn = next(targets)
        if learn and content.startswith(prefix):
            add(f"{IM_START}assistant\n{prefix}", False)
            add(f"{content[len(prefix) :]}{IM_END}", True)
            add("\n", False)
        else:
            add(f"{IM_START}assistant\n{content}{IM_END}\n", False)
    return ids, labels, env_text


def make_batches(lengths: list[int], batch_tokens: int, rng: np.random.Generator) -> list[list[int]]:
    """Indices grouped into batches of similar length (≤ ``batch_tokens`` padded tokens), in random order."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, lengths[i])
        if current and longest_if_added * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest_if_added = [], lengths[i]
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    return [batches[int(k)] for k in rng.permutation(len(batches))]


def build_model(config: TrainConfig, tokenizer):
    """A config-initialised Llama-architecture causal LM sized by ``config``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    model_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=max(2048, config.max_seq_len),
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.convert_tokens_to_ids(IM_END),
        bos_token_id=None,
    )
    return LlamaForCausalLM(model_config)


def save_model(model, tokenizer, out: Path) -> None:
    """Weights, tokenizer and generation settings (stop at ``<|im_end|>`` or ``</answer>``) to ``out``."""
    model.eval()
    model.generation_config.eos_token_id = [
        tokenizer.convert_tokens_to_ids(IM_END),
        tokenizer.convert_tokens_to_ids("</answer>"),
    ]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def train(config: TrainConfig, out: Path, log=print, snapshots: Path | None = None) -> dict:
    """Run the whole recipe and save the model to ``out``; return the training log.

    ``snapshots``, when given, receives the model after every epoch (overwritten each time), so a long run can
    be evaluated while it trains; it does not change the training.
    """
    import torch

    started = time.perf_counter()
    torch.manual_seed(config.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(config.threads)

    episodes = record_all(config.data)
    log(f"recorded {len(episodes)} episodes in {time.perf_counter() - started:.1f}s")
    system_prompts = {e.messages[0]["content"] for e in episodes if e.messages[0]["role"] == "system"}
    corpus = tokenizer_corpus(episodes)
    labels = field_labels(text for text in corpus if text.startswith("user\n"))
    tokenizer = train_tokenizer(corpus, config.vocab_size, whole_texts=system_prompts, labels=labels)
    encoded = [encode_episode(tokenizer, episode) for episode in episodes]
    kept = [triple for triple in encoded if len(triple[0]) <= config.max_seq_len]
    lengths = [len(ids) for ids, _, _ in kept]
    log(
        f"tokenizer: {len(tokenizer)} tokens ({len(labels)} field labels); "
        f"{len(kept)}/{len(encoded)} episodes fit {config.max_seq_len} tokens; "
        f"{sum(lengths)} tokens, mean {np.mean(lengths):.0f}, max {max(lengths)}"
    )

    model = build_model(config, tokenizer)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng([config.seed, 1])
    schedule = [make_batches(lengths, config.batch_tokens, rng) for _ in range(config.epochs)]
    total_steps = sum(len(batches) for batches in schedule)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        if step < config.warmup_steps:
            return config.lr * (step + 1) / config.warmup_steps
        progress = (step - config.warmup_steps) / max(1, total_steps - config.warmup_steps)
        return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    log(f"model: {n_params / 1e6:.2f}M parameters; {total_steps} steps over {config.epochs} epochs")
    losses = []
    step = 0
    train_started = time.perf_counter()
    for epoch, batches in enumerate(schedule):
        for batch in batches:
            width = max(lengths[i] for i in batch)
            input_ids = torch.full((len(batch), width), tokenizer.pad_token_id, dtype=torch.long)
            labels = torch.full((len(batch), width), -100, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            env_text = torch.zeros((len(batch), width), dtype=torch.bool)
            for row, i in enumerate(batch):
                ids, labs, from_env = kept[i]
                input_ids[row, : len(ids)] = torch.tensor(ids)
                labels[row, : len(ids)] = torch.tensor(labs)
                attention[row, : len(ids)] = 1
                env_text[row, : len(ids)] = torch.tensor(from_env)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
            # The LM head runs on target positions only: most positions are prompt, whose logits are unused.
            hidden = model.model(input_ids=input_ids, attention_mask=attention).last_hidden_state  # (B, T, H)
            targets = labels[:, 1:]  # position t predicts token t+1
            picked = targets != -100
            logits = model.lm_head(hidden[:, :-1][picked])  # (N, V)
            loss = torch.nn.functional.cross_entropy(logits.float(), targets[picked])
            if config.env_text_loss > 0:
                seen = env_text[:, 1:]
                env_logits = model.lm_head(hidden[:, :-1][seen])
                env_loss = torch.nn.functional.cross_entropy(env_logits.float(), input_ids[:, 1:][seen])
                loss_total = loss + config.env_text_loss * env_loss
            else:
                loss_total = loss
            loss_total.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(round(loss.item(), 5))
            step += 1
            if step % 25 == 0 or step == total_steps:
                elapsed = time.perf_counter() - train_started
                log(f"epoch {epoch} step {step}/{total_steps} loss {np.mean(losses[-25:]):.4f} ({elapsed:.0f}s)")
        if snapshots is not None:
            save_model(model, tokenizer, snapshots)
            model.train()
    train_seconds = time.perf_counter() - train_started

    save_model(model, tokenizer, out)

    evaluation = {}
    if config.eval_seeds:
        from baselines.tiny.evaluate import compare_with_random

        evaluation = compare_with_random(str(out), seeds=range(config.eval_seeds), log=log, envs=config.data.envs)
    record = {
        "config": dataclasses.asdict(config),
        "parameters": n_params,
        "episodes": {
            kind: sum(episode.kind == kind for episode in episodes) for kind in ("oracle", "perturbed", "failed")
        },
        "train_tokens_per_epoch": sum(lengths),
        "steps": total_steps,
        "loss_first_last": [losses[0], float(np.mean(losses[-25:]))],
        "train_seconds": round(train_seconds, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "evaluation": evaluation,
    }
    (out / "training_log.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.tiny.train``: train the tiny model and save it to ``--out``; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_DIR, help="where to save (default: %(default)s)")
    parser.add_argument("--episodes-per-env", type=int, default=DataConfig.episodes_per_env)
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--threads", type=int, default=TrainConfig.threads)
    parser.add_argument("--eval-seeds", type=int, default=TrainConfig.eval_seeds)
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--snapshots", type=Path, default=None, help="also save the model here after every epoch")
    parser.add_argument(
        "--envs",
        default=",".join(SHIPPED_ENVS),
        help=f"comma-separated env ids to train on, from {', '.join(TRAINABLE_ENVS)} (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    try:  # the configs check every field: a bad one is a one-line usage error, not a traceback
        config = TrainConfig(
            seed=args.seed,
            data=DataConfig(
                episodes_per_env=args.episodes_per_env,
                episodes_override=DataConfig.episodes_override
                if args.episodes_per_env == DataConfig.episodes_per_env
                else (),
                envs=tuple(name.strip() for name in args.envs.split(",") if name.strip()),
            ),
            epochs=args.epochs,
            threads=args.threads,
            eval_seeds=args.eval_seeds,
        )
    except ValueError as error:
        parser.error(str(error))
    record = train(config, args.out, snapshots=args.snapshots)
    print(json.dumps({k: record[k] for k in ("steps", "train_seconds", "total_seconds", "evaluation")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
