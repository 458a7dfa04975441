"""The text-environment contract every ``ragen/*`` env follows.

A :class:`TextEnv` is a real ``gymnasium.Env[str, str]``: observations are state text, actions are the raw
text a model wrote. The base class owns everything the contract promises (response parsing, the action
budget per turn, the format penalty, turn counting, truncation, the info keys, the order of calls); a
subclass only supplies the rules through a few hooks (the private ones are called by the base class only; the
public ones are also what the harness's agents read):

==========================  ===========================================================================
hook                        what it does
==========================  ===========================================================================
``config_cls``              class attribute: the env's arguments, declared once as a frozen config dataclass
                            (:mod:`ragen_envs.arguments`); ``base_defaults`` its defaults for the base ones
``_setup()``                build the env's fixed state from ``self.config`` (called once, by ``__init__``)
``_generate()``             build a new episode's state from ``self.np_random`` (called by ``reset``)
``_observe() -> str``       the state as text
``_instructions() -> str``  the rules, symbols and action grammar (the response-format line is added here)
``_parse_action(text)``     a canonical action for one action string, or ``None`` if it is not an action
``_apply(action)``          play one canonical action and return an :class:`ActionResult`
``oracle() -> (str, str)``  public: the oracle's reasoning and answer in the current state
``candidate_actions()``     public, optional: action strings ``action_space.sample()`` draws from right now
``prompt_features()``       public, optional: the state's named key features (what a reasoning can copy from
                            the prompt); the MI probe keeps prompts whose features are pairwise distinct
``_rejection_message(t)``   optional: the feedback for rejected action strings (default: "Unknown action(s)")
``action_tools``            class attribute: the actions as tools, for ``response_format="tool"``
                            (:mod:`ragen_envs.tools`; default: one tool ``act`` taking the action string)
==========================  ===========================================================================

Info keys after every ``step``: ``success``, ``action_is_valid``, ``action_is_effective``,
``parsed_actions``, ``turn`` (plus whatever ``_step_info()`` adds). ``reset`` returns
``info["instructions"]``, the system prompt, and in the tool format ``info["tools"]``, the tools' schemas.

In the tool format each ``<tool_call>`` of a response is one action: its tool's template turns it into the
action string ``_parse_action`` reads, so an env's rules need nothing per format. A call that is not valid
JSON, names an unknown tool or passes a wrong argument is refused like an unknown action (format penalty,
feedback naming what was wrong, the other calls still played).
"""

from __future__ import annotations

import re
import string
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from ragen_envs.arguments import (
    EnvConfig,
    TurnConfig,
    argument_fields,
    check_choice,
    check_range,
)
from ragen_envs.parsing import (
    SAMPLE_VOCAB,
    format_instructions,
    format_response,
    parse_response,
    random_reasoning,
    split_actions,
)
from ragen_envs.text_space import ObservationText
from ragen_envs.tools import (
    DEFAULT_TOOLS,
    ActionTool,
    read_tool_calls,
    tool_instructions,
    tool_schemas,
    write_tool_calls,
)

# Gymnasium's default Text charset is alphanumeric only: it rejects newlines, punctuation and glyphs such as
# the box-on-target mark. Everything an env emits must be in here; envs may add to it via ``extra_charset``.
TEXT_CHARSET = frozenset(string.printable + "√×÷−–—‘’“”…•·°€£¥≤≥≠≈±²³½¼¾")
MAX_OBSERVATION_CHARS = 1 << 17
"""The longest observation an env may emit (its ``observation_space`` bound)."""
MAX_RESPONSE_CHARS = 1 << 14  # the size of action_space samples, not a limit on what step() accepts

_OUTSIDE_CHARSET: dict[frozenset[str], re.Pattern[str]] = {}


def outside_charset_pattern(charset: frozenset[str]) -> re.Pattern[str]:
    """A compiled pattern matching any character *not* in ``charset`` (cached per charset)."""
    pattern = _OUTSIDE_CHARSET.get(charset)
    if pattern is None:
        pattern = re.compile("[^" + "".join(re.escape(c) for c in sorted(charset)) + "]")
        _OUTSIDE_CHARSET[charset] = pattern
    return pattern


