"""Which observation stacks a vector env's step went from and to: what lets a replay memory
take an env's frames without comparing them (``ReplayMemory.add(..., serials=...)``).

Each env's stack has a serial in the shared memory, which its worker moves on by one when a
step pushes a frame onto the stack and by two at any other change (a reset, a restore, a
restart), so ``next == obs + 1`` says exactly that the step pushed one frame onto the stack the
env returned before it and did nothing else to it.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

__all__ = ["FrameSerials", "new_source"]

_SOURCES = itertools.count(1)


def new_source() -> int:
    """A number no other vector env of this process has (a :attr:`FrameSerials.source`)."""
    return next(_SOURCES)


class FrameSerials(NamedTuple):
    """Per row of a vector env's last results (every env after a ``step``, the batch's envs
    after a ``recv``): ``obs``, the serial of the observation the env returned before (the
    one the step started from), and ``next_obs``, the serial of the step's true next
    observation (the final one where same-step autoreset ended the episode); ``source``
    tells apart the vector envs of a process."""

    source: int
    obs: np.ndarray
    next_obs: np.ndarray
