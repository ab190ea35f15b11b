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
    Named game lists (``ATARI_57``, ``ATARI_5``, ``ATARI_10``, ``ATARI_100K``); the public path
    of ``fastatari.evaluation.suites``.
scores
    Human-normalized scores from named reference tables, and their aggregates; the public path
    of ``fastatari.evaluation.scores``.
evaluate
    Score a policy on a suite under a named protocol (``fastatari evaluate``; defined in
    ``fastatari.evaluation.evaluate``).

The packages below, from the edge down: ``envpool``, ``ray``, ``evaluation`` and ``tools`` (with
the modules ``sb3``, ``puffer`` and ``cli``) are front ends and tools; ``vector`` runs N games
behind one gymnasium vector env; ``core`` drives one ALE game; ``kernels`` is the compiled
frame pipeline.

Importing fastatari registers ``fastatari/<Name>-v5`` ids with gymnasium (by entry-point
strings); the modules behind the names above load on first use, so that a worker process
imports only what it runs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fastatari.registration import register_envs as _register_envs

if TYPE_CHECKING:
    from fastatari import kernels, scores, suites
    from fastatari.core.options import AtariOptions
    from fastatari.env import AtariEnv, AtariPreprocessing
    from fastatari.evaluation.evaluate import evaluate
    from fastatari.vector import AtariVectorEnv, make_vec

# The version's one source: pyproject.toml reads it from here (setuptools' dynamic version, from
# this line's text), so the installed metadata, `fastatari --version` and the docs all say it.
__version__ = "0.1.0"

__all__ = ["AtariEnv", "AtariPreprocessing", "AtariOptions", "AtariVectorEnv", "make_vec",
           "evaluate", "kernels", "scores", "suites", "__version__"]

# public name -> the module that defines it
_LAZY = {"AtariEnv": "fastatari.env", "AtariPreprocessing": "fastatari.env",
         "AtariOptions": "fastatari.core.options", "AtariVectorEnv": "fastatari.vector",
         "make_vec": "fastatari.vector", "evaluate": "fastatari.evaluation.evaluate",
         "kernels": "fastatari.kernels",
         "scores": "fastatari.scores", "suites": "fastatari.suites"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastatari' has no attribute {name!r}")
    value = importlib.import_module(module)
    if name not in ("kernels", "scores", "suites"):
        value = getattr(value, name)
    globals()[name] = value  # once
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


_register_envs()
