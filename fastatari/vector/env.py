"""AtariVectorEnv: gymnasium's vector-env contract over an executor that runs the envs.

The env keeps gymnasium's contract: argument checks, the call order (an explicit state), the
autoreset bookkeeping, gymnasium's batched ``info`` and the report of a restart. It is made
from a :class:`~.plan.VectorPlan` (what it is) and an :class:`~.executor.Executor` (what runs
the envs: the local worker processes, :class:`~.pool.WorkerPool`, or Ray actors,
``fastatari.ray``); either leaves every result in the columns of its buffers
(:mod:`fastatari.core.schema`). The step itself, from the actions to the results, is one
compiled :class:`~._step.VectorStep`; the per-env state lives in one compiled
:class:`~._book.EnvBook`.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from fastatari.core import validate
from fastatari.core.continuous import ACTION_HIGH, ACTION_LOW
from fastatari.core.schema import GAME_FIELDS, GAME_KEY, info_fields
from fastatari.vector import _step, rollout
from fastatari.vector._book import EnvBook
from fastatari.vector.calls import CallOrder, State, one_caller
from fastatari.vector.executor import Executor, WorkerError, check_command, raised_envs
from fastatari.vector.messages import Reply
from fastatari.vector.plan import VectorPlan
from fastatari.vector.resets import reset_mask
from fastatari.vector.rollout import Rollout
from fastatari.vector.serials import FrameSerials
from fastatari.vector.snapshots import Snapshots
from fastatari.vector.spaces import BatchedBox

__all__ = ["AtariVectorEnv", "WorkerError"]


#: The states a send may start from.
_SENDING = (State.IDLE, State.ASYNC)


class AtariVectorEnv(Snapshots, CallOrder, gymnasium.vector.VectorEnv):
    """``num_envs`` Atari games stepped in parallel by worker processes.

    Every sub-env is byte-identical to fastatari's single :class:`~fastatari.AtariEnv` (and so
    to gymnasium's reference pipeline) with seed ``seed + i`` after ``reset(seed=seed)``,
    whatever ``num_workers`` is.

    Made by :func:`fastatari.make_vec` ``(game, num_envs, **keywords)``; or from its parts,
    ``AtariVectorEnv(plan, executor)``, where ``plan = fastatari.vector.plan_vec(game,
    num_envs, **keywords)`` (:class:`~fastatari.vector.plan.VectorPlan`, checked, starting
    nothing) and ``executor`` runs the envs (``WorkerPool(plan)``, or Ray actors). The
    parameters below are those of ``make_vec`` and ``plan_vec``.

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
        Worker processes (default: usable cores, at most ``num_envs``); each owns a block of
        envs (contiguous, for one game; see ``balance``).
    batch_size : int, optional
        Envs :meth:`recv` returns in async mode (default ``num_envs``): the first to finish
        across all workers, in the order they finished (each env is reported as soon as its
        step is done).
    autoreset_mode : {"next_step", "same_step", "disabled"} or gymnasium.vector.AutoresetMode
        ``"next_step"`` (gymnasium's default): the step after an episode ends resets that env
        and ignores its action. ``"same_step"``: the env resets in the step that ends the
        episode; ``info["final_obs"]`` (an object array) and ``info["final_info"]`` (a batched
        info dict, as gymnasium's) hold the ended episode's last observation and info.
        ``"disabled"``: no autoreset; reset ended envs with ``reset(options={"reset_mask": m})``
        (stepping one first raises ``ResetNeeded``). The enum's values (``"NextStep"``, ...)
        work too.
    copy : bool
        Return arrays that no later call changes (default: for :meth:`step`, an output slot
        of the shared memory that the workers filled and nothing holds any more, else a copy)
        or, for :meth:`step` and :meth:`reset`, views into shared memory that the next call
        overwrites.
    timeout : float or None
        Seconds one call may wait for the workers (default 120). A worker that has not answered
        by then is killed and restarted like a crashed one, with a warning. None waits forever.
        A worker's start (a fresh interpreter, its imports and ROM checks) gets at least 60 s.
    max_crashes_without_progress : int
        A worker that dies this many times in a row without progress in between (no env's
        result delivered, no command answered; default 3: a broken install, a ROM that crashes
        at once) raises ``RuntimeError`` with the cause and the tail of its stderr. A worker
        that made progress is always restarted.
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
    protocol : str, optional
        A paper's setting (:data:`fastatari.core.protocols.PROTOCOLS`: ``"dqn_nature"``,
        ``"machado2018"``, ``"atari100k"``; ``"<name>:eval"`` for its evaluation variant):
        its options, which the keywords given beside it override.
    **options
        :class:`~fastatari.AtariOptions` fields (``frame_skip``, ``noop_max``, ...).

    Notes
    -----
    The vector keywords above are declared, with their defaults and checks, once, in
    :class:`~fastatari.vector.config.VectorConfig` and
    :class:`~fastatari.vector.config.WorkerSettings`.

    When a worker dies or hangs, its envs are reset (seeded deterministically from their last
    seed) and their next result is ``truncated=True`` with ``info["worker_restarted"]``; under
    same-step autoreset ``final_obs`` is the last observation the dead worker wrote. The other
    workers' envs lose nothing.
    """

    metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP,
                "render_modes": ["rgb_array"]}

    def __init__(self, plan: VectorPlan, executor: Executor, *, started: bool = False) -> None:
        """Take ``executor`` (owned from here on: closed with the env, or at once if this
        fails) and start it for ``plan``, unless ``started`` (a Ray actor's front over its
        running pool)."""
        self._state = State.CLOSED  # until construction succeeds
        self._caller = _step.CallGuard()  # one caller at a time (calls.one_caller)
        config, assignment = plan.config, plan.assignment
        self.plan = plan
        self.executor = executor
        self.num_envs = num_envs = plan.num_envs
        self.num_workers: Optional[int] = executor.num_workers
        assert config.batch_size is not None  # VectorConfig.checked resolved the default
        self.batch_size: int = config.batch_size
        self.copy = config.copy
        self.timeout = config.timeout
        self.max_restarts = config.max_restarts
        self.render_mode = config.render_mode
        self.options = plan.options
        self.games: Tuple[str, ...] = assignment.games
        self.game_names: Tuple[str, ...] = assignment.names
        self.rom: Optional[str] = None if assignment.multi else self.games[0]
        self.metadata = dict(self.metadata, autoreset_mode=config.autoreset_mode)
        self.autoreset_mode = config.autoreset_mode  # as gymnasium's Sync/AsyncVectorEnv
        self.book = EnvBook(num_envs)
        self._all_ids = np.arange(num_envs)
        self._buf = executor.buffers
        # FASTATARI_CHECKED_CALLS=1 sends every step, send and recv through the front's checks
        # (the lane of actions the step cannot take as they are): how tests and benchmarks
        # compare the two lanes
        self._checks_first = os.environ.get("FASTATARI_CHECKED_CALLS") == "1"
        self._stepper: Optional[_step.VectorStep] = None
        try:
            if not started:
                executor.start()
            self._stepper = _step.VectorStep(
                self._buf, self.book, info_fields(self.options), GAME_KEY,
                [f.name for f in GAME_FIELDS],
                assignment.game_index() if assignment.multi else None,
                0 if self.options.continuous else plan.num_actions, config.copy,
                self.options.life_loss_info, config.same_step, config.next_step, executor,
                config.batch_size)
        except BaseException:
            self._stepper = None  # its views of the shared memory go before the memory does
            executor.close()
            raise
        self._state = State.NEEDS_RESET

        self.single_observation_space: spaces.Box = spaces.Box(
            0, 255, self.options.observation_shape, np.uint8)
        self.single_action_space: spaces.Space = (
            spaces.Box(ACTION_LOW.copy(), ACTION_HIGH.copy(), dtype=np.float32)
            if self.options.continuous else spaces.Discrete(plan.num_actions))
        self.observation_space = BatchedBox(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

    def adopt(self, ended: np.ndarray, restarted: np.ndarray) -> None:
        """Go on from envs whose games already exist (no reset needed): per env, whether its
        last result ended an episode and whether a restart is to be reported. A Ray actor's
        rollout continues the driver's envs this way."""
        self._check_open()
        self._check_not_async("adopt")
        self.book.set(self._all_ids, ended, restarted)
        self._state = State.IDLE

    # -- the executor's replies ----------------------------------------------------------------
    def _apply_all(self, replies: List[Reply]) -> List[Reply]:
        self.book.apply(replies)
        return replies

    @property
    def worker_pids(self) -> List[int]:
        """The worker processes' ids, in worker order."""
        self._check_open()
        return self.executor.pids

    @property
    def frame_serials(self) -> FrameSerials:
        """Which observation stacks the last ``step`` (every env) or ``recv`` (the batch's
        envs) went from and to, per row of its results (:class:`~fastatari.vector.serials.
        FrameSerials`): pass it with that step's observations to a replay memory's ``add``
        (``serials=``), which then takes each continued stack's frames without comparing
        them. The observations must be the arrays this env returned (``copy=True``, the
        default: views change at the next step), the final ones put in where episodes
        ended, unmodified."""
        return self._steps().serials()

    @property
    def worker_restarts(self) -> int:
        """Worker restarts so far (crashes and hangs)."""
        return self.executor.restarts

    # -- validation ------------------------------------------------------------------------------
    def _is_closed(self) -> bool:
        return self._state is State.CLOSED or self.executor.closed

    def _check_env_ids(self, env_ids: Any) -> np.ndarray:
        return validate.check_env_ids(env_ids, self.num_envs)

    # -- reset ---------------------------------------------------------------------------------
    @one_caller
    def reset(self, *, seed: int | Sequence[Optional[int]] | None = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``).

        ``seed``: an int gives env ``i`` the seed ``seed + i``; a sequence gives one seed (or
        None) per env; None continues each env's generators. Seeds are non-negative ints, as
        in ale-py; they are checked before any env is touched.
        """
        self._check_not_async("reset")
        mask = reset_mask(options, self.num_envs, self._state is State.NEEDS_RESET)
        if mask is None:
            mask = np.ones(self.num_envs, bool)
        seeds = validate.check_seeds(seed, self.num_envs)
        if not self.executor.seeds.games_exist:  # the first reset: every game's seed known
            self._draw_seeds()
            seeds = [self.executor.seeds.last[i] if s is None else s
                     for i, s in enumerate(seeds)]
        ids = np.flatnonzero(mask)
        replies = self._apply_all(self.executor.reset([(int(i), seeds[i]) for i in ids]))
        self.book.reset(ids[~np.isin(ids, raised_envs(replies))])  # those that did reset
        check_command(replies, "reset")
        self._state = State.IDLE
        obs = self._buf.obs.copy() if self.copy else self._buf.obs
        return obs, self._steps().info(mask)

    def _steps(self) -> _step.VectorStep:
        stepper = self._stepper
        assert stepper is not None  # made with the env, gone only once it is closed
        return stepper

    # -- step, send, recv ----------------------------------------------------------------------
    def step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          Dict[str, Any]]:
        """Step every env with ``actions`` (shape ``(num_envs,)``) and wait for all of them.
        Ctrl-C during the step closes the vector env (its envs are mid-step)."""
        stepper, caller = self._stepper, self._caller
        # one compiled call, under the guard of one_caller (entered again by this thread
        # inside rollout()), unless the actions need the front's checks
        entered = caller.enter("step")
        try:
            if entered >= 0 and stepper is not None and self._state is State.IDLE \
                    and not self._checks_first:
                results = stepper.step(actions)
                if results is not None:
                    return results
        except BaseException:
            self.close()  # the envs are mid-step (this thread may enter close())
            raise
        finally:
            if entered == 1:
                caller.leave()
        return self._checked_step(actions)

    def _checked_step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray, Dict[str, Any]]:
        """The step's lane for actions that need checks and conversions (and the errors)."""
        self._check_not_async("step")
        self._check_was_reset("step")
        actions = self.plan.check_actions(actions, self.num_envs)
        self._check_not_ended(self._all_ids)
        self._buf.action[:] = actions
        try:
            return self._steps().step_written()
        except BaseException:
            self.close()
            raise

    _checked_step = one_caller(_checked_step, call="step")

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping ``env_ids`` (default: all) with ``actions``; :meth:`recv` collects.

        Envs not named here stay paused. An env whose result has not been returned by
        :meth:`recv` yet cannot be sent again (``AlreadyPendingCallError``).
        """
        stepper, caller = self._stepper, self._caller
        entered = caller.enter("send")  # as step()
        try:
            if entered >= 0 and stepper is not None and self._state in _SENDING \
                    and not self._checks_first and stepper.send(actions, env_ids):
                self._state = State.ASYNC
                return
        finally:
            if entered == 1:
                caller.leave()
        self._checked_send(actions, env_ids)

    def _checked_send(self, actions: Any, env_ids: Any) -> None:
        self._check_open()
        self._check_was_reset("send")
        ids = self._check_env_ids(env_ids)
        actions = self.plan.check_actions(actions, ids.size)
        self.book.check_idle(ids, "send")
        self._check_not_ended(ids)
        self._buf.action[ids] = actions
        self._steps().send_written(ids.astype(np.int64))
        self._state = State.ASYNC

    _checked_send = one_caller(_checked_send, call="send")

    def recv(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        """Return the first ``batch_size`` envs to finish (fewer if fewer are in flight), with
        their ids in ``info["env_id"]``."""
        stepper, caller = self._stepper, self._caller
        entered = caller.enter("recv")  # as step()
        try:
            if entered >= 0 and stepper is not None and self._state is State.ASYNC \
                    and not stepper.closed:
                return self._recv(stepper)
        except BaseException:
            self.close()  # a wait cut short (Ctrl-C): the envs are mid-step
            raise
        finally:
            if entered == 1:
                caller.leave()
        return self._checked_recv()

    def _recv(self, stepper: _step.VectorStep) -> Tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       np.ndarray, Dict[str, Any]]:
        results = stepper.recv()
        if not self.book.in_flight():
            self._state = State.IDLE  # everything sent was returned
        return results

    def _checked_recv(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                     Dict[str, Any]]:
        self._check_async()  # raises: recv() found the env closed or not waiting
        return self._recv(self._steps())

    _checked_recv = one_caller(_checked_recv, call="recv")

    @one_caller
    def rollout(self, policy: Callable[[np.ndarray], Any], num_steps: int) -> Rollout:
        """``num_steps`` steps of every env with ``actions = policy(obs)`` before each, as
        arrays (:class:`~fastatari.vector.rollout.Rollout`: ``(T, N, ...)`` observations,
        actions, rewards, flags and stacked infos, and the next observations). The envs go on
        from where they are and stay there. Needs an autoreset mode."""
        num_steps = self._check_rollout(num_steps)
        if not callable(policy):
            raise TypeError(f"policy must be callable (obs -> actions), got {policy!r}")
        obs = np.empty((num_steps,) + self._buf.obs.shape, np.uint8)
        return rollout.run(self, policy, num_steps, obs)

    def _check_rollout(self, num_steps: Any) -> int:
        self._check_not_async("rollout")
        self._check_was_reset("rollout")
        if self.autoreset_mode is gymnasium.vector.AutoresetMode.DISABLED:
            raise ValueError("rollout() needs autoreset: an env cannot stop mid-rollout for a "
                             "reset (autoreset_mode is DISABLED)")
        return validate.check_int("num_steps", num_steps, 1)

    @one_caller
    def end_episodes(self, env_ids: Any) -> None:
        """Treat the episodes of ``env_ids`` as ended by the caller (a step limit counted
        outside, as fastatari.envpool's ``max_episode_steps``): under next-step autoreset
        their next step resets them and ignores its action. The envs must be idle."""
        self._check_open()
        ids = self._check_env_ids(env_ids)
        self.book.check_idle(ids, "end_episodes")
        self.book.set(ids, True)

    # ignore[override]: gymnasium's VectorEnv declares one seed (int | None), while its own
    # SyncVectorEnv and AsyncVectorEnv return one per env, as here
    @property
    def np_random_seed(self) -> Tuple[int, ...]:  # type: ignore[override]
        """Each env's seed, as gymnasium's vector envs report them: the last it was reset
        with. An env not seeded yet gets one drawn from entropy when first asked (as each of
        gymnasium's envs draws its own), which its first reset then uses."""
        self._draw_seeds()
        return tuple(self.executor.seeds.last)  # type: ignore[arg-type]

    def _draw_seeds(self) -> None:
        """Before the games exist: a seed from entropy for each env that has none, as ale-py's
        env seeds itself when reset without one; so every game's seed is known."""
        book = self.executor.seeds
        if not book.games_exist:
            # a fresh SeedSequence's entropy is an int (numpy's stubs: int | Sequence | None)
            book.last = [cast(int, np.random.SeedSequence().entropy) if s is None else s
                         for s in book.last]

    def __len__(self) -> int:
        """``num_envs`` (as EnvPool's ``len(env)``; Tianshou's collectors ask for it)."""
        return self.num_envs

    # -- render, close -------------------------------------------------------------------------
    # ignore[override]: one array of every env's screen (as ale-py's AtariVectorEnv), not
    # gymnasium's tuple of frames
    @one_caller
    def render(self, env_ids: Any = None) -> Optional[np.ndarray]:  # type: ignore[override]
        """Raw RGB screens ``(len(env_ids), 210, 160, 3)`` (default: every env)."""
        self._check_not_async("render")
        if self.render_mode is None:
            gymnasium.logger.warn("render() needs render_mode='rgb_array'")
            return None
        screens, replies = self.executor.render(self._check_env_ids(env_ids))
        check_command(self._apply_all(replies), "render")
        return np.stack(cast(List[np.ndarray], screens))  # every one there: none raised

    def get_action_meanings(self) -> List[str]:
        """Names of the actions, e.g. ``["NOOP", "FIRE", "RIGHT", "LEFT"]``."""
        return list(self.plan.action_meanings)

    @one_caller
    def close(self, **kwargs: Any) -> None:
        """Stop the workers and free the shared memory. Safe to call more than once. Steps in
        flight are dropped, with gymnasium's warning."""
        if getattr(self, "_state", None) is State.ASYNC:
            gymnasium.logger.warn("Calling `close` while waiting for a pending call to `step` "
                                  "to complete.")
        self._state = State.CLOSED
        self._stepper = None  # its views of the shared memory go before the memory does
        executor = getattr(self, "executor", None)
        if executor is not None:
            executor.close()

    # ignore[override]: gymnasium's VectorEnv.closed is an attribute its close() sets; here it is
    # derived from the state and the executor (close() is this class's own)
    @property
    def closed(self) -> bool:  # type: ignore[override]
        """Whether :meth:`close` has run (gymnasium's ``VectorEnv.closed``)."""
        executor = getattr(self, "executor", None)
        return self._state is State.CLOSED or executor is None or executor.closed

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.num_workers} workers"
        game = self.rom if self.rom is not None else f"{len(self.game_names)} games"
        return f"{type(self).__name__}({game!r}, num_envs={self.num_envs}, {state})"
