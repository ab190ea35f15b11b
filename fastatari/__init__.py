"""fastatari: the fastest way to run Atari (ALE) games for reinforcement learning.

Public API
----------
AtariEnv
    A gymnasium env driving ALE directly, byte-identical to gymnasium's
    ``AtariPreprocessing`` + ``FrameStackObservation`` pipeline.
AtariPreprocessing
    Drop-in, faster replacement for ``gymnasium.wrappers.AtariPreprocessing`` (+ stacking).
AtariOptions
    The validated preprocessing options shared by every front end.
kernels
    The compiled, exact preprocessing kernels.

Importing fastatari registers ``fastatari/<Name>-v5`` ids with gymnasium.
"""

from fastatari import kernels
from fastatari.env import AtariEnv, AtariPreprocessing
from fastatari.options import AtariOptions
from fastatari.registration import register_envs as _register_envs

__version__ = "0.1.0"

__all__ = ["AtariEnv", "AtariPreprocessing", "AtariOptions", "kernels", "__version__"]

_register_envs()
