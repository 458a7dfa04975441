"""One short GPU check of both vLLM paths and the learner, on a ~0.5B-parameter config model (random init; no hub):

1. ``harness run vllm:<model> --env ragen/Sokoban-v0`` (the agent): generated tokens/s and the MI family's time;
2. ``--iterations`` PPO iterations on Sokoban with ``--backend`` (``vllm``: the colocated engine, weights synced
   after every update; ``transformers``: the shared decoder): rollout and training tokens/s, the sync's probe
   parity, iteration times;
3. peak memory: the device's (``nvidia-smi``, sampled; vLLM's engine is another process) or, on CPU, the
   largest resident set of this process and its children.

    bash benchmarks/gpu_check.sh                    # every GPU path, this script's steps among them
    python benchmarks/gpu_ppo_check.py --dry-run    # on CPU with the tiny model (the vLLM steps from .venv-vllm)
    torchrun --nproc_per_node 2 benchmarks/gpu_ppo_check.py --skip-agent --backend transformers  # 2 ranks

Results go to ``--out`` as JSON and are printed. Uses the shipped tiny model's tokenizer (vocab 2k), so the
parameters sit in the transformer layers.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "baselines" / "tiny" / "model"


def build_model(path: Path) -> int:
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(TINY)
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


class PeakMemory:
    """The largest device memory in use while it runs (``nvidia-smi``, every 0.5 s), in GiB."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=5, check=True,
                ).stdout  # fmt: skip
                self.peak = max(self.peak, max(float(v) for v in out.split()) / 1024)
            except (OSError, subprocess.SubprocessError, ValueError):
                return
            self._stop.wait(0.5)

    def __enter__(self) -> PeakMemory:
        if shutil.which("nvidia-smi"):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()


def cpu_peak_rss_gib() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 2**20  # kB -> GiB


def agent_run(model: str, out: Path, episodes: int, max_new_tokens: int, agent_opts: list[str]) -> dict:
    """``harness run vllm:<model>`` on Sokoban; generated tokens/s from the run's episode records."""
    from harness.cli import main as harness

    argv = [
        "run", f"vllm:{model}", "--env", "ragen/Sokoban-v0", "--episodes", str(episodes), "--samples", "4",
        "--max-new-tokens", str(max_new_tokens), "--mi-samples", "32", "--out", str(out), "--run-id", "agent",
        "--quiet", "--no-plots", *[a for opt in agent_opts for a in ("--agent-opt", opt)],
    ]  # fmt: skip
    start = time.perf_counter()
    status = harness(argv)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"harness run failed with status {status}")
    lines = (out / "agent" / "episodes.jsonl").read_text().splitlines()
    tokens = sum(turn.get("tokens") or 0 for line in lines for turn in json.loads(line)["turns"])
    summary = json.loads((out / "agent" / "summary.json").read_text())
    return {"wall_s": wall, "episodes": len(lines), "generated_tokens": tokens, "tokens_per_s_incl_startup": tokens / wall,
            "summary": summary}  # fmt: skip


def ppo_run(model: str, out: Path, backend: str, iterations: int, dry_run: bool, data_parallel: str = "ddp") -> dict:
    from baselines.ppo.config import preset
    from baselines.ppo.trainer import Trainer

    # on CPU in fp32, as the vLLM lane's tests (the paper preset's bf16 is for GPUs)
    sizes = dict(prompts_per_iteration=2, samples_per_prompt=4, max_new_tokens=48, mi_samples=8, micro_batch_size=4,
                 dtype="float32", gradient_checkpointing=False)  # fmt: skip
    if not dry_run:
        sizes = dict(
            prompts_per_iteration=8, samples_per_prompt=8, max_new_tokens=128, mi_samples=32, micro_batch_size=8
        )
    config = preset(
        "paper", model=model, env_id="ragen/Sokoban-v0", iterations=iterations, filter_value=1.0, mi_every=1,
        out_dir=str(out / f"ppo-{backend}"), tensorboard=False, generation_backend=backend, data_parallel=data_parallel,
        **sizes,
    )  # fmt: skip
    trainer = Trainer(config)
    try:
        start = time.perf_counter()
        rows = trainer.train(resume=False)
        wall = time.perf_counter() - start
    finally:
        trainer.close()
    return {
        "backend": backend,
        "ranks": trainer.dist.world,
        "data_parallel": data_parallel if trainer.dist.world > 1 else None,
        "iterations": iterations,
        "wall_s": wall,
        "rollout_tokens_per_s": [r["perf/rollout_tokens_per_s"] for r in rows],
        "train_tokens_per_s": [r.get("perf/train_tokens_per_s") for r in rows],
        "iteration_s": [r["timing/rollout_s"] + r["timing/update_s"] + r.get("timing/mi_s", 0.0) for r in rows],
        "sync_s": [r.get("timing/sync_s") for r in rows],
        "probe_logprob_max_abs_diff": [r.get("sync/probe_logprob_max_abs_diff") for r in rows],
        "success": [r["rollout/success"] for r in rows],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--backend", default="vllm", choices=("vllm", "transformers"))
    parser.add_argument("--dry-run", action="store_true", help="on CPU with the tiny model and small sizes")
    parser.add_argument("--skip-agent", action="store_true", help="only the learner")
    parser.add_argument("--data-parallel", default="ddp", choices=("ddp", "fsdp2"), help="the engine under torchrun")
    parser.add_argument("--build-model", metavar="DIR", help="only write the config model to DIR (for verl's check)")
    args = parser.parse_args()
    import os

    import torch

    if args.build_model:
        print(build_model(Path(args.build_model)))
        return 0
    main_rank = os.environ.get("RANK", "0") == "0"  # under torchrun every rank trains, rank 0 reports

    if not args.dry_run and not torch.cuda.is_available():
        raise SystemExit("this check needs a CUDA GPU (or --dry-run on CPU with the tiny model)")
    result: dict = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}
    with tempfile.TemporaryDirectory() as tmp, PeakMemory() as memory:
        tmp = Path(tmp)
        if args.dry_run:
            model, result["parameters"] = str(TINY), None
        else:
            model = str(tmp / "model")
            result["parameters"] = build_model(Path(model))
        if not args.skip_agent:
            opts = ["max_model_len=2048"] if args.dry_run else ["max_model_len=4096", "gpu_memory_utilization=0.4"]
            agent = agent_run(model, tmp, 2 if args.dry_run else 16, 48 if args.dry_run else 128, opts)
            result["agent"] = {k: v for k, v in agent.items() if k != "summary"}
        result["ppo"] = ppo_run(model, tmp, args.backend, args.iterations, args.dry_run, args.data_parallel)
    result["peak_memory_gib"] = memory.peak if torch.cuda.is_available() else cpu_peak_rss_gib()
    result["peak_memory_of"] = "device (nvidia-smi)" if torch.cuda.is_available() else "largest process RSS"
    if not main_rank:
        return 0
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
