"""A KV cache layer that grows in place while a batch decodes.

transformers' `DynamicLayer` appends each step's keys and values with `torch.cat`, so every decode step
copies the whole cache of every layer into a freshly allocated tensor: for 32 rows of 600-token prompts
on SmolLM2-135M that is ~1.5 GB of copying (and page faults) per step, which made a decode step 7x slower
than the model's own compute on a 2-core CPU. `GrowingLayer` keeps its keys and values in buffers with
room at the end, writes each step's into that room and hands attention a view of the filled part; it
reallocates (with half again as much room) only when the room runs out, or after its tensors were
replaced from outside (a row left the batch, rows joined it), since a tensor it did not allocate may be
shared and must never be written into.

The values attention sees are the same numbers in the same order as `DynamicLayer`'s; only where they
live differs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["growing_cache"]

_ROOM = 64
"""Least room, in tokens, a (re)allocated buffer keeps at its end."""


def _layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):  # type: ignore[misc, valid-type]
        """`DynamicLayer` with in-place appends (see the module docstring)."""

        def __init__(self) -> None:
            # keys and values each: the buffer, how much of it is filled, and whether it was allocated
            # here (with room past the filled part) rather than assigned from outside.
            self._k: Any = None
            self._v: Any = None
            self._k_filled = self._v_filled = 0
            self._k_owned = self._v_owned = False
            super().__init__()

        # `keys` / `values` stay plain attributes to transformers and to our batch surgery: reading
        # gives the filled part, assigning replaces the buffer (which then is not ours to write into).
        @property
        def keys(self) -> Any:
            return self._k[:, :, : self._k_filled] if self._k_owned else self._k

        @keys.setter
        def keys(self, tensor: Any) -> None:
            self._k, self._k_owned, self._k_filled = tensor, False, _length(tensor)

        @property
        def values(self) -> Any:
            return self._v[:, :, : self._v_filled] if self._v_owned else self._v

        @values.setter
        def values(self, tensor: Any) -> None:
            self._v, self._v_owned, self._v_filled = tensor, False, _length(tensor)

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            filled, new = self._k_filled, key_states.shape[-2]
            if (
                not (self._k_owned and self._v_owned)
                or filled + new > self._k.shape[-2]
                or self._k.shape[0] != key_states.shape[0]
            ):
                self._reallocate(key_states, value_states, filled + new + max(_ROOM, (filled + new) // 2))
            self._k[:, :, filled : filled + new] = key_states
            self._v[:, :, filled : filled + new] = value_states
            self._k_filled = self._v_filled = filled + new
            return self.keys, self.values

        def _reallocate(self, key_states: Any, value_states: Any, capacity: int) -> None:
            rows, heads = key_states.shape[0], key_states.shape[1]
            keys = key_states.new_empty((rows, heads, capacity, key_states.shape[-1]))
            values = value_states.new_empty((rows, heads, capacity, value_states.shape[-1]))
            filled = self._k_filled
            if filled:
                keys[:, :, :filled] = self.keys
                values[:, :, :filled] = self.values
            self._k, self._v = keys, values
            self._k_owned = self._v_owned = True

    return GrowingLayer


def _length(tensor: Any) -> int:
    return int(tensor.shape[-2]) if tensor is not None and tensor.dim() == 4 else 0


_GROWING: type | None = None


def growing_cache(cache: Any) -> Any:
    """`cache` (a fresh `DynamicCache` whose layers are all plain `DynamicLayer`) with every layer
    replaced by a `GrowingLayer`; returned for chaining."""
    global _GROWING
    if _GROWING is None:
        _GROWING = _layer_class()
    cache.layers = [_GROWING() for _ in cache.layers]
    return cache
