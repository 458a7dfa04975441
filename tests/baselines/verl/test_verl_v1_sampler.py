"""verl adapter on verl's v1 trainer: RAGEN-2's SNR filter in the replay-buffer sampler verl builds from the shipped
config, against a real TransferQueue on a local Ray cluster.

Runs in the verl venv (``bash scripts/install-verl.sh``); skipped elsewhere. verl's v1 trainer object is built from
``baselines/verl/config/ragen_ppo.yaml`` itself; the trajectories are written into TransferQueue with the layout
verl's v1 agent-loop workers write (those need GPU rollout servers), and ``refill`` stands in for a new rollout.
"""

import numpy as np
import pytest

from tests.helpers.paths import ROOT, TINY_MODEL

pytest.importorskip("verl", reason="needs the verl venv: bash scripts/install-verl.sh")
pytest.importorskip("transfer_queue", reason="needs the verl venv: bash scripts/install-verl.sh")
torch = pytest.importorskip("torch")

from omegaconf import OmegaConf  # noqa: E402

from baselines.algos.filter import filter_stats, random_groups, select_groups  # noqa: E402
from baselines.verl.filtering import FilterStop, RagenOptions  # noqa: E402
from baselines.verl.sampler import RagenReplayBuffer, check_v1_config  # noqa: E402
from harness.seeding import derive_seed  # noqa: E402

MODEL = str(TINY_MODEL)
RETURNS = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0], [5.0, -1.0, 2.0, 0.0], [0.5, 0.5, 0.5, 0.5],
                    [0.0, 0.0, 0.0, 0.1], [2.0, 0.0, 2.0, 0.0]])  # fmt: skip
SUCCESS = (RETURNS > 0.5).astype(float)


@pytest.fixture(scope="module")
def queue():
    """A local Ray cluster and TransferQueue, as verl's v1 task runner starts them."""
    import ray
    import transfer_queue as tq

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    yield tq
    tq.close()
    ray.shutdown()


def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "baselines" / "verl" / "config"), version_base=None):
        config = hydra_compose(config_name="ragen_ppo", overrides=[
            "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
            "data.train_batch_size=6", f"actor_rollout_ref.model.path={MODEL}", *overrides])  # fmt: skip
    OmegaConf.resolve(config)  # as verl's TaskRunnerV1 does before building the trainer
    return config


