"""Train the learner under ``torchrun`` with gloo on CPU and read back what rank 0 saved: the one launcher of the
tests that compare a multi-process update with the single-process one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT
from tests.helpers.ports import free_port

SCRIPT = """
import json, os, sys, torch
sys.path.insert(0, {root!r})
from baselines.ppo.config import PPOConfig
from baselines.ppo.trainer import Trainer
trainer = Trainer(PPOConfig(**json.loads({cfg!r})))
rows = trainer.train(resume=False)
policy, _ = trainer.dist.state_dicts(trainer.policy, trainer.optimizer)  # FSDP2: every rank hands in its shards
if trainer.dist.main:
    torch.save({{"policy": policy, "rows": rows}}, {out!r})
trainer.close()  # the process group goes here, not with interpreter exit
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)  # skip interpreter teardown: a gloo helper thread can abort a rank there after its work is saved
"""


def train_ranks(world: int, config: dict, tmp_path: Path, name: str) -> dict:
    """Train ``config`` in ``world`` gloo processes (one thread each); rank 0's ``{"policy", "rows"}``."""
    import torch

    script, out = tmp_path / f"{name}.py", tmp_path / f"{name}.pt"
    cfg = json.dumps({**config, "out_dir": str(tmp_path / name)})
    script.write_text(SCRIPT.format(root=str(ROOT), cfg=cfg, out=str(out)))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world), "--master_port",
           str(free_port()), str(script)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-12000:]
    return torch.load(out, weights_only=False)
