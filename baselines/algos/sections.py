"""The option sections a trainer's config holds (``filter``, ``mi``), and their flat spelling.

A section's field ``f`` is also spelled ``<section>_<f>`` (``filter_value``, ``mi_every``): the learner's flags,
the TRL trainer's keywords and the learner's config.json files written before the sections. :func:`nest` moves
flat keys into their section; :func:`accepts_flat_keys` lets a config class take them as keywords.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from baselines.algos.filter import FilterOptions
from baselines.algos.mi import MIOptions

SECTIONS: dict[str, type] = {"filter": FilterOptions, "mi": MIOptions}
"""Section name → its options class."""


def flat_names() -> dict[str, tuple[str, str]]:
    """Flat key (``filter_value``) → (section, field) for every field of :data:`SECTIONS`."""
    return {f"{name}_{f.name}": (name, f.name) for name, kind in SECTIONS.items() for f in dataclasses.fields(kind)}


def nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with flat section keys (``filter_value``) moved into their section (``filter``); a flat key wins
    over the same field given in the section (a flag over its config file)."""
    flat = flat_names()
    out: dict[str, Any] = {}
    moved: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        if key in flat:
            section, name = flat[key]
            moved.setdefault(section, {})[name] = value
        else:
            out[key] = value
    for section, fields in moved.items():
        given = out.get(section) or {}
        if isinstance(given, SECTIONS[section]):
            given = {f.name: getattr(given, f.name) for f in dataclasses.fields(given)}
        out[section] = {**dict(given), **fields}
    return out


def flatten(values: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`nest` on a config's JSON: sections spread into flat keys (how a change is named)."""
    out = {}
    for key, value in values.items():
        if key in SECTIONS and isinstance(value, Mapping):
            out.update({f"{key}_{name}": item for name, item in value.items()})
        else:
            out[key] = value
    return out


def resolve_sections(config: Any, where: str) -> None:
    """Turn ``config``'s section fields given as mappings (a config file's) into their options class, the
    mapping's keys over the field's own default (so a learner's ``{"every": 3}`` keeps its probe); ``where``
    (``"{}_"``, ``"ragen.{}."``) formats the section name for an error naming a bad key."""
    for f in dataclasses.fields(config):
        if f.name not in SECTIONS:
            continue
        kind, value = SECTIONS[f.name], getattr(config, f.name)
        if isinstance(value, Mapping):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            value = kind.from_mapping({**dataclasses.asdict(default), **value}, where.format(f.name))
        elif not isinstance(value, kind):
            raise ValueError(f"{f.name} must be a {kind.__name__} or a mapping of its fields, got {value!r}")
        object.__setattr__(config, f.name, value)  # also on a frozen config: this is its construction


def accepts_flat_keys(cls: type) -> type:
    """Class decorator for a dataclass with section fields: its constructor also takes their flat keys."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, **values: Any) -> None:
        init(self, **nest(values))

    cls.__init__ = __init__
    return cls
