"""One short GPU check of the learner: a ~0.5B-parameter config model (random init; no hub is reachable)
doing rollouts + a PPO step on Sokoban. Prints tokens/s (rollout and training) and peak GPU memory as JSON.

    python benchmarks/gpu_ppo_check.py --out $OUT/gpu_ppo.json        # on a CUDA machine, ~5 minutes

Uses the shipped tiny model's tokenizer (vocab 2k), so the parameters sit in the transformer layers.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_model(path: Path) -> int:
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(ROOT / "baselines" / "tiny" / "model")
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=1280, intermediate_size=3456, num_hidden_layers=24,
        num_attention_heads=20, num_key_value_heads=4, max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return sum(p.numel() for p in model.parameters())


def main() -> int:
    import torch

    from baselines.ppo.config import preset
    from baselines.ppo.trainer import Trainer

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="gpu_ppo.json")
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args()
    assert torch.cuda.is_available(), "this check needs a CUDA GPU"
    with tempfile.TemporaryDirectory() as tmp:
        params = build_model(Path(tmp) / "model")
        config = preset(
            "paper", model=str(Path(tmp) / "model"), env_id="ragen/Sokoban-v0", iterations=args.iterations,
            prompts_per_iteration=8, samples_per_prompt=8, max_new_tokens=128, filter_value=1.0, mi_every=1,
            mi_samples=32, out_dir=str(Path(tmp) / "run"), tensorboard=False, micro_batch_size=8,
        )  # fmt: skip
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        rows = Trainer(config).train(resume=False)
        wall = time.perf_counter() - start
    result = {
        "device": torch.cuda.get_device_name(0),
        "parameters": params,
        "iterations": args.iterations,
        "wall_s": wall,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
        "rollout_tokens_per_s": [r["perf/rollout_tokens_per_s"] for r in rows],
        "train_tokens_per_s": [r.get("perf/train_tokens_per_s") for r in rows],
        "mi_s": [r.get("timing/mi_s") for r in rows],
    }
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
