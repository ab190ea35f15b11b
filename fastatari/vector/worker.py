"""The worker process: owns several games, steps them on command, writes into shared memory.

A worker is started from fastatari's own entry point (:func:`main`, see ``launch``): it never
imports the trainer's ``__main__``, and it imports only numpy, ale_py and fastatari's game
layer (and the module of its game factory, ``WorkerConfig.game_factory``, where that is not the
real game). Observations never travel through the pipe: each game writes its stack straight into its
slot of the shared memory, and the worker writes every other result column there too (the
columns come from :mod:`fastatari.core.schema`). Messages are those of :mod:`.messages`.

Commands come through shared memory too (``csrc/fa_wait.c``): the trainer writes each env's
op, then publishes a new generation; the worker takes its envs' ops and completes each env as
its results are written. A worker that has just finished watches the generation for a moment
before it sleeps on it: on a virtual machine, waking a sleeping process costs tens of
microseconds on both sides. The pipe carries start-up, resets, renders, errors and CLOSE, each
announced by the worker's ``pending`` word.
"""

from __future__ import annotations

import dataclasses
import os
import pkgutil
import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from fastatari.core.continuous import joystick
from fastatari.core.game import ALE_ACTIONS, AtariGame
from fastatari.core.schema import GAME_FIELDS, GAME_KEY, INFO_FIELDS, STATE_FIELDS, info_fields
from fastatari.core.snapshot import GameState, PendingReset, pack_frames, unpack_frames
from fastatari.vector import messages
from fastatari.vector._wait import (
    Deliverer,
    RowRule,
    SpinRule,
    claim,
    generation,
    output,
    wait_generation,
)
from fastatari.vector.buffers import SharedBuffers
from fastatari.vector.messages import Command, Op, ResetRequest, WorkerConfig

# How long an idle worker watches for its next command before it sleeps. A tight training loop
# sends the next step within ~100 µs of the last reply (the other workers' remaining work plus
# the trainer's own); catching it by watching saves a wake-up on both sides. A trainer that
# thinks for longer would only lose cores to it: the SpinRule's patience.
SPIN_SECONDS = 500e-6
# How long it sleeps before it looks whether the trainer is still there
LIVENESS_SECONDS = 0.5


