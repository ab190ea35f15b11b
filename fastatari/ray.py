"""fastatari on Ray: one actor per node owns an ordinary local vector env.

``from fastatari import ray as fa_ray``; ``fa_ray.make_vec(game, num_envs, num_actors=...)``
returns a :class:`RayAtariVectorEnv`, a gymnasium ``VectorEnv`` whose envs live on Ray actors.
Actor ``k`` owns the contiguous block of envs ``blocks[k]`` and steps them with a local
:func:`fastatari.make_vec` (its worker processes and shared memory stay on the actor's node);
the driver scatters actions and gathers results through Ray's object store. A Ray call costs
about a millisecond against the local step's ~85 µs transport, so the unit of work is a node,
never an env: throughput comes from whole blocks per call, batches in flight (``send`` /
``recv``) and :meth:`RayAtariVectorEnv.rollout`, which runs ``T`` steps of a policy next to the
envs in one call.

Contract: the local env's. Sub-env ``i`` after ``reset(seed=s)`` is byte-identical to the local
env's sub-env ``i`` (seed ``s + i``), whatever the number of actors; the same options, autoreset
modes, batched ``info`` (merged across actors) and gymnasium errors; actions, env ids, seeds and
masks are checked on the driver before anything is sent.

Faults. Actors are created with Ray's ``max_restarts=-1`` and ``max_task_retries=0``: Ray
recreates a dead actor (soft node affinity lets it land on another node when its own is gone)
but never re-runs a call on the new one behind the driver's back. A call lost with its actor
(``ActorDiedError``, ``ActorUnavailableError``, its result lost with the node) makes the
driver *recover* the actor: every env of its block is reset with a seed derived from its last
seed and the restart count (the local env's rule), and each env's next result is ``truncated``
with ``info["worker_restarted"]`` (the lost call's envs get theirs at once; under same-step
autoreset ``final_obs`` is the last observation the driver returned). The other actors' envs
lose nothing. Each call carries the actor's *epoch*, bumped at every recovery, and an actor
refuses a call from another epoch (:class:`ActorRestarted`), so that no call ever runs on an
instance the driver has not reset. The restart policy is the local env's, per actor:
``max_crashes_without_progress`` deaths in a row without a call answered in between raise
``RuntimeError``; ``max_restarts`` optionally caps restarts over the env's life.
"""
from __future__ import annotations

import collections
import enum
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Deque, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

try:  # absolute import: this module is fastatari.ray, the package it needs is ray
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as error:  # pragma: no cover - depends on the install
    raise ImportError("fastatari.ray needs Ray: pip install 'fastatari[ray]'") from error

from fastatari import validate
from fastatari.games import resolve_game
from fastatari.schema import info_fields
from fastatari.vector.contract import CallOrder, State, reset_mask
from fastatari.vector.contract import autoreset_mode as autoreset_mode_of
from fastatari.vector.lineup import PER_GAME_OPTIONS, make_lineup

__all__ = ["ActorRestarted", "RayAtariVectorEnv", "Rollout", "make_vec"]

#: Default ``actor_timeout``: how long creating or restarting an actor may take (placement,
#: start-up, the first reset) before the driver gives up on it.
DEFAULT_ACTOR_TIMEOUT = 300.0
#: What ``close`` waits for the actors to stop their workers before killing them.
CLOSE_WAIT = 30.0

_PLACEMENTS = ("node", "spread", "default")


class ActorRestarted(RuntimeError):
    """A call reached an actor instance of another epoch: Ray restarted the actor and the
    driver has not recovered it yet, or the call was sent before the last recovery."""


class Rollout(NamedTuple):
    """``T`` steps of all envs under one policy (:meth:`RayAtariVectorEnv.rollout`).

    ``obs[t]`` is what the policy saw at step ``t``, ``actions[t]`` what it chose,
    ``rewards[t]``, ``terminated[t]`` and ``truncated[t]`` the step's outcome; ``next_obs`` is
    the observation after the last step. ``info`` holds the steps' batched info dicts stacked:
    each entry ``(T, N)`` with its ``_key`` mask ``(T, N)`` (``info["game"]["r"][t, i]`` is
    the return of env ``i``'s game that ended at step ``t``, where ``info["_game"][t, i]``).
    """

    obs: np.ndarray  # (T, N, *obs_shape) uint8
    actions: np.ndarray  # (T, N) int64
    rewards: np.ndarray  # (T, N) float64
    terminated: np.ndarray  # (T, N) bool
    truncated: np.ndarray  # (T, N) bool
    next_obs: np.ndarray  # (N, *obs_shape) uint8
    info: Dict[str, Any]  # entries (T, N)


# -- batched info dicts ------------------------------------------------------------------------
def _take(info: Dict[str, Any], rows: Any) -> Dict[str, Any]:
    """The rows ``rows`` of a batched info dict (nested dicts too)."""
    return {key: _take(value, rows) if isinstance(value, dict) else value[rows]
            for key, value in info.items()}


