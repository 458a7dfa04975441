"""``benchmarks/bench_trainers.py`` refuses a wrong setting or precision with one line naming the choices, before
it loads a model or starts a round (a typo must not cost a half-finished benchmark)."""

from __future__ import annotations

import pytest

from tests.helpers.paths import load_script


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--precision", "fp16"], "--precision: unknown 'fp16'; choose from fp32, bf16"),
        (["--envs", "sokoban,sokoban4"], "--envs: unknown setting 'sokoban4'; choose from bandit, sokoban"),
    ],
)
def test_bad_argument_is_one_line(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_script("benchmarks/bench_trainers.py").main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_trlgen_samples_every_turn_with_trls_own_generation(tmp_path, monkeypatch):
    """A ``*-trlgen`` setting is TRL's own generation behind the adapter's episodes: every turn goes through
    ``GRPOTrainer._generate_single_turn`` with the per-turn budget (never the learner's decoder), and both sides
    play whole episodes of the same env."""
    from trl import GRPOTrainer

    bench = load_script("benchmarks/bench_trainers.py")
    calls: list[tuple[int, int]] = []
    real = GRPOTrainer._generate_single_turn

    def counted(self, prompt_ids, *args, **kwargs):
        calls.append((len(prompt_ids), self.generation_config.max_new_tokens))
        return real(self, prompt_ids, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", counted)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env_id, env_kwargs = bench.ENVS["sokoban3-trlgen"]
    result = bench.run_env(env_id, env_kwargs, rounds=1, tokens=12, out=tmp_path, trl_generation=True)
    assert result["env"] == "ragen/Sokoban-v0 (TRL's own generate, every turn)"
    assert result["turns"] == 3
    # one call per turn of the 64 episodes (all alive at turn 1), each with the per-turn budget of 12 tokens
    assert calls[0] == (bench.PROMPTS * bench.SAMPLES, 12)
    assert {budget for _, budget in calls} == {12} and 1 < len(calls) <= 3
    assert len(result["trl_all_s"]) == len(result["ours_all_s"]) == 1  # one interleaved round, both timed