class Worker:
    """The games of one worker and the writes of their results into the shared columns."""

    def __init__(self, buffers: SharedBuffers, config: WorkerConfig) -> None:
        self.buffers = buffers
        self.env_ids = list(config.env_ids)
        self._games_spec = dict(zip(config.env_ids, config.games, strict=True))
        self.same_step = config.same_step
        self.reset_ahead = config.reset_ahead
        self.first = config.env_ids[0]  # where this worker's pending word lives
        self._control = buffers.control
        self._evfd = config.wake_fd
        self._ale_actions = config.ale_actions
        # "module:qualname" (messages.GAME_FACTORY), imported here, in the worker
        self._new_game: Callable[..., AtariGame] = pkgutil.resolve_name(config.game_factory)
        self._action_maps: Dict[int, List[int]] = {}  # env -> ALE action -> its game's index
        options = config.games[0][1]  # these are the same for every game of a vector env
        self._continuous = options.continuous
        self._threshold = options.continuous_action_threshold
        self._life_loss_info = options.life_loss_info
        self._info_columns = [(f.name, buffers.info[f.name]) for f in INFO_FIELDS]
        self._state_columns = [(f.name, buffers.info[f.name]) for f in STATE_FIELDS]
        self._final_columns = [(buffers.info[f.name], buffers.final_info[f.name])
                               for f in INFO_FIELDS]
        self._game_columns = [(f.name, buffers.game[f.name]) for f in GAME_FIELDS]
        b = buffers  # what a recv returns, written into its batch in place (async steps)
        rule = RowRule(b.result_columns(info_fields(options)), b.game_done,
                       b.life_loss if self._life_loss_info else None)
        self._deliver = Deliverer(b.control, b.ticket, b.batch_first, b.batches, rule)
        # Games are built at their first reset, with its seed: loading a ROM costs 0.1-0.3 s and
        # a seeded reset of an already built game would load it again.
        self.games: Dict[int, AtariGame] = {}
        # Next-step autoreset: an env whose episode ended is reset right after the worker
        # answers, while the trainer thinks, into a private stack; the reset that the trainer
        # asks for next (an autoreset step, or a plain reset()) only copies it in. A reset
        # costs ~4.5 ms of emulation (reset_game and the no-ops): off the step's critical path.
        self._ended_to_reset: List[int] = []
        self._staged: Dict[int, Dict[str, Any]] = {}  # env -> its reset info; stack in _staging
        self._staging: Dict[int, np.ndarray] = {}

    def _game(self, i: int, seed: Optional[int]) -> AtariGame:
        game = self.games.get(i)
        if game is None:
            rom, options = self._games_spec[i]
            game = self.games[i] = self._new_game(rom, options, stack=self.buffers.obs[i],
                                                  seed=seed)
            if self._ale_actions and len(game.action_set) != len(ALE_ACTIONS):
                # a game without all 18 actions (Skiing has 9): the others play NOOP
                where = {a: j for j, a in enumerate(game.action_set)}
                self._action_maps[i] = [where.get(a, where[ALE_ACTIONS[0]])
                                        for a in ALE_ACTIONS]
        return game

    def _write(self, i: int, reward: float, terminated: bool, truncated: bool,
               info: Dict[str, Any]) -> None:
        """One env's results; info keys the game did not report are written as 0."""
        b = self.buffers
        b.reward[i] = reward
        b.terminated[i] = terminated
        b.truncated[i] = truncated
        for name, column in self._info_columns:
            column[i] = info.get(name, 0)
        game = info.get(GAME_KEY)
        b.game_done[i] = game is not None
        if game is not None:
            for name, column in self._game_columns:
                column[i] = game[name]

    def reset(self, requests: Sequence[ResetRequest], restarted: bool = False) -> None:
        """Reset envs. ``restarted``: their games died with the previous worker; report each
        as the end of an episode cut short (truncated, reward 0, the last observation the dead
        worker wrote kept as the final one). An unseeded reset of an env reset in advance
        takes that reset; a seeded one discards it (a seeded reset reloads the ROM anyway)."""
        b = self.buffers
        for i, seed in requests:
            if restarted:
                b.final_obs[i] = b.obs[i]
                b.final_serial[i] = b.obs_serial[i]  # the last stack, no frame pushed
                for column, final in self._final_columns:
                    final[i] = column[i]
            staged = self._staged.pop(i, None)
            if staged is not None and seed is None:
                b.obs[i] = self._staging[i]
                info = staged
            else:
                info = self._game(i, seed).reset(seed)
            b.obs_serial[i] += 2
            if self._life_loss_info:
                b.life_loss[i] = False
            if restarted:
                self._write(i, 0.0, False, True, dict(info, game_over=True))
                b.has_final[i] = self.same_step
            else:
                self._write(i, 0.0, False, False, info)
                b.has_final[i] = False

    def run(self) -> None:
        """Run the ops the trainer published for this worker's envs, each taken from the shared
        ``op`` column and completed (ticket, the row of its ``recv`` batch where one is open,
        count, the trainer's wake) as soon as its results are written, the observation also
        into the op's output slot if it has one (the trainer returns that slot instead of a
        copy). An op that raises ends the worker (see
        :func:`serve`): the trainer replaces it, its envs reset, as it replaces a dead one."""
        ops, obs, outputs = self.buffers.op, self.buffers.obs, self.buffers.outputs
        control, evfd, deliver = self._control, self._evfd, self._deliver
        env_ids = self.env_ids
        progress = self.buffers.progress
        for i in env_ids:
            op = claim(ops, i)
            if not op:
                continue
            self._step_one(i, op)
            # read after the claim: the slot of this op's publish (none without copy=True)
            if outputs and (slot := output(control)) >= 0:
                outputs[slot][i] = obs[i]
            # counted before it is delivered: a result delivered is progress, even if the
            # worker dies before the command's end (RestartPolicy)
            progress[self.first] += 1
            deliver.complete(i, evfd)
        self._reset_ahead()

    def _reset_ahead(self) -> None:
        """Reset the envs whose episode ended in the command just answered (next-step mode)."""
        for i in self._ended_to_reset:
            staging = self._staging_of(i)
            game = self.games[i]
            if game.continues_game:  # the reset pushes onto the stack's older frames
                np.copyto(staging, self.buffers.obs[i])
            game.frames.retarget(staging)
            try:
                self._staged[i] = game.reset()
            finally:
                game.frames.retarget(self.buffers.obs[i])
        self._ended_to_reset.clear()

    def _step_one(self, i: int, op: int) -> None:
        if op == Op.RESET:
            self.reset([(i, None)])
            return
        b = self.buffers
        game = self.games[i]
        if self._continuous:
            reward, terminated, truncated, info = game.step(*joystick(b.action[i],
                                                                      self._threshold))
        else:
            action = int(b.action[i])
            action_map = self._action_maps.get(i)
            if action_map is not None:
                action = action_map[action]
            reward, terminated, truncated, info = game.step(action)
        b.obs_serial[i] += 1  # a frame pushed onto the stack
        self._write(i, reward, terminated, truncated, info)
        if self._life_loss_info:
            b.life_loss[i] = game.life_loss_signal
        if self.same_step and (terminated or truncated):
            # same-step autoreset: keep the ended episode's last step, start the next one now
            b.final_obs[i] = b.obs[i]
            b.final_serial[i] = b.obs_serial[i]
            for column, final in self._final_columns:
                final[i] = column[i]
            b.has_final[i] = True
            reset_info = game.reset()
            b.obs_serial[i] += 2
            for name, column in self._state_columns:
                column[i] = reset_info.get(name, 0)  # keys the game does not report: 0
        else:
            b.has_final[i] = False
            if self.reset_ahead and (terminated or truncated):
                self._ended_to_reset.append(i)

    def clone(self, env_ids: Sequence[int]) -> List[GameState]:
        """Each env's game state, with the reset already run for it (next-step autoreset)."""
        states = []
        for i in env_ids:
            state = self._game(i, None).snapshot()
            staged = self._staged.get(i)
            if staged is not None:
                pending = PendingReset(pack_frames(self._staging[i]), dict(staged))
                state = dataclasses.replace(state, pending=pending)
            states.append(state)
        return states

    def restore(self, items: Sequence[Tuple[int, GameState]]) -> None:
        """Put back game states (checked by the trainer); the observation goes into the
        env's row of the shared memory, a pending reset into its staging stack."""
        for i, state in items:
            self._staged.pop(i, None)
            self._game(i, None).restore(state)
            self.buffers.obs_serial[i] += 2
            if state.pending is not None:
                staging = self._staging_of(i)
                np.copyto(staging, unpack_frames(state.pending.obs, staging.shape)[0])
                self._staged[i] = dict(state.pending.info)

    def _staging_of(self, i: int) -> np.ndarray:
        """Env ``i``'s private stack for a reset run ahead (allocated at its first use)."""
        staging = self._staging.get(i)
        if staging is None:
            staging = self._staging[i] = np.empty_like(self.buffers.obs[i])
        return staging

    def render(self, env_ids: Sequence[int]) -> List[Any]:
        return [self._game(i, None).render_rgb() for i in env_ids]

    def close(self) -> None:
        for game in self.games.values():
            game.close()
        self.games = {}