def _blank(like: np.ndarray, count: int, axis: int = 0) -> np.ndarray:
    """``count`` rows (along ``axis``) of 'no entry' shaped like ``like``: zeros (False for
    masks), None for object arrays."""
    shape = like.shape[:axis] + (count,) + like.shape[axis + 1:]
    if like.dtype == object:
        return np.full(shape, None, object)
    return np.zeros(shape, like.dtype)


def _concat(pieces: Sequence[Tuple[Dict[str, Any], int]], axis: int = 0) -> Dict[str, Any]:
    """One batched info dict from ``(info, rows)`` pieces, joined along ``axis`` (the envs'
    axis). A key some pieces lack is 'no entry' for their rows (zeros, its ``_key`` mask
    False), as gymnasium batches infos."""
    keys: Dict[str, None] = {}
    for info, _ in pieces:
        keys.update(dict.fromkeys(info))
    out: Dict[str, Any] = {}
    for key in keys:
        values = [info.get(key) for info, _ in pieces]
        if any(isinstance(value, dict) for value in values):
            out[key] = _concat([(value or {}, rows)
                                for value, (_, rows) in zip(values, pieces, strict=True)], axis)
            continue
        like = next(value for value in values if value is not None)
        out[key] = np.concatenate([value if value is not None else _blank(like, rows, axis)
                                   for value, (_, rows) in zip(values, pieces, strict=True)],
                                  axis=axis)
    return out


