"""TRL adapter: any ragen env in TRL's ``GRPOTrainer``, with RAGEN-2's SNR filter and MI diagnostics.

    from baselines.trl import EnvRollout, MICallback, SNRFilterGRPOTrainer, episode_return, make_dataset
    rollout = EnvRollout("ragen/Sokoban-v0", max_turns=3, max_new_tokens=64)
    trainer = SNRFilterGRPOTrainer(model=..., args=GRPOConfig(...), reward_funcs=episode_return,
                                   train_dataset=make_dataset("ragen/Sokoban-v0", range(64)),
                                   rollout_func=rollout, callbacks=[MICallback(rollout, every=5)])

Or TRL's ``environment_factory`` (the env's actions as tools, TRL's own tool-calling loop):

    Env = tool_environment("ragen/Sokoban-v0", env_kwargs={"max_turns": 3})
    trainer = SNRFilterGRPOTrainer(model=..., args=GRPOConfig(...), reward_funcs=env_return, environment_factory=Env,
                                   train_dataset=make_tool_dataset("ragen/Sokoban-v0", range(64)),
                                   callbacks=[MICallback(Env, every=5)])

Needs the ``trl`` extra (``pip install 'ragen-envs[trl]'``, TRL 1.16.x); see ``examples/trl_grpo.py``.
"""

from baselines.trl.compat import require_trl

require_trl()

from baselines.trl.dataset import make_dataset  # noqa: E402
from baselines.trl.env_factory import env_return, make_tool_dataset, tool_environment  # noqa: E402
from baselines.trl.mi import MICallback  # noqa: E402
from baselines.trl.rollout import EnvRollout, episode_return, episode_row  # noqa: E402
from baselines.trl.snr import SNRFilterGRPOTrainer  # noqa: E402

__all__ = [
    "EnvRollout",
    "MICallback",
    "SNRFilterGRPOTrainer",
    "env_return",
    "episode_return",
    "episode_row",
    "make_dataset",
    "make_tool_dataset",
    "tool_environment",
]
