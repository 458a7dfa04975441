"""Where training logs go: TensorBoard and Weights & Biases (offline, no network) from the learner and from TRL."""

import json

import pytest

from tests.helpers.paths import TINY_MODEL

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("wandb", reason="needs the wandb extra: pip install 'ragen-envs[wandb]'")

from baselines.ppo.config import PPOConfig  # noqa: E402
from tests.helpers.trackers import tensorboard_tags, wandb_history  # noqa: E402

MODEL = str(TINY_MODEL)


@pytest.fixture
def offline_wandb(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_PROJECT", "ragen-envs-tests")
    import wandb

    wandb.teardown()  # W&B reads its environment once per process setup
    yield
    wandb.teardown()


def test_learner_reports_to_wandb_and_tensorboard(tmp_path, offline_wandb, capsys):
    pytest.importorskip("tensorboard")
    from harness.cli import main

    out = tmp_path / "run"
    argv = ["train", "cpu-tiny", "--model", MODEL, "--env-id", "ragen/Bandit-v0", "--iterations", "1",
            "--prompts-per-iteration", "2", "--samples-per-prompt", "2", "--max-new-tokens", "8", "--mi-every", "1",
            "--out-dir", str(out), "--report-to", "wandb", "--fresh"]  # fmt: skip
    assert main(argv) == 0
    history = wandb_history(out, 1)
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert len(history) == 1 and history[0]["_step"] == 0  # W&B step = learner iteration
    assert history[0]["rollout/return"] == pytest.approx(row["rollout/return"])
    assert history[0]["collapse_first_turn/num_pairs"] == row["collapse_first_turn/num_pairs"]
    assert {"rollout/return", "rollout/filter_kept_ratio"} <= tensorboard_tags(out / "tensorboard")
    run_id = (out / "wandb_run_id").read_text()
    # a resumed run continues the same W&B run
    assert main([*argv[:-1], "--iterations", "2"]) == 0
    assert (out / "wandb_run_id").read_text() == run_id
    assert [h["_step"] for h in wandb_history(out, 2)] == [0, 1]


def test_unknown_tracker_names_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="Did you mean 'wandb'"):
        PPOConfig(model=MODEL, out_dir=str(tmp_path), report_to="wandbb")
    assert PPOConfig(model=MODEL, report_to="none").report_to == "none"
