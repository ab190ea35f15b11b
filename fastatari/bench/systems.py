"""The systems under test, opened the same way for every section.

One env: ``fastatari.AtariEnv`` and gymnasium's reference pipeline. Vector envs, reset and
wrapped in :class:`Opened`: fastatari's ``make_vec``, gymnasium's ``AsyncVectorEnv`` over the
reference pipeline, ale_py's ``AtariVectorEnv`` and EnvPool, all with Breakout-style settings
(sticky actions off, frame skip 4, 84×84 gray, stack 4, noop_max 30, no reward clipping, no
fire reset, no episodic life). :mod:`fastatari.bench.fresh` opens the same systems in a fresh
interpreter, with the same settings, for start-up and memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, Callable

import numpy as np

from fastatari.bench.fresh import gymnasium_reference_env
from fastatari.bench.harness import FRAME_SKIP, TIMEOUT, BenchConfig
from fastatari.core.games import camel_name, resolve_game

# --- One env -------------------------------------------------------------------------------------


def fastatari_env(config: BenchConfig):
    import fastatari

    return fastatari.AtariEnv(config.game, repeat_action_probability=0.0)


def gymnasium_env_id(game: str) -> str:
    """ale_py's gymnasium id for ``game``, e.g. ``ALE/Breakout-v5``."""
    return f"ALE/{camel_name(resolve_game(game))}-v5"


def gymnasium_env(config: BenchConfig):
    """gymnasium's reference pipeline on the config's game (see
    :func:`fastatari.bench.fresh.gymnasium_reference_env`)."""
    return gymnasium_reference_env(gymnasium_env_id(config.game))


# --- Vector envs ---------------------------------------------------------------------------------


@dataclass
class Opened:
    """A vector env, reset, and how to close it."""

    env: Any
    num_envs: int
    num_actions: int
    step: Callable[[np.ndarray], Any]
    close: Callable[[], None]
    sending: bool = False  # async: every env has a step in flight
    batch_size: int | None = None  # async: envs one ``recv`` returns


def _opened(env: Any, num_envs: int, num_actions: int, reset: Callable[[], Any],
            step: Callable[[np.ndarray], Any], close: Callable[[], None]) -> Opened:
    try:
        reset()
    except BaseException:
        close()
        raise
    return Opened(env, num_envs, num_actions, step, close)


def open_fastatari(config: BenchConfig, num_envs: int, num_workers: int | None = None,
                   batch_size: int | None = None, env_class: type | None = None,
                   **keywords: Any) -> Opened:
    """fastatari's vector env (``env_class``: a subclass, e.g. over another executor);
    ``keywords``: more of its keywords (``copy``, ``timeout``: :data:`TIMEOUT` unless
    given)."""
    from fastatari.vector import AtariVectorEnv

    keywords.setdefault("timeout", TIMEOUT)
    env = (env_class or AtariVectorEnv)(config.game, num_envs, num_workers=num_workers,
                                        batch_size=batch_size, repeat_action_probability=0.0,
                                        **keywords)
    opened = _opened(env, num_envs, int(env.single_action_space.n),
                     lambda: env.reset(seed=config.seed), env.step, env.close)
    opened.batch_size = env.batch_size
    return opened


def open_gymnasium_async(config: BenchConfig, num_envs: int) -> Opened:
    import functools

    from gymnasium.vector import AsyncVectorEnv

    # gymnasium's default context (fork on Linux), as its users get it
    make = functools.partial(gymnasium_reference_env, gymnasium_env_id(config.game))
    env = AsyncVectorEnv([make] * num_envs)

    def step(actions: np.ndarray) -> Any:
        env.step_async(actions)
        return env.step_wait(timeout=TIMEOUT)

    def close() -> None:
        try:
            env.close(timeout=TIMEOUT)
        except Exception:  # noqa: BLE001 - e.g. workers gone after a Ctrl-C to the group
            env.close(terminate=True)

    return _opened(env, num_envs, int(env.single_action_space.n),
                   lambda: env.reset(seed=config.seed), step, close)


def open_ale_vector(config: BenchConfig, num_envs: int, num_threads: int) -> Opened:
    import ale_py
    from ale_py.vector_env import AtariVectorEnv

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    # the options fastatari's defaults mean; ale_py's own defaults clip rewards and press FIRE
    env = AtariVectorEnv(resolve_game(config.game), num_envs, num_threads=num_threads,
                         repeat_action_probability=0.0, noop_max=30, stack_num=4,
                         img_height=84, img_width=84, grayscale=True, frameskip=FRAME_SKIP,
                         maxpool=True, reward_clipping=False, use_fire_reset=False,
                         episodic_life=False)
    return _opened(env, num_envs, int(env.single_action_space.n),
                   lambda: env.reset(seed=config.seed), env.step, env.close)


def envpool_version() -> str | None:
    if find_spec("envpool") is None:
        return None
    try:
        import envpool
    except Exception:  # noqa: BLE001 - a broken install is reported as missing
        return None
    return getattr(envpool, "__version__", "unknown")


def open_envpool(config: BenchConfig, num_envs: int, num_threads: int,
                 batch_size: int | None = None) -> Opened:
    """EnvPool, reset; with ``batch_size`` (async), reset with ``async_reset``: every env is
    then in flight, and ``recv`` returns the first ``batch_size`` to finish."""
    import envpool

    batch = {} if batch_size is None else {"batch_size": batch_size}
    env = envpool.make(f"{camel_name(resolve_game(config.game))}-v5", env_type="gymnasium",
                       num_envs=num_envs, num_threads=num_threads, seed=config.seed,
                       repeat_action_probability=0.0, noop_max=30, stack_num=4,
                       img_height=84, img_width=84, gray_scale=True, frame_skip=FRAME_SKIP,
                       reward_clip=False, use_fire_reset=False, episodic_life=False, **batch)
    opened = _opened(env, num_envs, int(env.action_space.n),
                     env.reset if batch_size is None else env.async_reset, env.step, env.close)
    opened.batch_size = batch_size or num_envs
    opened.sending = batch_size is not None
    return opened
