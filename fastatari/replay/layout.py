"""How a stack of frames lies in an observation: which axis, how many frames."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple


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
