"""An EnvPool-style front end: ``fastatari.envpool.make`` for scripts written for EnvPool.

Scripts written for EnvPool call ``envpool.make("Breakout-v5", env_type=..., ...)`` (or
``make_gymnasium``, ``make_gym``, ``make_dm``, ``make_spec``) and use EnvPool's API:
``reset()``, ``step(actions, env_id)``, ``send``/``recv``, ``async_reset()``, ``xla()``,
``len(env)``, ``env.spec.config``, ``env.spec.state_array_spec``, ``env.config``, ``is_async``,
single-env ``observation_space``/``action_space`` and the ``info`` keys ``env_id``, ``players``,
``lives``, ``reward``, ``terminated`` and ``elapsed_step``. :func:`make` takes EnvPool's option
names and defaults (EnvPool 1.2.x, ``envpool/atari``) and runs the games on a
:class:`fastatari.AtariVectorEnv`, so swapping the import is the whole change::

    from fastatari import envpool
    envs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=8, episodic_life=True,
                        reward_clip=True)

``env_type="gymnasium"`` (:func:`make_gymnasium`, and :func:`make_gym`, as in EnvPool 1.x)
gives EnvPool 1.x's gymnasium API (:class:`EnvPoolAtari`). ``env_type="gym"`` gives EnvPool
0.x's gym API (:mod:`fastatari.envpool.gym_api`, needs the ``gym`` package): with gym < 0.26,
as CleanRL's EnvPool scripts use it, ``reset()`` returns the observations only and ``step()``
returns ``(obs, reward, done, info)`` with ``info["TimeLimit.truncated"]``; with gym >= 0.26
both follow gymnasium's shapes, as in EnvPool. ``env_type="dm"`` (:func:`make_dm`) gives
EnvPool's dm_env API (:mod:`fastatari.envpool.dm_api`, needs ``dm-env``): ``dm_env.TimeStep``
results, with ``zero_discount_on_life_loss``. ``env.xla()`` returns EnvPool's ``(handle, recv,
send, step)`` for use inside ``jax.jit`` (:mod:`fastatari.envpool.xla`, needs ``jax``).
:func:`make_spec` validates the options and returns the spec without starting any game.

Option mapping (EnvPool -> fastatari): ``num_threads`` -> ``num_workers`` (processes, at most
``num_envs``), ``stack_num`` -> ``stack_size``, ``img_width``/``img_height`` -> ``screen_size``,
``gray_scale`` -> ``grayscale_obs`` (RGB frames are transposed to EnvPool's ``(3 * stack_num,
H, W)`` layout here), ``reward_clip`` -> ``clip_rewards``, ``use_fire_reset`` -> ``fire_reset``,
``mode``/``difficulty`` ``-1`` -> None (the ROM's default). ``max_episode_steps`` is counted
here, in agent steps, as EnvPool counts it (the vector env gets no frame limit).
``repeat_action_probability`` defaults to 0, as in EnvPool (fastatari's own default is 0.25).

``protocol="machado2018"`` (or ``"dqn_nature:eval"``, ...; :mod:`fastatari.core.protocols`)
sets the EnvPool options of a paper's setting, as ``fastatari.make_vec(..., protocol=)`` plays
it, and the options given beside it override them; ``env.spec.config`` shows the result. The
protocol's options, with fastatari's defaults for those it does not name (so
``use_fire_reset=False``), become EnvPool's: ``max_num_frames_per_episode`` becomes
``max_episode_steps`` (the frames over ``frame_skip``, counted as EnvPool counts: agent steps,
not the reset's no-op frames), ``noop_max`` stays (fastatari.envpool's ``noop_max`` is
fastatari's), and an option EnvPool has no name for (``life_loss_info=True`` of
``"atari100k"``'s training) raises ValueError: ``fastatari.make_vec`` plays those.

Where the semantics differ from EnvPool: the README's table "Where fastatari.envpool differs
from EnvPool" lists them row by row (processes instead of threads, random streams, no-op
counts, the observation of a step that ends the game, games without NOOP or FIRE).

The submodules, from the API down: ``gymnasium_api`` (:class:`EnvPoolAtari`), ``gym_api`` (the
gym class, built when gym is first asked for), ``dm_api`` (the dm_env class, likewise), ``base``
(EnvPool's API over the vector env, shared by all three, and the batches of results it holds),
``spec`` (:data:`Config`, :class:`EnvPoolSpec`, EnvPool's array and dm_env specs), ``xla``
(``env.xla()``; jax is imported on its first call).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import os
from typing import Any, Dict, Optional, Sequence, Tuple, cast

import numpy as np

from fastatari.core import validate
from fastatari.core.game import action_names
from fastatari.core.games import resolve_game, rom_path
from fastatari.core.options import MAX_SIDE, AtariOptions
from fastatari.core.protocols import protocol_options
from fastatari.core.romfacts import EnlargedScreen, UnavailableSetting
from fastatari.envpool.base import EnvPoolMixin
from fastatari.envpool.dm_api import dm_env_class
from fastatari.envpool.gym_api import gym_env_class
from fastatari.envpool.gymnasium_api import EnvPoolAtari
from fastatari.envpool.spec import ArraySpec, Config, EnvPoolSpec
from fastatari.vector.env import AtariVectorEnv
from fastatari.vector.plan import VectorPlan, plan_vec
from fastatari.vector.pool import WorkerPool

__all__ = ["ArraySpec", "Config", "EnvPoolAtari", "EnvPoolSpec", "InvalidSetting", "make",
           "make_dm", "make_gym", "make_gymnasium", "make_spec"]

_ENV_TYPES = ("gymnasium", "gym", "dm")
# EnvPool options fastatari can honour at one value only: name -> that value.
_FIXED = {"use_inter_area_resize": True, "max_num_players": 1, "render_mode": None}
# fastatari options and the EnvPool option each becomes (see _protocol_keywords).
_RENAMED = {"frame_skip": "frame_skip", "noop_max": "noop_max", "stack_size": "stack_num",
            "grayscale_obs": "gray_scale", "clip_rewards": "reward_clip",
            "episodic_life": "episodic_life", "fire_reset": "use_fire_reset",
            "repeat_action_probability": "repeat_action_probability",
            "full_action_space": "full_action_space"}
# fastatari options EnvPool has no name for, at the value fastatari.envpool plays them.
_CARRIED = {"maxpool": True, "terminal_on_life_loss": False, "life_loss_info": False,
            "channels_last": False, "padding_type": "reset", "continuous": False}
# The fastatari options _protocol_keywords converts or may leave (ram_info is always on here,
# continuous_action_threshold needs continuous); any other must have its _CARRIED value.
_CONVERTED = {*_RENAMED, "mode", "difficulty", "screen_size", "max_num_frames_per_episode",
              "ram_info", "continuous_action_threshold"}
# EnvPool's options by type, as its C++ config takes them: another type is a TypeError there
# and here (never read for its truthiness: zero_discount_on_life_loss="no" is refused, not on).
_BOOLS = ("episodic_life", "reward_clip", "gray_scale", "use_fire_reset", "full_action_space",
          "zero_discount_on_life_loss", "use_inter_area_resize")
_INTS = ("num_envs", "noop_max", "stack_num", "img_height", "img_width", "frame_skip",
         "max_episode_steps", "mode", "difficulty", "thread_affinity_offset", "max_num_players")
_OPTIONAL_INTS = ("batch_size", "num_threads")  # None: the default, as 0
_OPTIONAL_BOOLS = ("gym_reset_return_info",)


class InvalidSetting(RuntimeError, ValueError):
    """A ``mode`` or ``difficulty`` the game does not have: a ``RuntimeError`` as EnvPool
    raises it (from ALE), and a ``ValueError`` as fastatari's other fronts do."""