def v1_trainer(config):
    """verl's own v1 sync trainer, built from the config (its workers, which need GPUs, are never started)."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    return get_trainer_cls(config.trainer.v1.trainer_mode)(config=config)


def put_groups(tq, prefix: str, returns: np.ndarray, success: np.ndarray, step: int = 1) -> list[str]:
    """Finished groups in TransferQueue as verl's v1 agent-loop workers leave them: a prompt key per group
    (``status: finished``) and a trajectory ``{uid}_{session}_0`` per episode, the return on its last token."""
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    uids = [f"{prefix}{g}" for g in range(len(returns))]
    tq.kv_batch_put(keys=uids, partition_id="train",
                    tags=[{"is_prompt": True, "status": "finished", "global_steps": step} for _ in uids])  # fmt: skip
    keys, fields, tags = [], [], []
    for uid, group, wins in zip(uids, returns, success, strict=True):
        for session, (value, won) in enumerate(zip(group, wins, strict=True)):
            length = 3 + session  # ragged responses, as episodes are
            scores = torch.zeros(length)
            scores[-1] = value
            keys.append(f"{uid}_{session}_0")
            fields.append({"uid": uid, "rm_scores": scores, "response_mask": torch.ones(length, dtype=torch.int64),
                           "loss_mask": torch.ones(length, dtype=torch.int64),
                           "extra_fields": {"reward_extra_info": {"success": float(won), "episode_return": value}}})  # fmt: skip
            tags.append({"status": "success", "prompt_len": 5, "response_len": length, "seq_len": 5 + length,
                         "global_steps": step})  # fmt: skip
    tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(fields), tags=tags)
    return uids


def clear(tq):
    listing = tq.kv_list("train") or {}
    keys = list(listing.get("train", {}))
    if keys:
        tq.kv_clear(keys=keys, partition_id="train")


def test_verls_v1_trainer_builds_the_sampler_from_the_shipped_config():
    config = compose()
    assert config.trainer.use_v1 is True and config.trainer.v1.trainer_mode == "sync"
    check_v1_config(config)
    buffer = v1_trainer(config).replay_buffer
    assert type(buffer).__name__ == "RagenReplayBuffer" and isinstance(buffer, RagenReplayBuffer)
    assert buffer.options == RagenOptions.from_config(config.ragen)
    # the upstream ports' keys reach the sampler through the same config
    upstream = v1_trainer(compose("+algorithm.reward_variance_filtering.enable=true",
                                  "+algorithm.reward_variance_filtering.top_p=0.8")).replay_buffer  # fmt: skip
    assert (upstream.options.filter.spread, upstream.options.filter.value, upstream.options.apply) == (
        "var",
        0.8,
        "mask",
    )
    for override, field in (("trainer.v1.trainer_mode=colocate_async", "trainer.v1.trainer_mode"),
                            ("trainer.v1.sampler.custom_sampler.name=ReplayBuffer", "custom_sampler"),
                            ("algorithm.filter_groups.enable=true", "algorithm.filter_groups.enable")):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            check_v1_config(compose(override))


def test_trim_samples_the_kept_groups_and_verl_pads_them_to_its_mini_batch(queue):
    clear(queue)
    trainer = v1_trainer(compose())
    uids = put_groups(queue, "t", RETURNS, SUCCESS)
    batch, metrics = trainer.replay_buffer.sample(global_steps=1, partition_id="train", batch_size=len(uids))
    options = RagenOptions()
    expected = select_groups(RETURNS, options.filter)
    assert 0 < len(expected) < len(RETURNS)
    assert sorted({key.split("_")[0] for key in batch.keys}) == sorted(uids[g] for g in expected)
    assert len(batch) == len(expected) * RETURNS.shape[1]
    stats = filter_stats(RETURNS, expected)
    assert metrics["rollout/filter_kept_count"] == stats.kept_count and metrics["rollout/empty_after_filter"] == 0
    assert metrics["rollout/in_group_reward_std"] == pytest.approx(stats.mean_in_group_std)
    # the whole batch's return and success, which verl's critic/score/* (kept groups only) no longer show
    assert metrics["ragen/prefilter/score_mean"] == pytest.approx(RETURNS.mean())
    assert metrics["ragen/prefilter/success"] == pytest.approx(SUCCESS.mean())
    assert metrics["ragen/filter/regenerated_batches"] == 0
    dropped = [f"{uids[g]}_0_0" for g in range(len(uids)) if g not in expected]
    assert not set(dropped) & set((queue.kv_list("train") or {}).get("train", {}))  # cleared from TransferQueue

    # verl's own v1 balance step pads the kept rows to a multiple of its mini-batch (4 groups x 4 samples)
    from transformers import AutoTokenizer

    class WorkerGroup:  # the one thing _balance_batch asks of the actor workers: their data-parallel layout
        _dispatch_info = {"actor": [0, 1]}

    trainer.actor_rollout_wg, trainer.global_steps = WorkerGroup(), 1
    trainer.tokenizer = AutoTokenizer.from_pretrained(MODEL)
    padded = trainer._balance_batch(batch, metrics={})
    assert len(padded) == 16 and sum(bool(tag.get("is_padding")) for tag in padded.tags) == 16 - len(batch)
    clear(queue)


def test_mask_keeps_every_trajectory_and_zeroes_the_dropped_masks(queue):
    clear(queue)
    trainer = v1_trainer(compose("ragen.filter.apply=mask"))
    uids = put_groups(queue, "m", RETURNS, SUCCESS)
    batch, metrics = trainer.replay_buffer.sample(global_steps=1, partition_id="train", batch_size=len(uids))
    assert len(batch) == RETURNS.size
    kept = {uids[g] for g in select_groups(RETURNS, RagenOptions().filter)}
    data = queue.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask", "loss_mask"])
    for key, response, loss in zip(batch.keys, data["response_mask"], data["loss_mask"], strict=True):
        expected = 1 if key.split("_")[0] in kept else 0
        assert response.tolist() == [expected] * len(response) and loss.tolist() == response.tolist(), key
    assert metrics["rollout/filter_kept_count"] == len(kept)
    # verl's own v1 advantage step then gives the dropped groups no advantage: they add nothing to the loss
    log_probs = queue.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask"])
    log_probs["old_log_probs"] = log_probs.pop("response_mask") * 0.0  # what verl's old-log-prob step writes
    queue.kv_batch_put(keys=batch.keys, partition_id="train", fields=log_probs)
    trainer._compute_advantage(batch, metrics={})
    data = queue.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["advantages"])
    for key, advantages in zip(batch.keys, data["advantages"], strict=True):
        assert bool(advantages.abs().sum() > 0) == (key.split("_")[0] in kept), key
    clear(queue)


def test_a_group_that_lost_an_episode_is_dropped_not_fatal(queue):
    clear(queue)
    trainer = v1_trainer(compose())
    uids = put_groups(queue, "i", RETURNS, SUCCESS)
    queue.kv_clear(keys=[f"{uids[2]}_3_0"], partition_id="train")  # a failed session: verl samples the group anyway
    batch, metrics = trainer.replay_buffer.sample(global_steps=1, partition_id="train", batch_size=len(uids))
    assert metrics["ragen/filter/incomplete_groups"] == 1 and metrics["ragen/prefilter/groups"] == len(uids) - 1
    complete = np.delete(RETURNS, 2, axis=0)
    expected = [uids[g if g < 2 else g + 1] for g in select_groups(complete, RagenOptions().filter)]
    assert sorted({key.split("_")[0] for key in batch.keys}) == sorted(expected) and uids[2] not in expected
    clear(queue)


class Refill:
    """``refill_fn``: verl's trainer submits ``count`` new prompts; here their finished groups appear at once."""

    def __init__(self, queue, prefix: str, batches) -> None:
        self.queue, self.prefix, self.batches, self.calls = queue, prefix, iter(batches), []

    def __call__(self, count: int) -> int:
        self.calls.append(count)
        put_groups(self.queue, f"{self.prefix}{len(self.calls)}x", next(self.batches), np.zeros((2, 4)))
        return count


