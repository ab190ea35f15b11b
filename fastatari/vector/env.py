"""AtariVectorEnv: N games in worker processes, observations in shared memory.

The env keeps gymnasium's contract: argument checks, the call order (an explicit state), the
autoreset bookkeeping and gymnasium's batched ``info``. Processes, pipes and restarts are the
:class:`~.pool.WorkerPool`'s; the messages are :mod:`.protocol`'s; the result columns come
from :mod:`fastatari.schema`.

Per env it keeps four things: its phase (idle, stepping in a worker, or answered and waiting
for :meth:`AtariVectorEnv.recv`), the queue of answered envs in answer order, whether its next
step is a reset (next-step autoreset), and whether its worker was restarted since its last
result (reported once, as ``info["worker_restarted"]``).
"""

from __future__ import annotations

import collections
import enum
from typing import Any, Callable, Container, Deque, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import AlreadyPendingCallError
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastatari import validate
from fastatari.game import ALE_ACTIONS
from fastatari.romfacts import RomFacts, known_facts, loaded_facts
from fastatari.schema import GAME_FIELDS, GAME_KEY, info_fields
from fastatari.vector import contract
from fastatari.vector.buffers import Layout, SharedBuffers
from fastatari.vector.contract import CallOrder, State
from fastatari.vector.lineup import assign_workers, make_lineup
from fastatari.vector.placement import resolve_cpus, usable_cores
from fastatari.vector.pool import WorkerError, WorkerPool, raise_errors
from fastatari.vector.protocol import (Op, Reply, ReplyKind, ResetRequest, WorkerConfig,
                                       encode_render, encode_reset)

__all__ = ["AtariVectorEnv", "WorkerError"]

#: Default ``timeout``: long enough for a worker to reload many ROMs in one reset, short
#: enough that a hung worker is replaced within a couple of minutes.
DEFAULT_TIMEOUT = 120.0


class _Phase(enum.IntEnum):
    IDLE = 0
    IN_FLIGHT = 1  # sent to its worker, not answered yet
    ANSWERED = 2  # answered, waiting for recv()