def _check_types(values: Dict[str, Any]) -> None:
    """``TypeError`` naming EnvPool's option for a value of the wrong type."""
    def refuse(name: str, kind: str) -> None:
        raise TypeError(f"EnvPool option {name} must be {kind}, got {values[name]!r}")

    for name in _BOOLS + _OPTIONAL_BOOLS:
        value = values[name]
        if not isinstance(value, (bool, np.bool_)) and not (
                value is None and name in _OPTIONAL_BOOLS):
            refuse(name, "a bool")
    for name in _INTS + _OPTIONAL_INTS:
        value = values[name]
        if not validate.is_int(value) and not (value is None and name in _OPTIONAL_INTS):
            refuse(name, "an int")
    value = values["repeat_action_probability"]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating,
                                                                     np.integer)):
        refuse("repeat_action_probability", "a float")


def make(task_id: str | Sequence[str], env_type: str = "gymnasium",
         **kwargs: Any) -> EnvPoolMixin:
    """Create ``num_envs`` Atari games with EnvPool's options and API.

    Parameters
    ----------
    task_id : str or sequence of str
        ``"Breakout-v5"``, or one name per env (see :func:`make_spec`).
    env_type : {"gymnasium", "gym", "dm"}
        ``"gymnasium"``: :class:`EnvPoolAtari`. ``"gym"``: EnvPool 0.x's gym API (needs
        ``gym``; see the module docstring). ``"dm"``: EnvPool's dm_env API (needs ``dm-env``;
        :mod:`fastatari.envpool.dm_api`).
    **kwargs
        EnvPool's options, as :func:`make_spec` takes them (``protocol=`` too).
        ``gym_reset_return_info`` defaults to True, and False raises, as in EnvPool 1.x; but
        with ``"gym"`` it defaults to False (``reset()`` returns the observations only, as
        EnvPool 0.x's).

    Returns
    -------
    EnvPoolAtari, or the gym class of :mod:`fastatari.envpool.gym_api` for ``env_type="gym"``,
    or the dm_env class of :mod:`fastatari.envpool.dm_api` for ``env_type="dm"``.

    Raises
    ------
    TypeError
        For options EnvPool's Atari envs do not have.
    ValueError
        For another ``env_type``, an option value fastatari cannot honour, or a bad value.
    ImportError
        For ``env_type="gym"`` without the ``gym`` package, ``"dm"`` without ``dm-env``.
    """
    if env_type not in _ENV_TYPES:
        raise ValueError(f"env_type must be 'gymnasium', 'gym' or 'dm', got {env_type!r}")
    if kwargs.get("gym_reset_return_info") is None:
        kwargs["gym_reset_return_info"] = env_type != "gym"
    elif env_type != "gym" and not kwargs["gym_reset_return_info"]:
        raise ValueError("gym_reset_return_info=False is for env_type='gym' (EnvPool 0.x's "
                         "gym API): EnvPool 1.x's reset() always returns the info")
    # ImportError naming the package to install, before any game starts
    cls = {"gymnasium": lambda: EnvPoolAtari, "gym": gym_env_class,
           "dm": dm_env_class}[env_type]()
    spec = make_spec(task_id, **kwargs)
    config, plan = spec.config, spec.plan
    vec = AtariVectorEnv(plan, WorkerPool(plan))
    try:
        return cls(vec, config.env_seed or config.seed, config, task_id)
    except BaseException:
        vec.close()
        raise


