"""An env's arguments are declared once, by its config's fields: the signature, the unknown-argument check, the
range checks and the docs' Arguments table all read that declaration."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass

import gymnasium as gym
import pytest
from gymnasium.envs.registration import registry

import ragen_envs
from ragen_envs.arguments import EnvConfig, argument, argument_fields
from ragen_envs.core import ActionResult, TextEnv
from scripts import gen_env_docs


def _classes() -> list[type]:
    found = []
    for env_id in ragen_envs.registered_ids():
        if env_id.startswith("ragen/"):
            module, name = registry[env_id].entry_point.split(":")
            cls = getattr(importlib.import_module(module), name)
            if cls not in found:
                found.append(cls)
    return found


CLASSES = _classes()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_the_signature_is_the_declared_arguments_with_the_envs_defaults(cls):
    assert cls.declares_arguments()
    params = inspect.signature(cls).parameters
    assert list(params) == list(cls.arguments())
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values())
    own = [field.name for field in argument_fields(cls.config_cls)]
    assert list(params)[: len(own)] == own
    base_names = {"max_turns", "max_actions_per_turn", "format_penalty", "response_format", "render_mode"}
    assert set(params) - set(own) == base_names - ({"max_actions_per_turn"} if cls.action_separator is None else set())


@pytest.mark.parametrize("cls", [c for c in CLASSES if c.__name__ not in ("CodeExecEnv",)], ids=lambda c: c.__name__)
def test_a_default_env_holds_the_declared_defaults(cls):
    env = cls()
    for name, (default, field) in cls.arguments().items():
        if name in {"max_turns", "max_actions_per_turn", "format_penalty", "response_format", "render_mode"}:
            assert getattr(env, name) == default, name
        elif field.metadata.get("number") and default is not None:
            assert getattr(env.config, name) == default, name
    env.close()


def _out_of_range() -> list[tuple[type, str, object]]:
    """(class, argument, a value just outside its declared numeric range) for every bounded argument."""
    cases = []
    for cls in CLASSES:
        for name, (_, field) in cls.arguments().items():
            low, high = field.metadata.get("low"), field.metadata.get("high")
            if isinstance(low, (int, float)):
                cases.append((cls, name, low - 1 if field.metadata["integer"] else low - 0.5))
            if isinstance(high, (int, float)):
                cases.append((cls, name, high + 1))
    return cases


@pytest.mark.parametrize(("cls", "name", "value"), _out_of_range(), ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_declared_range_is_checked_with_the_field_and_the_range_named(cls, name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be in \["):
        cls(**{name: value})


def test_a_misspelled_argument_of_the_config_gets_did_you_mean():
    with pytest.raises(ValueError, match=r"unknown argument 'frozen_pro'\. Did you mean 'frozen_prob'\?"):
        gym.make("ragen/FrozenLake-v0", frozen_pro=0.5)


def test_a_derived_field_is_not_an_argument():
    # the path budget follows from max_turns × max_actions_per_turn; it cannot be set on its own
    with pytest.raises(ValueError, match="unknown argument 'max_path_length'"):
        gym.make("ragen/FrozenLake-v0", max_path_length=3)
    assert gym.make("ragen/FrozenLake-v0", max_turns=4, max_actions_per_turn=3).unwrapped.config.max_path_length == 12


def test_single_action_envs_do_not_take_max_actions_per_turn():
    with pytest.raises(ValueError, match="unknown argument 'max_actions_per_turn'"):
        gym.make("ragen/Bandit-v0", max_actions_per_turn=2)


def test_json_lists_become_tuples_in_the_config():
    # --env-kwargs is JSON, which has no tuples; the frozen config stays hashable
    env = gym.make("ragen/MathWord-v0", families=["wages", "ages"]).unwrapped
    assert env.config.families == ("wages", "ages") and hash(env.config)


@dataclass(frozen=True)
class _CoinConfig(EnvConfig):
    sides: int = argument(2, "Faces of the coin.", low=2, high=6, integer=True)
    label: str = argument("coin", "What the prompt calls it.", choices=("coin", "die"))


class _CoinEnv(TextEnv):
    """Guess the face (a test env declared the way every env is)."""

    action_separator = None
    config_cls = _CoinConfig
    base_defaults = {"max_turns": 3}

    def _setup(self) -> None:
        self.face = 0

    def _generate(self) -> None:
        self.face = int(self.np_random.integers(self.config.sides))

    def _observe(self) -> str:
        return f"A {self.config.label} with {self.config.sides} faces. Which face?"

    def _instructions(self) -> str:
        return "Answer with a face number."

    def _parse_action(self, text: str) -> int | None:
        return int(text) if text.strip().isdigit() else None

    def _apply(self, action: int) -> ActionResult:
        return ActionResult(reward=float(action == self.face), effective=True, terminated=True)

    def oracle(self) -> tuple[str, str]:
        return "I know it.", str(self.face)


def test_a_new_env_declares_its_arguments_in_its_config_only():
    env = _CoinEnv(sides=4, format_penalty=-0.5)
    assert env.config == _CoinConfig(sides=4) and env.max_turns == 3 and env.format_penalty == -0.5
    assert str(inspect.signature(_CoinEnv)).startswith("(*, sides: 'int' = 2, label: 'str' = 'coin', max_turns")
    with pytest.raises(ValueError, match=r"label must be one of \('coin', 'die'\), got 'dice'"):
        _CoinEnv(label="dice")
    with pytest.raises(ValueError, match="Did you mean 'sides'"):
        _CoinEnv(side=3)
    table = gen_env_docs.render_arguments(_CoinEnv)
    assert "| `sides` | `2` | integer in [2, 6] | Faces of the coin. |" in table
    assert "| `max_turns` | `3` |" in table and "max_actions_per_turn" not in table


class _OwnInitEnv(_CoinEnv):
    """An env written with its own ``__init__`` (the style before configs declared arguments) still works."""

    def __init__(self, *, sides: int = 2, max_turns: int = 2, render_mode: str | None = None) -> None:
        self.sides_wanted = sides
        super().__init__(max_turns=max_turns, render_mode=render_mode)
        self.config = _CoinConfig(sides=sides)


def test_an_env_with_its_own_init_keeps_its_signature_and_checks():
    assert not _OwnInitEnv.declares_arguments()
    assert list(inspect.signature(_OwnInitEnv).parameters) == ["sides", "max_turns", "render_mode"]
    env = _OwnInitEnv(sides=5)
    assert env.config.sides == 5 and env.max_turns == 2 and env.format_penalty == -0.1
    env.reset(seed=0)
    assert env.step(env.oracle_response())[1] == 1.0
    with pytest.raises(ValueError, match="Did you mean 'sides'"):
        _OwnInitEnv(side=3)
    with pytest.raises(ValueError, match=r"max_turns must be in \[1, inf\]"):
        _OwnInitEnv(max_turns=0)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_the_docs_table_lists_every_argument_once(cls):
    table = gen_env_docs.render_arguments(cls)
    for name, (_, field) in cls.arguments().items():
        assert table.count(f"| `{name}` |") == 1
        assert field.metadata["doc"], f"{cls.__name__}.{name} has no docstring"
    for field in dataclasses.fields(cls.config_cls):
        if field.metadata.get("derived"):
            assert f"| `{field.name}` |" not in table
