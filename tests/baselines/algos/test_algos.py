"""The shared options and pieces (``baselines.algos``): one declaration, the mode table, group returns, and the
learner's config loading both its nested and its flat (older) form."""

import json

import numpy as np
import pytest

from baselines.algos import FILTER_MODES, FilterOptions, MIOptions, choose_groups, group_returns, register_mode
from baselines.algos.filter import random_groups, select_groups
from baselines.algos.sections import flatten, nest
from baselines.ppo.config import PPOConfig
from tests.helpers.paths import ROOT

OLD_RECORDS = [
    ROOT / "docs/results/data/miniature/stage0/no_filter_c0.04/seed0.json",
    next(iter(sorted((ROOT / "docs/results/data/runaway").rglob("*.json")))),
]


def test_the_modes_are_a_table_a_new_mode_plugs_into():
    assert list(FILTER_MODES) == ["top_p", "top_k", "top_k_abs", "min_p"]
    returns = np.array([[0.0, 1.0], [0.0, 4.0], [0.0, 2.0]])
    try:
        register_mode("top_1")(lambda ranked, options, num_groups: 1)
        assert select_groups(returns, FilterOptions(mode="top_1")).tolist() == [1]
        with pytest.raises(ValueError, match="already registered"):
            register_mode("top_1")(lambda ranked, options, num_groups: 1)
    finally:
        FILTER_MODES.pop("top_1", None)
    with pytest.raises(ValueError, match=r"filter_mode must be one of \('top_p', 'top_k', 'top_k_abs', 'min_p'\)"):
        FilterOptions(mode="top_1")


def test_random_selection_keeps_the_rules_count_drawn_by_the_generator():
    returns = np.array([[0.0, 1.0], [0.0, 4.0], [0.0, 2.0], [1.0, 1.0], [0.0, 3.0]])
    options = FilterOptions(value=0.5, selection="random")
    by_spread = select_groups(returns, options)
    drawn = choose_groups(returns, options, np.random.default_rng(7))
    assert len(drawn) == len(by_spread) == 2
    assert drawn.tolist() == random_groups(5, 2, np.random.default_rng(7)).tolist()
    assert choose_groups(returns, FilterOptions(value=0.5), np.random.default_rng(7)).tolist() == by_spread.tolist()


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: FilterOptions(selection="rand"), "filter_selection"),
        (lambda: FilterOptions(value=float("inf")), "filter_value"),
        (lambda: FilterOptions.from_mapping({"valu": 1.0}), "filter_valu. Did you mean filter_value"),
        (lambda: MIOptions(columns=1), "mi_columns"),
        (lambda: MIOptions(schemes="first_turn,last"), "mi_schemes"),
        (lambda: MIOptions(probe_seeds=1), "mi_probe_seeds"),
    ],
)
def test_option_errors_name_the_flag(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_group_returns_lay_out_groups_in_first_seen_order():
    keys, rows, matrix = group_returns(["b", "a", "b", "a"], [1.0, 2.0, 3.0, 4.0])
    assert keys == ["b", "a"] and rows.tolist() == [[0, 2], [1, 3]] and matrix.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    keys, _, matrix = group_returns([5, 5, 2, 2], [1.0, 2.0, 3.0, 4.0], samples=[1, 0, 0, 1])
    assert keys == [5, 2] and matrix.tolist() == [[2.0, 1.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="unequal size"):
        group_returns([0, 0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="expected each of 0..1 once"):
        group_returns([0, 0], [1.0, 2.0], samples=[0, 0])


def test_flat_keys_nest_into_their_section_and_win_over_it():
    values = nest({"filter": {"value": 0.5, "mode": "top_k"}, "filter_value": 0.7, "mi_every": 2, "seed": 1})
    assert values == {"filter": {"value": 0.7, "mode": "top_k"}, "mi": {"every": 2}, "seed": 1}
    assert flatten({"filter": {"value": 0.7}, "seed": 1}) == {"filter_value": 0.7, "seed": 1}


@pytest.mark.parametrize("record", OLD_RECORDS, ids=lambda p: p.parent.parent.parent.name)
def test_a_run_recorded_with_flat_keys_loads_as_the_same_config(record):
    old = json.loads(record.read_text())["config"]
    assert "filter_value" in old and "filter" not in old  # the format before the sections
    config = PPOConfig.from_dict(old)
    assert config.filter.value == old["filter_value"] and config.filter.include_zero == old["filter_include_zero"]
    assert config.mi.every == old["mi_every"] and list(config.mi.schemes) == old["mi_schemes"]
    again = json.loads(config.to_json())
    assert again["filter"]["value"] == old["filter_value"] and "filter_value" not in again
    assert PPOConfig.from_dict(again) == config
    recorded = flatten(again)
    assert {k: v for k, v in recorded.items() if k in old} == old  # nothing recorded before reads differently


def test_resuming_a_run_recorded_with_flat_keys(tmp_path):
    from baselines.ppo.cli import check_out_dir

    config = PPOConfig(model="baselines/tiny/model", out_dir=str(tmp_path), filter_value=0.5, mi_columns=4)
    flat = flatten(json.loads(config.to_json()))
    flat.pop("mi_columns")  # an older run: no column sampling yet, its default
    (tmp_path / "config.json").write_text(json.dumps({**flat, "mi_columns": None}))
    with pytest.raises(ValueError, match=r"changed: mi_columns None -> 4"):
        check_out_dir(config)
    (tmp_path / "config.json").write_text(json.dumps({**flat, "mi_columns": 4}))
    check_out_dir(config)  # the same run, spelt flat


def test_every_section_field_is_a_flag():
    import argparse

    from baselines.ppo.cli import add_train_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    args = parser.parse_args(["cpu-tiny", "--model", "baselines/tiny/model", "--filter-selection", "random",
                              "--mi-columns", "3", "--mi-schemes", "first_turn", "--no-filter-include-zero"])  # fmt: skip
    config = config_from_args(args)
    assert config.filter == FilterOptions(selection="random")
    assert config.mi == MIOptions(every=3, samples=32, columns=3, schemes=("first_turn",), probe_seeds=16)
    assert "--filter-selection" in parser.format_help() and "one of ('spread', 'random')" in parser.format_help()