def make_gymnasium(task_id: str | Sequence[str], **kwargs: Any) -> EnvPoolAtari:
    """EnvPool's ``make_gymnasium``: ``make(task_id, env_type="gymnasium", **kwargs)``."""
    return cast(EnvPoolAtari, make(task_id, "gymnasium", **kwargs))


def make_gym(task_id: str | Sequence[str], **kwargs: Any) -> EnvPoolAtari:
    """EnvPool 1.x's ``make_gym``: the same as :func:`make_gymnasium` (EnvPool 1.x's gym API
    is its gymnasium API). EnvPool 0.x's gym API, on the ``gym`` package, as CleanRL's scripts
    use it, is ``make(task_id, env_type="gym")``."""
    return make_gymnasium(task_id, **kwargs)


def make_dm(task_id: str | Sequence[str], **kwargs: Any) -> EnvPoolMixin:
    """EnvPool's ``make_dm``: ``make(task_id, env_type="dm", **kwargs)``, the dm_env API
    (:mod:`fastatari.envpool.dm_api`; needs the ``dm-env`` package, else ``ImportError``)."""
    return make(task_id, "dm", **kwargs)


def _protocol_keywords(protocol: str, given: Dict[str, Any]) -> Dict[str, Any]:
    """The EnvPool options of ``protocol`` (:func:`~fastatari.core.protocols.protocol_options`,
    over fastatari's defaults), the EnvPool options ``given`` beside it taken into account:
    their ``frame_skip`` turns the protocol's frame cap into ``max_episode_steps``.

    Raises ValueError for an unknown protocol, as ``protocol_options``, and for an option
    EnvPool cannot express that ``given`` does not override.
    """
    options = dataclasses.asdict(AtariOptions(**protocol_options(protocol)))
    for name, value in options.items():
        if name not in _CONVERTED and (name not in _CARRIED or value != _CARRIED[name]):
            hint = (" (EnvPool's episodic_life=True ends the episode at a life loss instead)"
                    if name == "life_loss_info" else "")
            raise ValueError(f"protocol {protocol!r} sets {name}={value!r}, which EnvPool's "
                             f"options cannot express{hint}: use fastatari.make_vec(..., "
                             f"protocol={protocol!r})")
    keywords = {_RENAMED[name]: options[name] for name in _RENAMED}
    keywords["mode"], keywords["difficulty"] = (-1 if options[name] is None else options[name]
                                                for name in ("mode", "difficulty"))
    size = options["screen_size"]
    keywords["img_width"], keywords["img_height"] = (size, size) if isinstance(size, int) else size
    frames = options["max_num_frames_per_episode"]
    frame_skip = validate.check_int("frame_skip", given.get("frame_skip", keywords["frame_skip"]),
                                    1)
    if "max_episode_steps" not in given:
        if not frames or frames % frame_skip:
            raise ValueError(
                f"protocol {protocol!r} sets max_num_frames_per_episode={frames!r}, which "
                f"EnvPool's max_episode_steps (agent steps of frame_skip={frame_skip}, >= 1) "
                f"cannot express: pass max_episode_steps= beside protocol=, or use "
                f"fastatari.make_vec(..., protocol={protocol!r})")
        keywords["max_episode_steps"] = frames // frame_skip
    return keywords


