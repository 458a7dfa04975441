"""The KV cache under generation and scoring (torch and transformers, imported lazily).

Generation appends one token at a time to every layer's keys/values. transformers' ``DynamicLayer`` does that by
concatenation, copying the whole cache at every new token (quadratic in a long multi-turn history), so
:func:`growing_cache` builds a ``DynamicCache`` whose layers append in place into buffers with spare room. That
subclass overrides ``DynamicLayer.update`` and ``crop`` and relies on its internals (``is_initialized``,
``lazy_initialization(keys, values)``, ``keys``/``values``, ``get_seq_length``), which transformers changes
between minor releases; so the ``llm`` extra bounds transformers by the versions the test lanes run this module
under (``tests/harness/test_harness_hf.py``: generation into growing buffers equals the stock cache). Moving the bound
means running those tests on the new version. A model whose cache is not all plain ``DynamicLayer`` (sliding
windows, other cache classes) gets the model's own cache instead.

Shapes are noted as ``(B, T)`` (batch, time); a layer's keys and values are ``(B, heads, T, head_dim)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CachedPrefix:
    """Token ids and the keys/values of all of them, per layer ``(heads, len(ids), head_dim)``: what a row of
    :func:`generate_ids` leaves for a later prompt that extends it (the next turn of its episode)."""

    ids: tuple[int, ...]
    layers: tuple[tuple[object, object], ...]

    def reusable(self, prompt: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` these keys/values cover (its common prefix with ``ids``),
        leaving at least the prompt's last token to run (its logits start the sampling)."""
        limit = min(len(self.ids), len(prompt) - 1)
        n = 0
        while n < limit and self.ids[n] == prompt[n]:
            n += 1
        return n


def cache_keyword(model) -> str:
    """The forward() keyword of the KV cache: ``cache`` in transformers 5, ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def cache_of(output):
    """The KV cache a forward returned (``cache`` in transformers 5, ``past_key_values`` before)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


@functools.cache
def _growing_layer_class():
    """``DynamicLayer`` that appends in place. The stock layer concatenates, copying the whole cache at every
    new token (quadratic in a long multi-turn history); this one writes into a buffer with spare room and
    exposes a view. When full it reallocates with room for as many positions again as it holds (at least 64),
    but never more than ``reserve`` (the most positions still to come: the token budget), so a huge budget with
    rows that stop early costs no memory and the copies stay amortised O(1) per token. Rows leaving the batch
    (an increasing selection, as generation makes when rows stop) are compacted inside the same buffer: the
    kept rows move up, nothing is allocated, and the next append writes in place again (a multi-turn rollout of
    64 rows has dozens of such events per turn; each used to cost a gathered copy, a fresh buffer and a second
    copy into it). Any other selection (repeats, reordering) and ``crop`` make the keys a compact copy or a
    shorter view, which the next append moves into a new buffer, so a view handed out earlier is never written
    over."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def __init__(self, reserve: int) -> None:
            super().__init__()
            self.reserve = reserve
            self._buffers = None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            length, new = self.get_seq_length(), key_states.shape[-2]
            rows = key_states.shape[0]
            buffers = self._buffers
            if (
                buffers is None
                or self.keys.data_ptr() != buffers[0].data_ptr()  # replaced (batch selection): not our view
                or buffers[0].shape[0] < rows
                or length + new > buffers[0].shape[-2]
            ):
                capacity = length + new + min(self.reserve, max(length + new, 64))
                buffers = tuple(s.new_empty((*s.shape[:-2], capacity, s.shape[-1])) for s in (key_states, value_states))
                if length:
                    buffers[0][..., :length, :] = self.keys
                    buffers[1][..., :length, :] = self.values
                self._buffers = buffers
            buffers[0][:rows, :, length : length + new, :] = key_states
            buffers[1][:rows, :, length : length + new, :] = value_states
            self.keys = buffers[0][:rows, :, : length + new, :]
            self.values = buffers[1][:rows, :, : length + new, :]
            return self.keys, self.values

        def batch_select_indices(self, indices) -> None:
            kept = indices.tolist()
            buffers = self._buffers
            own = buffers is not None and self.is_initialized and self.keys.data_ptr() == buffers[0].data_ptr()
            if not own or kept != sorted(set(kept)) or (kept and kept[0] < 0):
                super().batch_select_indices(indices)  # a gathered copy; the next append reallocates
                return
            length = self.get_seq_length()
            for target, source in enumerate(kept):  # increasing: a row only moves up, over rows already moved
                if target != source:
                    buffers[0][target, :, :length] = buffers[0][source, :, :length]
                    buffers[1][target, :, :length] = buffers[1][source, :, :length]
            self.keys = buffers[0][: len(kept), :, :length]
            self.values = buffers[1][: len(kept), :, :length]

        def crop(self, *args, **kwargs):
            super().crop(*args, **kwargs)
            self._buffers = None  # the shorter keys are a view of the buffer: appending in place would overwrite

        def __copy__(self):
            clone = object.__new__(type(self))
            clone.__dict__.update(self.__dict__)
            clone._buffers = None  # a copy (select_cache) must not compact or append inside this layer's buffer
            return clone

    return GrowingLayer


def growing_cache(model, reserve: int):
    """A ``DynamicCache`` of :func:`_growing_layer_class` layers, or None when the model's cache is not all plain
    ``DynamicLayer`` (sliding windows, other cache classes, transformers < 4.56): then the model builds its own."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer
    except ImportError:
        return None
    config = getattr(model, "config", None)
    try:
        cache = DynamicCache(config=config)
    except Exception:  # a config this transformers cannot map to layer types: let the model decide
        return None
    plain = getattr(cache, "layers", None)
    if not plain or any(type(layer) is not DynamicLayer for layer in plain):
        return None
    cache.layers = [_growing_layer_class()(reserve) for _ in plain]
    return cache


def plain_layers(cache) -> list | None:
    """The cache's layers when every one is a plain (full-attention, growing) ``DynamicLayer``, else None."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return None
    from transformers.cache_utils import DynamicLayer

    growing = _growing_layer_class()
    return list(layers) if all(type(layer) in (DynamicLayer, growing) for layer in layers) else None


def row_prefix(cache, b: int, row_mask, ids: tuple[int, ...]) -> CachedPrefix:
    """Batch row ``b``'s keys/values at its real (unpadded) positions, copied out of the batch tensors."""
    real = row_mask.bool()
    layers = tuple((layer.keys[b][:, real], layer.values[b][:, real]) for layer in cache.layers)
    if layers[0][0].shape[1] != len(ids):
        raise RuntimeError(f"cache row {b} holds {layers[0][0].shape[1]} positions for {len(ids)} fed tokens")
    return CachedPrefix(ids, layers)


def select_cache(cache, index):
    """A cache holding rows ``index`` (repeats allowed) of ``cache``, which stays reusable."""
    import copy

    layers = getattr(cache, "layers", None)
    if layers is not None:  # transformers >= 4.56: rows are gathered, the other rows' tensors are not copied
        clone = copy.copy(cache)
        clone.layers = [copy.copy(layer) for layer in layers]
    else:
        clone = copy.deepcopy(cache)
    clone.batch_select_indices(index)
    return clone