class AtariVectorEnv(CallOrder, gymnasium.vector.VectorEnv):
    """``num_envs`` Atari games stepped in parallel by worker processes.

    Every sub-env is byte-identical to fastatari's single :class:`~fastatari.AtariEnv` (and so
    to gymnasium's reference pipeline) with seed ``seed + i`` after ``reset(seed=seed)``,
    whatever ``num_workers`` is.

    Parameters
    ----------
    game : str or sequence of str
        ``"breakout"``, ``"Breakout"`` or ``"ALE/Breakout-v5"``; or one name per env (several
        games in one pool: env ``i`` plays ``game[i]``, byte-identical to
        ``AtariEnv(game[i], ...)`` with seed ``seed + i``). Games whose minimal action sets
        differ need ``full_action_space=True``; the actions are then ALE's 18 in its enum order
        for every env (a game without some of them, like Skiing's 9, plays NOOP for those).
        ``mode`` and ``difficulty`` may then be mappings ``{game: value}``. :attr:`games`
        lists each env's ROM id, :attr:`game_names` the distinct ones, and
        ``info["game_index"]`` each env's index into it.
    num_envs : int
    num_workers : int, optional
        Worker processes (default: usable cores, at most ``num_envs``); each owns a contiguous
        block of envs.
    batch_size : int, optional
        Envs :meth:`recv` returns in async mode (default ``num_envs``). Below ``num_envs``,
        workers report every ``ceil(batch_size / num_workers)`` envs, so a batch fills from
        all workers at once rather than from the first to finish its whole block.
    autoreset_mode : {"next_step", "same_step", "disabled"} or gymnasium.vector.AutoresetMode
        ``"next_step"`` (gymnasium's default): the step after an episode ends resets that env
        and ignores its action. ``"same_step"``: the env resets in the step that ends the
        episode; ``info["final_obs"]`` (an object array) and ``info["final_info"]`` (a batched
        info dict, as gymnasium's) hold the ended episode's last observation and info.
        ``"disabled"``: no autoreset; reset ended envs with ``reset(options={"reset_mask": m})``
        (stepping one first raises ``ResetNeeded``). The enum's values (``"NextStep"``, ...)
        work too.
    copy : bool
        Return copies (default) or, for :meth:`step` and :meth:`reset`, views into shared
        memory that the next call overwrites.
    timeout : float or None
        Seconds one call may wait for the workers (default 120). A worker that has not answered
        by then is killed and restarted like a crashed one, with a warning. None waits forever.
        A worker's start (a fresh interpreter, its imports and ROM checks) gets at least 60 s.
    max_crashes_without_progress : int
        A worker that dies this many times in a row without answering a command in between
        (default 3: a broken install, a ROM that crashes at once) raises ``RuntimeError`` with
        the cause and the tail of its stderr. A worker that made progress is always restarted.
    max_restarts : int, optional
        Caps worker restarts over the env's whole life (default: no cap).
    balance : bool
        With several games, assign envs to workers by each game's measured emulation cost
        (default), so a synchronous step does not wait for a worker that drew the slow games,
        keeping each game's envs together on as few workers as that allows (changing ROM costs
        the emulator its caches); False: contiguous blocks.
    cpus : "auto" or list of int, optional
        Pin worker ``k`` to ``cpus[k % len(cpus)]`` ("auto": the usable CPUs in order), like
        EnvPool's ``thread_affinity_offset``. Linux only.
    render_mode : {"rgb_array"}, optional
    **options
        :class:`~fastatari.AtariOptions` fields (``frame_skip``, ``noop_max``, ...).

    Notes
    -----
    When a worker dies or hangs, its envs are reset (seeded deterministically from their last
    seed) and their next result is ``truncated=True`` with ``info["worker_restarted"]``; under
    same-step autoreset ``final_obs`` is the last observation the dead worker wrote. The other
    workers' envs lose nothing.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(self, game: str | Sequence[str], num_envs: int,
                 num_workers: Optional[int] = None,
                 batch_size: Optional[int] = None,
                 autoreset_mode: str | AutoresetMode = "next_step", copy: bool = True,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_crashes_without_progress: int = 3, max_restarts: Optional[int] = None,
                 cpus: Any = None, balance: bool = True, render_mode: Optional[str] = None,
                 **options: Any) -> None:
        self._state = State.CLOSED  # until construction succeeds
        num_envs = validate.check_int("num_envs", num_envs, 1)
        if num_workers is None:
            num_workers = max(1, min(usable_cores(), num_envs))
        self.num_workers = validate.check_int("num_workers", num_workers, 1, num_envs)
        self.batch_size = validate.check_int(
            "batch_size", num_envs if batch_size is None else batch_size, 1, num_envs)
        mode = contract.autoreset_mode(autoreset_mode)
        self.copy = validate.check_bool("copy", copy)
        self.timeout = validate.check_timeout("timeout", timeout)
        limit = validate.check_int("max_crashes_without_progress", max_crashes_without_progress, 1)
        if max_restarts is not None:
            max_restarts = validate.check_int("max_restarts", max_restarts, 0)
        self.max_restarts = max_restarts
        cpu_of_worker = resolve_cpus(cpus, self.num_workers)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self._lineup, self.options = make_lineup(game, num_envs, dict(options))
        self.games: Tuple[str, ...] = self._lineup.games
        self.game_names: Tuple[str, ...] = self._lineup.names
        self.rom: Optional[str] = None if self._lineup.multi else self.games[0]
        self._game_index = self._lineup.game_index()
        # several games, full action space: actions are ALE's 18 for every env
        self._ale_actions = self._lineup.multi and self.options.full_action_space
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, autoreset_mode=mode)
        self._same_step = mode == AutoresetMode.SAME_STEP
        self._next_step = mode == AutoresetMode.NEXT_STEP
        self._info_fields = info_fields(self.options)
        # Each game's options are checked against its ROM's facts before any worker starts:
        # from the table, else (one game) its ROM loaded here; several games the table lacks
        # are checked by the workers, in parallel, while they start (one load per game each).
        meanings = self._check_games(known_facts if self._lineup.multi else loaded_facts)
        probe = len(meanings) < len(self.game_names)
        if not probe:
            self._action_meanings = self._shared_action_meanings(meanings)

        blocks = assign_workers(self._lineup, self.num_workers,
                                balance=validate.check_bool("balance", balance))
        # async: workers answer every `chunk` envs, so a batch can gather envs from all of them
        self._chunk = (0 if self.batch_size >= num_envs
                       else min(0xFFFF, -(-self.batch_size // self.num_workers)))

        self._phase = np.zeros(num_envs, np.uint8)
        self._answered: Deque[int] = collections.deque()  # answered envs, in answer order
        self._ended = np.zeros(num_envs, bool)  # its last result ended an episode (not same-step)
        self._restarted = np.zeros(num_envs, bool)  # reported once, on the next result
        self._seeds: List[Optional[int]] = [None] * num_envs
        self._all_ids = np.arange(num_envs)

        layout = Layout(num_envs, self.options.observation_shape)
        buffers = SharedBuffers(layout)
        self._buf = buffers
        template = WorkerConfig(index=-1, env_ids=(), games=self._lineup.env_games(),
                                layout=layout, same_step=self._same_step,
                                prereset=self._next_step, probe=probe,
                                ale_actions=self._ale_actions,
                                resets=(),
                                block=buffers.handle)
        self._pool = WorkerPool(template, buffers, blocks, self._restart_resets, self.timeout,
                                limit, max_restarts, cpu_of_worker)
        try:  # the pool owns the buffers from here on
            # Games are built at the first reset, with its seeds: nothing to reset at start.
            ready = self._pool.start(lambda k: [])
            if probe:
                for reply in ready.values():  # action names of the games each worker checked
                    meanings.update(reply.payload or {})
                # a worker restarted while starting may not have: load those here
                meanings.update(self._check_games(loaded_facts, skip=meanings))
                self._action_meanings = self._shared_action_meanings(meanings)
            self._num_actions = len(self._action_meanings)
        except BaseException:
            self._pool.close()
            raise
        self._state = State.NEEDS_RESET

        self.single_observation_space = spaces.Box(0, 255, self.options.observation_shape,
                                                   np.uint8)
        self.single_action_space = spaces.Discrete(self._num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def _check_games(self, facts_of: Callable[[str], Optional[RomFacts]],
                     skip: Container[str] = ()) -> Dict[str, List[str]]:
        """Check each game's options against ``facts_of(game)`` (mode, difficulty, NOOP, FIRE,
        screen size: ``ValueError``) and return its action names; games in ``skip`` or without
        facts (None) are left out."""
        meanings = {}
        for name in self._lineup.names:
            facts = None if name in skip else facts_of(name)
            if facts is not None:
                options = self._lineup.options[name]
                facts.check(options)
                meanings[name] = list(facts.actions(options.full_action_space))
        return meanings

    def _shared_action_meanings(self, meanings: Dict[str, List[str]]) -> List[str]:
        """The action names every env shares (``ValueError`` if the games' differ)."""
        lineup = self._lineup
        if self._ale_actions:
            return [a.name for a in ALE_ACTIONS]
        first = meanings[lineup.names[0]]
        differ = [name for name in lineup.names if meanings[name] != first]
        if differ:
            raise ValueError(f"these games have different action sets ({lineup.names[0]}: "
                             f"{first}; {differ[0]}: {meanings[differ[0]]}): pass "
                             f"full_action_space=True to give every env the 18 actions")
        return first

    # -- workers -------------------------------------------------------------------------------
    def _restart_resets(self, k: int) -> List[ResetRequest]:
        """The resets a replacement of worker ``k`` runs: each env seeded from its last seed
        and the restart count, so that a run with the same crashes replays exactly."""
        if self._state is State.NEEDS_RESET:
            return []  # no game exists yet: the first reset() builds them
        restarts = self._pool.restarts
        resets = []
        for i in self._pool.blocks[k].tolist():
            base = self._seeds[i] if self._seeds[i] is not None else i
            seed = int(np.random.SeedSequence([base, restarts]).generate_state(1)[0])
            resets.append((i, seed))
        return resets

    def _collect(self, workers: List[int], first: bool = False) -> Dict[int, Reply]:
        """Wait for replies, apply each to the envs' phases, then raise any worker error."""
        replies = self._pool.collect(workers, first=first)
        for k, reply in replies.items():
            self._apply(k, reply)
        if self._state is State.ASYNC and not self._phase.any():
            self._state = State.IDLE  # a worker error left nothing in flight
        raise_errors(replies)
        return replies

    def _apply(self, k: int, reply: Reply) -> None:
        envs = reply.envs
        if reply.kind is ReplyKind.RESTARTED:
            block = self._pool.blocks[k]
            self._restarted[block] = True
            self._ended[block] = False
        if envs is None or not envs.size:
            return
        if reply.kind is ReplyKind.ERROR:  # no result for these: idle again
            self._phase[envs] = _Phase.IDLE
            return
        # DONE, or RESTARTED: the lost steps' envs carry the restart's truncated result
        self._phase[envs] = _Phase.ANSWERED
        self._answered.extend(envs.tolist())

    @property
    def worker_pids(self) -> List[int]:
        """The worker processes' ids, in worker order."""
        self._check_open()
        return self._pool.pids

    @property
    def worker_restarts(self) -> int:
        """Worker restarts so far (crashes and hangs)."""
        return self._pool.restarts

    # -- validation ------------------------------------------------------------------------------
    def _is_closed(self) -> bool:
        return self._state is State.CLOSED or self._pool.closed

    def _check_actions(self, actions: Any, count: int) -> np.ndarray:
        return validate.check_actions(actions, count, self._num_actions)

    def _check_env_ids(self, env_ids: Any) -> np.ndarray:
        return validate.check_env_ids(env_ids, self.num_envs)

    # -- reset ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[Optional[int]] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``).

        ``seed``: an int gives env ``i`` the seed ``seed + i``; a sequence gives one seed (or
        None) per env; None continues each env's generators. Seeds are non-negative ints, as
        in ale-py; they are checked before any env is touched.
        """
        self._check_not_async("reset")
        mask = contract.reset_mask(options, self.num_envs, self._state is State.NEEDS_RESET)
        if mask is None:
            mask = np.ones(self.num_envs, bool)
        seeds = validate.check_seeds(seed, self.num_envs)
        ids = np.flatnonzero(mask)
        for i in ids:
            if seeds[i] is not None:
                self._seeds[i] = seeds[i]
        owners = self._pool.owner(ids)
        commands = {int(k): [(int(i), seeds[i]) for i in ids[owners == k]]
                    for k in np.unique(owners)}
        while commands:  # a worker that died meanwhile is restarted, then asked again
            for k, mine in commands.items():
                self._pool.send(k, encode_reset(mine))
            replies = self._collect(list(commands))
            commands = {k: commands[k] for k, r in replies.items()
                        if r.kind is ReplyKind.RESTARTED}
        self._ended[ids] = False
        self._restarted[ids] = False
        self._state = State.IDLE
        obs = self._buf.obs.copy() if self.copy else self._buf.obs
        return obs, self._info(slice(None), mask)

    # -- step, send, recv ----------------------------------------------------------------------
    def step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          Dict[str, Any]]:
        """Step every env with ``actions`` (shape ``(num_envs,)``) and wait for all of them."""
        self._check_not_async("step")
        self._check_was_reset("step")
        actions = self._check_actions(actions, self.num_envs)
        self._check_not_ended(self._all_ids)
        self._buf.action[:] = actions
        if not (self._ended.any() or self._restarted.any()):
            self._pool.step_all()  # the common step: one fixed command per worker
            workers = list(range(self.num_workers))
            self._phase[:] = _Phase.IN_FLIGHT
        else:
            workers = self._dispatch(self._all_ids, chunk=0)
        try:
            self._collect(workers)
        finally:  # also after a worker's exception: every reply is in
            self._answered.clear()
            self._phase[:] = _Phase.IDLE
        return self._results(slice(None))

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions``; :meth:`recv` collects.

        Envs not named here stay paused. An env whose result has not been returned by
        :meth:`recv` yet cannot be sent again (``AlreadyPendingCallError``).
        """
        self._check_open()
        self._check_was_reset("send")
        ids = self._check_env_ids(env_ids)
        actions = self._check_actions(actions, ids.size)
        busy = self._phase[ids] != _Phase.IDLE
        if busy.any():
            raise AlreadyPendingCallError(
                f"env {int(ids[np.flatnonzero(busy)[0]])} already has a step in flight: "
                f"recv() it first", "send")
        self._check_not_ended(ids)
        self._buf.action[ids] = actions
        self._dispatch(ids, self._chunk)
        self._state = State.ASYNC

    def recv(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        """Return the first ``batch_size`` envs to finish (fewer if fewer are in flight), with
        their ids in ``info["env_id"]``."""
        self._check_async()
        want = min(self.batch_size, int((self._phase != _Phase.IDLE).sum()))
        while len(self._answered) < want:
            self._collect(self._pool.busy(), first=True)
        ids = np.array([self._answered.popleft() for _ in range(want)], np.int64)
        self._phase[ids] = _Phase.IDLE
        if not self._phase.any():
            self._state = State.IDLE  # everything sent was returned
        obs, reward, terminated, truncated, info = self._results(ids)
        info["env_id"] = ids
        return obs, reward, terminated, truncated, info

    def _dispatch(self, ids: np.ndarray, chunk: int) -> List[int]:
        """Send each worker its envs among ``ids``: autoreset ones reset, others step. An env
        whose worker was restarted while it was idle already holds its result (the restart's
        truncated one): it is answered at once, without running. Returns the workers sent a
        command."""
        notice = self._restarted[ids]
        if notice.any():
            self._phase[ids[notice]] = _Phase.ANSWERED
            self._answered.extend(ids[notice].tolist())
            ids = ids[~notice]
        self._phase[ids] = _Phase.IN_FLIGHT
        if not ids.size:
            return []
        ops = np.zeros(self.num_envs, np.uint8)
        ops[ids] = np.where(self._ended[ids], Op.RESET, Op.STEP)
        return self._pool.step(ops, ids, chunk)

    # -- results -------------------------------------------------------------------------------
    def _results(self, sel: Any):
        """Observations, rewards, flags and info of ``sel`` (ids, or a slice for every env)."""
        buf = self._buf
        whole = isinstance(sel, slice)
        if whole:
            obs = buf.obs.copy() if self.copy else buf.obs
        else:
            obs = buf.obs[sel]
        reward, terminated, truncated = buf.reward[sel], buf.terminated[sel], buf.truncated[sel]
        if whole:  # views of the whole columns would change under the caller at the next step
            reward, terminated, truncated = reward.copy(), terminated.copy(), truncated.copy()
        if not self._same_step:
            self._ended[sel] = terminated | truncated
        info = self._info(sel, np.ones(reward.size, bool))
        return obs, reward, terminated, truncated, info

    def _info(self, sel: Any, mask: np.ndarray) -> Dict[str, Any]:
        """gymnasium's vector info over the envs ``sel`` (a slice or ids): arrays with ``_key``
        masks saying which envs each entry is for (zeros elsewhere, as gymnasium's)."""
        buf = self._buf
        info = self._batched(buf.info, sel, mask)
        full = self._all_ids[sel]  # the env ids, for the rare per-env entries below
        if self._lineup.multi:
            info["game_index"], info["_game_index"] = self._game_index[full], mask.copy()
        restarted = self._restarted[full] & mask
        if restarted.any():
            info["worker_restarted"], info["_worker_restarted"] = restarted, restarted.copy()
            self._restarted[full[restarted]] = False
        if self._same_step:
            has_final = buf.has_final[full] & mask
            if has_final.any():
                final_obs = np.empty(full.size, object)
                for j in np.flatnonzero(has_final):
                    final_obs[j] = buf.final_obs[full[j]].copy()
                info["final_obs"], info["_final_obs"] = final_obs, has_final
                info["final_info"] = self._batched(buf.final_info, sel, has_final)
                info["_final_info"] = has_final.copy()
        return info

    def _batched(self, columns: Dict[str, np.ndarray], sel: Any,
                 mask: np.ndarray) -> Dict[str, Any]:
        """The info fields of ``columns`` (live or final) and, where a game ended, its
        statistics under :data:`~fastatari.schema.GAME_KEY`."""
        buf = self._buf
        info: Dict[str, Any] = {}
        for field in self._info_fields:
            values = columns[field.name][sel]
            # a per-env array (ram) is masked by rows
            rows = mask.reshape(mask.shape + (1,) * len(field.shape)) if field.shape else mask
            info[field.name] = np.where(rows, values, np.zeros((), values.dtype))
            info["_" + field.name] = mask.copy()
        ended = buf.game_done[sel] & mask
        if ended.any():
            game: Dict[str, np.ndarray] = {}
            for field in GAME_FIELDS:
                values = buf.game[field.name][sel]
                game[field.name] = np.where(ended, values, np.zeros((), values.dtype))
                game["_" + field.name] = ended
            info[GAME_KEY], info["_" + GAME_KEY] = game, ended
        return info

    def end_episodes(self, env_ids: Any) -> None:
        """Treat the episodes of ``env_ids`` as ended by the caller (a step limit counted
        outside, as fastatari.envpool's ``max_episode_steps``): under next-step autoreset
        their next step resets them and ignores its action. The envs must be idle."""
        self._check_open()
        ids = self._check_env_ids(env_ids)
        if (self._phase[ids] != _Phase.IDLE).any():
            raise AlreadyPendingCallError("end_episodes() of an env with a step in flight: "
                                          "recv() it first", "end_episodes")
        self._ended[ids] = True

    @property
    def np_random_seed(self) -> Tuple[int, ...]:
        """Each env's last reset seed (-1 for an env never reset with a seed), as gymnasium's
        vector envs report them."""
        return tuple(-1 if s is None else s for s in self._seeds)

    # -- render, close -------------------------------------------------------------------------
    def render(self, env_ids: Any = None) -> Optional[np.ndarray]:
        """Raw RGB screens ``(len(env_ids), 210, 160, 3)`` (default: every env)."""
        self._check_not_async("render")
        if self.render_mode is None:
            gymnasium.logger.warn("render() needs render_mode='rgb_array'")
            return None
        ids = self._check_env_ids(env_ids)
        owners = self._pool.owner(ids)
        screens: Dict[int, np.ndarray] = {}
        commands = {int(k): ids[owners == k].tolist() for k in np.unique(owners)}
        while commands:  # a restarted worker renders its fresh games when asked again
            for k, mine in commands.items():
                self._pool.send(k, encode_render(mine))
            replies = self._collect(list(commands))
            for k, reply in replies.items():
                if reply.kind is ReplyKind.RENDERED:
                    screens.update(zip(commands[k], reply.payload, strict=True))
            commands = {k: commands[k] for k, r in replies.items()
                        if r.kind is ReplyKind.RESTARTED}
        return np.stack([screens[int(i)] for i in ids])

    def get_action_meanings(self) -> List[str]:
        """Names of the actions, e.g. ``["NOOP", "FIRE", "RIGHT", "LEFT"]``."""
        return list(self._action_meanings)

    def close(self, **kwargs: Any) -> None:
        """Stop the workers and free the shared memory. Safe to call more than once."""
        self._state = State.CLOSED
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (gymnasium's ``VectorEnv.closed``)."""
        pool = getattr(self, "_pool", None)
        return self._state is State.CLOSED or pool is None or pool.closed

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.num_workers} workers"
        game = self.rom if self.rom is not None else f"{len(self.game_names)} games"
        return f"AtariVectorEnv({game!r}, num_envs={self.num_envs}, {state})"