def test_the_random_drop_control_draws_by_seed_and_step(queue):
    clear(queue)
    trainer = v1_trainer(compose("ragen.filter.selection=random", "ragen.filter.seed=5", "ragen.filter.apply=mask"))
    uids = put_groups(queue, "r", RETURNS, SUCCESS)
    batch, metrics = trainer.replay_buffer.sample(global_steps=7, partition_id="train", batch_size=len(uids))
    count = len(select_groups(RETURNS, RagenOptions().filter))
    order = list(dict.fromkeys(key.split("_")[0] for key in batch.keys))  # the groups, first seen first
    drawn = random_groups(len(RETURNS), count, np.random.default_rng(derive_seed("train-random-drop", 5, 7)))
    data = queue.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["loss_mask"])
    kept = {key.split("_")[0] for key, mask in zip(batch.keys, data["loss_mask"], strict=True) if mask.sum()}
    assert kept == {order[g] for g in drawn} and metrics["rollout/filter_kept_count"] == count
    clear(queue)


def test_an_empty_selection_is_generated_anew_and_five_in_a_row_stop(queue):
    clear(queue)
    buffer = v1_trainer(compose()).replay_buffer
    flat = np.ones((2, 4))
    buffer.refill_fn = refill = Refill(queue, "r", [flat, RETURNS[:2]])
    put_groups(queue, "e", flat, np.zeros((2, 4)))
    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=2)
    assert refill.calls == [2, 2] and metrics["ragen/filter/regenerated_batches"] == 2
    assert {key.split("_")[0] for key in batch.keys} == {"r2x1"}  # the second new batch's group with a spread
    assert metrics["ragen/filter/empty_streak"] == 0
    clear(queue)
    # nothing ever varies: the fifth empty selection in a row stops the run
    buffer.refill_fn = refill = Refill(queue, "f", [flat] * 10)
    put_groups(queue, "z", flat, np.zeros((2, 4)))
    with pytest.raises(FilterStop, match="5 consecutive"):
        buffer.sample(global_steps=2, partition_id="train", batch_size=2)
    assert len(refill.calls) == 4
    clear(queue)