def _takes_protocol(make_spec: Any) -> Any:
    """``make_spec`` with its ``protocol``: the protocol's EnvPool options under those given."""
    signature = inspect.signature(make_spec)

    @functools.wraps(make_spec)
    def wrapper(*args: Any, **kwargs: Any) -> EnvPoolSpec:
        given = signature.bind_partial(*args, **kwargs).arguments
        protocol = given.pop("protocol", None)
        if protocol is None:
            return make_spec(*args, **kwargs)
        given.update(given.pop("other", {}))
        return make_spec(**{**_protocol_keywords(protocol, given), **given})
    return wrapper


@_takes_protocol
def make_spec(task_id: str | Sequence[str], num_envs: int = 1, batch_size: int = 0,
              num_threads: int = 0, seed: int | Sequence[int] = 42,
              episodic_life: bool = False, reward_clip: bool = False, noop_max: int = 30,
              stack_num: int = 4, img_height: int = 84, img_width: int = 84,
              gray_scale: bool = True, frame_skip: int = 4,
              repeat_action_probability: float = 0.0, use_fire_reset: bool = True,
              max_episode_steps: int = 27000, full_action_space: bool = False, mode: int = -1,
              difficulty: int = -1, gym_reset_return_info: Optional[bool] = None,
              thread_affinity_offset: int = -1, zero_discount_on_life_loss: bool = False,
              use_inter_area_resize: bool = True, max_num_players: int = 1,
              render_mode: Optional[str] = None, protocol: Optional[str] = None,
              **other: Any) -> EnvPoolSpec:
    """EnvPool's ``make_spec``: the options of :func:`make`, checked, as an :class:`EnvPoolSpec`
    (``.config``, ``.observation_space``, ``.action_space``, ``.state_array_spec``,
    ``.action_array_spec``, ``.observation_spec()``, ...). Starts no game.

    Parameters
    ----------
    task_id : str or sequence of str
        ``"Breakout-v5"`` (any name :func:`fastatari.core.games.resolve_game` accepts), or one name
        per env (``num_envs`` of them, a fastatari extension): env ``i`` plays ``task_id[i]``
        (games whose action sets differ need ``full_action_space=True``; see
        :func:`fastatari.make_vec`). ``env.games`` lists the ROM of each env.
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
        Kept in the config (None: True, EnvPool's default); see :func:`make`.
    zero_discount_on_life_loss : bool
        The dm_env API's ``discount`` is 0 on a step that changes the lives, as in EnvPool.
    thread_affinity_offset
        Accepted and kept in the config; processes are not pinned.
    use_inter_area_resize, max_num_players, render_mode
        Only their defaults (True, 1, None).
    protocol : str, optional
        A named protocol (``"machado2018"``, ``"dqn_nature:eval"``, ...;
        :mod:`fastatari.core.protocols`): its options, in EnvPool's names, replace the defaults
        above, and the options given beside it override them (see the module docstring).
    **other
        Any other name raises ``TypeError``.

    Raises
    ------
    TypeError
        For options EnvPool's Atari envs do not have, or a value of the wrong type (a bool
        option is a bool, never read for its truthiness), as EnvPool's config raises.
    ValueError
        For an option value fastatari cannot honour, or a bad value; an unknown ``protocol``,
        or one with an option EnvPool's options cannot express.
    InvalidSetting
        A ``mode`` or ``difficulty`` the game does not have (a ``RuntimeError``, as EnvPool's,
        and a ``ValueError``).
    """
    if other:
        raise TypeError(f"unknown EnvPool option(s) for fastatari.envpool.make: "
                        f"{', '.join(sorted(other))}")
    _check_types(dict(
        num_envs=num_envs, batch_size=batch_size, num_threads=num_threads,
        episodic_life=episodic_life, reward_clip=reward_clip, noop_max=noop_max,
        stack_num=stack_num, img_height=img_height, img_width=img_width, gray_scale=gray_scale,
        frame_skip=frame_skip, repeat_action_probability=repeat_action_probability,
        use_fire_reset=use_fire_reset, max_episode_steps=max_episode_steps,
        full_action_space=full_action_space, mode=mode, difficulty=difficulty,
        gym_reset_return_info=gym_reset_return_info,
        thread_affinity_offset=thread_affinity_offset,
        zero_discount_on_life_loss=zero_discount_on_life_loss,
        use_inter_area_resize=use_inter_area_resize, max_num_players=max_num_players))
    given = {"use_inter_area_resize": use_inter_area_resize,
             "max_num_players": max_num_players, "render_mode": render_mode}
    for name, value in given.items():
        if value != _FIXED[name]:
            raise ValueError(f"fastatari.envpool.make supports only {name}={_FIXED[name]!r}, "
                             f"got {value!r}")
    num_envs = validate.check_int("num_envs", num_envs, 1)
    batch_size = validate.check_int("batch_size", batch_size or num_envs, 1, num_envs)
    num_threads = validate.check_int("num_threads", num_threads or 0, 0)
    max_episode_steps = validate.check_int("max_episode_steps", max_episode_steps, 1)
    frame_skip = validate.check_int("frame_skip", frame_skip, 1)
    img_height = validate.check_int("img_height", img_height, 1, MAX_SIDE)
    img_width = validate.check_int("img_width", img_width, 1, MAX_SIDE)
    stack_num = validate.check_int("stack_num", stack_num, 1)
    noop_max = validate.check_int("noop_max", noop_max, 0)
    config_seed: Optional[int]
    if isinstance(seed, (list, tuple, np.ndarray)):
        config_seed, env_seed = 0, list(validate.check_seeds(seed, num_envs))
    else:
        config_seed, env_seed = validate.check_seed(seed), []
    if isinstance(task_id, str):
        roms: Tuple[str, ...] = (resolve_game(task_id),)
    elif isinstance(task_id, collections.abc.Sequence):
        roms = tuple(resolve_game(t) for t in task_id)
    else:
        raise TypeError(f"task_id must be a name or a sequence of num_envs names, got "
                        f"{task_id!r}")
    if len(roms) not in (1, num_envs):
        raise ValueError(f"task_id must name one game per env: {len(roms)} names for "
                         f"num_envs={num_envs}")
    config = Config(
        num_envs=num_envs, batch_size=batch_size, num_threads=num_threads,
        max_num_players=1, thread_affinity_offset=thread_affinity_offset,
        base_path=_rom_dir(roms[0]), seed=config_seed, env_seed=env_seed,
        gym_reset_return_info=True if gym_reset_return_info is None else gym_reset_return_info,
        max_episode_steps=max_episode_steps, stack_num=stack_num, frame_skip=frame_skip,
        noop_max=noop_max, zero_discount_on_life_loss=zero_discount_on_life_loss,
        episodic_life=episodic_life, reward_clip=reward_clip,
        use_fire_reset=use_fire_reset, img_height=img_height, img_width=img_width,
        task=roms[0] if len(roms) == 1 else roms, mode=mode, difficulty=difficulty,
        full_action_space=full_action_space,
        repeat_action_probability=repeat_action_probability,
        use_inter_area_resize=True, gray_scale=gray_scale)
    try:
        plan = _plan(config)
    except EnlargedScreen as error:  # in EnvPool's names
        raise ValueError(error.describe(f"img_width={img_width}, img_height={img_height}")
                         ) from None
    except UnavailableSetting as error:  # EnvPool's type: ALE's RuntimeError
        raise InvalidSetting(str(error)) from None
    return EnvPoolSpec(config, plan)


