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
``env_type="gym"`` gives EnvPool 0.x's gym API (``fastatari.envpool_gym``, needs the ``gym``
package): with gym < 0.26, as CleanRL's EnvPool scripts use it, ``reset()`` returns the
observations only and ``step()`` returns ``(obs, reward, done, info)`` with
``info["TimeLimit.truncated"]``; with gym >= 0.26 both follow gymnasium's shapes, as in EnvPool.
``env.xla()`` returns EnvPool's ``(handle, recv, send, step)`` for use inside ``jax.jit``
(``fastatari._xla``, needs ``jax``).

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
"""

from __future__ import annotations

import collections
import collections.abc
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

from fastatari import validate
from fastatari.game import action_names
from fastatari.games import resolve_game
from fastatari.options import MAX_SIDE
from fastatari.schema import RAM_SIZE
from fastatari.vector import AtariVectorEnv, make_vec

__all__ = ["Config", "EnvPoolAtari", "EnvPoolSpec", "make"]

#: EnvPool 1.2.x's Atari configuration, field for field: ``env.spec.config``.
Config = collections.namedtuple("Config", [
    "num_envs", "batch_size", "num_threads", "max_num_players", "thread_affinity_offset",
    "base_path", "seed", "env_seed", "gym_reset_return_info", "max_episode_steps", "stack_num",
    "frame_skip", "noop_max", "zero_discount_on_life_loss", "episodic_life", "reward_clip",
    "use_fire_reset", "img_height", "img_width", "task", "mode", "difficulty",
    "full_action_space", "repeat_action_probability", "use_inter_area_resize", "gray_scale"])

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
         **other: Any) -> "_EnvPool":
    """Create ``num_envs`` Atari games with EnvPool's options and API.

    Parameters
    ----------
    task_id : str or sequence of str
        ``"Breakout-v5"`` (any name :func:`fastatari.games.resolve_game` accepts), or one name
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
    EnvPoolAtari, or the gym class of ``fastatari.envpool_gym`` for ``env_type="gym"``.

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
        from fastatari.envpool_gym import gym_env_class
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


class EnvPoolSpec:
    """EnvPool's ``env.spec``: the options as :attr:`config` (a :data:`Config` namedtuple) and
    one env's spaces."""

    reward_threshold = None

    def __init__(self, config: Config, observation_space: Any, action_space: Any) -> None:
        self.config = config
        self.observation_space = observation_space
        self.action_space = action_space

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.config._asdict().items())
        return f"AtariEnvSpec({fields})"


class _Batch:
    """Results of some envs, column by column (each of length ``len(ids)``), held until
    ``recv`` hands them out in EnvPool's shape."""

    def __init__(self, **columns: np.ndarray) -> None:
        self.columns = columns

    @property
    def ids(self) -> np.ndarray:
        return self.columns["ids"]

    @staticmethod
    def concat(batches: List["_Batch"]) -> "_Batch":
        if len(batches) == 1:
            return batches[0]
        return _Batch(**{k: np.concatenate([b.columns[k] for b in batches])
                         for k in batches[0].columns})

    def take(self, rows: Any) -> "_Batch":
        return _Batch(**{k: v[rows] for k, v in self.columns.items()})

    def split(self, n: int) -> Tuple["_Batch", "_Batch"]:
        return self.take(slice(None, n)), self.take(slice(n, None))

    def drop(self, ids: np.ndarray) -> "_Batch":
        return self.take(~np.isin(self.ids, ids))


def _end_episodes(vec: AtariVectorEnv, ids: np.ndarray) -> None:
    """Make the vector env reset ``ids`` at their next step, as after an episode end.

    The step limit is counted here, so the vector env does not know these episodes ended. Its
    next-step autoreset keys on the per-env flag it sets from ``terminated | truncated``; the
    envs are idle (just received), so their next command is a full reset (no life-loss
    continuation is pending for them: their last step did not end an episode).
    """
    vec.end_episodes(ids)


