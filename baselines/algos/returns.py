"""Group returns: a batch's per-episode returns as the ``(groups, samples)`` matrix the filter and the group-relative
advantages read. Every trainer forms its groups by its own key (the learner's group index, verl's ``uid``); this
is the one place that lays them out."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def group_returns(
    groups: Sequence[Hashable], returns: Sequence[float], samples: Sequence[int] | None = None
) -> tuple[list, np.ndarray, np.ndarray]:
    """``(keys, rows, matrix)`` for rows whose group is ``groups[i]`` and return ``returns[i]``.

    ``keys`` are the groups in first-seen order; ``rows[g, s]`` is the input row of group ``keys[g]``'s sample
    ``s`` and ``matrix[g, s]`` its return (float64). A sample's column is ``samples[i]`` when given (the learner's
    sample index), else its rank among its group's rows. Every group must have the same number of samples, each
    column filled once: a spread needs whole groups.
    """
    if len(groups) != len(returns) or (samples is not None and len(samples) != len(groups)):
        raise ValueError(f"one group and one return per row: got {len(groups)} groups, {len(returns)} returns")
    members: dict[Hashable, list[int]] = {}
    for index, key in enumerate(groups):
        members.setdefault(key, []).append(index)
    sizes = {len(m) for m in members.values()}
    if len(sizes) > 1:
        raise ValueError(f"groups of unequal size ({sorted(sizes)}): a group's spread needs all its samples")
    keys = list(members)
    width = sizes.pop() if sizes else 0
    rows = np.zeros((len(keys), width), dtype=np.int64)
    for g, key in enumerate(keys):
        if samples is None:
            rows[g] = members[key]
            continue
        columns = [int(samples[i]) for i in members[key]]
        if sorted(columns) != list(range(width)):
            raise ValueError(f"group {key!r} has samples {sorted(columns)}; expected each of 0..{width - 1} once")
        rows[g, columns] = members[key]
    matrix = np.asarray(returns, dtype=np.float64)[rows] if len(keys) else np.zeros((0, width))
    return keys, rows, matrix


def episode_returns(episodes: Sequence) -> tuple[list[int], np.ndarray]:
    """``(groups, matrix)`` of the learner's episodes (``group``, ``sample``, ``episode_return``): the groups in
    ascending order, ``matrix[g, s]`` the return of group ``groups[g]``'s sample ``s``."""
    ordered = sorted(episodes, key=lambda e: (e.group, e.sample))
    keys, _, matrix = group_returns([e.group for e in ordered], [e.episode_return for e in ordered],
                                    [e.sample for e in ordered])  # fmt: skip
    return keys, matrix