def _plan(config: Config) -> VectorPlan:
    """The vector env's plan of ``config``: fastatari's own checks of the games and options
    (screen size, action sets, modes, ...), in fastatari's names."""
    return plan_vec(config.task, config.num_envs,
                    num_workers=min(config.num_threads, config.num_envs) or None,
                    batch_size=config.batch_size, **_vector_options(config))


def _vector_options(config: Config) -> Dict[str, Any]:
    """The :func:`fastatari.make_vec` options that play ``config``'s games as EnvPool does."""
    roms = (config.task,) if isinstance(config.task, str) else config.task
    sets = [action_names(rom, config.full_action_space) for rom in dict.fromkeys(roms)]
    # EnvPool's reset plays raw NOOP frames and presses FIRE when FIRE is in the action set.
    # fastatari's games play action 0 and press action 1, so they refuse games where those
    # are not NOOP and FIRE (Backgammon, VideoCheckers: FIRE is action 0): those get no no-op
    # starts and no fire reset here (see the README's table of differences).
    noop_first = all(names[0] == "NOOP" for names in sets)
    fire_second = all(names[1:2] == ("FIRE",) for names in sets)
    return dict(
        frame_skip=config.frame_skip, screen_size=(config.img_width, config.img_height),
        grayscale_obs=config.gray_scale, noop_max=config.noop_max if noop_first else 0,
        stack_size=config.stack_num, repeat_action_probability=config.repeat_action_probability,
        full_action_space=config.full_action_space, max_num_frames_per_episode=None,
        clip_rewards=config.reward_clip, episodic_life=config.episodic_life,
        fire_reset=bool(config.use_fire_reset) and fire_second,
        mode=None if config.mode == -1 else config.mode,
        difficulty=None if config.difficulty == -1 else config.difficulty,
        ram_info=True,  # EnvPool >= 1.0 reports info["ram"]
    )


def _rom_dir(rom: str) -> str:
    return os.path.dirname(rom_path(rom))
