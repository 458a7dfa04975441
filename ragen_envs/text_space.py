"""The observation space of every env: Gymnasium's ``Text``, readable through ``AsyncVectorEnv``'s shared memory.

Gymnasium writes a ``Text`` observation into shared memory as character indices, but reads the buffer only
once, when the vector env is built, into a tuple of *strings*; strings do not change when the buffer does, so
with the default ``shared_memory=True`` every observation was that first decoding (``max_length`` copies of
the charset's first character) and no error was raised. :class:`ObservationText` decodes on read instead:
the vector env's observations are a live view of the buffer (like its NumPy arrays), and the copy it returns
by default (``copy=True``) is a plain tuple of the current strings. Everything else is Gymnasium's ``Text``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory as _shared


class ObservationText(spaces.Text):
    """``spaces.Text`` whose shared-memory reads decode the buffer when indexed, not once at construction."""


class SharedTexts(Sequence):
    """The ``n`` strings held in a shared buffer of character indices, decoded on every read."""

    def __init__(self, space: spaces.Text, buffer: Any, n: int) -> None:
        self._rows = np.frombuffer(buffer.get_obj(), dtype=np.int32).reshape(n, space.max_length)
        self._end = len(space.character_set)  # the index Gymnasium pads with
        self._codes = np.array([ord(c) for c in space.character_list], dtype=np.uint32)

    def _decode(self, row: np.ndarray) -> str:
        padding = np.flatnonzero(row >= self._end)
        used = row[: padding[0]] if padding.size else row
        return self._codes[used].tobytes().decode("utf-32-le")

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._decode(row) for row in self._rows[index])
        return self._decode(self._rows[index])

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[str]:
        return (self._decode(row) for row in self._rows)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == other if isinstance(other, (tuple, SharedTexts)) else NotImplemented

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)  # what AsyncVectorEnv(copy=True) hands back: the strings as they are now


@_shared.read_from_shared_memory.register(ObservationText)
def _read(space: ObservationText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)