def _stack(infos: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Batched info dicts, one per step, as one dict of ``(T, N)`` entries ('no entry' where a
    step lacks a key): each step one row of a :func:`_concat`."""
    return _concat([(_take(info, np.newaxis), 1) for info in infos])


# -- the actor ---------------------------------------------------------------------------------
class EnvActor:
    """One block of envs on one node: a local :func:`fastatari.make_vec` (``copy=False``) and
    the restart bookkeeping of the block. Run as a Ray actor by :class:`RayAtariVectorEnv`.

    The local env's observation block (a view into its shared memory with ``copy=False``)
    always holds each env's latest observation; the actor keeps it as ``obs``. After a
    recovery every env is ``notice``d: its next step reports the restart (truncated,
    ``worker_restarted``) without running; under next-step autoreset the step after that
    resets it (``autoreset``), as the local env does after a worker restart.
    """

    def __init__(self, game: Any, num_envs: int, vector_kwargs: Dict[str, Any]) -> None:
        from fastatari.vector import make_vec as local_make_vec

        self.env = local_make_vec(game, num_envs, copy=False, **vector_kwargs)
        mode = self.env.metadata["autoreset_mode"]
        self.next_step = mode == AutoresetMode.NEXT_STEP
        self.same_step = mode == AutoresetMode.SAME_STEP
        self.num_envs = num_envs
        self.num_actions = int(self.env.single_action_space.n)
        self.epoch: Optional[int] = None  # set by recover(); None on a fresh instance
        self.obs: Optional[np.ndarray] = None
        self.notice = np.zeros(num_envs, bool)
        self.notice_info: Dict[str, Any] = {}
        self.autoreset = np.zeros(num_envs, bool)
        self.rollout_obs: Optional[np.ndarray] = None

    def describe(self) -> Dict[str, Any]:
        import os

        return {"num_actions": self.num_actions,
                "action_meanings": self.env.get_action_meanings(),
                "node_id": ray.get_runtime_context().get_node_id(),
                "pid": os.getpid(), "worker_pids": self.env.worker_pids}

    def _check(self, epoch: int) -> None:
        if epoch != self.epoch:
            raise ActorRestarted(f"call of epoch {epoch} reached an actor of epoch {self.epoch}")

    def recover(self, epoch: int, seeds: Optional[List[int]], final_obs: Optional[np.ndarray],
                final_info: Optional[Dict[str, np.ndarray]]) -> Dict[str, Any]:
        """Adopt ``epoch``; with ``seeds`` (the envs had games), reset every env with them and
        notice each. ``final_obs``/``final_info``: same-step mode's report of the lost step."""
        self.epoch = epoch
        self.autoreset[:] = False
        if seeds is None:
            self.notice[:] = False
            return self.describe()
        obs, info = self.env.reset(seed=seeds)
        self.obs = obs
        self.notice[:] = True
        every = np.ones(self.num_envs, bool)
        info["worker_restarted"], info["_worker_restarted"] = every, every.copy()
        if "game_over" in info:  # the game ended with the dead actor (the local env's rule)
            info["game_over"] = every.copy()
        if self.same_step and final_obs is not None and final_info is not None:
            kept = np.empty(self.num_envs, object)
            for j in range(self.num_envs):
                kept[j] = final_obs[j]
            info["final_obs"], info["_final_obs"] = kept, every.copy()
            final = {}
            for name, values in final_info.items():
                final[name], final["_" + name] = values, every.copy()
            info["final_info"], info["_final_info"] = final, every.copy()
        self.notice_info = info
        return self.describe()

    def reset(self, epoch: int, seeds: List[Optional[int]], mask: Optional[np.ndarray]):
        """Reset every env (``mask`` None) or those in ``mask``; an all-False mask resets
        nothing and returns the current observations with no info."""
        self._check(epoch)
        if mask is not None and not mask.any():
            return self.obs, None
        options = None if mask is None else {"reset_mask": mask}
        obs, info = self.env.reset(seed=seeds, options=options)
        chosen = slice(None) if mask is None else mask
        self.notice[chosen] = False
        self.autoreset[chosen] = False
        self.obs = obs
        return obs, info

    def step(self, epoch: int, actions: np.ndarray, ids: Optional[np.ndarray]):
        """Step ``ids`` (None: every env, in order); returns the local ids answered (sorted),
        then the observations, rewards, flags and batched info of those envs."""
        self._check(epoch)
        return self._step(actions, ids)

    def _step(self, actions: np.ndarray, ids: Optional[np.ndarray]):
        if ids is None and not (self.notice.any() or self.autoreset.any()):
            obs, reward, terminated, truncated, info = self.env.step(actions)
            return None, obs, reward, terminated, truncated, info
        ids = np.arange(self.num_envs) if ids is None else ids
        notice, auto = self.notice[ids], self.autoreset[ids]
        run = ~(notice | auto)
        pieces = []
        if auto.any():  # next-step autoreset after a reported restart: reset, ignore the action
            chosen = ids[auto]
            mask = np.zeros(self.num_envs, bool)
            mask[chosen] = True
            obs, info = self.env.reset(options={"reset_mask": mask})
            self.autoreset[chosen] = False
            pieces.append(self._rows(chosen, obs[chosen], False, _take(info, chosen)))
        if run.any():
            self.env.send(actions[run], ids[run])
            obs, reward, terminated, truncated, info = self.env.recv()
            answered = info.pop("env_id")
            pieces.append((answered, obs, reward, terminated, truncated, info))
        if notice.any():  # restarted: the reset's observation, truncated, without running
            chosen = ids[notice]
            self.notice[chosen] = False
            self.autoreset[chosen] = self.next_step
            pieces.append(self._rows(chosen, self.obs[chosen], True,
                                     _take(self.notice_info, chosen)))
        answered = np.concatenate([piece[0] for piece in pieces])
        order = np.argsort(answered, kind="stable")
        columns = [np.concatenate([piece[c] for piece in pieces])[order] for c in range(1, 5)]
        info = _take(_concat([(piece[5], len(piece[0])) for piece in pieces]), order)
        return (answered[order], *columns, info)

    @staticmethod
    def _rows(ids: np.ndarray, obs: np.ndarray, truncated: bool, info: Dict[str, Any]):
        count = len(ids)
        return (ids, obs, np.zeros(count), np.zeros(count, bool), np.full(count, truncated),
                info)

    def rollout(self, epoch: int, policy: Any, num_steps: int):
        """``num_steps`` steps of every env, ``actions = policy(obs)`` before each."""
        self._check(epoch)
        assert self.obs is not None
        count = self.num_envs
        # kept between calls (a result is copied into the object store as it is returned):
        # the observations' pages are touched once, not at every rollout
        if self.rollout_obs is None or len(self.rollout_obs) != num_steps:
            self.rollout_obs = np.empty((num_steps,) + self.obs.shape, self.obs.dtype)
        obs = self.rollout_obs
        actions = np.empty((num_steps, count), np.int64)
        rewards = np.empty((num_steps, count), np.float64)
        terminated = np.empty((num_steps, count), bool)
        truncated = np.empty((num_steps, count), bool)
        infos = []
        for t in range(num_steps):
            obs[t] = self.obs
            actions[t] = validate.check_actions(policy(obs[t]), count, self.num_actions)
            _, _, rewards[t], terminated[t], truncated[t], info = self._step(actions[t], None)
            infos.append(info)
        return obs, actions, rewards, terminated, truncated, self.obs, _stack(infos)

    def render(self, epoch: int, ids: np.ndarray) -> Optional[np.ndarray]:
        self._check(epoch)
        return self.env.render(ids)

    def close(self) -> None:
        self.env.close()


# -- the driver --------------------------------------------------------------------------------
class _Phase(enum.IntEnum):
    IDLE = 0
    IN_FLIGHT = 1  # in a call to its actor
    ANSWERED = 2  # result on the driver, not returned by recv() yet


@dataclass
class _Call:
    """A remote call in flight: enough to send it again after a recovery."""

    actor: int
    epoch: int
    method: str
    args: Tuple[Any, ...]
    ids: Optional[np.ndarray] = None  # global env ids of an async step


class _Piece(NamedTuple):
    """Answered envs (global ids) with their results, waiting for recv()."""

    ids: np.ndarray
    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    info: Dict[str, Any]

    def take(self, rows: Any) -> "_Piece":
        return _Piece(self.ids[rows], self.obs[rows], self.reward[rows], self.terminated[rows],
                      self.truncated[rows], _take(self.info, rows))


_LOST = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError, ActorRestarted)

# Ray started by this module (no ray.init by the caller): shut down with its last env.
_OWN_RAY = {"envs": 0}
_OWN_RAY_LOCK = threading.Lock()


