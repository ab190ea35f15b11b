"""Batched info dicts (gymnasium's vector layout: arrays with ``_key`` masks): built from the
shared columns for some envs (a reset's, a final info), cut, joined and stacked (a rollout's
steps stacked, and ``fastatari.ray``'s actors' rollouts joined)."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

__all__ = ["batched", "concat", "stack", "take"]


def batched(columns: Dict[str, np.ndarray], fields: Sequence[Any], game_done: np.ndarray,
            game: Dict[str, np.ndarray], game_key: str, sel: Any,
            mask: np.ndarray) -> Dict[str, Any]:
    """gymnasium's vector info of the envs ``sel`` (ids or a slice) where ``mask``, zeros
    elsewhere: the ``fields`` (``.name``, ``.shape``) of ``columns`` (live or final) and,
    where a game ended (``game_done``), its statistics (``game``) under ``game_key``."""
    info: Dict[str, Any] = {}
    for field in fields:
        values = columns[field.name][sel]
        # a per-env array (ram) is masked by rows
        rows = mask.reshape(mask.shape + (1,) * len(field.shape)) if field.shape else mask
        info[field.name] = np.where(rows, values, np.zeros((), values.dtype))
        info["_" + field.name] = mask.copy()
    ended = game_done[sel] & mask
    if ended.any():
        stats: Dict[str, np.ndarray] = {}
        for name, column in game.items():
            values = column[sel]
            stats[name] = np.where(ended, values, np.zeros((), values.dtype))
            stats["_" + name] = ended
        info[game_key], info["_" + game_key] = stats, ended
    return info


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
