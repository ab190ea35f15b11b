"""The Ray executor: actors that Ray recreates (``max_restarts=-1``) but never re-runs a call
on (``max_task_retries=0``); the driver keeps a copy of every result column."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import ray
from gymnasium.error import ClosedEnvironmentError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from fastatari.core import validate
from fastatari.ray.actor import ActorRestarted, EnvActor
from fastatari.vector.assignment import contiguous_blocks
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.executor import Executor, RestartPolicy, SeedBook, deadline, remaining
from fastatari.vector.messages import Op, Reply, ReplyKind
from fastatari.vector.plan import VectorPlan

__all__ = ["CLOSE_WAIT", "DEFAULT_ACTOR_TIMEOUT", "PLACEMENTS", "RayExecutor", "Recovered"]

#: Default ``actor_timeout``: how long creating or restarting an actor may take (placement,
#: start-up, the first reset) before the driver gives up on it.
DEFAULT_ACTOR_TIMEOUT = 300.0
#: What ``close`` waits for the actors to stop their workers before killing them.
CLOSE_WAIT = 30.0
PLACEMENTS = ("node", "spread", "default")

_LOST = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError, ActorRestarted)

# Ray started by this module (no ray.init by the caller): shut down with its last env.
_OWN_RAY = {"envs": 0}
_OWN_RAY_LOCK = threading.Lock()


class Recovered(Exception):
    """A call was lost with its actor, or raised in it, and the actor was recovered: ``reply``
    reports it, ``cause`` is Ray's error."""

    def __init__(self, reply: Reply, cause: BaseException) -> None:
        super().__init__(reply.source)
        self.reply = reply
        self.cause = cause


class _Call(NamedTuple):
    """A remote call in flight: its actor, the actor's epoch when sent, the envs it steps (a
    run call's, global ids)."""

    actor: int
    epoch: int
    ids: np.ndarray


def _start_ray() -> None:
    """Ray for an env whose caller did not ``ray.init``: the cluster ``RAY_ADDRESS`` names, or
    a private one on this machine, on loopback only (Ray's default would advertise the
    machine's network address)."""
    if os.environ.get("RAY_ADDRESS"):
        ray.init(include_dashboard=False)
        return
    # On Linux Ray turns 127.0.0.1 into the machine's address unless this switch is off: Ray's
    # processes read it from the environment they inherit at start-up, this one from the
    # constant (the ray extra pins the Ray this relies on; a test checks the address)
    from ray._private import ray_constants

    key = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    saved_env, saved = os.environ.get(key), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[key], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        ray.init(include_dashboard=False, _node_ip_address="127.0.0.1")
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        if saved_env is None:
            del os.environ[key]
        else:
            os.environ[key] = saved_env


def _release(actors: List[Any], buffers: SharedBuffers, owns_ray: bool) -> None:
    """Kill the actors (their workers exit with them), free the driver's columns, and stop a
    Ray this module started."""
    if ray.is_initialized():
        for actor in actors:
            with contextlib.suppress(Exception):  # already gone, or Ray is shutting down
                ray.kill(actor, no_restart=True)
    actors.clear()
    buffers.close()
    if owns_ray:
        with _OWN_RAY_LOCK:
            _OWN_RAY["envs"] -= 1
            if _OWN_RAY["envs"] == 0 and ray.is_initialized():
                ray.shutdown()


