"""An EnvPool-style front end: ``fastatari.envpool.make`` for scripts written for EnvPool.

CleanRL-style training scripts call ``envpool.make("Breakout-v5", env_type="gymnasium", ...)``
and use EnvPool's API: ``reset()``, ``step(actions, env_id)``, ``send``/``recv``,
``async_reset()``, single-env ``observation_space``/``action_space`` and the ``info`` keys
``env_id``, ``lives``, ``reward``, ``terminated`` and ``elapsed_step``. :func:`make` takes
EnvPool's option names and defaults (EnvPool 1.2.x, ``envpool/atari``) and runs the games on a
:class:`fastatari.AtariVectorEnv`, so swapping the import is the whole change::

    from fastatari import envpool
    envs = envpool.make("Breakout-v5", env_type="gymnasium", num_envs=8, episodic_life=True,
                        reward_clip=True)

Option mapping (EnvPool -> fastatari): ``num_threads`` -> ``num_workers`` (processes, at most
``num_envs``), ``stack_num`` -> ``stack_size``, ``img_width``/``img_height`` -> ``screen_size``,
``gray_scale`` -> ``grayscale_obs``, ``reward_clip`` -> ``clip_rewards``,
``use_fire_reset`` -> ``fire_reset`` (only for games whose action 1 is FIRE; EnvPool silently
skips the others, and so does this), ``max_episode_steps`` -> ``max_num_frames_per_episode =
max_episode_steps * frame_skip``, ``mode``/``difficulty`` ``-1`` -> None (the ROM's default).
``repeat_action_probability`` defaults to 0, as in EnvPool (fastatari's own default is 0.25).

Where the semantics differ from EnvPool
---------------------------------------
* **Random streams.** Env ``i`` is seeded with ``seed + i`` (or ``seed[i]``) at the first reset,
  as in EnvPool, but seeds go through ale-py's seeding, so a seed gives different games than in
  EnvPool. Two ``make`` calls with the same seed give identical observations.
* **No-op starts.** EnvPool plays ``U{0..noop_max-1} + 1 - use_fire_reset`` no-op frames, then
  one FIRE frame: 1 to ``noop_max`` reset frames in all. fastatari plays ``U{1..noop_max}``
  no-op frames (gymnasium's ``AtariPreprocessing``), then the FIRE frame: 2 to ``noop_max + 1``
  with fire reset.
* **Episodic life.** In both, a lost life ends the episode (``terminated=True``,
  ``info["terminated"] == 0``) and the next reset continues the same game. EnvPool checks lives
  after the whole frame skip and continues with no-ops, FIRE and the new frame pushed onto the
  old stack. fastatari ends the step on the frame the life is lost and continues with no
  no-ops, no FIRE (the agent must press FIRE itself), and the current screen in every stack
  slot.
* **Time limit.** EnvPool truncates at exactly ``max_episode_steps`` agent steps. fastatari
  truncates when ALE's episode frame counter reaches ``max_episode_steps * frame_skip``; that
  counter also counts the reset's no-op and FIRE frames, so a truncated game has from
  ``max_episode_steps - ceil((noop_max + 1) / frame_skip)`` to ``max_episode_steps`` steps.
  ``info["elapsed_step"]`` counts agent steps since the game's reset in both.
* **RGB layout.** With ``gray_scale=False`` EnvPool returns ``(3 * stack_num, H, W)`` (each frame
  CHW). fastatari returns ``(stack_num, H, W, 3)``;
  ``obs.transpose(0, 1, 4, 2, 3).reshape(n, -1, H, W)`` gives EnvPool's layout.
* **Same in both:** gray is ALE's palette luminance; the max over the last two frames is taken
  in gray space; INTER_AREA resizing; the stack repeats the first frame at a new game; the step
  after an episode end resets that env and ignores its action (reward 0, not counted in
  ``elapsed_step``).
* **Terminal observation.** When a game ends before the last two frames of a step, fastatari
  builds the observation from the previous frames, as gymnasium does; EnvPool keeps the
  previous stack's frame.
* **info.** No ``ram`` key. ``env_id`` order within a batch follows finishing order in both; in
  synchronous use it is ``0..num_envs-1``.
* **Processes, not threads.** ``num_threads`` sets worker processes; ``thread_affinity_offset``
  and ``zero_discount_on_life_loss`` (dm_env only) are accepted and ignored. Options fastatari
  cannot honour (``use_inter_area_resize=False``, ``max_num_players != 1``, ``render_mode``)
  raise ``ValueError``; unknown options raise ``TypeError``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

from fastatari import validate
from fastatari.game import action_names
from fastatari.games import resolve_game
from fastatari.options import MAX_SIDE
from fastatari.vector import AtariVectorEnv, make_vec

__all__ = ["EnvPoolAtari", "make"]

# EnvPool options fastatari has no use for: name -> the only value it accepts (None: any).
_IGNORED = {"thread_affinity_offset": None, "zero_discount_on_life_loss": None}
_FIXED = {"use_inter_area_resize": True, "max_num_players": 1, "gym_reset_return_info": True,
          "render_mode": None}

StepResult = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]


def make(task_id: str, env_type: str = "gymnasium", num_envs: int = 1,
         batch_size: Optional[int] = None, num_threads: Optional[int] = None,
         seed: int | Sequence[int] = 42, episodic_life: bool = False, reward_clip: bool = False,
         noop_max: int = 30, stack_num: int = 4, img_height: int = 84, img_width: int = 84,
         gray_scale: bool = True, frame_skip: int = 4, repeat_action_probability: float = 0.0,
         use_fire_reset: bool = True, max_episode_steps: int = 27000,
         full_action_space: bool = False, mode: int = -1, difficulty: int = -1,
         **other: Any) -> "EnvPoolAtari":
    """Create ``num_envs`` Atari games with EnvPool's options and API.

    Parameters
    ----------
    task_id : str
        ``"Breakout-v5"`` (any name :func:`fastatari.games.resolve_game` accepts).
    env_type : {"gymnasium"}
        The only API offered; EnvPool's ``"gym"`` and ``"dm"`` raise ``ValueError``.
    num_envs : int
    batch_size : int, optional
        Envs :meth:`EnvPoolAtari.recv` returns (None or 0: ``num_envs``).
    num_threads : int, optional
        Worker processes (None or 0: fastatari's default); capped at ``num_envs``.
    seed : int or sequence of int
        Env ``i`` gets ``seed + i`` (or ``seed[i]``) at the first reset.
    episodic_life, reward_clip, noop_max, stack_num, img_height, img_width, gray_scale, \
frame_skip, repeat_action_probability, use_fire_reset, max_episode_steps, full_action_space, \
mode, difficulty
        EnvPool's Atari options, with EnvPool's defaults (see the module docstring for how
        each maps and where the semantics differ).
    **other
        ``thread_affinity_offset`` and ``zero_discount_on_life_loss`` (ignored);
        ``use_inter_area_resize``, ``max_num_players``, ``gym_reset_return_info`` and
        ``render_mode`` at their defaults only.

    Returns
    -------
    EnvPoolAtari

    Raises
    ------
    TypeError
        For options EnvPool's Atari envs do not have.
    ValueError
        For another ``env_type``, an option value fastatari cannot honour, or a bad value.
    """
    if env_type != "gymnasium":
        raise ValueError(f"env_type must be 'gymnasium' (the only type fastatari.envpool "
                         f"supports), got {env_type!r}")
    unknown = sorted(set(other) - set(_IGNORED) - set(_FIXED))
    if unknown:
        raise TypeError(f"unknown EnvPool option(s) for fastatari.envpool.make: "
                        f"{', '.join(unknown)}")
    for name, value in other.items():
        if name in _FIXED and value != _FIXED[name]:
            raise ValueError(f"fastatari.envpool.make supports only {name}={_FIXED[name]!r}, "
                             f"got {value!r}")
    max_episode_steps = validate.check_int("max_episode_steps", max_episode_steps, 1)
    frame_skip = validate.check_int("frame_skip", frame_skip, 1)
    img_height = validate.check_int("img_height", img_height, 1, MAX_SIDE)
    img_width = validate.check_int("img_width", img_width, 1, MAX_SIDE)
    if isinstance(seed, (list, tuple, np.ndarray)):
        validate.check_seeds(seed, num_envs)
    else:
        validate.check_seed(seed)
    rom = resolve_game(task_id)
    # EnvPool allows more threads than envs; fastatari's workers each need an env.
    num_workers = min(num_threads, num_envs) if num_threads else None
    options = dict(
        frame_skip=frame_skip, screen_size=(img_width, img_height), grayscale_obs=gray_scale,
        noop_max=noop_max, stack_size=stack_num,
        repeat_action_probability=repeat_action_probability,
        full_action_space=full_action_space,
        max_num_frames_per_episode=int(max_episode_steps) * int(frame_skip),
        clip_rewards=reward_clip, episodic_life=episodic_life,
        fire_reset=bool(use_fire_reset) and action_names(rom, full_action_space)[1:2] == ("FIRE",),
        mode=None if mode == -1 else mode, difficulty=None if difficulty == -1 else difficulty,
    )
    vec = make_vec(rom, num_envs, num_workers=num_workers, batch_size=batch_size or None,
                   **options)
    config = dict(task_id=task_id, env_type=env_type, num_envs=num_envs,
                  batch_size=vec.batch_size, num_threads=vec.num_workers, seed=seed,
                  episodic_life=episodic_life, reward_clip=reward_clip, noop_max=noop_max,
                  stack_num=stack_num, img_height=img_height, img_width=img_width,
                  gray_scale=gray_scale, frame_skip=frame_skip,
                  repeat_action_probability=repeat_action_probability,
                  use_fire_reset=use_fire_reset, max_episode_steps=max_episode_steps,
                  full_action_space=full_action_space, mode=mode, difficulty=difficulty)
    return EnvPoolAtari(vec, seed, config)


class _Batch:
    """Results of some envs, column by column (each of length ``len(ids)``), held until
    :meth:`EnvPoolAtari.recv` hands them out in EnvPool's shape."""

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

    def result(self) -> StepResult:
        c = self.columns
        ids = c["ids"].astype(np.int32)
        info = {
            "env_id": ids,
            "players": {"env_id": ids.copy()},
            "lives": c["lives"].astype(np.int32),
            "reward": c["raw_reward"].astype(np.float32),
            "terminated": c["game_ended"].astype(np.int32),
            "elapsed_step": c["elapsed"].astype(np.int32),
        }
        return (c["obs"], c["reward"].astype(np.float32), c["terminated"], c["truncated"], info)


class EnvPoolAtari(gymnasium.vector.VectorEnv, gymnasium.Env):
    """EnvPool's gymnasium API over a :class:`fastatari.AtariVectorEnv` (see :func:`make`).

    Like EnvPool's class it is both a ``VectorEnv`` and a ``gymnasium.Env``, so CleanRL's
    ``gymnasium.Wrapper`` subclasses accept it.

    As in EnvPool, :attr:`observation_space` and :attr:`action_space` describe one env
    (``single_observation_space``/``single_action_space`` are the same objects), and every
    result is a batch with its env ids in ``info["env_id"]``.

    ``info``: ``env_id`` (int32), ``players`` (``{"env_id": ...}``), ``lives`` (int32),
    ``reward`` (float32, the raw reward before ``reward_clip``), ``terminated`` (int32, 1 when
    the game itself ended, not at a life loss), ``elapsed_step`` (int32, agent steps since the
    game's reset; a reset that continues the game after a life loss keeps counting).

    Parameters
    ----------
    vec : AtariVectorEnv
        The games; owned (closed by :meth:`close`).
    seed : int or sequence of int
        Seeds for the first reset.
    config : dict
        The EnvPool options, kept as :attr:`config`.
    """

    def __init__(self, vec: AtariVectorEnv, seed: int | Sequence[int],
                 config: Dict[str, Any]) -> None:
        self.vec = vec
        self.config = config
        self.num_envs = vec.num_envs
        self.batch_size = vec.batch_size
        self.observation_space = vec.single_observation_space
        self.action_space = vec.single_action_space
        self.single_observation_space = self.observation_space
        self.single_action_space = self.action_space
        self.metadata = dict(vec.metadata)
        self.render_mode = None
        self.closed = False
        self._seed: Optional[int | Sequence[int]] = seed  # used by the first reset only
        self._episodic = vec.options.episodic_life
        self._clip = vec.options.clip_rewards
        n = vec.num_envs
        self._elapsed = np.zeros(n, np.int64)
        self._ended = np.zeros(n, bool)  # the env's last result ended an episode
        self._continues = np.zeros(n, bool)  # ... by a life loss: its next reset continues
        self._in_flight = 0  # envs sent to the vector env and not yet received from it
        self._queue: List[_Batch] = []  # received, not yet returned by recv()

    # -- bookkeeping -----------------------------------------------------------------------------
    def _queued(self) -> int:
        return sum(b.ids.size for b in self._queue)

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
        self._ended[ids] = terminated | truncated
        self._continues[ids] = life_loss
        return _Batch(ids=ids, obs=obs, reward=reward, terminated=terminated,
                      truncated=truncated, lives=info["lives"], raw_reward=raw,
                      game_ended=terminated & ~life_loss, elapsed=elapsed)

    def _from_reset(self, ids: np.ndarray, obs: np.ndarray, info: Dict[str, Any],
                    seeded: bool) -> _Batch:
        continues = self._continues[ids] & ~seeded
        self._elapsed[ids] = np.where(continues, self._elapsed[ids], 0)
        self._ended[ids] = False
        self._continues[ids] = False
        zeros = np.zeros(ids.size)
        no = np.zeros(ids.size, bool)
        return _Batch(ids=ids, obs=obs[ids], reward=zeros, terminated=no, truncated=no.copy(),
                      lives=info["lives"][ids], raw_reward=zeros.copy(), game_ended=no.copy(),
                      elapsed=self._elapsed[ids].copy())

    def _env_ids(self, env_id: Any) -> np.ndarray:
        """One int or an array of distinct ints in range, as EnvPool takes them."""
        return validate.check_env_ids(env_id, self.num_envs)

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError("this EnvPoolAtari is closed")

    # -- EnvPool's API ---------------------------------------------------------------------------
    def async_reset(self) -> None:
        """Reset every env; their first observations come back through :meth:`recv`."""
        self._reset_into_queue(np.arange(self.num_envs), None)

    def reset(self, env_id: Any = None, *, seed: int | Sequence[int] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset ``env_id`` (default: all) and return the first ``batch_size`` of them.

        The first reset uses ``make``'s ``seed``; ``seed`` here reseeds (env ``i`` gets
        ``seed + i``). As in EnvPool, envs beyond ``batch_size`` come back through
        :meth:`recv`. ``options`` is accepted for EnvPool's signature and ignored.
        """
        self._reset_into_queue(self._env_ids(env_id), seed)
        obs, _, _, _, info = self.recv()
        return obs, info

    def _reset_into_queue(self, ids: np.ndarray, seed: Any) -> None:
        self._check_open()
        if self._in_flight:
            raise AlreadyPendingCallError("reset while steps are in flight: recv() them first",
                                          "reset")
        if seed is None:
            seed = self._seed
        self._seed = None
        mask = np.zeros(self.num_envs, bool)
        mask[ids] = True
        options = None if mask.all() else {"reset_mask": mask}
        obs, info = self.vec.reset(seed=seed, options=options)
        ids = np.flatnonzero(mask)
        self._queue = [b.drop(ids) for b in self._queue]
        self._queue.insert(0, self._from_reset(ids, obs, info, seed is not None))
        self._queue = [b for b in self._queue if b.ids.size]

    def step(self, action: Any, env_id: Any = None) -> StepResult:
        """``send(action, env_id)`` then ``recv()``: returns ``batch_size`` envs."""
        self._check_open()
        if (env_id is None and self.batch_size == self.num_envs and not self._in_flight
                and not self._queue):
            # synchronous fast path: one batched step, already in env order
            ids = np.arange(self.num_envs)
            return self._from_step(ids, *self.vec.step(action)).result()
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
        self.vec.send(action, ids)
        self._in_flight += ids.size

    def recv(self) -> StepResult:
        """The first ``batch_size`` envs to finish (fewer only if fewer are pending), as
        ``(obs, reward, terminated, truncated, info)``."""
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
        head, tail = batch.split(self.batch_size)
        self._queue = [tail] if tail.ids.size else []
        return head.result()

    def close(self, **kwargs: Any) -> None:
        """Stop the worker processes. Safe to call more than once."""
        if not self.closed:
            self.closed = True
            self.vec.close()

    def __repr__(self) -> str:
        return (f"EnvPoolAtari({self.config['task_id']!r}, num_envs={self.num_envs}, "
                f"batch_size={self.batch_size})")
