"""verl adapter: any ragen env as a verl agent loop, the episode return as reward, RAGEN-2's SNR filter and MI.

    bash scripts/install-verl.sh                       # its own venv: verl 0.9 pins transformers < 5.11
    python -c "from baselines.verl import write_dataset; write_dataset('data/sokoban.parquet', 'ragen/Sokoban-v0', range(512))"
    python -m baselines.verl.main data.train_files=... actor_rollout_ref.model.path=...   # baselines/verl/config/ragen_ppo.yaml

Importing this package registers the ``ragen_agent`` loop with verl. The SNR filter and MI logging live in
:mod:`baselines.verl.trainer` (``RagenPPOTrainer``), which ``baselines.verl.main`` runs.
"""

from baselines.verl.compat import require_verl

require_verl()

from baselines.verl.agent_loop import RagenAgentLoop  # noqa: E402
from baselines.verl.dataset import AGENT_NAME, dataset_rows, write_dataset  # noqa: E402

__all__ = ["AGENT_NAME", "RagenAgentLoop", "dataset_rows", "write_dataset"]
