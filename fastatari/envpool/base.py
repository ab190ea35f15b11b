"""What the API classes of :mod:`fastatari.envpool` share: EnvPool's API over a
:class:`fastatari.AtariVectorEnv` (:class:`EnvPoolMixin`), and the results it holds until
``recv`` hands them out (:class:`Batch`, its columns declared once in :data:`COLUMNS`)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError

from fastatari.core import validate
from fastatari.core.schema import RAM_SIZE
from fastatari.envpool.spec import Config, EnvPoolSpec
from fastatari.envpool.xla import make_xla
from fastatari.vector import AtariVectorEnv

__all__ = ["COLUMNS", "Batch", "EnvPoolMixin"]

#: The columns of a :class:`Batch`: name -> (the dtype of its zeros, one row's shape; None for
#: the vector env's observation shape). Rows from the vector env keep its dtypes;
#: :meth:`EnvPoolMixin._arrays` casts them to EnvPool's.
COLUMNS: Dict[str, Tuple[type, Optional[Tuple[int, ...]]]] = {
    "ids": (np.int64, ()),           # env ids
    "obs": (np.uint8, None),         # the vector env's observations
    "reward": (np.float64, ()),      # after reward_clip
    "terminated": (np.bool_, ()),    # an episode ended (at a life loss with episodic_life)
    "truncated": (np.bool_, ()),     # ... cut short (max_episode_steps included)
    "lives": (np.int64, ()),
    "raw_reward": (np.float64, ()),  # before reward_clip
    "game_ended": (np.bool_, ()),    # the game itself is over
    "elapsed": (np.int64, ()),       # agent steps since the game's reset
    "ram": (np.uint8, (RAM_SIZE,)),
    "first": (np.bool_, ()),         # a reset's result (the dm_env API's FIRST step type)
    "cut": (np.bool_, ()),           # the dm_env API's discount is 0 (see _from_step)
}


class Batch:
    """Results of some envs, column by column (the :data:`COLUMNS`, each of length
    ``len(ids)``), held until ``recv`` hands them out in EnvPool's shape."""

    def __init__(self, **columns: np.ndarray) -> None:
        if columns.keys() != COLUMNS.keys():
            raise TypeError(f"a Batch has the columns {list(COLUMNS)}, got {list(columns)}")
        self.columns = columns

    @staticmethod
    def zeros(n: int, obs_shape: Tuple[int, ...], **given: np.ndarray) -> "Batch":
        """``n`` rows: the ``given`` columns, and zeros in the others (``obs_shape``: one
        observation's)."""
        zeros: Dict[str, np.ndarray] = {
            name: np.zeros((n,) + (obs_shape if row is None else row), dtype)
            for name, (dtype, row) in COLUMNS.items() if name not in given}
        return Batch(**zeros, **given)

    @property
    def ids(self) -> np.ndarray:
        return self.columns["ids"]

    @staticmethod
    def concat(batches: List["Batch"]) -> "Batch":
        if len(batches) == 1:
            return batches[0]
        return Batch(**{k: np.concatenate([b.columns[k] for b in batches])
                        for k in batches[0].columns})

    def take(self, rows: Any) -> "Batch":
        return Batch(**{k: v[rows] for k, v in self.columns.items()})

    def split(self, n: int) -> Tuple["Batch", "Batch"]:
        return self.take(slice(None, n)), self.take(slice(n, None))

    def drop(self, ids: np.ndarray) -> "Batch":
        return self.take(~np.isin(self.ids, ids))


