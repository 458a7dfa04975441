"""An env's arguments, declared once: the fields of its frozen config dataclass (reasoning-gym's rule).

Each field that is an argument is declared with :func:`argument`: its default, its docstring and its allowed
values live in the field (``dataclasses.field`` metadata), and :class:`EnvConfig.__post_init__` checks every field
against them, raising ``ValueError`` naming the field and the allowed range. Everything else reads the same
declaration: :class:`ragen_envs.core.TextEnv` builds ``self.config`` from ``gym.make``'s kwargs, refuses an unknown
argument with "did you mean" and gives the env class its signature (``help()``, IDEs); ``scripts/gen_env_docs.py``
writes each env page's Arguments table.

A field the env computes from other arguments (FrozenLake's path budget from ``max_turns ×
max_actions_per_turn``) is declared with :func:`derived`: it is in the config, not an argument. The arguments
every env takes (``max_turns``, ``format_penalty``, …) are :class:`TurnConfig`'s, declared once here; an env
changes only their defaults (``TextEnv.base_defaults``).

Example::

    @dataclass(frozen=True)
    class GuessConfig(EnvConfig):
        high: int = argument(20, "The largest number the env may think of.", low=2, integer=True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ragen_envs.parsing import RESPONSE_FORMATS

__all__ = [
    "EnvConfig",
    "TurnConfig",
    "argument",
    "argument_fields",
    "check_choice",
    "check_range",
    "derived",
    "is_argument",
]


def check_range(
    name: str, value: Any, low: float | None = None, high: float | None = None, *, integer: bool = False
) -> None:
    """Raise ``ValueError`` naming ``name`` and the allowed range when ``value`` falls outside it."""
    kind = "an integer" if integer else "a number"
    if integer and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if not integer and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        raise ValueError(f"{name} must be in {bounds}, got {value!r}")


def check_choice(name: str, value: Any, allowed: tuple) -> None:
    """Raise ``ValueError`` naming ``name`` and the allowed values when ``value`` is not one of them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def argument(
    default: Any,
    doc: str,
    *,
    low: float | str | None = None,
    high: float | str | None = None,
    integer: bool = False,
    number: bool = False,
    choices: tuple | None = None,
    allowed: str = "",
    shown_default: str = "",
    compare: bool = True,
) -> Any:
    """A config field that is an env argument.

    ``low``/``high`` bound a number (either may name an earlier field, whose value is the bound); ``integer`` or
    ``number`` alone checks the type; ``choices`` lists the allowed values; ``allowed`` describes, for the docs,
    values that ``__post_init__`` checks itself, and ``shown_default`` a default too long to print there. A ``None`` default means ``None`` is allowed as well. ``compare``
    is False for fields that hold objects (arrays, callables) configs should not be compared by.
    """
    metadata = {
        "doc": " ".join(doc.split()),
        "low": low,
        "high": high,
        "integer": integer,
        "number": number or integer or low is not None or high is not None,
        "choices": choices,
        "allowed": allowed,
        "shown_default": shown_default,
    }
    return dataclasses.field(default=default, compare=compare, metadata=metadata)


def derived(default: Any, doc: str) -> Any:
    """A config field the env computes from its arguments (not an argument itself); checked by the config's own
    ``__post_init__``."""
    return dataclasses.field(default=default, metadata={"doc": " ".join(doc.split()), "derived": True})


def is_argument(field: dataclasses.Field) -> bool:
    """True for a field declared with :func:`argument`, i.e. one ``gym.make`` accepts."""
    return "doc" in field.metadata and not field.metadata.get("derived")


def argument_fields(config_cls: type) -> Iterator[dataclasses.Field]:
    """The argument fields of a config class, in declaration order."""
    return (field for field in dataclasses.fields(config_cls) if is_argument(field))


def _bound(config: Any, bound: float | str | None) -> float | None:
    return getattr(config, bound) if isinstance(bound, str) else bound


def check_field(config: Any, field: dataclasses.Field) -> None:
    """Check one argument field's value against its declaration (``ValueError`` naming it and what is allowed)."""
    meta, value = field.metadata, getattr(config, field.name)
    if value is None and field.default is None:
        return
    if meta["choices"] is not None:
        check_choice(field.name, value, meta["choices"])
    if meta["number"]:
        check_range(
            field.name, value, _bound(config, meta["low"]), _bound(config, meta["high"]), integer=meta["integer"]
        )


def allowed_text(field: dataclasses.Field) -> str:
    """What a field accepts, in words for the docs (``integer in [2, 16]``, ``one of "bm25", "dense"``)."""
    meta = field.metadata
    parts = []
    if meta.get("choices") is not None:
        parts.append("one of " + ", ".join(f"``{choice!r}``" for choice in meta["choices"]))
    elif meta.get("number"):
        kind = "integer" if meta["integer"] else "number"
        low, high = (f"``{b}``" if isinstance(b, str) else b for b in (meta["low"], meta["high"]))
        if low is not None and high is not None:
            parts.append(f"{kind} in [{low}, {high}]")
        else:
            parts.append(kind + (f" ≥ {low}" if low is not None else f" ≤ {high}" if high is not None else ""))
    if meta.get("allowed"):
        parts.append(meta["allowed"])
    if field.default is None and meta.get("number") and meta.get("choices") is None:
        parts.append("or ``None``")
    return ", ".join(parts)


@dataclass(frozen=True)
class EnvConfig:
    """Base of every env config: ``__post_init__`` checks each argument field against its declaration. A config
    with checks across fields extends ``__post_init__`` (calling this one first)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if is_argument(field):
                check_field(self, field)


@dataclass(frozen=True)
class TurnConfig(EnvConfig):
    """The arguments every env takes; :class:`ragen_envs.core.TextEnv` owns what they control."""

    max_turns: int = argument(1, "Turns before the episode is truncated.", low=1, integer=True)
    max_actions_per_turn: int = argument(
        1,
        "How many ``||``-separated actions of one response are played (extra ones are dropped); only envs whose "
        "response may hold several actions take it.",
        low=1,
        integer=True,
    )
    format_penalty: float = argument(
        -0.1, "Reward added for a turn whose response does not parse or names an unknown action.", number=True
    )
    response_format: str = argument(
        "think",
        "How a response is written: ``think`` is ``<think>…</think><answer>…</answer>``; ``tool`` is reasoning, then "
        "one ``<tool_call>`` per action (the env contract describes each).",
        choices=RESPONSE_FORMATS,
    )
    render_mode: str | None = argument(
        None, "``ansi``: ``render()`` returns the last observation text.", allowed='``None`` or ``"ansi"``'
    )