def clean_observation(text: str, outside: re.Pattern[str]) -> str:
    """Replace characters outside the observation charset with ``?`` and cap the length, so an observation
    that echoes model text (an unknown action, a search query, an error trace) stays in the space."""
    if len(text) > MAX_OBSERVATION_CHARS:
        text = text[: MAX_OBSERVATION_CHARS - 15] + "\n[truncated]"
    return outside.sub("?", text)


INFO_KEYS = ("success", "action_is_valid", "action_is_effective", "parsed_actions", "turn")
"""The keys every env's step ``info`` carries."""


@dataclass(frozen=True)
class ActionResult:
    """What one canonical action did to the state."""

    reward: float
    effective: bool
    """True when the state changed (a push into a wall is valid but not effective)."""
    terminated: bool = False
    success: bool = False
    message: str = ""
    """Feedback shown above the next observation (e.g. "Incorrect, try again.")."""


class ResponseSpace(spaces.Text):
    """The action space: any text, whose ``sample()`` is a random *well-formed* response.

    A uniformly random string almost never parses, so sampling it would only ever exercise the format
    penalty. Instead ``sample()`` picks 1..``max_actions`` of the env's current candidate actions (set by
    the env after every reset and step), joins them with the separator and wraps them in the response
    format with a few random reasoning words: a random *valid-format* policy (in the tool format, one call per
    action). With no candidates it falls back to Gymnasium's random text.
    """

    def __init__(
        self,
        *,
        max_length: int,
        charset: frozenset[str],
        response_format: str,
        separator: str | None,
        max_actions: int,
        tools: tuple[ActionTool, ...] = DEFAULT_TOOLS,
    ) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=charset)
        self.response_format = response_format
        self.separator = separator
        self.max_actions = max_actions
        self.tools = tools
        self.candidates: tuple[str, ...] = ()

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Gymnasium's Space.sample: a random well-formed response over the current candidates (Gymnasium's random text
        with a mask, a probability or no candidates)."""
        if mask is not None or probability is not None or not self.candidates:
            return super().sample(mask=mask, probability=probability)
        rng = self.np_random
        count = 1 if self.separator is None else int(rng.integers(1, self.max_actions + 1))
        picks = [self.candidates[int(i)] for i in rng.integers(len(self.candidates), size=count)]
        joiner = f" {self.separator} " if self.separator else ""
        words = random_reasoning(rng, SAMPLE_VOCAB)
        answer = write_tool_calls(picks, self.tools) if self.response_format == "tool" else joiner.join(picks)
        return format_response(" ".join(words), answer, self.response_format)


__all__ = [
    "INFO_KEYS", "MAX_OBSERVATION_CHARS", "MAX_RESPONSE_CHARS", "TEXT_CHARSET", "ActionResult", "EnvConfig",
    "ResponseSpace", "TextEnv", "TurnConfig", "check_choice", "check_range", "clean_observation",
    "outside_charset_pattern",
]  # fmt: skip

_BASE_ARGUMENTS = {field.name: field for field in argument_fields(TurnConfig)}


def _signature_arguments(cls: type) -> frozenset[str] | None:
    """Keyword arguments an env written with its own ``__init__`` accepts (None when it takes ``**kwargs``)."""
    import inspect

    params = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.name != "self" and p.kind is not p.VAR_POSITIONAL)


class TextEnv(gym.Env[str, str]):
    """Base class of every ragen text env; see the module docstring for the hooks a subclass implements.

    An env declares its arguments once, as the fields of its frozen config dataclass (``config_cls``, made with
    :func:`ragen_envs.arguments.argument`), and the defaults it wants for the arguments every env takes
    (:class:`ragen_envs.arguments.TurnConfig`: ``max_turns``, ``max_actions_per_turn``, ``format_penalty``,
    ``response_format``, ``render_mode``) in ``base_defaults``. ``gym.make``'s kwargs then become ``self.config``
    (an instance of ``config_cls``) and the base attributes (``self.max_turns`` …); the class's signature lists
    them all. Such an env writes no ``__init__``: it builds its fixed state from ``self.config`` in
    :meth:`_setup`. An env written with its own ``__init__`` (keyword arguments, forwarding the base ones to this
    one) works too.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    action_separator: str | None = "||"
    """Separator between actions in one answer; ``None`` means the whole answer is one action (and the env takes
    no ``max_actions_per_turn``)."""
    example_answer: str = ""
    extra_charset: str = ""
    argument_aliases: dict[str, str] = {}
    """Names users reach for from other suites (``is_slippery``) → our argument, for the "did you mean"."""
    action_tools: tuple[ActionTool, ...] = DEFAULT_TOOLS
    """The env's actions as tools (``response_format="tool"``): every action string the env's oracle and
    candidates play must fit one tool's template."""
    config_cls: ClassVar[type[EnvConfig]] = EnvConfig
    """The env's own arguments: a frozen dataclass whose fields are declared with ``argument``."""
    base_defaults: ClassVar[dict[str, Any]] = {}
    """The env's defaults for :class:`~ragen_envs.arguments.TurnConfig`'s arguments (``{"max_turns": 5}``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # an env with its own __init__ is described by it, not by a signature inherited from a declaring base
        cls.__signature__ = cls._signature() if cls.declares_arguments() else None

    @classmethod
    def declares_arguments(cls) -> bool:
        """True when the env's arguments are its config's fields (it writes no ``__init__`` of its own)."""
        return cls.__init__ is TextEnv.__init__

    @classmethod
    def arguments(cls) -> dict[str, tuple[Any, Any]]:
        """Every argument the env takes: name → (default, the dataclass field declaring it); the config's own
        first, then the base ones with the env's defaults. Only for an env that :meth:`declares_arguments`."""
        own = {field.name: (field.default, field) for field in argument_fields(cls.config_cls)}
        base = {
            name: (cls.base_defaults.get(name, field.default), field)
            for name, field in _BASE_ARGUMENTS.items()
            if name != "max_actions_per_turn" or cls.action_separator is not None
        }
        return {**own, **base}

    @classmethod
    def _signature(cls):
        import inspect

        params = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=field.type)
            for name, (default, field) in cls.arguments().items()
        ]
        return inspect.Signature(params)

    def __new__(cls, *args: Any, **kwargs: Any):
        # Checked here, once for every env: a misspelled kwarg gets a ValueError naming it, the closest
        # argument and the allowed ones, instead of Python's bare TypeError from __init__.
        """Refuse unknown constructor arguments with a ``ValueError`` naming them, the closest allowed one and the
        allowed ones."""
        allowed = frozenset(cls.arguments()) if cls.declares_arguments() else _signature_arguments(cls)
        unknown = sorted(set(kwargs) - allowed) if allowed is not None else []
        if unknown:
            import difflib  # only on this error path: keeps it out of every make()

            name = unknown[0]
            guess = cls.argument_aliases.get(name) or next(iter(difflib.get_close_matches(name, allowed, n=1)), None)
            hint = f" Did you mean {guess!r}?" if guess else ""
            env_name = cls.__name__.removesuffix("Env")
            raise ValueError(
                f"{env_name} got an unknown argument {name!r}.{hint} Allowed: {', '.join(sorted(allowed))}"
            )
        return super().__new__(cls)

    def __init__(self, **arguments: Any) -> None:
        base = {name: arguments.pop(name) for name in list(arguments) if name in _BASE_ARGUMENTS}
        if self.declares_arguments():
            turns = TurnConfig(**{**type(self).base_defaults, **base})
            config = self.config_cls(**arguments, **self._derived_config(turns))
        elif arguments:  # an env's own __init__ passes only the base arguments on
            raise TypeError(f"TextEnv.__init__() got unexpected arguments {sorted(arguments)}")
        else:
            turns, config = TurnConfig(**base), None
        check_choice("render_mode", turns.render_mode, (None, *self.metadata["render_modes"]))
        self.max_turns = turns.max_turns
        self.max_actions_per_turn = turns.max_actions_per_turn
        self.format_penalty = float(turns.format_penalty)
        self.response_format = turns.response_format
        self.render_mode = turns.render_mode
        if config is not None:
            self.config = config
        self._setup()
        charset = TEXT_CHARSET | frozenset(self.extra_charset)
        self._outside_charset = outside_charset_pattern(charset)
        # a Text that AsyncVectorEnv's default shared memory delivers (see ragen_envs.text_space)
        self.observation_space = ObservationText(max_length=MAX_OBSERVATION_CHARS, min_length=0, charset=charset)
        self.action_space = ResponseSpace(
            max_length=MAX_RESPONSE_CHARS,
            charset=charset,
            response_format=self.response_format,
            separator=self.action_separator,
            max_actions=self.max_actions_per_turn,
            tools=self.action_tools,
        )
        self.turn = 0
        self._done = True
        self._needs_reset = True
        self._last_observation = ""

    # ---- hooks --------------------------------------------------------------------------------------
    def _derived_config(self, turns: TurnConfig) -> dict[str, Any]:
        """Values of the config's ``derived`` fields, from the base arguments (e.g. the action budget
        ``turns.max_turns * turns.max_actions_per_turn``). Default: none."""
        return {}

    def _setup(self) -> None:
        """Build the env's fixed state from ``self.config`` (called once, before the spaces are built, so it may set
        ``extra_charset``). Default: nothing."""

    def _generate(self) -> None:
        raise NotImplementedError

    def _observe(self) -> str:
        raise NotImplementedError

    def _instructions(self) -> str:
        raise NotImplementedError

    def _parse_action(self, text: str) -> Any | None:
        raise NotImplementedError

    def _apply(self, action: Any) -> ActionResult:
        raise NotImplementedError

    def oracle(self) -> tuple[str, str]:
        """The oracle's ``(reasoning, answer)`` in the current state (after ``reset``), the answer in the env's
        action syntax. Played turn after turn it is the env's best play (:meth:`oracle_response` writes it as a
        response); the harness's ``oracle`` agent answers with it. Every env implements it."""
        raise NotImplementedError

    def candidate_actions(self) -> tuple[str, ...]:
        """Action strings that ``action_space.sample()`` draws from in the current state (may be empty); the
        harness's ``random`` agent picks among them. Optional: the default offers none."""
        return ()

    def prompt_features(self) -> dict[str, Hashable]:
        """The current state's key features by name, the slots a reasoning can copy from the prompt (after
        ``reset``). Two prompts that share a feature cannot be told apart by a reasoning that carries only that
        feature, which caps retrieval accuracy (``harness.probe``). Default: the observation text itself, so
        only text-identical prompts collide; an env whose observation has named parts says which."""
        return {"observation": self._observe()}

    def _rejection_message(self, unknown: list[str]) -> str:
        """The feedback line for action strings ``_parse_action`` rejected (an env may say what was wrong)."""
        shown = ", ".join(repr(token[:40]) for token in unknown[:3])
        return f"Unknown action(s) {shown} were ignored."

    def _reset_info(self) -> dict[str, Any]:
        """Extra keys for the info dict returned by ``reset`` (e.g. a level's optimal move count)."""
        return {}

    def _step_info(self) -> dict[str, Any]:
        """Extra keys for the info dict returned by every ``step``."""
        return {}

    # ---- the contract -------------------------------------------------------------------------------
    @property
    def instructions(self) -> str:
        """The system prompt: the env's rules plus how to format a response (in the tool format, the tools)."""
        if self.response_format == "tool":  # a blank line before "# Tools", as Qwen2.5's template writes it
            example = split_actions(self.example_answer, self.action_separator)
            how = "\n" + tool_instructions(self.action_tools, example, several=self.action_separator is not None)
        else:
            how = format_instructions(self.response_format, self.example_answer, self.action_separator)
        return f"{self._instructions().rstrip()}\n{how}"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Gymnasium's reset: start an episode from ``seed``; returns (observation text, info)."""
        super().reset(seed=seed)
        self.turn = 0
        self._done = False
        self._needs_reset = False
        self._generate()
        self._last_observation = clean_observation(self._observe(), self._outside_charset)
        self.action_space.candidates = self.candidate_actions()
        info = {"instructions": self.instructions, "turn": 0, "success": False, **self._reset_info()}
        if self.response_format == "tool":
            info["tools"] = tool_schemas(self.action_tools)
        return self._last_observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Gymnasium's step: play the model's whole response text; returns (observation, reward, terminated, truncated,
        info). Raises :class:`ResetNeeded` before reset or after the episode ended; any text is safe."""
        if self._needs_reset:
            raise ResetNeeded("Cannot call env.step() before calling env.reset()")
        if self._done:
            raise ResetNeeded("Cannot call env.step() after the episode has ended: call env.reset() first")
        self.turn += 1
        parsed = parse_response(action, self.response_format)
        refused: list[str] = []  # why each refused tool call was refused (the tool format only)
        if parsed.ok and self.response_format == "tool":
            limit = self.max_actions_per_turn if self.action_separator is not None else 1
            tokens, errors = read_tool_calls(parsed.answer, self.action_tools, limit)
            actions = [
                None if error else self._parse_action(token) for token, error in zip(tokens, errors, strict=True)
            ]
            unknown = [
                token for token, act, error in zip(tokens, actions, errors, strict=True) if act is None and not error
            ]
            refused = [f"Tool call {i + 1} was refused: {error}." for i, error in enumerate(errors) if error]
        else:
            tokens = split_actions(parsed.answer, self.action_separator, self.max_actions_per_turn) if parsed.ok else []
            actions = [self._parse_action(token) for token in tokens]
            unknown = [token for token, act in zip(tokens, actions, strict=True) if act is None]

        reward, effective, terminated, success, messages = 0.0, False, False, False, []
        if not parsed.ok or not tokens:
            reward = self.format_penalty
            messages.append(f"Your last response was invalid ({parsed.error or 'no action'}); the state is unchanged.")
        else:
            if unknown or refused:
                reward = self.format_penalty
                messages += refused
            if unknown:
                messages.append(self._rejection_message(unknown))
            for act in actions:
                if act is None:
                    continue
                result = self._apply(act)
                reward += result.reward
                effective = effective or result.effective
                if result.message:
                    messages.append(result.message)
                if result.terminated:
                    terminated, success = True, result.success
                    break
        truncated = not terminated and self.turn >= self.max_turns
        self._done = terminated or truncated
        observation = self._observe()
        if messages:
            observation = "\n".join(messages) + "\n" + observation
        observation = clean_observation(observation, self._outside_charset)
        self._last_observation = observation
        self.action_space.candidates = self.candidate_actions()
        info = {
            "success": success,
            "action_is_valid": parsed.ok and bool(tokens) and not unknown and not refused,
            "action_is_effective": effective,
            "parsed_actions": tokens if parsed.ok else [],
            "turn": self.turn,
            **self._step_info(),
        }
        return observation, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        """Gymnasium's render: the last observation text in ``"ansi"`` mode, else None."""
        if self.render_mode == "ansi":
            return self._last_observation
        return None

    def oracle_response(self) -> str:
        """The full response the env's oracle would give now; fed turn after turn, it solves the episode."""
        if self._needs_reset:
            raise ResetNeeded("Cannot ask for the oracle's response before calling env.reset()")
        thinking, answer = self.oracle()
        return self.write_response(thinking, answer)

    def write_response(self, thinking: str, answer: str, *, reasoning_before_answer: bool = False) -> str:
        """A response in this env's format with reasoning ``thinking`` and ``answer`` in the env's action syntax
        (:func:`ragen_envs.parsing.format_response`; in the tool format each action becomes a tool call)."""
        if self.response_format == "tool":
            calls = write_tool_calls(split_actions(answer, self.action_separator), self.action_tools)
            return format_response(thinking, calls, "tool")
        return format_response(thinking, answer, self.response_format, reasoning_before_answer=reasoning_before_answer)
