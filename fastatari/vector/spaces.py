"""The vector env's observation space: a batched ``Box`` that stores its bounds once."""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable

import numpy as np
from gymnasium import spaces

__all__ = ["BatchedBox"]


class _FullOnRead:
    """A bound of :class:`BatchedBox`: the single env's bound broadcast (no memory) until it is
    first read, then a full writable array, as ``batch_space`` gives (libraries turn the
    bounds into tensors, and torch warns about read-only arrays)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "_" + name

    def __get__(self, box: Any, owner: Any = None) -> Any:
        if box is None:
            return self
        value = box.__dict__[self.name]
        if not value.flags.writeable and not box.__dict__.get("_on_views"):
            value = box.__dict__[self.name] = np.array(value)  # still the broadcast view
        return value

    def __set__(self, box: Any, value: Any) -> None:
        box.__dict__[self.name] = value


def _on_views(method: Callable[..., Any]) -> Callable[..., Any]:
    """``spaces.Box``'s own ``method``, reading the broadcast bounds of every BatchedBox it
    is given (equality, ``contains``, ``sample`` and ``repr`` need no full copy)."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        boxes = [box for box in (self, *args) if isinstance(box, BatchedBox)]
        for box in boxes:
            box.__dict__["_on_views"] = True
        try:
            return method(self, *args, **kwargs)
        finally:
            for box in boxes:
                box.__dict__["_on_views"] = False
    return run


class BatchedBox(spaces.Box):
    """``gymnasium.vector.utils.batch_space(single, n)`` without its four ``(n, *shape)``
    arrays (bounds and boundedness: 113 KB per Atari env, 11 GB for 100,000 envs before any
    step): boundedness is a read-only broadcast view of the single env's, and so are ``low``
    and ``high`` until something outside the space reads them (gymnasium's own methods here
    read the views). A ``Box`` in every other respect (equality,
    ``contains``, ``sample``); it pickles as the single space and ``n``."""

    low = _FullOnRead()
    high = _FullOnRead()
    contains = _on_views(spaces.Box.contains)
    sample = _on_views(spaces.Box.sample)
    __eq__ = _on_views(spaces.Box.__eq__)
    __repr__ = _on_views(spaces.Box.__repr__)

    def __init__(self, single: spaces.Box, n: int) -> None:
        super().__init__(single.low, single.high, dtype=single.dtype,
                         seed=copy.deepcopy(single.np_random))
        self._single, self._n = single, n
        self._shape = (n,) + single.shape
        for name in ("_low", "_high", "bounded_below", "bounded_above"):
            setattr(self, name, np.broadcast_to(getattr(self, name), self._shape))

    def __reduce__(self) -> Any:
        return BatchedBox, (self._single, self._n)