def _release(actors: List[Any], owns_ray: bool) -> None:
    """Kill the actors (their workers exit with them) and stop a Ray this module started."""
    if ray.is_initialized():
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone, or Ray is shutting down
                pass
    actors.clear()
    if owns_ray:
        with _OWN_RAY_LOCK:
            _OWN_RAY["envs"] -= 1
            if _OWN_RAY["envs"] == 0 and ray.is_initialized():
                ray.shutdown()


class RayAtariVectorEnv(CallOrder, gymnasium.vector.VectorEnv):
    """``num_envs`` Atari games on ``num_actors`` Ray actors, each owning a local vector env.

    Made by :func:`make_vec`; see there for the parameters.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(self, game: str, num_envs: int, num_actors: Optional[int] = None,
                 num_workers: Optional[int] = None, batch_size: Optional[int] = None,
                 autoreset_mode: Any = "next_step", copy: bool = True, placement: Any = "node",
                 actor_options: Optional[Dict[str, Any]] = None,
                 actor_timeout: Optional[float] = DEFAULT_ACTOR_TIMEOUT,
                 max_crashes_without_progress: int = 3, max_restarts: Optional[int] = None,
                 render_mode: Optional[str] = None, **kwargs: Any) -> None:
        self._state = State.CLOSED  # until construction succeeds
        self._actors: List[Any] = []
        num_envs = validate.check_int("num_envs", num_envs, 1)
        self.batch_size = validate.check_int(
            "batch_size", num_envs if batch_size is None else batch_size, 1, num_envs)
        mode = autoreset_mode_of(autoreset_mode)
        self.copy = validate.check_bool("copy", copy)  # results are always fresh arrays
        self.actor_timeout = validate.check_timeout("actor_timeout", actor_timeout)
        self.max_crashes_without_progress = validate.check_int(
            "max_crashes_without_progress", max_crashes_without_progress, 1)
        if max_restarts is not None:
            max_restarts = validate.check_int("max_restarts", max_restarts, 0)
        self.max_restarts = max_restarts
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if not (placement in _PLACEMENTS or not isinstance(placement, str)):
            raise ValueError(f"placement must be one of {_PLACEMENTS} or a Ray scheduling "
                             f"strategy, got {placement!r}")
        actor_options = dict(actor_options or {})
        if actor_options.get("max_task_retries", 0) != 0:
            raise ValueError("actor_options must not set max_task_retries: a step re-run on a "
                             "restarted actor would silently diverge from what was reported")
        vector_keys = {"timeout", "cpus", "balance"}
        vector_kwargs = {key: kwargs.pop(key) for key in vector_keys & set(kwargs)}
        # games and options checked here, before any actor (ValueError, TypeError)
        self._lineup, self.options = make_lineup(game, num_envs, dict(kwargs))
        self.games: Tuple[str, ...] = self._lineup.games
        self.game_names: Tuple[str, ...] = self._lineup.names
        self.rom: Optional[str] = None if self._lineup.multi else self.games[0]
        # several games: info["game_index"] indexes game_names (each actor's own is local)
        self._game_index = self._lineup.game_index() if self._lineup.multi else None
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, autoreset_mode=mode)
        self._next_step = mode == AutoresetMode.NEXT_STEP
        self._same_step = mode == AutoresetMode.SAME_STEP
        self._disabled = mode == AutoresetMode.DISABLED

        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            with _OWN_RAY_LOCK:
                if not ray.is_initialized():
                    ray.init(include_dashboard=False)
                _OWN_RAY["envs"] += 1
        self._finalizer = weakref.finalize(self, _release, self._actors, self._owns_ray)
        try:
            actor_options.setdefault("num_cpus", 1)
            nodes = _nodes(actor_options) if placement == "node" else []
            if num_actors is None:
                num_actors = max(1, min(len(nodes), num_envs))
            self.num_actors = validate.check_int("num_actors", num_actors, 1, num_envs)
            bounds = np.linspace(0, num_envs, self.num_actors + 1).round().astype(int)
            self._starts = bounds[:-1]
            self._lasts = bounds[1:] - 1
            self.blocks = [range(int(bounds[k]), int(bounds[k + 1]))
                           for k in range(self.num_actors)]
            if num_workers is not None:
                num_workers = validate.check_int("num_workers", num_workers, 1,
                                                 min(len(block) for block in self.blocks))
            vector_kwargs.update(num_workers=num_workers, autoreset_mode=mode,
                                 max_crashes_without_progress=self.max_crashes_without_progress,
                                 max_restarts=max_restarts, render_mode=render_mode, **kwargs)
            self._spawn_args = (placement, nodes, actor_options, vector_kwargs)
            for k in range(self.num_actors):
                self._actors.append(self._spawn(k))
            described = self._start_actors()
        except BaseException:
            self._finalizer()
            raise
        self._epoch = [0] * self.num_actors
        self._crashes = [0] * self.num_actors  # deaths since the actor last answered a call
        self.restarts = 0
        self.nodes = [d["node_id"] for d in described]
        differ = [k for k, d in enumerate(described)
                  if d["action_meanings"] != described[0]["action_meanings"]]
        if differ:
            self._finalizer()
            raise ValueError(f"these games have different action sets (actor 0: "
                             f"{described[0]['action_meanings']}; actor {differ[0]}: "
                             f"{described[differ[0]]['action_meanings']}): pass "
                             f"full_action_space=True to give every env the 18 actions")
        self._action_meanings = described[0]["action_meanings"]
        self._num_actions = described[0]["num_actions"]

        self._phase = np.zeros(num_envs, np.uint8)
        self._ended = np.zeros(num_envs, bool)  # disabled mode: must be reset before a step
        self._seeds: List[Optional[int]] = [None] * num_envs
        self._calls: Dict[Any, _Call] = {}
        self._answered: Deque[_Piece] = collections.deque()
        self._answered_count = 0
        shape = self.options.observation_shape
        # same-step mode: what a recovery reports as the lost step's final observation and info
        self._last_obs = np.zeros((num_envs,) + shape, np.uint8) if self._same_step else None
        self._last_info = {f.name: np.zeros((num_envs,) + f.shape, f.dtype)
                           for f in info_fields(self.options)} if self._same_step else None
        self._state = State.NEEDS_RESET

        self.single_observation_space = spaces.Box(0, 255, shape, np.uint8)
        self.single_action_space = spaces.Discrete(self._num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    # -- actors --------------------------------------------------------------------------------
    def _spawn(self, k: int) -> Any:
        """A new actor for block ``k``."""
        placement, nodes, actor_options, vector_kwargs = self._spawn_args
        options = dict(actor_options, max_restarts=-1, max_task_retries=0)
        if placement == "node":
            if nodes:
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    nodes[k % len(nodes)], soft=True)
        elif placement == "spread":
            options["scheduling_strategy"] = "SPREAD"
        elif placement != "default":
            options["scheduling_strategy"] = placement
        block = self.blocks[k]
        games = self.games[block.start:block.stop]
        mine = dict(vector_kwargs)
        for key in PER_GAME_OPTIONS:  # {game: value}: only the games of this block
            value = mine.get(key)
            if isinstance(value, Mapping):
                kept = {name: v for name, v in value.items() if resolve_game(name) in games}
                if kept:
                    mine[key] = kept
                else:
                    del mine[key]
        game = self.rom if self.rom is not None else list(games)
        return _actor_class().options(**options).remote(game, len(block), mine)

    def _start_actors(self) -> List[Dict[str, Any]]:
        refs = [actor.recover.remote(0, None, None, None) for actor in self._actors]
        try:
            return ray.get(refs, timeout=self.actor_timeout)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(
                f"the {self.num_actors} actors did not all start within actor_timeout="
                f"{self.actor_timeout} s: does the cluster have the resources "
                f"{self._spawn_args[2]} for each?") from None
        except ray.exceptions.RayActorError as error:  # __init__ raised: show its cause
            raise RuntimeError(f"an actor failed to start: {error}") from None

    @property
    def actors(self) -> List[Any]:
        """The Ray actor handles, in env order: actor ``k`` owns the envs ``blocks[k]``."""
        return list(self._actors)

    def actor_info(self) -> List[Dict[str, Any]]:
        """Per actor: its node id, process id and its local workers' process ids."""
        self._check_open()
        return [self._get(self._submit(k, "describe"))[1] for k in range(self.num_actors)]

    def _submit(self, k: int, method: str, *args: Any, ids: Optional[np.ndarray] = None) -> Any:
        actor = self._actors[k]
        if method == "describe":
            ref = actor.describe.remote()
        else:
            ref = getattr(actor, method).remote(self._epoch[k], *args)
        self._calls[ref] = _Call(k, self._epoch[k], method, args, ids)
        return ref

    def _get(self, ref: Any) -> Tuple[_Call, Any]:
        """The result of a call. A call lost with its actor recovers the actor (once per
        death) and is sent again: the envs it named then get their restart report."""
        call = self._calls.pop(ref)
        while True:
            try:
                value = ray.get(ref)
            except _LOST as error:
                if self._state is State.CLOSED:
                    raise ClosedEnvironmentError("this RayAtariVectorEnv is closed") from error
                if call.epoch == self._epoch[call.actor]:
                    self._recover(call.actor, error)
                ref = self._submit(call.actor, call.method, *call.args, ids=call.ids)
                call = self._calls.pop(ref)
                continue
            except KeyboardInterrupt:
                self.close()
                raise
            self._crashes[call.actor] = 0
            return call, value

    def _gather(self, refs: List[Any]) -> List[Any]:
        """Every result, in order; then the first error, if any (an actor's exception)."""
        values, first = [], None
        for ref in refs:
            try:
                values.append(self._get(ref)[1])
            except Exception as error:
                if self.closed:
                    raise
                first = first or error
        if first is not None:
            raise first
        return values

    def _recover(self, k: int, cause: BaseException) -> None:
        """Actor ``k`` died (or its result was lost): wait for Ray to restart it (or replace
        it when Ray gave up), then reset its envs with derived seeds and notice each."""
        self._count_crash(k, cause)
        self._epoch[k] += 1
        block = self.blocks[k]
        seeds = final_obs = final_info = None
        if self._state is not State.NEEDS_RESET:  # no game exists before the first reset
            seeds = []
            for i in block:
                base = self._seeds[i] if self._seeds[i] is not None else i
                seeds.append(int(np.random.SeedSequence([base, self.restarts])
                                 .generate_state(1)[0]))
            if self._same_step:
                final_obs = self._last_obs[block.start:block.stop]
                final_info = {name: values[block.start:block.stop]
                              for name, values in self._last_info.items()}
        deadline = None if self.actor_timeout is None else time.monotonic() + self.actor_timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self.close()
                raise RuntimeError(f"actor {k} died ({cause}) and was not running again within "
                                   f"actor_timeout={self.actor_timeout} s: no node with its "
                                   f"resources ({self._spawn_args[2]}) left?")
            ref = self._actors[k].recover.remote(self._epoch[k], seeds, final_obs, final_info)
            try:
                described = ray.get(ref, timeout=remaining)
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.ActorUnavailableError:  # restarting: ask again shortly
                time.sleep(0.1)
                continue
            except (ray.exceptions.ActorDiedError, ray.exceptions.ObjectLostError) as died:
                self._count_crash(k, died)  # Ray gave up on it: a new actor in its place
                cause = died
                self._actors[k] = self._spawn(k)
                continue
            self.nodes[k] = described["node_id"]
            return

    def _count_crash(self, k: int, cause: BaseException) -> None:
        self._crashes[k] += 1
        self.restarts += 1
        limit = self.max_crashes_without_progress
        over = self.max_restarts is not None and self.restarts > self.max_restarts
        if self._crashes[k] >= limit or over:
            why = (f"{self._crashes[k]} times in a row without progress"
                   if self._crashes[k] >= limit
                   else f"and the restart budget (max_restarts={self.max_restarts}) is spent")
            self.close()
            raise RuntimeError(f"actor {k} died: {cause}; {why}")

    # -- bookkeeping -----------------------------------------------------------------------------
    def _owner(self, ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self._lasts, ids)

    def _index_games(self, info: Dict[str, Any], ids: Any, mask: np.ndarray) -> None:
        """Several games: ``info["game_index"]`` into :attr:`game_names` for the envs ``ids``
        (an actor's local env numbers only the games of its own block)."""
        if self._game_index is not None:
            info["game_index"] = np.where(mask, self._game_index[ids], 0)
            info["_game_index"] = mask.copy()

    def _record(self, ids: Any, obs: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, info: Dict[str, Any]) -> None:
        """What the driver keeps of each result: ended envs (disabled mode), the last
        observation and info (same-step mode, for a recovery's report)."""
        if self._disabled:
            self._ended[ids] = terminated | truncated
        if self._same_step:
            self._last_obs[ids] = obs
            for name, values in self._last_info.items():
                values[ids] = info[name]

    # -- reset -----------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[Optional[int]] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``); seeds as the local env's."""
        self._check_not_async("reset")
        mask = reset_mask(options, self.num_envs, self._state is State.NEEDS_RESET)
        seeds = validate.check_seeds(seed, self.num_envs)
        refs = []
        for k, block in enumerate(self.blocks):
            mine = None if mask is None else mask[block.start:block.stop]
            refs.append(self._submit(k, "reset", seeds[block.start:block.stop], mine))
        results = self._gather(refs)
        chosen = np.ones(self.num_envs, bool) if mask is None else mask
        for i in np.flatnonzero(chosen):
            if seeds[i] is not None:
                self._seeds[i] = seeds[i]
        self._ended[chosen] = False
        self._state = State.IDLE
        obs = np.concatenate([o for o, _ in results])
        info = _concat([(i or {}, len(b)) for (_, i), b in zip(results, self.blocks, strict=True)])
        self._index_games(info, slice(None), chosen)
        if self._same_step:
            self._record(chosen, obs[chosen], None, None, _take(info, chosen))
        return obs, info

    # -- step, send, recv ----------------------------------------------------------------------
    def step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          Dict[str, Any]]:
        """Step every env with ``actions`` (shape ``(num_envs,)``); all actors in parallel."""
        self._check_not_async("step")
        self._check_was_reset("step")
        actions = validate.check_actions(actions, self.num_envs, self._num_actions)
        self._check_not_ended(np.arange(self.num_envs))
        refs = [self._submit(k, "step", actions[block.start:block.stop], None)
                for k, block in enumerate(self.blocks)]
        self._phase[:] = _Phase.IN_FLIGHT
        try:
            results = self._gather(refs)
        finally:
            self._phase[:] = _Phase.IDLE
        obs = np.concatenate([r[1] for r in results])
        reward = np.concatenate([r[2] for r in results])
        terminated = np.concatenate([r[3] for r in results])
        truncated = np.concatenate([r[4] for r in results])
        info = _concat([(r[5], len(b)) for r, b in zip(results, self.blocks, strict=True)])
        self._index_games(info, slice(None), np.ones(self.num_envs, bool))
        self._record(slice(None), obs, terminated, truncated, info)
        return obs, reward, terminated, truncated, info

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions``; :meth:`recv` collects.
        Each actor gets one call with its envs among ``env_ids``."""
        self._check_open()
        self._check_was_reset("send")
        ids = validate.check_env_ids(env_ids, self.num_envs)
        actions = validate.check_actions(actions, ids.size, self._num_actions)
        busy = self._phase[ids] != _Phase.IDLE
        if busy.any():
            raise AlreadyPendingCallError(
                f"env {int(ids[np.flatnonzero(busy)[0]])} already has a step in flight: "
                f"recv() it first", "send")
        self._check_not_ended(ids)
        owners = self._owner(ids)
        for k in np.unique(owners).tolist():
            mine = owners == k
            self._submit(k, "step", actions[mine], ids[mine] - self._starts[k], ids=ids[mine])
        self._phase[ids] = _Phase.IN_FLIGHT
        self._state = State.ASYNC

    def recv(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        """The first ``batch_size`` envs to finish across actors (fewer if fewer are in
        flight), with their ids in ``info["env_id"]``."""
        self._check_async()
        want = min(self.batch_size, int((self._phase != _Phase.IDLE).sum()))
        while self._answered_count < want:
            ready, _ = ray.wait(list(self._calls), num_returns=1)
            ref = ready[0]
            envs = self._calls[ref].ids
            try:
                call, (local, obs, reward, terminated, truncated, info) = self._get(ref)
            except Exception:
                if not self.closed:
                    self._phase[envs] = _Phase.IDLE  # no result for these: idle again
                    if not self._phase.any():
                        self._state = State.IDLE
                raise
            ids = local + self._starts[call.actor]
            self._record(ids, obs, terminated, truncated, info)
            self._answered.append(_Piece(ids, obs, reward, terminated, truncated, info))
            self._answered_count += ids.size
            self._phase[ids] = _Phase.ANSWERED
        parts, need = [], want
        while need:
            piece = self._answered[0]
            if piece.ids.size <= need:
                parts.append(self._answered.popleft())
            else:
                parts.append(piece.take(slice(0, need)))
                self._answered[0] = piece.take(slice(need, None))
            need -= parts[-1].ids.size
        self._answered_count -= want
        ids = np.concatenate([p.ids for p in parts])
        self._phase[ids] = _Phase.IDLE
        if not self._phase.any():
            self._state = State.IDLE
        info = _concat([(p.info, p.ids.size) for p in parts])
        self._index_games(info, ids, np.ones(ids.size, bool))
        info["env_id"] = ids
        return (np.concatenate([p.obs for p in parts]),
                np.concatenate([p.reward for p in parts]),
                np.concatenate([p.terminated for p in parts]),
                np.concatenate([p.truncated for p in parts]), info)

    # -- rollout ---------------------------------------------------------------------------------
    def rollout(self, policy: Any, num_steps: int) -> Rollout:
        """``num_steps`` steps of every env with ``actions = policy(obs)``, run on the actors.

        ``policy`` is any picklable callable taking one actor's observations ``(n, *shape)``
        and returning its ``n`` actions (or an ``ObjectRef`` of one): it goes through the
        object store once per call (``ray.put``), is fetched once per node and runs next to
        the envs; each actor makes one remote call for the whole rollout. The envs continue
        from where they are, and stay there afterwards for the next rollout or step. Needs an
        autoreset mode (``next_step`` or ``same_step``).
        """
        self._check_not_async("rollout")
        self._check_was_reset("rollout")
        if self._disabled:
            raise ValueError("rollout() needs autoreset: an env cannot stop mid-rollout for a "
                             "reset (autoreset_mode is DISABLED)")
        num_steps = validate.check_int("num_steps", num_steps, 1)
        if not callable(policy) and not isinstance(policy, ray.ObjectRef):
            raise TypeError(f"policy must be callable (obs -> actions), got {policy!r}")
        policy_ref = policy if isinstance(policy, ray.ObjectRef) else ray.put(policy)
        refs = [self._submit(k, "rollout", policy_ref, num_steps)
                for k in range(self.num_actors)]
        self._phase[:] = _Phase.IN_FLIGHT
        try:
            parts = self._gather(refs)
        finally:
            self._phase[:] = _Phase.IDLE
        obs, actions, rewards, terminated, truncated = (
            np.concatenate([part[c] for part in parts], axis=1) for c in range(5))
        next_obs = np.concatenate([part[5] for part in parts])
        info = _concat([(part[6], len(block))
                        for part, block in zip(parts, self.blocks, strict=True)], axis=1)
        self._index_games(info, slice(None), np.ones((num_steps, self.num_envs), bool))
        if self._same_step:
            self._record(slice(None), next_obs, None, None, _take(info, -1))
        return Rollout(obs, actions, rewards, terminated, truncated, next_obs, info)

    # -- seeds, render, close ------------------------------------------------------------------
    @property
    def np_random_seed(self) -> Tuple[int, ...]:
        """Each env's last reset seed (-1 for an env never reset with a seed)."""
        return tuple(-1 if s is None else s for s in self._seeds)

    def render(self, env_ids: Any = None) -> Optional[np.ndarray]:
        """Raw RGB screens ``(len(env_ids), 210, 160, 3)`` (default: every env)."""
        self._check_not_async("render")
        if self.render_mode is None:
            gymnasium.logger.warn("render() needs render_mode='rgb_array'")
            return None
        ids = validate.check_env_ids(env_ids, self.num_envs)
        owners = self._owner(ids)
        actors = np.unique(owners).tolist()
        refs = [self._submit(k, "render", ids[owners == k] - self._starts[k]) for k in actors]
        screens = self._gather(refs)
        out = np.empty((ids.size,) + screens[0].shape[1:], screens[0].dtype)
        for k, part in zip(actors, screens, strict=True):
            out[owners == k] = part
        return out

    def get_action_meanings(self) -> List[str]:
        """Names of the actions, e.g. ``["NOOP", "FIRE", "RIGHT", "LEFT"]``."""
        return list(self._action_meanings)

    def close(self, **kwargs: Any) -> None:
        """Stop every actor's workers, then the actors. Safe to call more than once."""
        if self._state is State.CLOSED and not self._actors:
            return
        self._state = State.CLOSED
        if self._actors and ray.is_initialized():
            refs = []
            for actor in self._actors:
                try:
                    refs.append(actor.close.remote())
                except Exception:  # already gone
                    pass
            ray.wait(refs, num_returns=len(refs), timeout=CLOSE_WAIT)
        self._calls.clear()
        self._answered.clear()
        self._finalizer()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (gymnasium's ``VectorEnv.closed``)."""
        return self._state is State.CLOSED

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.num_actors} actors"
        games = self.rom if self.rom is not None else list(self.game_names)
        return f"RayAtariVectorEnv({games!r}, num_envs={self.num_envs}, {state})"


