"""The one turn record and lockstep loop (harness.episode): the harness writes every episode byte for byte as the
golden run recorded it (window, sample seeds, infos and float formatting included), and the learner's episodes,
played by the same loop, are harness records that replay."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main

GOLDEN = Path(__file__).parent / "golden" / "lockstep_random_oracle.jsonl"
"""``harness run`` with :data:`ARGS` (``--out DIR --run-id g --quiet --no-plots``): ``DIR/g/episodes.jsonl``.
Regenerate it only for a change meant to alter records (an env's version bump, a new record field)."""
ARGS = ["random,oracle", "--env", "ragen/Bandit-v0,ragen/FrozenLake-v0", "--episodes", "1", "--samples", "2",
        "--context", "1", "--mi-samples", "0"]  # fmt: skip


def test_episodes_are_written_byte_for_byte_as_the_golden_run(tmp_path):
    assert main(["run", *ARGS, "--out", str(tmp_path), "--run-id", "g", "--quiet", "--no-plots"]) == 0
    written = (tmp_path / "g" / "episodes.jsonl").read_bytes()
    golden = GOLDEN.read_bytes()
    assert written.count(b"\n") == golden.count(b"\n") == 8
    for number, (line, expected) in enumerate(zip(written.splitlines(), golden.splitlines(), strict=True), 1):
        assert line == expected, f"episodes.jsonl line {number} differs from {GOLDEN.name}"


class _CharTokenizer:
    """One id per character (0 is the end of sequence): enough for the learner's prompt chaining."""

    eos_token_id = 0

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "".join(f"<{m['role']}>{m['content']}\n" for m in messages) + "<assistant>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i or not skip_special_tokens)


def test_the_learners_episodes_are_harness_records_that_replay():
    """The learner plays through the same loop: each episode carries the harness's record of it, whose turns are
    the learner's samples and which the leaderboard's replay accepts as is."""
    from baselines.algos.rollout import RolloutSpec
    from baselines.ppo.rollout import collect_rollouts
    from harness.lm.generation import Decoded
    from harness.records import dumps_line, loads_line
    from leaderboard.records import parse_episode
    from leaderboard.verify import Replayer

    moves = ["Up", "Left", "Down", "Right"]

    def sampler(prompts, seeds):
        texts = [f"go</think><answer>{moves[seed % 4]}</answer>" for seed in seeds]
        return [Decoded((*map(ord, t), 0), (-0.5,) * (len(t) + 1), (0.25,) * (len(t) + 1), True) for t in texts]

    config = RolloutSpec(env_id="ragen/FrozenLake-v0", max_turns=4, seed=0, samples_per_prompt=2, context_turns=1)
    episodes = collect_rollouts(None, _CharTokenizer(), config, 0, [0, 1, 2], sampler=sampler)
    replayer = Replayer(context_turns=1)
    assert any(len(e.turns) > 1 for e in episodes)
    for number, episode in enumerate(episodes, 1):
        record = episode.record
        assert [t["response"] for t in record["turns"]] == [s.response_text for s in episode.turns]
        assert [t["reward"] for t in record["turns"]] == [s.reward for s in episode.turns]
        assert (record["return"], record["success"]) == (episode.episode_return, episode.success)
        first = record["turns"][0]
        assert first["tokens"] == len(episode.turns[0].response_ids) and first["logprob_sum"] == -0.5 * first["tokens"]
        assert replayer.replay(parse_episode(number, loads_line(dumps_line(record)))) is None
    replayer.close()
