"""Replay memory for Atari that stores each frame once.

:class:`ReplayMemory` is the NumPy core (no torch); :class:`ReplayBuffer` is Stable-Baselines3's
``ReplayBuffer`` over the same storage (needs ``stable-baselines3``, imported on first use);
:class:`PrioritizedReplayBuffer` adds n-step returns and proportional priorities on a
compiled sum tree (CleanRL's Rainbow buffer's calls; NumPy or torch out).
Both keep each distinct frame of the observation stacks once, in compiled code that checks
every frame it reuses byte for byte, so a sampled stack is the stack that was added.
"""

from __future__ import annotations

from typing import Any

from fastatari.replay._core import FrameStore, SumTree
from fastatari.replay.layout import stack_layout
from fastatari.replay.memory import Batch, ReplayMemory
from fastatari.replay.prioritized import PrioritizedBatch, PrioritizedReplayBuffer

__all__ = ["Batch", "FrameStore", "PrioritizedBatch", "PrioritizedReplayBuffer",
           "ReplayBuffer", "ReplayMemory", "SumTree", "stack_layout"]


def __getattr__(name: str) -> Any:
    if name == "ReplayBuffer":  # SB3 and torch only for the SB3 drop-in
        try:
            from fastatari.sb3.replay_buffer import ReplayBuffer
        except ImportError as error:
            raise ImportError("fastatari.replay.ReplayBuffer needs Stable-Baselines3: pip "
                              "install 'fastatari[rl]'") from error
        return ReplayBuffer
    raise AttributeError(f"module 'fastatari.replay' has no attribute {name!r}")
