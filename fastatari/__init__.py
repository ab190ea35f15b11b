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
    The compiled, exact preprocessing kernels (the ``kernels`` package over ``csrc/``).
suites
    Named game lists (``ATARI_57``, ``ATARI_5``, ``ATARI_10``, ``ATARI_100K``): the module
    ``fastatari.evaluation.suites``.
scores
    Human-normalized scores from named reference tables, and their aggregates: the module
    ``fastatari.evaluation.scores``.
evaluate
    Score a policy on a suite under a named protocol (``fastatari evaluate``; defined in
    ``fastatari.evaluation.evaluate``).

The packages below, from the edge down: ``envpool``, ``ray``, ``evaluation`` and ``tools`` (with
the modules ``sb3``, ``puffer`` and ``cli``) are front ends and tools; ``vector`` runs N games
behind one gymnasium vector env; ``core`` drives one ALE game; ``kernels`` is the compiled
frame pipeline.

Importing fastatari registers ``fastatari/<Name>-v5`` ids with gymnasium (by entry-point
strings); the modules behind the names above load on first use (``lazy_loader``, from the
names' one list: ``__init__.pyi``), so that a worker process imports only what it runs.
"""
from __future__ import annotations

import lazy_loader

from fastatari.registration import register_envs as _register_envs

# The version's one source: pyproject.toml reads it from here (setuptools' dynamic version, from
# this line's text), so the installed metadata, `fastatari --version` and the docs all say it.
__version__ = "0.1.0"

# The public names and the modules that define them: __init__.pyi (also what type checkers read).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__all__ += ["__version__"]

_register_envs()
