"""The FrozenLake template-collapse pilots: their settings, reading and stopping rule (written before any pilot ran)."""

from __future__ import annotations

import json

from baselines.ppo.experiments import template_pilots as P


def rows(raw_start: float, raw_late: float, *, valid: float = 0.9, success=(0.4, 0.4)) -> list[dict]:
    """24 iterations; the probe measured every 2, ``raw_start`` at 0 and ``raw_late`` from 14 on."""
    out = []
    for i in range(24):
        row = {"iteration": i, "rollout/success": success[0] if i < 14 else success[1]}
        if i % 2 == 0:
            raw = raw_start if i == 0 else raw_late
            row["probe_first_turn/retrieval_accuracy"] = raw
            row["probe_first_turn/valid_rate"] = valid
            row["probe_first_turn/retrieval_accuracy_itt"] = raw * valid
        out.append(row)
    return out


def test_each_pilot_is_a_valid_learner_config_on_frozenlake(tmp_path):
    for run in P.planned():
        config = run.config(tmp_path / run.name)
        assert config.env_id == "ragen/FrozenLake-v0" and config.max_new_tokens == 128
        assert config.entropy_coef == run.coef and config.seed == P.SEED
        assert config.advantage == {"drgrpo": "drgrpo", "ppo": "gae", "grpo": "grpo"}[run.arm]
        assert config.iterations == 24 and config.mi.probe_seeds == 16
    assert [(r.arm, r.coef) for r in P.planned()[:2]] == [("drgrpo", 0.07), ("drgrpo", 0.0)]


def test_the_reading_separates_collapse_from_a_runaway():
    assert P.strict(rows(0.9, 0.3))  # input dependence lost, reasoning and success kept
    assert not P.strict(rows(0.9, 0.3, valid=0.5))  # reasoning lost
    assert P.ran_away(rows(0.9, 0.9, success=(0.4, 0.2))) and not P.ran_away(rows(0.9, 0.3))
    assert not P.strict(rows(0.9, 0.8))


def test_the_search_stops_at_the_first_pilot_showing_the_pattern_in_plan_order():
    plan = P.planned()
    assert P.search({}) == (None, "searching")
    assert P.search({plan[2]: rows(0.9, 0.3), plan[4]: rows(0.9, 0.3)})[0] == plan[2]
    none = {run: rows(0.9, 0.85) for run in plan}
    found, why = P.search(none)
    assert found is None and why == f"STOP: no strict template collapse in {len(plan)} pilots"


def test_status_and_page_from_the_data_files(tmp_path, monkeypatch):
    from baselines.ppo.experiments import template_pilots_report as PR

    monkeypatch.setattr(P, "DATA", tmp_path / "data")
    monkeypatch.setattr(PR, "PAGE", tmp_path / "page.md")
    monkeypatch.setattr(PR, "CURVES_PNG", tmp_path / "curves.png")
    plan = P.planned()
    _, why, done, todo = P.status()
    assert why == "searching" and not done and todo == plan
    for run, data in ((plan[0], rows(0.9, 0.85)), (plan[1], rows(0.9, 0.9, success=(0.4, 0.1)))):
        run.data.parent.mkdir(parents=True, exist_ok=True)
        run.data.write_text(json.dumps({"rows": data, "code_commit": "abc1234", "wall_s_this_process": 300.0}))
    text = PR.page()
    assert "2 of 9 pilots finished" in text and "| Dr.GRPO c=0.07 | neither |" in text
    assert "**Cost**: 2 pilots, 10 min of wall time in all" in text
    assert "| Dr.GRPO c=0 | runaway (success fell) |" in text and "abc1234" in text
    plan[2].data.parent.mkdir(parents=True, exist_ok=True)
    plan[2].data.write_text(json.dumps({"rows": rows(0.9, 0.3)}))
    _, why, done, todo = P.status()
    assert why.startswith("STOP: strict template collapse") and not todo  # the search ends there
    assert "The pattern appeared in PPO c=0.07" in PR.page()
