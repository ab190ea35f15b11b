"""Batched info dicts (gymnasium's vector layout: arrays with ``_key`` masks) cut, joined and
stacked: a rollout's steps stacked, and ``fastatari.ray``'s actors' rollouts joined."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

__all__ = ["concat", "stack", "take"]


def take(info: Dict[str, Any], rows: Any) -> Dict[str, Any]:
    """The rows ``rows`` of a batched info dict (nested dicts too)."""
    return {key: take(value, rows) if isinstance(value, dict) else value[rows]
            for key, value in info.items()}


def _blank(like: np.ndarray, count: int, axis: int = 0) -> np.ndarray:
    """``count`` rows (along ``axis``) of 'no entry' shaped like ``like``: zeros (False for
    masks), None for object arrays."""
    shape = like.shape[:axis] + (count,) + like.shape[axis + 1:]
    if like.dtype == object:
        return np.full(shape, None, object)
    return np.zeros(shape, like.dtype)


def concat(pieces: Sequence[Tuple[Dict[str, Any], int]], axis: int = 0) -> Dict[str, Any]:
    """One batched info dict from ``(info, rows)`` pieces, joined along ``axis`` (the envs'
    axis). A key some pieces lack is 'no entry' for their rows (zeros, its ``_key`` mask
    False), as gymnasium batches infos."""
    keys: Dict[str, None] = {}
    for info, _ in pieces:
        keys.update(dict.fromkeys(info))
    out: Dict[str, Any] = {}
    for key in keys:
        values = [info.get(key) for info, _ in pieces]
        if any(isinstance(value, dict) for value in values):
            out[key] = concat([(value or {}, rows)
                               for value, (_, rows) in zip(values, pieces, strict=True)], axis)
            continue
        like = next(value for value in values if value is not None)
        out[key] = np.concatenate([value if value is not None else _blank(like, rows, axis)
                                   for value, (_, rows) in zip(values, pieces, strict=True)],
                                  axis=axis)
    return out


def stack(infos: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Batched info dicts, one per step, as one dict of ``(T, N)`` entries ('no entry' where a
    step lacks a key): each step one row of a :func:`concat`."""
    return concat([(take(info, np.newaxis), 1) for info in infos])
