"""Replay memory for Atari that stores each frame once.

:class:`ReplayMemory` is the NumPy core (no torch); :class:`ReplayBuffer` is Stable-Baselines3's
``ReplayBuffer`` over the same storage (needs ``stable-baselines3``, imported on first use).
Both keep each distinct frame of the observation stacks once, in compiled code that checks
every frame it reuses byte for byte, so a sampled stack is the stack that was added.
"""

from __future__ import annotations

from typing import Any

from fastatari.replay._frames import FrameStore
from fastatari.replay.layout import stack_layout
from fastatari.replay.memory import Batch, ReplayMemory

__all__ = ["Batch", "FrameStore", "ReplayBuffer", "ReplayMemory", "stack_layout"]


def __getattr__(name: str) -> Any:
    if name == "ReplayBuffer":  # SB3 and torch only for the SB3 drop-in
        try:
            from fastatari.replay.sb3 import ReplayBuffer
        except ImportError as error:
            raise ImportError("fastatari.replay.ReplayBuffer needs Stable-Baselines3: pip "
                              "install 'fastatari[rl]'") from error
        return ReplayBuffer
    raise AttributeError(f"module 'fastatari.replay' has no attribute {name!r}")