class _EnvPool:
    """EnvPool's API over a :class:`fastatari.AtariVectorEnv`, apart from the result shapes,
    which the API classes (:class:`EnvPoolAtari`, the gym class) give.

    ``info``: ``env_id`` (int32), ``players`` (``{"env_id": ...}``), ``lives`` (int32),
    ``reward`` (float32, the raw reward before ``reward_clip``), ``terminated`` (int32, 1 when
    the game itself is over, not at a life loss), ``elapsed_step`` (int32, agent steps since
    the game's reset; a reset that continues the game after a life loss keeps counting), and
    ``ram`` (uint8, 128 per env).

    Parameters
    ----------
    vec : AtariVectorEnv
        The games; owned (closed by :meth:`close`).
    seed : int or sequence of int
        Seeds for the first reset.
    config : Config
        The EnvPool options (``spec.config``; ``config`` is the same as a dict, as in EnvPool).
    task_id : str or sequence of str
        The name(s) given to :func:`make`.
    """

    def __init__(self, vec: AtariVectorEnv, seed: int | Sequence[int], config: Config,
                 task_id: str | Sequence[str]) -> None:
        self.vec = vec
        self.task_id = task_id
        self.games = vec.games  # the ROM of each env (fastatari's)
        self.num_envs = vec.num_envs
        self.batch_size = vec.batch_size
        self.is_vector_env = True
        self._rgb = not config.gray_scale
        shape = (config.stack_num * (3 if self._rgb else 1), config.img_height, config.img_width)
        self.observation_space = self._spaces.Box(0, 255, shape, np.uint8)
        self.action_space = self._spaces.Discrete(int(vec.single_action_space.n))
        self.single_observation_space = self.observation_space
        self.single_action_space = self.action_space
        self.spec = EnvPoolSpec(config, self.observation_space, self.action_space)
        self.config = config._asdict()
        self.metadata = dict(vec.metadata)
        self.render_mode = None
        self.closed = False
        self._seed: Optional[int | Sequence[int]] = seed  # used by the first reset only
        self._episodic = vec.options.episodic_life
        self._clip = vec.options.clip_rewards
        self._max_steps = config.max_episode_steps
        n = vec.num_envs
        self._all_ids = np.arange(n, dtype=np.int32)
        self._elapsed = np.zeros(n, np.int64)
        self._ended = np.zeros(n, bool)  # the env's last result ended an episode
        self._continues = np.zeros(n, bool)  # ... by a life loss: its next reset continues
        self._in_flight = 0  # envs sent to the vector env and not yet received from it
        self._queue: List[_Batch] = []  # received, not yet returned by recv()
        # When each env was last sent or reset: a synchronous pool (batch_size == num_envs)
        # returns its results in that order, as EnvPool does; an asynchronous one in the order
        # the envs finish.
        self._sent_at = np.zeros(n, np.int64)
        self._sends = 0

    # -- what the API classes give ---------------------------------------------------------------
    _spaces: Any = gymnasium.spaces  # the module of the API's Box and Discrete

    def _step_result(self, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                     truncated: np.ndarray, info: Dict[str, Any]) -> Any:
        raise NotImplementedError

    def _reset_result(self, obs: np.ndarray, info: Dict[str, Any]) -> Any:
        raise NotImplementedError

    # -- EnvPool's small API -------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of envs."""
        return self.vec.num_envs

    @property
    def is_async(self) -> bool:
        """Whether :meth:`recv` returns fewer envs than there are (``batch_size < num_envs``)."""
        return self.batch_size != self.vec.num_envs

    @property
    def all_env_ids(self) -> np.ndarray:
        """``0 .. num_envs - 1`` as int32."""
        return self._all_ids

    def xla(self) -> Tuple[np.ndarray, Any, Any, Any]:
        """EnvPool's ``handle, recv, send, step`` for use inside ``jax.jit`` (needs jax).

        ``send(handle, action, env_id=None) -> handle``, ``recv(handle) -> (handle, result)``
        and ``step(handle, action, env_id=None) -> (handle, result)``, where ``result`` is what
        :meth:`recv` returns. They run :meth:`send` and :meth:`recv` on the host through
        ``jax.experimental.io_callback(ordered=True)``, so thread the handle through the
        computation (``jax.lax.scan`` carries, jitted loops) as with EnvPool.
        """
        from fastatari._xla import make_xla
        return make_xla(self)

    # -- bookkeeping -----------------------------------------------------------------------------
    def _queued(self) -> int:
        return sum(b.ids.size for b in self._queue)

    def _mark_sent(self, ids: np.ndarray) -> None:
        self._sent_at[ids] = self._sends + np.arange(ids.size)
        self._sends += ids.size

    def _from_step(self, ids: np.ndarray, obs, reward, terminated, truncated,
                   info: Dict[str, Any]) -> _Batch:
        """Turn a vector-env step result into EnvPool's values, updating the per-env state."""
        # An env whose last result ended an episode was reset by this call (its action was
        # ignored): the count restarts, or stays put if the reset continues the game.
        autoreset = self._ended[ids]
        kept = np.where(self._continues[ids], self._elapsed[ids], 0)
        elapsed = np.where(autoreset, kept, self._elapsed[ids] + 1)
        self._elapsed[ids] = elapsed
        raw = info["raw_reward"] if self._clip else reward
        life_loss = np.zeros(ids.size, bool)
        if self._episodic:
            life_loss = terminated & ~info["game_over"]
        game_ended = terminated & ~life_loss
        # EnvPool's time limit: the max_episode_steps-th agent step since the game's reset is
        # truncated (also when the game or a life ended on it); the next reset starts a game.
        at_limit = ~autoreset & (elapsed >= self._max_steps)
        vec_ended = terminated | truncated
        if at_limit.any():
            unseen = at_limit & ~vec_ended
            if unseen.any():
                _end_episodes(self.vec, ids[unseen])
            truncated = truncated | at_limit
            terminated = terminated & ~at_limit
        self._ended[ids] = terminated | truncated
        self._continues[ids] = life_loss & ~at_limit
        columns = dict(ids=ids, obs=obs, reward=reward, terminated=terminated,
                       truncated=truncated, lives=info["lives"], raw_reward=raw,
                       game_ended=game_ended, elapsed=elapsed, ram=info["ram"])
        return _Batch(**columns)

    def _from_reset(self, ids: np.ndarray, obs: np.ndarray, info: Dict[str, Any],
                    seeded: bool) -> _Batch:
        continues = self._continues[ids] & ~seeded
        self._elapsed[ids] = np.where(continues, self._elapsed[ids], 0)
        self._ended[ids] = False
        self._continues[ids] = False
        zeros = np.zeros(ids.size)
        no = np.zeros(ids.size, bool)
        columns = dict(ids=ids, obs=obs[ids], reward=zeros, terminated=no, truncated=no.copy(),
                       lives=info["lives"][ids], raw_reward=zeros.copy(), game_ended=no.copy(),
                       elapsed=self._elapsed[ids].copy(), ram=info["ram"][ids])
        return _Batch(**columns)

    def _empty(self, n: int) -> _Batch:
        """``n`` rows of zeros: the shapes and dtypes of a result (for ``xla()``)."""
        columns = dict(ids=np.zeros(n, np.int64),
                       obs=np.zeros((n,) + self.vec.single_observation_space.shape, np.uint8),
                       reward=np.zeros(n), terminated=np.zeros(n, bool),
                       truncated=np.zeros(n, bool), lives=np.zeros(n, np.int64),
                       raw_reward=np.zeros(n), game_ended=np.zeros(n, bool),
                       elapsed=np.zeros(n, np.int64), ram=np.zeros((n, RAM_SIZE), np.uint8))
        return _Batch(**columns)

    def _arrays(self, batch: _Batch) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                               Dict[str, Any]]:
        """EnvPool's arrays and dtypes for ``batch``: obs, reward, terminated, truncated, info."""
        c = batch.columns
        ids = c["ids"].astype(np.int32)
        info: Dict[str, Any] = {
            "env_id": ids,
            "players": {"env_id": ids.copy()},
            "lives": c["lives"].astype(np.int32),
            "reward": c["raw_reward"].astype(np.float32),
            "terminated": c["game_ended"].astype(np.int32),
            "ram": c["ram"],
            "elapsed_step": c["elapsed"].astype(np.int32),
        }
        obs = c["obs"]
        if self._rgb:  # (k, H, W, 3) frames -> EnvPool's (3k, H, W): each frame channel-first
            n, k, h, w, _ = obs.shape
            obs = obs.transpose(0, 1, 4, 2, 3).reshape(n, 3 * k, h, w)
        return obs, c["reward"].astype(np.float32), c["terminated"], c["truncated"], info

    def _result_template(self) -> Any:
        """A result of ``batch_size`` envs (zeros), as :meth:`recv` returns one."""
        return self._step_result(*self._arrays(self._empty(self.batch_size)))

    def _env_ids(self, env_id: Any) -> np.ndarray:
        """One int or an array of distinct ints in range, as EnvPool takes them."""
        return validate.check_env_ids(env_id, self.vec.num_envs)

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError(f"this {type(self).__name__} is closed")

    # -- EnvPool's API ---------------------------------------------------------------------------
    def async_reset(self) -> None:
        """Reset every env; their first observations come back through :meth:`recv`."""
        self._reset_into_queue(np.arange(self.vec.num_envs), None)

    def reset(self, env_id: Any = None, *, seed: int | Sequence[int] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Any:
        """Reset ``env_id`` (default: all) and return the first ``batch_size`` of them.

        The first reset uses ``make``'s ``seed``; ``seed`` here reseeds (env ``i`` gets
        ``seed + i``). ``options={"reset_mask": mask}`` names the envs as a bool mask instead
        of ``env_id``, as in EnvPool 1.x. As in EnvPool, envs beyond ``batch_size`` come back
        through :meth:`recv`.
        """
        if options:
            unknown = sorted(set(options) - {"reset_mask"})
            if unknown:
                raise ValueError(f"unsupported reset options: {unknown} (only 'reset_mask')")
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.vec.num_envs,) or not mask.any():
                raise ValueError(f"reset_mask must be a bool array of shape "
                                 f"({self.vec.num_envs},) selecting at least one env")
            if env_id is not None:
                raise ValueError("pass either env_id or options['reset_mask'], not both")
            env_id = np.flatnonzero(mask)
        self._reset_into_queue(self._env_ids(env_id), seed)
        obs, _, _, _, info = self._arrays(self._pop_batch())
        return self._reset_result(obs, info)

    def _reset_into_queue(self, ids: np.ndarray, seed: Any) -> None:
        self._check_open()
        if self._in_flight:
            raise AlreadyPendingCallError("reset while steps are in flight: recv() them first",
                                          "reset")
        if seed is None:
            seed = self._seed
        self._seed = None
        self._mark_sent(ids)
        mask = np.zeros(self.vec.num_envs, bool)
        mask[ids] = True
        options = None if mask.all() else {"reset_mask": mask}
        obs, info = self.vec.reset(seed=seed, options=options)
        ids = np.flatnonzero(mask)
        self._queue = [b.drop(ids) for b in self._queue]
        self._queue.insert(0, self._from_reset(ids, obs, info, seed is not None))
        self._queue = [b for b in self._queue if b.ids.size]

    def step(self, action: Any, env_id: Any = None) -> Any:
        """``send(action, env_id)`` then ``recv()``: returns ``batch_size`` envs."""
        self._check_open()
        if (env_id is None and self.batch_size == self.vec.num_envs and not self._in_flight
                and not self._queue):
            # synchronous fast path: one batched step, already in env order
            ids = np.arange(self.vec.num_envs)
            batch = self._from_step(ids, *self.vec.step(np.asarray(action)))
            return self._step_result(*self._arrays(batch))
        self.send(action, env_id)
        return self.recv()

    def send(self, action: Any, env_id: Any = None) -> None:
        """Start stepping ``env_id`` (default: all) with ``action``; :meth:`recv` collects."""
        self._check_open()
        ids = self._env_ids(env_id)
        for batch in self._queue:
            waiting = np.isin(ids, batch.ids)
            if waiting.any():
                raise AlreadyPendingCallError(f"env {int(ids[np.argmax(waiting)])} has a result "
                                              f"that recv() has not returned yet", "send")
        self.vec.send(np.asarray(action), ids)
        self._in_flight += ids.size
        self._mark_sent(ids)

    def recv(self) -> Any:
        """The first ``batch_size`` envs to finish (fewer only if fewer are pending)."""
        return self._step_result(*self._arrays(self._pop_batch()))

    def _pop_batch(self) -> _Batch:
        self._check_open()
        if not self._queue and not self._in_flight:
            raise NoAsyncCallError("recv() with nothing pending: call send() or async_reset() "
                                   "first", "recv")
        while self._queued() < self.batch_size and self._in_flight:
            obs, reward, terminated, truncated, info = self.vec.recv()
            ids = info["env_id"]
            self._in_flight -= ids.size
            self._queue.append(self._from_step(ids, obs, reward, terminated, truncated, info))
        batch = _Batch.concat(self._queue)
        if not self.is_async:
            batch = batch.take(np.argsort(self._sent_at[batch.ids], kind="stable"))
        head, tail = batch.split(self.batch_size)
        self._queue = [tail] if tail.ids.size else []
        return head

    def close(self, **kwargs: Any) -> None:
        """Stop the worker processes. Safe to call more than once."""
        if not self.closed:
            self.closed = True
            self.vec.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.task_id!r}, num_envs={self.vec.num_envs}, "
                f"batch_size={self.batch_size})")

    __str__ = __repr__


class EnvPoolAtari(_EnvPool, gymnasium.vector.VectorEnv, gymnasium.Env):
    """EnvPool's gymnasium API (``env_type="gymnasium"``) over a
    :class:`fastatari.AtariVectorEnv` (see :func:`make`).

    Like EnvPool's class it is both a ``VectorEnv`` and a ``gymnasium.Env``, so CleanRL's
    ``gymnasium.Wrapper`` subclasses accept it. As in EnvPool, :attr:`observation_space` and
    :attr:`action_space` describe one env (``single_observation_space``/``single_action_space``
    are the same objects), and every result is a batch with its env ids in ``info["env_id"]``:
    ``reset()`` gives ``(obs, info)``; ``step()`` and ``recv()`` give ``(obs, reward,
    terminated, truncated, info)``.
    """

    def _step_result(self, obs, reward, terminated, truncated, info):
        return obs, reward, terminated, truncated, info

    def _reset_result(self, obs, info):
        return obs, info