class EnvPoolMixin:
    """EnvPool's API over a :class:`fastatari.AtariVectorEnv`, apart from the result shapes,
    which the API classes (:class:`~fastatari.envpool.EnvPoolAtari`, the gym class of
    :mod:`fastatari.envpool.gym_api`, the dm_env class of :mod:`fastatari.envpool.dm_api`)
    give through :meth:`_step_result`, :meth:`_reset_result` and :attr:`_spaces`.

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
        The name(s) given to :func:`fastatari.envpool.make`.
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
        self.spec = EnvPoolSpec(config, vec.plan, self._spaces)
        self.observation_space = self.spec.observation_space
        self.action_space = self.spec.action_space
        self.single_observation_space = self.observation_space
        self.single_action_space = self.action_space
        self.config = config._asdict()
        self.metadata = dict(vec.metadata)
        self.render_mode: Optional[str] = None
        self.closed = False
        self._seed: Optional[int | Sequence[int]] = seed  # used by the first reset only
        self._episodic = vec.options.episodic_life
        self._clip = vec.options.clip_rewards
        self._max_steps = config.max_episode_steps
        self._zero_discount_on_life_loss = bool(config.zero_discount_on_life_loss)
        n = vec.num_envs
        self._lives = np.zeros(n, np.int64)  # each env's lives in its last result
        self._all_ids = np.arange(n, dtype=np.int32)
        self._elapsed = np.zeros(n, np.int64)
        self._ended = np.zeros(n, bool)  # the env's last result ended an episode
        self._continues = np.zeros(n, bool)  # ... by a life loss: its next reset continues
        self._in_flight = 0  # envs sent to the vector env and not yet received from it
        self._queue: List[Batch] = []  # received, not yet returned by recv()
        # When each env was last sent or reset: a synchronous pool (batch_size == num_envs)
        # returns its results in that order, as EnvPool does; an asynchronous one in the order
        # the envs finish.
        self._sent_at = np.zeros(n, np.int64)
        self._sends = 0

    # -- what the API classes give ---------------------------------------------------------------
    _spaces: Any = gymnasium.spaces  # the module of the API's Box and Discrete

    def _step_result(self, batch: "Batch") -> Any:
        """What ``step()`` and ``recv()`` return for ``batch`` (see :meth:`_arrays`)."""
        raise NotImplementedError

    def _reset_result(self, batch: "Batch") -> Any:
        """What ``reset()`` returns for ``batch``."""
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
        return make_xla(self)

    # -- what xla() reads ------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Envs whose results :meth:`recv` has yet to return: received and queued here, or still
        in flight in the vector env."""
        return self._queued() + self._in_flight

    def result_template(self) -> Any:
        """A result of ``batch_size`` envs (zeros), as :meth:`recv` returns one: its shapes and
        dtypes (for ``xla()``)."""
        obs_shape = self.vec.options.observation_shape
        return self._step_result(Batch.zeros(self.batch_size, obs_shape))

    # -- bookkeeping -----------------------------------------------------------------------------
    def _queued(self) -> int:
        return sum(b.ids.size for b in self._queue)

    def _mark_sent(self, ids: np.ndarray) -> None:
        self._sent_at[ids] = self._sends + np.arange(ids.size)
        self._sends += ids.size

    def _from_step(self, ids: np.ndarray, obs, reward, terminated, truncated,
                   info: Dict[str, Any]) -> Batch:
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
                # The vector env does not know these episodes ended: its next step of them
                # resets them, as after an episode end (they are idle, just received, and
                # no life-loss continuation is pending: their last step ended no episode).
                self.vec.end_episodes(ids[unseen])
            truncated = truncated | at_limit
            terminated = terminated & ~at_limit
        done = terminated | truncated
        self._ended[ids] = done
        self._continues[ids] = life_loss & ~at_limit
        # EnvPool's dm_env discount is 0 when the episode ends and, with
        # zero_discount_on_life_loss (off by default: no work here), when the lives change
        lives, cut = info["lives"], done
        if self._zero_discount_on_life_loss:
            cut = done | (lives != self._lives[ids])
            self._lives[ids] = lives
        return Batch(ids=ids, obs=obs, reward=reward, terminated=terminated, truncated=truncated,
                     lives=lives, raw_reward=raw, game_ended=game_ended,
                     elapsed=elapsed, ram=info["ram"], first=autoreset, cut=cut)

    def _from_reset(self, ids: np.ndarray, obs: np.ndarray, info: Dict[str, Any],
                    seeded: bool) -> Batch:
        continues = self._continues[ids] & (not seeded)  # a reseeded env starts a new game
        self._elapsed[ids] = np.where(continues, self._elapsed[ids], 0)
        self._ended[ids] = False
        self._continues[ids] = False
        lives = info["lives"][ids]
        self._lives[ids] = lives
        return Batch.zeros(ids.size, obs.shape[1:], ids=ids, obs=obs[ids], lives=lives,
                           elapsed=self._elapsed[ids], ram=info["ram"][ids],
                           first=np.ones(ids.size, bool))

    def _arrays(self, batch: Batch) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
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

    def _env_ids(self, env_id: Any) -> np.ndarray:
        """One int or an array of distinct ints in range, as EnvPool takes them."""
        return validate.check_env_ids(env_id, self.vec.num_envs)

    @staticmethod
    def _action(action: Any, env_id: Any) -> Tuple[np.ndarray, Any]:
        """The actions and env ids of EnvPool's two action forms: an array (with ``env_id``),
        or a dict of int32 arrays ``{"env_id", "players.env_id", "action"}`` (``env_id``, when
        given, overrides the dict's, as in EnvPool).

        Raises ``RuntimeError`` for a dict array that is not int32, as EnvPool does. Floats
        holding whole numbers are taken as EnvPool takes them (its tests send ``np.ones(n)``);
        other floats are refused, not rounded.
        """
        if isinstance(action, dict):
            for key, value in action.items():
                dtype = np.asarray(value).dtype
                if dtype != np.int32:
                    raise RuntimeError(f'Expected dtype int32 with action "{key}", got {dtype}')
            if env_id is None:
                env_id = action.get("env_id")
            action = action["action"]
        action = np.asarray(action)
        if (action.dtype.kind == "f" and np.isfinite(action).all()
                and (action == np.floor(action)).all()):
            action = action.astype(np.int64)
        return action, env_id

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
        return self._reset_result(self._pop_batch())

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
        action, env_id = self._action(action, env_id)
        if (env_id is None and self.batch_size == self.vec.num_envs and not self._in_flight
                and not self._queue):
            # synchronous fast path: one batched step, already in env order
            ids = np.arange(self.vec.num_envs)
            return self._step_result(self._from_step(ids, *self.vec.step(action)))
        self.send(action, env_id)
        return self.recv()

    def send(self, action: Any, env_id: Any = None) -> None:
        """Start stepping ``env_id`` (default: all) with ``action``; :meth:`recv` collects."""
        self._check_open()
        action, env_id = self._action(action, env_id)
        ids = self._env_ids(env_id)
        for batch in self._queue:
            waiting = np.isin(ids, batch.ids)
            if waiting.any():
                raise AlreadyPendingCallError(f"env {int(ids[np.argmax(waiting)])} has a result "
                                              f"that recv() has not returned yet", "send")
        self.vec.send(action, ids)
        self._in_flight += ids.size
        self._mark_sent(ids)

    def recv(self) -> Any:
        """The first ``batch_size`` envs to finish (fewer only if fewer are pending)."""
        return self._step_result(self._pop_batch())

    def _pop_batch(self) -> Batch:
        self._check_open()
        if not self._queue and not self._in_flight:
            raise NoAsyncCallError("recv() with nothing pending: call send() or async_reset() "
                                   "first", "recv")
        while self._queued() < self.batch_size and self._in_flight:
            obs, reward, terminated, truncated, info = self.vec.recv()
            ids = info["env_id"]
            self._in_flight -= ids.size
            self._queue.append(self._from_step(ids, obs, reward, terminated, truncated, info))
        batch = Batch.concat(self._queue)
        if not self.is_async:
            batch = batch.take(np.argsort(self._sent_at[batch.ids], kind="stable"))
        head, tail = batch.split(self.batch_size)
        self._queue = [tail] if tail.ids.size else []
        return head

    def seed(self, seed: Any = None) -> None:
        """EnvPool's abandoned ``seed()``: a warning, as in EnvPool. Seed with ``make(...,
        seed=...)``, or reseed with ``reset(seed=...)``."""
        warnings.warn("The `seed` function in envpool is abandoned. You can set seed by "
                      "envpool.make(..., seed=seed) instead.", UserWarning, stacklevel=2)

    # -- checkpoints (fastatari's; EnvPool has none) -----------------------------------------
    _COUNTS = ("elapsed", "lives", "ended", "continues", "sent_at")

    def state_dict(self) -> Dict[str, Any]:
        """Everything to resume this pool exactly: the vector env's ``state_dict`` (every
        env's snapshot, a pending reset too) and the per-env counts EnvPool's values come from
        (``elapsed_step``, lives, ended episodes, the order of sends), as arrays and numbers
        (:func:`fastatari.checkpoint.save` takes ``envs=pool``). Nothing may be in flight or
        received and not yet returned (``AlreadyPendingCallError``)."""
        self._check_idle("state_dict")
        return {"vec": self.vec.state_dict(), "sends": int(self._sends), "seed": self._seed,
                **{name: getattr(self, "_" + name).copy() for name in self._COUNTS}}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` of a pool of the same games, options and number
        of envs: ``ValueError`` (``TypeError`` for values of another kind) before anything
        changes."""
        self._check_idle("load_state_dict")
        if not isinstance(state, dict) or set(state) != {"vec", "sends", "seed",
                                                         *self._COUNTS}:
            raise ValueError("not a fastatari EnvPool state_dict")
        counts = {}
        for name in self._COUNTS:
            own, value = getattr(self, "_" + name), np.asarray(state[name])
            if value.dtype != own.dtype or value.shape != own.shape:
                raise TypeError(f"the state's {name} must be {own.dtype} of shape {own.shape}, "
                                f"got {value.dtype} of shape {value.shape}")
            counts[name] = value
        sends = state["sends"]
        if not isinstance(sends, (int, np.integer)) or sends < 0:
            raise TypeError(f"the state's sends must be an int >= 0, got {sends!r}")
        self.vec.load_state_dict(state["vec"])  # (checked whole before any env changes)
        for name, value in counts.items():
            getattr(self, "_" + name)[...] = value
        self._sends, self._seed = int(sends), state["seed"]

    def _check_idle(self, call: str) -> None:
        self._check_open()
        if self._in_flight or self._queue:
            raise AlreadyPendingCallError(f"{call}() while steps are in flight or results "
                                          f"wait for recv(): recv() them first", call)

    def close(self, **kwargs: Any) -> None:
        """Stop the worker processes. Safe to call more than once. Steps in flight are
        dropped silently, as EnvPool drops them."""
        if not self.closed:
            self.closed = True
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", ".*Calling `close` while waiting")
                self.vec.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.task_id!r}, num_envs={self.vec.num_envs}, "
                f"batch_size={self.batch_size})")

    __str__ = __repr__