class RayExecutor(Executor):
    """The envs of ``plan`` in contiguous blocks on ``num_actors`` Ray actors, each running
    its block on its node with a local executor, which checks and applies the local-worker
    settings (``num_workers``, ``cpus``). The parameters are :func:`fastatari.ray.make_vec`'s."""

    def __init__(self, plan: VectorPlan, num_actors: Optional[int] = None,
                 placement: Any = "node", actor_options: Optional[Dict[str, Any]] = None,
                 actor_timeout: Optional[float] = DEFAULT_ACTOR_TIMEOUT) -> None:
        actor_timeout = validate.check_timeout("actor_timeout", actor_timeout)
        if not (placement in PLACEMENTS or not isinstance(placement, str)):
            raise ValueError(f"placement must be one of {PLACEMENTS} or a Ray scheduling "
                             f"strategy, got {placement!r}")
        actor_options = dict(actor_options or {})
        if actor_options.get("max_task_retries", 0) != 0:
            raise ValueError("actor_options must not set max_task_retries: a step re-run on a "
                             "restarted actor would silently diverge from what was reported")
        self.buffers = SharedBuffers(plan.layout)
        self.seeds = SeedBook(plan.env_ids)
        self.num_workers = plan.workers.get("num_workers")  # per actor (None: its node's cores)
        self.actor_timeout = actor_timeout
        self.actors: List[Any] = []  # actor k's handle (replaced when Ray gives up on it)
        self._calls: Dict[Any, _Call] = {}
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            with _OWN_RAY_LOCK:
                if not ray.is_initialized():
                    _start_ray()
                _OWN_RAY["envs"] += 1
        self._finalizer = weakref.finalize(self, _release, self.actors, self.buffers,
                                           self._owns_ray)
        try:
            actor_options.setdefault("num_cpus", 1)
            self._actor_options = actor_options
            self._placement = placement
            self._nodes = _nodes(actor_options) if placement == "node" else []
            num_envs = plan.num_envs
            if num_actors is None:
                num_actors = max(1, min(len(self._nodes), num_envs))
            self.num_actors = validate.check_int("num_actors", num_actors, 1, num_envs)
            self.blocks = contiguous_blocks(num_envs, self.num_actors)
            self._lasts = np.array([block.stop - 1 for block in self.blocks])  # for _by_actor
            self._plans = [plan.block(block.start, block.stop) for block in self.blocks]
            self.actors.extend(self._spawn(k) for k in range(self.num_actors))
        except BaseException:
            self._finalizer()
            raise
        self._epoch = [0] * self.num_actors
        self._policy = RestartPolicy(self.num_actors, plan.config.max_crashes_without_progress,
                                     plan.config.max_restarts)
        self.nodes = [""] * self.num_actors  # each actor's, once started

    # -- actors --------------------------------------------------------------------------------
    def _spawn(self, k: int) -> Any:
        """A new actor for block ``k``."""
        options = dict(self._actor_options, max_restarts=-1, max_task_retries=0)
        if self._placement == "node":
            if self._nodes:
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    self._nodes[k % len(self._nodes)], soft=True)
        elif self._placement == "spread":
            options["scheduling_strategy"] = "SPREAD"
        elif self._placement != "default":
            options["scheduling_strategy"] = self._placement
        return _actor_class().options(**options).remote(self._plans[k])

    def start(self) -> None:
        until = deadline(self.actor_timeout)
        refs = [actor.start.remote(0, [None] * len(block), (), None)
                for actor, block in zip(self.actors, self.blocks, strict=True)]
        try:
            for k, ref in enumerate(refs):
                self._started(k, ref, until, f"actor {k} did not start")
        except ray.exceptions.RayActorError as error:  # __init__ raised: show its cause
            self.close()
            raise RuntimeError(f"an actor failed to start: {error}") from None

    def _started(self, k: int, ref: Any, until: Optional[float], what: str
                 ) -> Optional[Dict[str, np.ndarray]]:
        """Wait until ``until`` for actor ``k``'s start call ``ref``: the rows after its
        resets (None: none). Past it, close and raise: ``what`` happened."""
        try:
            described, after = ray.get(ref, timeout=remaining(until))
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise RuntimeError(f"{what} within actor_timeout={self.actor_timeout} s: does the "
                               f"cluster have the resources {self._actor_options} for it?"
                               ) from None
        self.nodes[k] = described["node_id"]
        return after

    # -- calls -----------------------------------------------------------------------------------
    def submit(self, k: int, method: str, *args: Any, ids: Optional[np.ndarray] = None) -> Any:
        """Call ``method`` of actor ``k`` with its epoch; returns the call's ref."""
        ref = getattr(self.actors[k], method).remote(self._epoch[k], *args)
        self._calls[ref] = _Call(k, self._epoch[k], np.empty(0, np.int64) if ids is None
                                 else ids)
        return ref

    def get(self, ref: Any) -> Any:
        """A call's result. A call lost with its actor, or that raised in it (which may leave
        its games half-stepped), recovers the actor (once per fault) and raises
        :class:`Recovered` with the restart's report (the call's envs lost)."""
        call = self._calls.pop(ref)
        try:
            value = ray.get(ref)
        except (*_LOST, ray.exceptions.RayTaskError) as error:
            if self.closed:
                raise ClosedEnvironmentError("this RayAtariVectorEnv is closed") from error
            block = np.arange(self.blocks[call.actor].start, self.blocks[call.actor].stop)
            restarted = block if call.epoch == self._epoch[call.actor] else block[:0]
            if restarted.size:
                self._recover(call.actor, error)
            raised = None if isinstance(error, _LOST) else str(error)  # its traceback
            raise Recovered(Reply(ReplyKind.RESTARTED, payload=raised, envs=call.ids,
                                  restarted=restarted, source=f"actor {call.actor}"),
                            error) from None
        except KeyboardInterrupt:
            self.close()
            raise
        self._policy.progress(call.actor)
        return value

    def call_all(self, method: str, actors: Iterable[int], args: Callable[[int], tuple],
                 report: Callable[[Reply], None]) -> Dict[int, Any]:
        """Call ``method`` of each of ``actors`` with ``args(k)``, all at once, and wait for
        every one. A call lost with its actor is sent again, with ``args(k)`` asked anew, once
        the actor is recovered and ``report`` has taken the restart's report; one that raised
        is not: its value is then its :class:`Recovered`. Returns the values by actor."""
        refs = {k: self.submit(k, method, *args(k)) for k in actors}
        values: Dict[int, Any] = {}
        for k, ref in refs.items():
            while k not in values:
                try:
                    values[k] = self.get(ref)
                except Recovered as recovered:
                    report(recovered.reply)
                    if recovered.reply.payload is not None:
                        values[k] = recovered
                    else:
                        ref = self.submit(k, method, *args(k))
        return values

    def _recover(self, k: int, cause: BaseException) -> None:
        """Actor ``k`` died (or its result was lost) or raised ``cause``: wait for Ray to
        restart it (or replace it when Ray gave up), then start it with its envs' replacement
        games."""
        if isinstance(cause, _LOST):
            self._died(k, f"actor {k} died: {cause}")
        else:
            self._died(k, f"actor {k} raised an exception", f"\n{cause}", warn=True)
        self._epoch[k] += 1
        self.nodes[k] = ""  # not started: set again once it is
        block = self.blocks[k]
        ids = np.arange(block.start, block.stop)
        seeds = self.seeds.last[block.start:block.stop]
        resets = [(i - block.start, seed)
                  for i, seed in self.seeds.restart_resets(ids.tolist(), self.restarts)]
        rows = self.buffers.rows(ids, finals=False) if resets else None
        until = deadline(self.actor_timeout)
        while True:
            ref = self.actors[k].start.remote(self._epoch[k], seeds, resets, rows)
            try:
                after = self._started(k, ref, until, f"actor {k} died ({cause}) and was not "
                                                     f"running again")
                break
            except ray.exceptions.ActorUnavailableError:  # restarting: ask again shortly
                time.sleep(0.1)
            except (ray.exceptions.ActorDiedError, ray.exceptions.ObjectLostError) as died:
                self._died(k, f"actor {k} died: {died}")  # Ray gave up: a new one in its place
                cause = died
                self.actors[k] = self._spawn(k)
        if after is not None:
            self.buffers.put_rows(ids, after)

    def _take_answer(self, k: int, answer: Tuple[List[Reply], np.ndarray, Dict[str, Any]]
                     ) -> List[Reply]:
        """Write an actor's rows into the driver's columns; its replies in global env ids."""
        replies, ids, rows = answer
        start = self.blocks[k].start
        self.buffers.put_rows(ids + start, rows)
        return [reply._replace(
            envs=None if reply.envs is None else reply.envs + start,
            restarted=None if reply.restarted is None else reply.restarted + start,
            source=f"actor {k}, {reply.source}") for reply in replies]

    # -- the executor's calls --------------------------------------------------------------------
    def run(self, ops: Optional[np.ndarray], output: int = -1) -> None:  # no outputs
        ops = np.full(self.buffers.op.size, Op.STEP, np.uint8) if ops is None else ops
        ids = np.flatnonzero(ops)
        for k, rows in self._by_actor(ids):
            block = slice(self.blocks[k].start, self.blocks[k].stop)
            self.submit(k, "run", ops[block], self.buffers.action[block], ids=ids[rows])

    def busy(self) -> bool:
        return bool(self._calls)

    def collect(self, at_least: Optional[int] = None) -> List[Reply]:
        replies: List[Reply] = []
        answered = 0
        while self._calls and (at_least is None or answered < at_least):
            pending = list(self._calls)
            ready, _ = ray.wait(pending, num_returns=len(pending) if at_least is None else 1)
            for ref in ready:  # only run calls wait here
                call = self._calls[ref]
                answered += call.ids.size
                try:
                    replies += self._take_answer(call.actor, self.get(ref))
                except Recovered as recovered:
                    replies.append(recovered.reply)
        return replies

    def _by_actor(self, ids: np.ndarray) -> List[Tuple[int, np.ndarray]]:
        """Each actor owning some of ``ids``, with the mask of its rows in ``ids``."""
        owners = np.searchsorted(self._lasts, ids)
        return [(k, owners == k) for k in np.unique(owners).tolist()]

    def _command(self, name: str, items: Sequence[Tuple[int, Any]]
                 ) -> Tuple[List[Any], List[Reply]]:
        # every actor owning envs of items gets its own, in its own env ids, all at once
        ids = np.array([i for i, _ in items], np.int64)
        rows = {k: np.flatnonzero(mine).tolist() for k, mine in self._by_actor(ids)}
        replies: List[Reply] = []
        answers = self.call_all("command", rows, lambda k: (name, [
            (items[j][0] - self.blocks[k].start, items[j][1]) for j in rows[k]]),
            replies.append)
        values: List[Any] = [None] * ids.size
        for k, value in answers.items():
            if isinstance(value, Recovered):  # the actor raised: no values, no rows
                continue
            got, answer = value
            replies += self._take_answer(k, answer)
            for j, one in zip(rows[k], got, strict=True):
                values[j] = one
        return values, replies

    # -- close -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every actor's workers, then the actors. Safe to call more than once."""
        if self.closed:
            return
        if ray.is_initialized():
            # an actor not started (no node yet: not placed) has no workers, and may never answer
            refs = []
            for actor in [a for a, node in zip(self.actors, self.nodes, strict=True) if node]:
                with contextlib.suppress(Exception):  # already gone
                    refs.append(actor.close.remote())
            if refs:
                ray.wait(refs, num_returns=len(refs), timeout=CLOSE_WAIT)
        self._calls.clear()
        self._finalizer()


@functools.cache
def _actor_class() -> Any:
    """:class:`EnvActor` as a Ray actor class (made once, on first use)."""
    return ray.remote(EnvActor)


def _nodes(actor_options: Dict[str, Any]) -> List[str]:
    """Ids of the alive nodes that can host one actor with ``actor_options``' resources."""
    need = {"CPU": actor_options.get("num_cpus", 1), "GPU": actor_options.get("num_gpus", 0),
            **actor_options.get("resources", {})}
    return [node["NodeID"] for node in ray.nodes()
            if node["Alive"] and all(node["Resources"].get(name, 0) >= amount
                                     for name, amount in need.items() if amount)]
