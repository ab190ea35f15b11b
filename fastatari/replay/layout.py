"""What a replay memory takes: how a stack of frames lies in an observation (which axis, how
many frames), and the checks of the stacks and per-env rows added; and how a torch front
hands a sample's arrays out (:func:`to_tensors`)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np


def stack_layout(obs_shape: Sequence[int], frame_stack: Optional[int] = None,
                 stack_axis: Optional[int] = None) -> Tuple[int, int]:
    """``(frame_stack, stack_axis)`` for stacks of shape ``obs_shape``.

    Defaults: the stack lies along the first axis when it is no longer than the last (channels
    first, ``(4, 84, 84)``: fastatari, gymnasium's ``FrameStackObservation``, SB3 after
    ``VecTransposeImage``), else along the last (``(84, 84, 4)``: SB3's ``VecFrameStack``);
    one channel per frame. Pass ``frame_stack`` for colour stacks (``(84, 84, 12)`` is 4 RGB
    frames) and ``stack_axis=0`` for gymnasium's colour stacks ``(4, 210, 160, 3)``. A wrong
    guess costs memory, never exactness: every stored frame is checked byte for byte.
    """
    shape = tuple(int(d) for d in obs_shape)
    if len(shape) < 2:
        raise ValueError(f"fastatari.replay stores image stacks; the shape {shape} is not one")
    if stack_axis is None:
        stack_axis = 0 if shape[0] <= shape[-1] else len(shape) - 1
    if not -len(shape) <= stack_axis < len(shape):
        raise ValueError(f"stack_axis {stack_axis} is not an axis of the shape {shape}")
    length = shape[stack_axis]
    if frame_stack is None:
        frame_stack = length
    if not isinstance(frame_stack, int) or isinstance(frame_stack, bool) or frame_stack < 1 \
            or length % frame_stack:
        raise ValueError(f"frame_stack must be a positive int dividing the {length} entries of "
                         f"axis {stack_axis} of the shape {shape}, got {frame_stack!r}")
    return frame_stack, stack_axis % len(shape)


def check_stacks(name: str, array: Any, shape: Tuple[int, ...]) -> None:
    """``array`` must be a uint8 NumPy array of ``shape`` (TypeError, else ValueError)."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8:
        raise TypeError(f"{name} must be a uint8 array of shape {shape}, got "
                        f"{type(array).__name__} {getattr(array, 'dtype', '')}")
    if array.shape != shape:
        raise ValueError(f"{name} must have the shape {shape}, got {array.shape}")


def check_rows(name: str, value: Any, shape: tuple, dtype: Any) -> np.ndarray:
    """``value`` as an array of ``shape`` and ``dtype``; ValueError (TypeError for things
    that are not numbers) naming ``name`` otherwise."""
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f"{name} must have the shape {shape}, got {array.shape}")
    if np.dtype(dtype) != bool and array.dtype == object:
        raise TypeError(f"{name} must be numbers, got {array.dtype}")
    return array.astype(dtype, copy=False)


def to_tensors(arrays: Sequence[np.ndarray], device: Any) -> List[Any]:
    """A sample's own ``arrays`` as torch tensors on ``device``: sharing their memory
    (``from_numpy``: a third of the cost of ``as_tensor``), moved only off the CPU (``to``
    costs even where it moves nothing)."""
    import torch

    tensors = [torch.from_numpy(a) for a in arrays]
    if torch.device(device).type == "cpu":
        return tensors
    return [tensor.to(device) for tensor in tensors]
