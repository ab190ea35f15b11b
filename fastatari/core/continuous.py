"""ale-py's continuous actions: ``(radius, theta, fire)`` to a joystick action and a paddle
strength, as ``ale_py.env.AtariEnv.step`` computes them (``continuous=True``).

The polar point ``radius * (cos theta, sin theta)`` moves the stick on each axis where it
passes the threshold; FIRE is ``fire > threshold``; ``radius`` is the paddle strength. The
arithmetic is ale-py's, in float32, so that every action maps to the same ALE action.
"""

from __future__ import annotations

from typing import Any, Tuple

import ale_py
import numpy as np

__all__ = ["ACTION_HIGH", "ACTION_LOW", "check_continuous_actions", "joystick"]

#: The bounds of one continuous action (ale-py's ``Box``): radius, theta, fire.
ACTION_LOW = np.array([0.0, -np.pi, 0.0], np.float32)
ACTION_HIGH = np.array([1.0, np.pi, 1.0], np.float32)


def _joystick_table() -> np.ndarray:
    """ALE action value by (horizontal + 1, vertical + 1, fire): ALE names its actions by the
    stick's vertical then horizontal direction, then FIRE (``UPLEFTFIRE``)."""
    table = np.zeros((3, 3, 2), np.int64)
    for h, horizontal in enumerate(("LEFT", "", "RIGHT")):
        for v, vertical in enumerate(("DOWN", "", "UP")):
            for fire in (0, 1):
                name = vertical + horizontal + ("FIRE" if fire else "")
                table[h, v, fire] = ale_py.Action.__members__[name or "NOOP"].value
    return table


_JOYSTICK = _joystick_table()


def joystick(action: np.ndarray, threshold: float) -> Tuple[int, float]:
    """The ALE action (its value: the index into the full action set) and the paddle strength
    of one checked continuous action (float32, shape ``(3,)``)."""
    radius, theta, fire = action[0], action[1], action[2]
    x, y = radius * np.cos(theta), radius * np.sin(theta)
    h = -int(x < -threshold) + int(x > threshold)
    v = -int(y < -threshold) + int(y > threshold)
    return int(_JOYSTICK[h + 1, v + 1, int(fire > threshold)]), float(radius)


def check_continuous_actions(actions: Any, shape: Tuple[int, ...]) -> np.ndarray:
    """``actions`` as a float32 array of ``shape`` (``(3,)`` for one env, ``(n, 3)`` for n).

    ``TypeError`` for anything but a real-number array (bools and strings included),
    ``ValueError`` for a wrong shape or a value that is not finite. Values outside the
    ``Box`` bounds are taken as ale-py takes them (the thresholds apply; the radius is the
    paddle strength), not clipped.
    """
    array = np.asarray(actions) if not isinstance(actions, np.ndarray) else actions
    if array.dtype.kind not in "iuf":
        raise TypeError(f"continuous actions must be real numbers (float32), got dtype "
                        f"{array.dtype}")
    if array.shape != shape:
        raise ValueError(f"continuous actions must have shape {shape} (radius, theta, fire), "
                         f"got {array.shape}")
    array = array.astype(np.float32, copy=False)
    if not np.isfinite(array).all():
        raise ValueError("continuous actions must be finite, got nan or inf")
    return array
