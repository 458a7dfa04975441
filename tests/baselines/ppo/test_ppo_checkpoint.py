"""The learner's checkpoint never unpickles: a planted pickle in a run folder runs nothing, a real checkpoint
round-trips exactly, and an earlier version's ``checkpoint.pt`` gets one line that says how to convert it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from baselines.ppo import checkpoint  # noqa: E402
from baselines.ppo.trainer import Trainer  # noqa: E402
from tests.baselines.ppo.test_ppo_trainer import assert_same_params, params_of, small_config  # noqa: E402


class _Planted:
    """Unpickling this object creates ``marker``: proof that code from the run folder ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def plant(path: Path, marker: Path) -> None:
    """A checkpoint as torch.save writes it, whose policy entry runs code when unpickled."""
    torch.save({"next_iteration": 1, "policy": _Planted(marker)}, path)


def test_state_round_trips_with_key_types_tuples_and_shared_tensors(tmp_path):
    weight = torch.arange(6.0).reshape(2, 3)
    state = {
        "next_iteration": 3,
        "config": {"lr": 1e-6, "name": "x", "flag": True, "none": None, "nan": math.nan, "nested": [1, [2.5]]},
        "model": {"embed.weight": weight, "lm_head.weight": weight, "view": torch.arange(10)[2:5]},
        "optimizer": {"state": {0: {"step": torch.tensor(4.0), "exp_avg": torch.ones(2)}}, "param_groups": [
            {"betas": (0.9, 0.999), "params": [0], "foreach": None}
        ]},
    }  # fmt: skip
    path = tmp_path / "c.safetensors"
    checkpoint.save(path, state)
    back = checkpoint.load(path)
    assert back["next_iteration"] == 3 and back["config"]["nested"] == [1, [2.5]] and math.isnan(back["config"]["nan"])
    assert {k: v for k, v in back["config"].items() if k != "nan"} == {
        k: v for k, v in state["config"].items() if k != "nan"
    }
    assert list(back["optimizer"]["state"]) == [0] and back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert torch.equal(back["optimizer"]["state"][0]["step"], torch.tensor(4.0))
    assert torch.equal(back["model"]["view"], torch.tensor([2, 3, 4]))
    assert back["model"]["embed.weight"] is back["model"]["lm_head.weight"]  # tied weights stored once, shared again
    assert torch.equal(back["model"]["embed.weight"], weight)


def test_a_planted_pickle_in_the_run_folder_runs_nothing(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    marker = tmp_path / "pwned"
    plant(out / "checkpoint.pt", marker)
    trainer = Trainer(small_config(tiny_model_dir, out, iterations=1))
    with pytest.raises(checkpoint.CheckpointError, match="pickled checkpoint from an earlier version") as caught:
        trainer.train(resume=True)
    assert "\n" not in str(caught.value) and "baselines.ppo.checkpoint migrate" in str(caught.value)
    # The same bytes under the new name are refused as not-a-checkpoint, also without being unpickled.
    plant(out / "checkpoint.safetensors", marker)
    with pytest.raises(checkpoint.CheckpointError, match="not a readable learner checkpoint"):
        trainer.resume()
    assert not marker.exists()
    # Migration reads with the weights-only loader, which refuses the planted object instead of calling it.
    with pytest.raises(checkpoint.CheckpointError, match="not a plain-tensor checkpoint"):
        checkpoint.migrate(out)
    assert not marker.exists()


def test_forged_safetensors_checkpoints_are_one_line_errors(tiny_model_dir, tmp_path):
    from safetensors.torch import save_file

    out = tmp_path / "run"
    trainer = Trainer(small_config(tiny_model_dir, out, iterations=1))
    path = out / checkpoint.FILENAME
    deep = "[" * 100_000 + "]" * 100_000
    forged = {
        "maximum recursion depth": ({"x": torch.zeros(1)}, {checkpoint.FORMAT_KEY: checkpoint.FORMAT, checkpoint.STATE_KEY: deep}),
        "unknown entry": ({"x": torch.zeros(1)}, {checkpoint.FORMAT_KEY: checkpoint.FORMAT, checkpoint.STATE_KEY: '{"d": [[[1], 2]]}'}),
        "not a learner checkpoint": ({"x": torch.zeros(1)}, {}),
    }  # fmt: skip
    for expected, (tensors, metadata) in forged.items():
        save_file(tensors, str(path), metadata=metadata)
        with pytest.raises(checkpoint.CheckpointError, match=expected) as caught:
            trainer.resume()
        assert "\n" not in str(caught.value)
    for state in (
        {"next_iteration": 1},
        {"next_iteration": 1, "policy": {"model.embed_tokens.weight": torch.zeros(2)}},
    ):
        checkpoint.save(path, state)
        with pytest.raises(checkpoint.CheckpointError, match="does not fit this run"):
            trainer.resume()


def test_an_earlier_checkpoint_is_one_line_from_the_cli_and_migrates(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    config = small_config(tiny_model_dir, out, iterations=1, checkpoint_every=1)
    first = Trainer(config)
    first.train(resume=False)
    state = checkpoint.load(out / checkpoint.FILENAME)
    # What an earlier version left: the same state, pickled by torch.save.
    torch.save(state, out / checkpoint.LEGACY_FILENAME)
    os.remove(out / checkpoint.FILENAME)
    config_file = tmp_path / "config.json"
    config_file.write_text(config.to_json())
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "train", str(config_file)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]  # above it: transformers' weight-loading progress bars
    assert "Traceback" not in done.stderr and last.startswith("harness: error: "), done.stderr
    assert "checkpoint migrate" in last
    assert checkpoint.main(["migrate", str(out)]) == 0
    second = Trainer(config)
    assert second.resume() and second.next_iteration == 1
    assert_same_params(params_of(second.policy), params_of(first.policy))
