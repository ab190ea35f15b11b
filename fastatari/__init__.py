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
make_vec, AtariVectorEnv
    N games in worker processes over shared memory: a gymnasium ``VectorEnv``.
kernels
    The compiled, exact preprocessing kernels.

Importing fastatari registers ``fastatari/<Name>-v5`` ids with gymnasium.
"""

from fastatari import kernels
from fastatari.env import AtariEnv, AtariPreprocessing
from fastatari.options import AtariOptions
from fastatari.registration import register_envs as _register_envs
from fastatari.vector import AtariVectorEnv, make_vec

__version__ = "0.1.0"

__all__ = ["AtariEnv", "AtariPreprocessing", "AtariOptions", "AtariVectorEnv", "make_vec",
           "kernels", "__version__"]

_register_envs()
