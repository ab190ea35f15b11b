"""AtariVectorEnv: N games in worker processes, observations in shared memory.

The trainer process owns the shared block, the autoreset bookkeeping and the workers' lives;
workers own games. One step: write the actions into shared memory, send each worker a small
command naming its envs, wait on the workers' pipes and process sentinels together (no
spinning; a dead worker is seen at once), read the results out of shared memory. The step
command and its reply are a few raw bytes (see ``worker``), so nothing is pickled per step.
"""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
import os
import select
import signal
import weakref
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastatari.game import AtariGame
from fastatari.games import resolve_game
from fastatari.options import AtariOptions
from fastatari.vector import worker as worker_module
from fastatari.vector.buffers import Layout, SharedBuffers
from fastatari.vector.placement import usable_cores

__all__ = ["AtariVectorEnv", "WorkerError"]


class WorkerError(RuntimeError):
    """A Python exception inside a worker; the message carries the worker's traceback."""


def _default_workers(num_envs: int) -> int:
    return max(1, min(usable_cores(), num_envs))


def _wait(objects: List[Any], timeout: Optional[float]) -> List[Any]:
    """``multiprocessing.connection.wait`` (connections and sentinels together), without the
    Python selector it builds per call where ``poll(2)`` is at hand: this runs every step."""
    if not hasattr(select, "poll"):  # Windows
        return wait(objects, timeout=timeout)
    poller = select.poll()
    by_fd = {}
    for obj in objects:
        fd = obj if isinstance(obj, int) else obj.fileno()
        by_fd[fd] = obj
        poller.register(fd, select.POLLIN)
    ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
    return [by_fd[fd] for fd, _ in poller.poll(ms)]


def _death_cause(process: mp.process.BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class _Resources:
    """What must be released even if the env is garbage-collected or the trainer is interrupted:
    kept apart from the env so a weakref finalizer can own it."""

    def __init__(self) -> None:
        self.processes: List[Optional[mp.process.BaseProcess]] = []
        self.conns: List[Optional[Connection]] = []
        self.buffers: Optional[SharedBuffers] = None

    def release(self) -> None:
        for conn in self.conns:
            if conn is not None:
                try:
                    conn.send((worker_module.CLOSE,))
                except (OSError, ValueError):
                    pass
        for process in self.processes:
            if process is not None:
                process.join(timeout=2.0)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=2.0)
        for conn in self.conns:
            if conn is not None:
                conn.close()
        self.processes, self.conns = [], []
        if self.buffers is not None:
            self.buffers.close()
            self.buffers = None


class AtariVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` Atari games stepped in parallel by worker processes.

    Every sub-env is byte-identical to fastatari's single :class:`~fastatari.AtariEnv` (and so
    to gymnasium's reference pipeline) with seed ``seed + i`` after ``reset(seed=seed)``,
    whatever ``num_workers`` is.

    Parameters
    ----------
    game : str
        ``"breakout"``, ``"Breakout"`` or ``"ALE/Breakout-v5"``.
    num_envs : int
    num_workers : int, optional
        Worker processes (default: usable cores, at most ``num_envs``); each owns a contiguous
        block of envs.
    batch_size : int, optional
        Envs :meth:`recv` returns in async mode (default ``num_envs``). Below ``num_envs``,
        workers report every ``ceil(batch_size / num_workers)`` envs, so a batch fills from
        all workers at once rather than from the first to finish its whole block.
    autoreset_mode : {"next_step", "same_step"} or gymnasium.vector.AutoresetMode
        ``"next_step"`` (gymnasium's default): the step after an episode ends resets that env
        and ignores its action. ``"same_step"``: the env resets in the step that ends the
        episode; ``info["final_obs"]`` and ``info["final_info"]`` hold the ended episode's last
        observation and info.
    copy : bool
        Return copies (default) or, for :meth:`step` and :meth:`reset`, views into shared
        memory that the next call overwrites.
    max_restarts : int
        Worker deaths the env recovers from before raising ``RuntimeError``.
    timeout : float, optional
        Seconds to wait for workers before raising ``TimeoutError`` (default: no limit).
    render_mode : {"rgb_array"}, optional
    **options
        :class:`~fastatari.AtariOptions` fields (``frame_skip``, ``noop_max``, ...).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(self, game: str, num_envs: int, num_workers: Optional[int] = None,
                 batch_size: Optional[int] = None,
                 autoreset_mode: str | AutoresetMode = "next_step", copy: bool = True,
                 max_restarts: int = 8, timeout: Optional[float] = None,
                 render_mode: Optional[str] = None, **options: Any) -> None:
        self._closed = True  # until construction succeeds
        if (isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer))
                or num_envs < 1):
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        num_envs = int(num_envs)
        if num_workers is None:
            num_workers = _default_workers(num_envs)
        if (isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer))
                or not 1 <= num_workers <= num_envs):
            raise ValueError(f"num_workers must be an int in [1, num_envs={num_envs}], "
                             f"got {num_workers!r}")
        if batch_size is None:
            batch_size = num_envs
        if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                or not 1 <= batch_size <= num_envs):
            raise ValueError(f"batch_size must be an int in [1, num_envs={num_envs}], "
                             f"got {batch_size!r}")
        modes = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
                 AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
                 AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP}
        mode = modes.get(autoreset_mode)
        if mode is None:
            raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step', "
                             f"got {autoreset_mode!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if not isinstance(max_restarts, (int, np.integer)) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0, got {max_restarts!r}")

        self.options = AtariOptions(**options)
        self.rom = resolve_game(game)
        self.num_envs = num_envs
        self.num_workers = int(num_workers)
        self.batch_size = int(batch_size)
        self.copy = bool(copy)
        self.render_mode = render_mode
        self.max_restarts = int(max_restarts)
        self.timeout = timeout
        self.metadata = dict(self.metadata, autoreset_mode=mode)
        self._same_step = mode == AutoresetMode.SAME_STEP

        # contiguous blocks of envs per worker, as even as possible
        bounds = np.linspace(0, num_envs, self.num_workers + 1).round().astype(int)
        self._blocks = [np.arange(bounds[k], bounds[k + 1]) for k in range(self.num_workers)]
        self._owner = np.repeat(np.arange(self.num_workers), np.diff(bounds))

        self._autoreset = np.zeros(num_envs, bool)  # next_step: the next step resets this env
        self._restarted = np.zeros(num_envs, bool)  # reported once, on the next result
        self._pending = np.zeros(num_envs, bool)  # sent, not yet returned
        # restarted while idle (paused in async use): the next send reports the restart
        # (truncated, worker_restarted) without stepping
        self._notice = np.zeros(num_envs, bool)
        self._ready: List[int] = []  # async: finished, waiting to be returned by recv
        # per worker, the replies it owes: (envs a reply covers, whether it ends its command)
        self._sent: List[Deque[Tuple[np.ndarray, bool]]] = [collections.deque()
                                                            for _ in range(self.num_workers)]
        self._step_all = [_step_command(0, bytes([worker_module.STEP_ENV]) * len(block))
                          for block in self._blocks]
        # async: workers answer every `chunk` envs, so a batch can gather envs from all of them
        self._chunk = (0 if self.batch_size >= num_envs
                       else min(0xFFFF, -(-self.batch_size // self.num_workers)))
        self._all_ids = np.arange(num_envs)
        self._seeds: List[Optional[int]] = [None] * num_envs
        self._restarts = 0
        self._was_reset = False

        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.release)
        layout = Layout(num_envs, self.options.observation_shape)
        self._res.buffers = SharedBuffers(layout, create=True)
        self._buf = self._res.buffers
        self._ctx = _context()
        self._res.processes = [None] * self.num_workers
        self._res.conns = [None] * self.num_workers
        try:
            for k in range(self.num_workers):
                self._start_worker(k, [])
            # While the workers start: one game here checks the options against the ROM
            # (mode, difficulty, FIRE, screen size) and tells the action count.
            probe = AtariGame(self.rom, self.options)
            self._num_actions = probe.num_actions
            probe.close()
            self._wait_ready(range(self.num_workers))
        except BaseException:
            self._finalizer()
            raise
        self._closed = False

        self.single_observation_space = spaces.Box(0, 255, self.options.observation_shape,
                                                   np.uint8)
        self.single_action_space = spaces.Discrete(self._num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    # -- workers -------------------------------------------------------------------------------
    def _start_worker(self, k: int, initial_resets: Sequence[Tuple[int, Optional[int]]]) -> None:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_module.run, name=f"fastatari-worker-{k}", daemon=True,
            args=(child, self._buf.name, self._buf.layout, self.rom, self.options,
                  self._blocks[k].tolist(), self._same_step, list(initial_resets)))
        process.start()
        child.close()
        self._res.processes[k] = process
        self._res.conns[k] = parent

    def _send(self, k: int, message: tuple | bytes) -> None:
        """Send a command (a tuple, pickled; or raw bytes); a worker that died meanwhile is
        found (and restarted) by the wait that follows, through its process sentinel."""
        conn = self._res.conns[k]
        try:
            if isinstance(message, bytes):
                conn.send_bytes(message)
            else:
                conn.send(message)
        except (BrokenPipeError, ConnectionResetError):
            pass
        # After the write: a worker that sees the bump finds its command already in the pipe.
        self._buf.wake[self._blocks[k][0]] += 1

    def _wait_ready(self, workers: Sequence[int]) -> Dict[int, tuple]:
        replies = self._collect(list(workers), on_death="raise")
        for k, reply in replies.items():
            if reply[0] != worker_module.READY:
                raise RuntimeError(f"worker {k} answered {reply[0]!r} instead of ready")
        return replies

    def _collect(self, workers: List[int], on_death: str = "restart",
                 first: bool = False) -> Dict[int, tuple]:
        """Wait for one reply from each of ``workers`` (``first``: from whichever answer
        first, at least one). A worker that dies is restarted (or, with ``on_death="raise"``,
        reported); its reply is then ``("restarted",)``. The envs of an answered step command
        join :attr:`_ready`. Worker errors are raised once the replies are in, so the protocol
        stays in step."""
        replies: Dict[int, tuple] = {}
        watch: Dict[Any, int] = {}
        for k in workers:
            watch[self._res.conns[k]] = k
            watch[self._res.processes[k].sentinel] = k
        try:
            while len(replies) < len(workers) and not (first and replies):
                ready = _wait(list(watch), self.timeout)
                if not ready:
                    pending = sorted(set(workers) - set(replies))
                    raise TimeoutError(f"workers {pending} did not answer within "
                                       f"{self.timeout} s")
                readable: Dict[int, bool] = {}  # worker -> its pipe has data (or EOF)
                for obj in ready:
                    k = watch[obj]
                    readable[k] = readable.get(k, False) or obj is self._res.conns[k]
                for k, has_data in readable.items():
                    reply = self._receive(k, has_data)
                    if reply is None:  # dead
                        if on_death == "raise":
                            process = self._res.processes[k]
                            raise RuntimeError(f"worker {k} (pid {process.pid}) died while "
                                               f"starting: {_death_cause(process)}")
                        lost = list(self._sent[k])  # its queued steps died with it
                        self._sent[k].clear()
                        self._restart(k)
                        reply = ("restarted",)
                        for ids, _ in lost:
                            self._ready.extend(ids.tolist())
                    else:
                        self._settle(k, reply)
                    replies[k] = reply
                    watch = {obj: j for obj, j in watch.items() if j != k}
        except BaseException:
            # Ctrl-C or a timeout mid-protocol: the workers' state is unknown; shut down cleanly.
            self.close()
            raise
        errors = [(k, r[1]) for k, r in sorted(replies.items()) if r[0] == worker_module.ERROR]
        if errors:
            k, text = errors[0]
            raise WorkerError(f"worker {k} raised an exception:\n{text}")
        return replies

    def _settle(self, k: int, reply: tuple) -> None:
        """Mark the envs a step reply covers as ready. An error ends its whole command: the
        envs it had not answered for get no result and are idle again (as after a failed
        :meth:`step`), so :meth:`reset` can follow."""
        failed = reply[0] == worker_module.ERROR
        sent = self._sent[k]
        while sent:
            ids, last = sent.popleft()
            if failed:
                self._pending[ids] = False
            else:
                self._ready.extend(ids.tolist())
            if last or not failed:
                break

    def _receive(self, k: int, readable: bool = False) -> Optional[tuple]:
        """The worker's reply, or None if it died. ``readable``: the pipe is known to have
        data or EOF, so no poll is needed first."""
        conn = self._res.conns[k]
        try:
            if readable or conn.poll():
                data = conn.recv_bytes()
                return _DONE if data == worker_module.DONE else ForkingPickler.loads(data)
        except (EOFError, OSError):
            pass
        process = self._res.processes[k]
        process.join(timeout=5.0)
        if process.is_alive():  # sentinel without reply cannot happen for a live process
            return self._receive(k)
        return None

    def _restart(self, k: int) -> None:
        """Replace a dead worker: recreate its games with deterministic seeds and reset them;
        their next result reports ``truncated`` and ``info["worker_restarted"]``."""
        process = self._res.processes[k]
        cause = _death_cause(process)
        self._restarts += 1
        if self._restarts > self.max_restarts:
            message = (f"worker {k} (pid {process.pid}) died: {cause}; the restart budget "
                       f"(max_restarts={self.max_restarts}) is spent")
            self.close()
            raise RuntimeError(message)
        self._res.conns[k].close()
        ids = self._blocks[k]
        buf = self._buf
        buf.final_obs[ids] = buf.obs[ids]  # the last observation before the crash
        resets = [(i, self._restart_seed(i)) for i in ids.tolist()]
        self._start_worker(k, resets)
        self._wait_ready([k])
        for i in ids:
            buf.reward[i] = 0.0
            buf.raw_reward[i] = 0.0
            buf.terminated[i] = False
            buf.truncated[i] = True
            buf.game_over[i] = True
            buf.episode_done[i] = False
            buf.has_final[i] = self._same_step
            buf.final_lives[i] = buf.lives[i]
        self._restarted[ids] = True
        self._notice[ids] = ~self._pending[ids]

    def _restart_seed(self, i: int) -> int:
        base = self._seeds[i] if self._seeds[i] is not None else i
        return int(np.random.SeedSequence([base, self._restarts]).generate_state(1)[0])

    @property
    def worker_pids(self) -> List[int]:
        """The worker processes' ids, in worker order."""
        self._check_open()
        return [p.pid for p in self._res.processes]

    # -- validation ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this AtariVectorEnv is closed")

    def _check_actions(self, actions: Any, count: int) -> np.ndarray:
        if actions is None:
            raise TypeError("actions must be an array of ints, got None")
        try:
            array = np.asarray(actions)
        except Exception as e:  # noqa: BLE001 - ragged lists and the like
            raise TypeError(f"actions must be an array of ints: {e}") from None
        if array.dtype == bool or array.dtype.kind not in "iu":
            raise TypeError(f"actions must be integers, got dtype {array.dtype}")
        if array.shape != (count,):
            raise ValueError(f"actions must have shape ({count},), got {array.shape}")
        n = self._num_actions
        bad = (array < 0) | (array >= n)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(f"actions must be in [0, {n}) (Discrete({n})); "
                             f"actions[{j}] = {array[j]}")
        return array.astype(np.int64, copy=False)

    def _check_env_ids(self, env_ids: Any) -> np.ndarray:
        if env_ids is None:
            return np.arange(self.num_envs)
        ids = np.asarray(env_ids)
        if ids.dtype == bool or ids.dtype.kind not in "iu" or ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"env_ids must be a non-empty 1-d array of ints, got {env_ids!r}")
        if (ids < 0).any() or (ids >= self.num_envs).any():
            raise ValueError(f"env_ids must be in [0, {self.num_envs}), got {env_ids!r}")
        if np.unique(ids).size != ids.size:
            raise ValueError(f"env_ids must not repeat, got {env_ids!r}")
        return ids.astype(np.int64)

    # -- reset ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[Optional[int]] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``).

        ``seed``: an int gives env ``i`` the seed ``seed + i``; a sequence gives one seed (or
        None) per env; None continues each env's generators.
        """
        self._check_open()
        if self._pending.any() or self._ready:
            raise RuntimeError("reset() while async steps are pending: recv() them first")
        mask = np.ones(self.num_envs, bool)
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.dtype != bool or mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), "
                                 f"got {mask.dtype} {mask.shape}")
            if not mask.any():
                raise ValueError("reset_mask selects no env")
            if not self._was_reset and not mask.all():
                raise ValueError("the first reset() must reset every env (no reset_mask)")
        seeds = self._seed_list(seed)
        ids = np.flatnonzero(mask)
        for i in ids:
            if seeds[i] is not None:
                self._seeds[i] = seeds[i]
        commands = {}
        for k in range(self.num_workers):
            mine = [(int(i), seeds[i]) for i in ids if self._owner[i] == k]
            if mine:
                commands[k] = mine
        while commands:  # a worker that died meanwhile is restarted, then asked again
            for k, mine in commands.items():
                self._send(k, (worker_module.RESET, mine))
            replies = self._collect(list(commands))
            commands = {k: commands[k] for k, r in replies.items() if r[0] == "restarted"}
        self._autoreset[ids] = False
        self._restarted[ids] = False
        self._notice[ids] = False
        self._was_reset = True
        obs = self._buf.obs.copy() if self.copy else self._buf.obs
        return obs, self._info(np.arange(self.num_envs), mask)

    def _seed_list(self, seed: Any) -> List[Optional[int]]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        try:
            seeds = list(seed)
        except TypeError:
            raise TypeError(f"seed must be None, an int or a sequence of ints, "
                            f"got {seed!r}") from None
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed list must have {self.num_envs} entries, got {len(seeds)}")
        for s in seeds:
            if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer))):
                raise TypeError(f"seeds must be ints or None, got {s!r}")
        return [None if s is None else int(s) for s in seeds]

    # -- step, send, recv ----------------------------------------------------------------------
    def step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          Dict[str, Any]]:
        """Step every env with ``actions`` (shape ``(num_envs,)``) and wait for all of them."""
        self._check_open()
        if self._pending.any() or self._ready:
            raise RuntimeError("step() while async steps are pending: recv() them first")
        if not self._was_reset:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions, self.num_envs)
        ids = self._all_ids
        self._pending[:] = True
        try:
            _, workers = self._dispatch(ids, actions)
            self._collect(workers)
        finally:  # also after a worker's exception: every reply is in
            self._ready.clear()
            self._pending[:] = False
        return self._results(ids, whole=True)

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions``; :meth:`recv` collects.

        Envs not named here stay paused. An env whose result has not been returned by
        :meth:`recv` yet cannot be sent again.
        """
        self._check_open()
        if not self._was_reset:
            raise RuntimeError("call reset() before send()")
        ids = self._check_env_ids(env_ids)
        actions = self._check_actions(actions, ids.size)
        busy = self._pending[ids]
        if busy.any():
            raise RuntimeError(f"env {int(ids[np.flatnonzero(busy)[0]])} already has a step in "
                               f"flight: recv() it first")
        done_now, _ = self._dispatch(ids, actions, self._chunk)
        self._pending[ids] = True
        self._ready.extend(done_now.tolist())

    def recv(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        """Return the first ``batch_size`` envs to finish (fewer if fewer are in flight), with
        their ids in ``info["env_id"]``."""
        self._check_open()
        if not self._pending.any():
            raise RuntimeError("recv() without send(): no step is in flight")
        in_flight = int(self._pending.sum())
        want = min(self.batch_size, in_flight)
        while len(self._ready) < want:
            self._collect([k for k in range(self.num_workers) if self._sent[k]], first=True)
        ids = np.array(self._ready[:want], np.int64)
        del self._ready[:want]
        self._pending[ids] = False
        obs, reward, terminated, truncated, info = self._results(ids, whole=False)
        info["env_id"] = ids
        return obs, reward, terminated, truncated, info

    def _dispatch(self, ids: np.ndarray, actions: np.ndarray,
                  chunk: int = 0) -> Tuple[np.ndarray, List[int]]:
        """Write actions, then send each worker its envs: autoreset ones reset, others step.
        Workers answer after every ``chunk`` envs (0: once per command).

        Returns the envs done at once (a restart to report, see ``_notice``) and the workers
        that were sent a command.
        """
        if not self._was_reset:
            raise RuntimeError("call reset() before step()")
        done_now = ids[:0]
        if self._notice.any():
            notice = self._notice[ids]
            done_now = ids[notice]
            self._notice[done_now] = False
            ids, actions = ids[~notice], actions[~notice]
        whole = ids is self._all_ids
        if whole:
            self._buf.action[:] = actions
        else:
            self._buf.action[ids] = actions
        if whole and not chunk and not self._autoreset.any():  # the common step
            for k in range(self.num_workers):
                self._send(k, self._step_all[k])
                self._sent[k].append((self._blocks[k], True))
            return done_now, list(range(self.num_workers))
        ops = np.zeros(self.num_envs, np.uint8)
        ops[ids] = np.where(self._autoreset[ids], worker_module.RESET_ENV,
                            worker_module.STEP_ENV)
        owners = self._owner[ids]
        workers = [int(k) for k in np.unique(owners)]
        for k in workers:
            block = self._blocks[k]
            self._send(k, _step_command(chunk, ops[block[0]:block[-1] + 1].tobytes()))
            mine = np.sort(ids[owners == k])  # the order the worker runs them in
            size = chunk or mine.size
            for start in range(0, mine.size, size):
                self._sent[k].append((mine[start:start + size], start + size >= mine.size))
        return done_now, workers

    # -- results -------------------------------------------------------------------------------
    def _results(self, ids: np.ndarray, whole: bool):
        """Observations, rewards, flags and info of ``ids`` (``whole``: every env, in order)."""
        buf = self._buf
        if whole:
            sel: Any = slice(None)
            obs = buf.obs.copy() if self.copy else buf.obs
            reward = buf.reward.copy()
            terminated = buf.terminated.copy()
            truncated = buf.truncated.copy()
        else:
            sel = ids
            obs, reward = buf.obs[ids], buf.reward[ids]
            terminated, truncated = buf.terminated[ids], buf.truncated[ids]
        if not self._same_step:
            self._autoreset[sel] = terminated | truncated
        info = self._info(sel, np.ones(reward.size, bool))
        return obs, reward, terminated, truncated, info

    def _info(self, sel: Any, mask: np.ndarray) -> Dict[str, Any]:
        """gymnasium's vector info: arrays over the envs ``sel`` (a slice or ids), with ``_key``
        masks saying which of them the info is for."""
        buf = self._buf
        info: Dict[str, Any] = {}

        def put(key: str, values: np.ndarray, present: np.ndarray) -> None:
            info[key] = values
            info["_" + key] = present

        put("lives", buf.lives[sel].copy(), mask.copy())
        put("frame_number", buf.frame_number[sel].copy(), mask.copy())
        put("episode_frame_number", buf.episode_frame_number[sel].copy(), mask.copy())
        if self.options.clip_rewards:
            put("raw_reward", buf.raw_reward[sel].copy(), mask.copy())
        if self.options.episodic_life:
            put("game_over", buf.game_over[sel].copy(), mask.copy())
        ended = buf.episode_done[sel] & mask
        if ended.any():
            info["episode"] = {
                "r": np.where(ended, buf.episode_r[sel], 0.0),
                "l": np.where(ended, buf.episode_l[sel], 0),
                "t": np.where(ended, buf.episode_t[sel], 0.0),
                "_r": ended, "_l": ended, "_t": ended,
            }
            info["_episode"] = ended
        full = self._all_ids[sel]  # the env ids, for the rare per-env entries below
        restarted = self._restarted[full] & mask
        if restarted.any():
            put("worker_restarted", restarted, restarted.copy())
            self._restarted[full[restarted]] = False
        if self._same_step:
            has_final = buf.has_final[full] & mask
            if has_final.any():
                final_obs = np.empty(full.size, object)
                final_info = np.empty(full.size, object)
                for j in np.flatnonzero(has_final):
                    i = full[j]
                    final_obs[j] = buf.final_obs[i].copy()
                    final_info[j] = {"lives": int(buf.final_lives[i])}
                    if ended[j]:
                        final_info[j]["episode"] = {"r": float(buf.episode_r[i]),
                                                    "l": int(buf.episode_l[i]),
                                                    "t": float(buf.episode_t[i])}
                put("final_obs", final_obs, has_final.copy())
                put("final_info", final_info, has_final.copy())
        return info

    # -- render, close -------------------------------------------------------------------------
    def render(self, env_ids: Any = None) -> Optional[np.ndarray]:
        """Raw RGB screens ``(len(env_ids), 210, 160, 3)`` (default: every env)."""
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() needs render_mode='rgb_array'")
            return None
        if self._pending.any() or self._ready:
            raise RuntimeError("render() while async steps are pending: recv() them first")
        ids = self._check_env_ids(env_ids)
        screens: Dict[int, np.ndarray] = {}
        commands = {}
        for k in np.unique(self._owner[ids]):
            mine = [int(i) for i in ids if self._owner[i] == k]
            commands[int(k)] = mine
            self._send(k, (worker_module.RENDER, mine))
        for k, reply in self._collect(list(commands)).items():
            if reply[0] == worker_module.RENDER:
                screens.update(zip(commands[k], reply[1], strict=False))
            else:  # restarted: render the fresh games
                self._send(k, (worker_module.RENDER, commands[k]))
                screens.update(zip(commands[k], self._collect([k])[k][1], strict=False))
        return np.stack([screens[int(i)] for i in ids])

    def close(self, **kwargs: Any) -> None:
        """Stop the workers and free the shared memory. Safe to call more than once."""
        self._closed = True
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # runs once

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (gymnasium's ``VectorEnv.closed``)."""
        return self._closed

    def __enter__(self) -> "AtariVectorEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # weakref.finalize does the work; this only keeps gymnasium's VectorEnv.__del__ quiet
        pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.num_workers} workers"
        return f"AtariVectorEnv({self.rom!r}, num_envs={self.num_envs}, {state})"


_DONE = ("done",)


def _step_command(chunk: int, ops: bytes) -> bytes:
    """The step command (see ``worker``): answer every ``chunk`` envs, one op per env."""
    return worker_module.STEP + chunk.to_bytes(2, "little") + ops


def _context() -> mp.context.BaseContext:
    """forkserver where it exists (no fork after threads), spawn elsewhere; workers import the
    game layer once in the server and start by forking from it."""
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["fastatari.vector.worker"])
        return ctx
    return mp.get_context("spawn")
