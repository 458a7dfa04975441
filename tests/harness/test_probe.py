"""The fixed MI probe: distinguishable prompts, and the retrieval ceiling a batch puts on any policy."""

from __future__ import annotations

import pytest

from harness.probe import batch_ceilings, feature_ceilings, probe_seeds, prompt_features, shares_features


def test_bandit_probe_prompts_share_no_arm_name_and_are_the_same_in_any_call():
    seeds = probe_seeds("ragen/Bandit-v0", {"risky_prob": 1.0}, 16)
    assert len(set(seeds)) == 16
    features = [prompt_features("ragen/Bandit-v0", {"risky_prob": 1.0}, s) for s in seeds]
    assert len({f["safe"] for f in features}) == 16 and len({f["risky"] for f in features}) == 16
    assert not shares_features(features)
    assert probe_seeds("ragen/Bandit-v0", {"risky_prob": 1.0}, 16) == seeds


def test_probe_falls_back_to_distinct_prompts_when_a_feature_runs_out():
    # a 6x6 Sokoban room has too few player cells for 16 pairwise-distinct starts: distinct layouts fill the rest
    seeds = probe_seeds("ragen/Sokoban-v0", {}, 16)
    layouts = {tuple(sorted(prompt_features("ragen/Sokoban-v0", {}, s).items())) for s in seeds}
    assert len(layouts) == 16


def test_probe_refuses_fewer_than_two_prompts():
    with pytest.raises(ValueError, match="at least 2"):
        probe_seeds("ragen/Bandit-v0", {}, 1)


def test_feature_ceiling_is_the_accuracy_of_a_reasoning_that_carries_only_that_feature():
    # columns: two share the bold name "A"; the cautious names are all distinct
    features = [{"bold": "A", "safe": "x"}, {"bold": "A", "safe": "y"}, {"bold": "B", "safe": "z"}]
    own = [0, 0, 1, 2]  # two rows sampled under column 0
    ceilings = feature_ceilings(features, own)
    assert ceilings["bold"] == pytest.approx((0.5 + 0.5 + 0.5 + 1.0) / 4)
    assert ceilings["safe"] == 1.0
    assert shares_features(features) and not shares_features(features[1:])


def test_batch_ceilings_read_the_records_first_turns_with_reasoning():
    env = {"env_id": "ragen/Bandit-v0", "env_kwargs": {"risky_prob": 1.0}}
    seeds = probe_seeds("ragen/Bandit-v0", {"risky_prob": 1.0}, 3)
    records = [{**env, "seed": s, "turns": [{"reasoning": "because"}]} for s in seeds] + [
        {**env, "seed": seeds[0], "turns": [{"reasoning": None}]}
    ]  # no reasoning: not a row
    out = batch_ceilings(records)
    assert out == {"ceiling/risky": 1.0, "ceiling/safe": 1.0, "shared_features": 0.0}
    assert batch_ceilings([{**env, "seed": 0, "turns": [{"reasoning": None}]}]) == {}


def test_harness_run_probe_plays_the_probe_seeds(tmp_path):
    import json

    from harness.cli import main
    from harness.records import read_episodes

    args = ["run", "oracle", "--env", "ragen/Bandit-v0", "--episodes", "8", "--samples", "1", "--probe"]
    assert main([*args, "--out", str(tmp_path), "--run-id", "p", "--quiet", "--no-plots"]) == 0
    config = json.loads((tmp_path / "p" / "config.json").read_text())
    assert config["run"]["envs"][0]["probe"] is True
    played = sorted({e["seed"] for e in read_episodes(tmp_path / "p" / "episodes.jsonl")[0]})
    assert played == sorted(probe_seeds("ragen/Bandit-v0", {}, 8))
