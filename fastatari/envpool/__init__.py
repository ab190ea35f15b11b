"""An EnvPool-style front end: ``fastatari.envpool.make`` for scripts written for EnvPool.

Scripts written for EnvPool call ``envpool.make("Breakout-v5", env_type=..., ...)`` and use
EnvPool's API: ``reset()``, ``step(actions, env_id)``, ``send``/``recv``, ``async_reset()``,
``xla()``, ``len(env)``, ``env.spec.config``, ``env.config``, ``is_async``, single-env
``observation_space``/``action_space`` and the ``info`` keys ``env_id``, ``players``, ``lives``,
``reward``, ``terminated`` and ``elapsed_step``. :func:`make` takes EnvPool's option names and
defaults (EnvPool 1.2.x, ``envpool/atari``) and runs the games on a
:class:`fastatari.AtariVectorEnv`, so swapping the import is the whole change::

    from fastatari import envpool
    envs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=8, episodic_life=True,
                        reward_clip=True)

``env_type="gymnasium"`` gives EnvPool 1.x's gymnasium API (:class:`EnvPoolAtari`).
``env_type="gym"`` gives EnvPool 0.x's gym API (:mod:`fastatari.envpool.gym_api`, needs the
``gym`` package): with gym < 0.26, as CleanRL's EnvPool scripts use it, ``reset()`` returns the
observations only and ``step()`` returns ``(obs, reward, done, info)`` with
``info["TimeLimit.truncated"]``; with gym >= 0.26 both follow gymnasium's shapes, as in EnvPool.
``env.xla()`` returns EnvPool's ``(handle, recv, send, step)`` for use inside ``jax.jit``
(:mod:`fastatari.envpool.xla`, needs ``jax``).

Option mapping (EnvPool -> fastatari): ``num_threads`` -> ``num_workers`` (processes, at most
``num_envs``), ``stack_num`` -> ``stack_size``, ``img_width``/``img_height`` -> ``screen_size``,
``gray_scale`` -> ``grayscale_obs`` (RGB frames are transposed to EnvPool's ``(3 * stack_num,
H, W)`` layout here), ``reward_clip`` -> ``clip_rewards``, ``use_fire_reset`` -> ``fire_reset``,
``mode``/``difficulty`` ``-1`` -> None (the ROM's default). ``max_episode_steps`` is counted
here, in agent steps, as EnvPool counts it (the vector env gets no frame limit).
``repeat_action_probability`` defaults to 0, as in EnvPool (fastatari's own default is 0.25).

Where the semantics differ from EnvPool: the README's table "Where fastatari.envpool differs
from EnvPool" lists them row by row (processes instead of threads, random streams, no-op
counts, the observation of a step that ends the game, games without NOOP or FIRE).

The submodules, from the API down: ``gymnasium_api`` (:class:`EnvPoolAtari`), ``gym_api`` (the
gym class, built when gym is first asked for), ``base`` (EnvPool's API over the vector env,
shared by both, and the batches of results it holds), ``spec`` (:data:`Config`,
:class:`EnvPoolSpec`), ``xla`` (``env.xla()``; jax is imported on its first call).
"""

from __future__ import annotations

import collections.abc
import os
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from fastatari.core import validate
from fastatari.envpool.base import EnvPoolMixin
from fastatari.envpool.gym_api import gym_env_class
from fastatari.envpool.gymnasium_api import EnvPoolAtari
from fastatari.envpool.spec import Config, EnvPoolSpec
from fastatari.core.game import action_names
from fastatari.core.games import resolve_game
from fastatari.core.options import MAX_SIDE
from fastatari.vector import make_vec

__all__ = ["Config", "EnvPoolAtari", "EnvPoolSpec", "make"]

_ENV_TYPES = ("gymnasium", "gym")
# EnvPool options fastatari can honour at one value only: name -> that value.
_FIXED = {"use_inter_area_resize": True, "max_num_players": 1, "render_mode": None}


