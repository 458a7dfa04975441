"""``python -m baselines.verl.main [verl overrides]``: verl's PPO main with RAGEN-2's SNR filter, on either trainer.

The config is verl 0.9's ``ppo_trainer`` plus a ``ragen`` section (``baselines/verl/config/ragen_ppo.yaml``).

- ``trainer.use_v1=true`` (the default, as in verl): verl's v1 trainer, run exactly as verl's own
  ``verl.trainer.main_ppo`` runs it; the config points its replay-buffer sampler at
  :class:`~baselines.verl.sampler.RagenReplayBuffer`, where the filter runs. verl's entry point with this config
  (``python -m verl.trainer.main_ppo --config-path <repo>/baselines/verl/config --config-name ragen_ppo``) is the
  same run.
- ``trainer.use_v1=false``: verl's legacy DataProto trainer; verl's driver starts Ray and a task runner that
  builds the trainer by name, and the runner here builds :class:`~baselines.verl.trainer.RagenPPOTrainer`
  instead (the filter and the in-trainer MI family), with verl's runner code otherwise unchanged.
"""

from __future__ import annotations

import hydra

from baselines.verl.compat import require_verl

require_verl()
import ray  # noqa: E402
from verl.trainer import main_ppo_v0  # noqa: E402


def _legacy_runner_class():
    """verl's task runner class behind its ``@ray.remote`` wrapper (Ray keeps it as the actor's class)."""
    metadata = getattr(main_ppo_v0.TaskRunner, "__ray_metadata__", None)
    runner = getattr(metadata, "modified_class", None)
    if runner is None:
        raise RuntimeError("cannot reach verl's TaskRunner class behind ray.remote: an untested ray version")
    return runner


@ray.remote(num_cpus=1)
class RagenTaskRunner(main_ppo_v0.BaseTaskRunner):
    """verl's task runner (``main_ppo_v0.TaskRunner.run``), building ``RagenPPOTrainer``."""

    def run(self, config):
        """Run verl's task runner with ``RagenPPOTrainer`` as its trainer."""
        from baselines.verl.trainer import RagenPPOTrainer

        # TaskRunner.run builds the trainer by this module-level name; this process runs only this runner
        main_ppo_v0.RayPPOTrainer = RagenPPOTrainer
        return _legacy_runner_class().run(self, config)


def launch(config) -> None:
    """Validate the ``ragen`` section and verl's settings it relies on, then run verl's PPO driver."""
    check_config(config)
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=TaskRunnerV1 if config.trainer.use_v1 else RagenTaskRunner)


def check_config(config) -> None:
    """The ``ragen`` (and ``algorithm.reward_variance_filtering``) options, and verl's settings the chosen
    trainer's filter relies on; each mistake fails with the fix before Ray starts."""
    from baselines.verl.filtering import options_from_config

    options_from_config(config)
    if config.trainer.use_v1:
        from baselines.verl.sampler import check_v1_config

        check_v1_config(config)
    else:
        from baselines.verl.trainer import check_trainer_config

        check_trainer_config(config)


@hydra.main(config_path="config", config_name="ragen_ppo", version_base=None)
def main(config) -> None:
    """``python -m baselines.verl.main``: verl's PPO driver with the ragen trainer, configured through Hydra."""
    launch(config)


if __name__ == "__main__":
    main()