_ACTOR_CLASS: List[Any] = []


def _actor_class() -> Any:
    """:class:`EnvActor` as a Ray actor class (made once, on first use)."""
    if not _ACTOR_CLASS:
        _ACTOR_CLASS.append(ray.remote(EnvActor))
    return _ACTOR_CLASS[0]


def _nodes(actor_options: Dict[str, Any]) -> List[str]:
    """Ids of the alive nodes that can host one actor with ``actor_options``' resources."""
    need = {"CPU": actor_options.get("num_cpus", 1), "GPU": actor_options.get("num_gpus", 0),
            **actor_options.get("resources", {})}
    return [node["NodeID"] for node in ray.nodes()
            if node["Alive"] and all(node["Resources"].get(name, 0) >= amount
                                     for name, amount in need.items() if amount)]


def make_vec(game: str, num_envs: int, num_actors: Optional[int] = None,
             num_workers: Optional[int] = None, batch_size: Optional[int] = None,
             autoreset_mode: Any = "next_step", copy: bool = True, placement: Any = "node",
             actor_options: Optional[Dict[str, Any]] = None,
             actor_timeout: Optional[float] = DEFAULT_ACTOR_TIMEOUT,
             **kwargs: Any) -> RayAtariVectorEnv:
    """``num_envs`` copies of ``game`` on Ray actors: a gymnasium ``VectorEnv``.

    Uses the Ray this process is connected to (``ray.init(address=...)`` first), else starts a
    local one (stopped when its last env closes).

    Parameters
    ----------
    game, num_envs, batch_size, autoreset_mode, copy
        As :func:`fastatari.make_vec` (``game``: one name, or one per env; ``mode`` and
        ``difficulty`` may be ``{game: value}``). ``batch_size`` is what
        :meth:`~RayAtariVectorEnv.recv` returns across actors; results always arrive as fresh
        arrays (``copy`` changes nothing).
    num_actors : int, optional
        Default: one per alive node that can host one (``placement="node"``), else 1. Actor
        ``k`` owns a contiguous block of envs, as even as possible.
    num_workers : int, optional
        Worker processes per actor (default: the actor node's usable cores, at most its envs).
    placement : {"node", "spread", "default"} or a Ray scheduling strategy
        ``"node"``: actor ``k`` prefers node ``k mod nodes`` (soft affinity: when that node is
        gone, a restart lands elsewhere); ``"spread"``: Ray's ``SPREAD``; ``"default"``: Ray's
        choice; a strategy object (e.g. a ``PlacementGroupSchedulingStrategy``) is used as is.
    actor_options : dict, optional
        Ray actor options (``num_cpus`` default 1, ``memory``, ``resources``,
        ``runtime_env``, ...). ``max_restarts=-1`` and ``max_task_retries=0`` are fastatari's.
    actor_timeout : float or None
        Seconds creating or restarting an actor may take (default 300; None: forever).
    **kwargs
        :func:`fastatari.make_vec`'s other parameters (``timeout``, ``cpus``,
        ``max_crashes_without_progress`` and ``max_restarts``, which also govern actor
        restarts, ``render_mode``) and :class:`~fastatari.AtariOptions` fields.
    """
    return RayAtariVectorEnv(game, num_envs, num_actors=num_actors, num_workers=num_workers,
                             batch_size=batch_size, autoreset_mode=autoreset_mode, copy=copy,
                             placement=placement, actor_options=actor_options,
                             actor_timeout=actor_timeout, **kwargs)