def make(task_id: str | Sequence[str], env_type: str = "gymnasium", num_envs: int = 1,
         batch_size: int = 0, num_threads: int = 0, seed: int | Sequence[int] = 42,
         episodic_life: bool = False, reward_clip: bool = False, noop_max: int = 30,
         stack_num: int = 4,
         img_height: int = 84, img_width: int = 84, gray_scale: bool = True,
         frame_skip: int = 4, repeat_action_probability: float = 0.0,
         use_fire_reset: bool = True, max_episode_steps: int = 27000,
         full_action_space: bool = False, mode: int = -1, difficulty: int = -1,
         gym_reset_return_info: Optional[bool] = None, thread_affinity_offset: int = -1,
         zero_discount_on_life_loss: bool = False, use_inter_area_resize: bool = True,
         max_num_players: int = 1, render_mode: Optional[str] = None,
         **other: Any) -> EnvPoolMixin:
    """Create ``num_envs`` Atari games with EnvPool's options and API.

    Parameters
    ----------
    task_id : str or sequence of str
        ``"Breakout-v5"`` (any name :func:`fastatari.core.games.resolve_game` accepts), or one name
        per env (``num_envs`` of them, a fastatari extension): env ``i`` plays ``task_id[i]``
        (games whose action sets differ need ``full_action_space=True``; see
        :func:`fastatari.make_vec`). ``env.games`` lists the ROM of each env.
    env_type : {"gymnasium", "gym"}
        ``"gymnasium"``: :class:`EnvPoolAtari`. ``"gym"``: EnvPool's gym API (needs ``gym``;
        see the module docstring). EnvPool's ``"dm"`` raises ``ValueError``.
    num_envs : int
    batch_size : int
        Envs :meth:`recv` returns (0 or None: ``num_envs``).
    num_threads : int
        Worker processes (0 or None: fastatari's default); capped at ``num_envs``.
    seed : int or sequence of int
        Env ``i`` gets ``seed + i`` (or ``seed[i]``) at the first reset.
    episodic_life, reward_clip, noop_max, stack_num, img_height, img_width, gray_scale, \
frame_skip, repeat_action_probability, use_fire_reset, max_episode_steps, full_action_space, \
mode, difficulty
        EnvPool's Atari options, with EnvPool's defaults.
    gym_reset_return_info : bool, optional
        ``reset()`` returns ``(obs, info)``: always with ``"gymnasium"`` (False raises, as in
        EnvPool 1.x); with ``"gym"`` it defaults to False (observations only).
    thread_affinity_offset, zero_discount_on_life_loss
        Accepted and kept in the config; processes are not pinned and there is no dm_env
        discount.
    use_inter_area_resize, max_num_players, render_mode
        Only their defaults (True, 1, None).
    **other
        Any other name raises ``TypeError``.

    Returns
    -------
    EnvPoolAtari, or the gym class of :mod:`fastatari.envpool.gym_api` for ``env_type="gym"``.

    Raises
    ------
    TypeError
        For options EnvPool's Atari envs do not have.
    ValueError
        For another ``env_type``, an option value fastatari cannot honour, or a bad value.
    ImportError
        For ``env_type="gym"`` without the ``gym`` package.
    """
    if env_type not in _ENV_TYPES:
        raise ValueError(f"env_type must be 'gymnasium' or 'gym' (the types fastatari.envpool "
                         f"supports), got {env_type!r}")
    if other:
        raise TypeError(f"unknown EnvPool option(s) for fastatari.envpool.make: "
                        f"{', '.join(sorted(other))}")
    given = {"use_inter_area_resize": use_inter_area_resize,
             "max_num_players": max_num_players, "render_mode": render_mode}
    for name, value in given.items():
        if value != _FIXED[name]:
            raise ValueError(f"fastatari.envpool.make supports only {name}={_FIXED[name]!r}, "
                             f"got {value!r}")
    if gym_reset_return_info is None:
        gym_reset_return_info = env_type == "gymnasium"
    elif env_type == "gymnasium" and not gym_reset_return_info:
        raise ValueError("gym_reset_return_info=False is for env_type='gym': gymnasium's "
                         "reset() always returns (obs, info)")
    if env_type == "gym":
        cls: type = gym_env_class()  # ImportError naming the package to install
    else:
        cls = EnvPoolAtari
    max_episode_steps = validate.check_int("max_episode_steps", max_episode_steps, 1)
    frame_skip = validate.check_int("frame_skip", frame_skip, 1)
    img_height = validate.check_int("img_height", img_height, 1, MAX_SIDE)
    img_width = validate.check_int("img_width", img_width, 1, MAX_SIDE)
    stack_num = validate.check_int("stack_num", stack_num, 1)
    noop_max = validate.check_int("noop_max", noop_max, 0)
    if isinstance(seed, (list, tuple, np.ndarray)):
        config_seed, env_seed = 0, list(validate.check_seeds(seed, num_envs))
    else:
        config_seed, env_seed = validate.check_seed(seed), []
    if isinstance(task_id, str):
        game: str | Tuple[str, ...] = resolve_game(task_id)
        roms: Tuple[str, ...] = (game,)
    elif isinstance(task_id, collections.abc.Sequence):
        game = roms = tuple(resolve_game(t) for t in task_id)
    else:
        raise TypeError(f"task_id must be a name or a sequence of num_envs names, got "
                        f"{task_id!r}")
    sets = [action_names(rom, full_action_space) for rom in dict.fromkeys(roms)]
    # EnvPool's reset plays raw NOOP frames and presses FIRE when FIRE is in the action set.
    # fastatari's games play action 0 and press action 1, so they refuse games where those
    # are not NOOP and FIRE (Backgammon, VideoCheckers: FIRE is action 0): those get no no-op
    # starts and no fire reset here (see the README's table of differences).
    noop_first = all(names[0] == "NOOP" for names in sets)
    fire_second = all(names[1:2] == ("FIRE",) for names in sets)
    options = dict(
        frame_skip=frame_skip, screen_size=(img_width, img_height), grayscale_obs=gray_scale,
        noop_max=noop_max if noop_first else 0, stack_size=stack_num,
        repeat_action_probability=repeat_action_probability,
        full_action_space=full_action_space, max_num_frames_per_episode=None,
        clip_rewards=reward_clip, episodic_life=episodic_life,
        fire_reset=bool(use_fire_reset) and fire_second,
        mode=None if mode == -1 else mode, difficulty=None if difficulty == -1 else difficulty,
        ram_info=True,  # EnvPool >= 1.0 reports info["ram"]
    )
    # EnvPool allows more threads than envs; fastatari's workers each need an env.
    num_workers = min(num_threads, num_envs) if num_threads else None
    vec = make_vec(game, num_envs, num_workers=num_workers, batch_size=batch_size or None,
                   **options)
    try:
        config = Config(
            num_envs=num_envs, batch_size=vec.batch_size, num_threads=num_threads or 0,
            max_num_players=1, thread_affinity_offset=thread_affinity_offset,
            base_path=_rom_dir(roms[0]), seed=config_seed, env_seed=env_seed,
            gym_reset_return_info=bool(gym_reset_return_info),
            max_episode_steps=max_episode_steps, stack_num=stack_num, frame_skip=frame_skip,
            noop_max=noop_max, zero_discount_on_life_loss=zero_discount_on_life_loss,
            episodic_life=episodic_life, reward_clip=reward_clip,
            use_fire_reset=use_fire_reset, img_height=img_height, img_width=img_width,
            task=roms[0] if len(roms) == 1 else roms, mode=mode, difficulty=difficulty,
            full_action_space=full_action_space,
            repeat_action_probability=repeat_action_probability,
            use_inter_area_resize=True, gray_scale=gray_scale)
        return cls(vec, seed, config, task_id)
    except BaseException:
        vec.close()
        raise


def _rom_dir(rom: str) -> str:
    from ale_py import roms
    return os.path.dirname(roms.get_rom_path(rom))