def serve(conn: Connection) -> None:
    """Receive the :class:`WorkerConfig`, build and reset the games, answer READY, then serve
    commands until CLOSE, until the trainer is gone (end of file on ``conn``), or until one
    raises (ERROR with the traceback, then exit)."""
    # Ctrl-C goes to the whole process group: the trainer decides, workers keep still.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    buffers = worker = None
    try:
        config: WorkerConfig = conn.recv()
        if config.cpu is not None:
            # Before the first touch of shared memory, so its pages land on this CPU's node.
            os.sched_setaffinity(0, {config.cpu})
        buffers = SharedBuffers(config.layout, config.memory)
        worker = Worker(buffers, config)
        worker.reset(config.resets, restarted=config.restarted)
        seen = generation(buffers.control)  # before READY: no command is published before it
        conn.send_bytes(messages.encode_ready())
        _serve_commands(conn, worker, buffers, seen)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the trainer is gone
    except Exception:  # noqa: BLE001 - shipped to the trainer with its traceback
        # An exception may leave a game half-stepped: the worker ends, and the trainer
        # replaces it (its envs reset, reported truncated) rather than go on from there.
        try:
            conn.send_bytes(messages.encode_error(traceback.format_exc()))
        except OSError:
            pass
    finally:
        if worker is not None:
            worker.close()
        if buffers is not None:
            buffers.close()
        conn.close()


def _serve_commands(conn: Connection, worker: Worker, buffers: SharedBuffers,
                    seen: int) -> None:
    """Run each published command (``seen``: the generation before READY): the envs' ops from
    shared memory, and the message in the pipe when the worker's ``pending`` word says so."""
    control, pending, first = buffers.control, buffers.pending, worker.first
    spins = SpinRule(SPIN_SECONDS)
    answered = None  # when it last answered: a wait from then on is what a spin would take
    while True:
        if not wait_generation(control, seen, spins.spin(), LIVENESS_SECONDS):
            if conn.poll():  # nothing published: the trainer is gone (end of file) or wrote
                if _pipe_command(conn, worker):  # without publishing
                    return
            continue
        if answered is not None:
            spins.waited(time.perf_counter() - answered)
        seen = generation(control)
        if pending[first]:
            pending[first] = 0
            if _pipe_command(conn, worker):
                return
        worker.run()
        answered = time.perf_counter()


def _pipe_command(conn: Connection, worker: Worker) -> bool:
    """Run the command in the pipe (reset, render, clone, restore, close) and answer it;
    True for CLOSE."""
    command, payload = messages.decode_command(conn.recv_bytes())
    if command is Command.RESET:
        worker.reset(payload)
        conn.send_bytes(messages.DONE)
    elif command is Command.RENDER:
        conn.send_bytes(messages.encode_rendered(worker.render(payload)))
    elif command is Command.CLONE:
        conn.send_bytes(messages.encode_cloned(worker.clone(payload)))
    elif command is Command.RESTORE:
        worker.restore(payload)
        conn.send_bytes(messages.DONE)
    elif command is Command.CLOSE:
        return True
    return False


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of a worker launched as ``python -c ... FD``: FD is its end of the pipe."""
    args = sys.argv[1:] if argv is None else argv
    serve(Connection(int(args[0])))
