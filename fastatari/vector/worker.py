"""The worker process: owns several games, steps them on command, writes into shared memory.

It imports only numpy, ale_py and fastatari's game layer (no OpenCV). Observations never travel
through the pipe: each game writes its stack straight into its slot of the shared block.

The step, the command of every agent step, is raw bytes both ways, so neither side pickles on
the hot path: ``b"s"``, a little-endian uint16 ``chunk``, then one op byte per env of the
worker's block (0 idle, 1 step, 2 reset). It is answered by ``b"d"`` once the results are in
shared memory: once for the whole command (``chunk`` 0, a sync step), or after every
``chunk`` envs and the rest (async, so that a batch can gather envs from several workers).
The other commands and replies are pickled tuples, which always start with pickle's protocol
byte 0x80.

After each write to a worker's pipe the trainer bumps that worker's ``wake`` word in shared
memory. A worker that has just answered watches the word for a moment before it sleeps in
read(2): on a virtual machine, waking a sleeping process costs tens of microseconds on both
sides, twice per step.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from fastatari.vector._wait import wait_change
from fastatari.game import AtariGame
from fastatari.options import AtariOptions
from fastatari.vector.buffers import Layout, SharedBuffers

# Step command and its reply (raw bytes)
STEP = b"s"  # then chunk (uint16, little-endian), then one op per env of the block
IDLE, STEP_ENV, RESET_ENV = 0, 1, 2
DONE = b"d"
# Other commands (trainer -> worker, pickled)
RESET = "reset"  # (RESET, [(env_id, seed or None), ...]) -> DONE
RENDER = "render"  # (RENDER, env_ids) -> (RENDER, [rgb, ...])
CLOSE = "close"
# Other replies (worker -> trainer, pickled)
READY = "ready"  # (READY, pid)
ERROR = "error"  # (ERROR, traceback text)

# How long an idle worker watches for its next command before sleeping in read(2)
SPIN_SECONDS = 500e-6


class Worker:
    """The games of one worker and the writes of their results into the shared arrays."""

    def __init__(self, buffers: SharedBuffers, rom: str, options: AtariOptions,
                 env_ids: Sequence[int], same_step: bool) -> None:
        self.buffers = buffers
        self.same_step = same_step
        self.rom = rom
        self.options = options
        self.first = env_ids[0]  # the block is contiguous
        # Games are built at their first reset, with its seed: loading a ROM costs 0.1-0.3 s and
        # a seeded reset of an already built game would load it again.
        self.games: Dict[int, AtariGame] = {}

    def _game(self, i: int, seed: Optional[int]) -> AtariGame:
        game = self.games.get(i)
        if game is None:
            game = self.games[i] = AtariGame(self.rom, self.options, stack=self.buffers.obs[i],
                                             seed=seed)
        return game

    def _write(self, i: int, reward: float, terminated: bool, truncated: bool,
               info: Dict[str, Any]) -> None:
        b = self.buffers
        b.reward[i] = reward
        b.terminated[i] = terminated
        b.truncated[i] = truncated
        b.lives[i] = info["lives"]
        b.frame_number[i] = info["frame_number"]
        b.episode_frame_number[i] = info["episode_frame_number"]
        b.raw_reward[i] = info.get("raw_reward", reward)
        b.game_over[i] = info.get("game_over", terminated or truncated)
        episode = info.get("episode")
        b.episode_done[i] = episode is not None
        if episode is not None:
            b.episode_r[i] = episode["r"]
            b.episode_l[i] = episode["l"]
            b.episode_t[i] = episode["t"]

    def reset(self, requests: Sequence[Tuple[int, Optional[int]]]) -> None:
        for i, seed in requests:
            info = self._game(i, seed).reset(seed)
            self._write(i, 0.0, False, False, info)
            self.buffers.has_final[i] = False

    def step(self, ops: bytes, chunk: int, answer: Callable[[], None]) -> None:
        """Run one op per env of the block (``ops[j]`` for env ``first + j``); call ``answer``
        after every ``chunk`` envs and after the last (``chunk`` 0: after the last only)."""
        count = 0
        for j, op in enumerate(ops):
            if op == IDLE:
                continue
            self._step_one(self.first + j, op)
            count += 1
            if chunk and count % chunk == 0:
                answer()
        if not chunk or count % chunk:
            answer()

    def _step_one(self, i: int, op: int) -> None:
        if op == RESET_ENV:
            self.reset([(i, None)])
            return
        b = self.buffers
        game = self.games[i]
        reward, terminated, truncated, info = game.step(int(b.action[i]))
        self._write(i, reward, terminated, truncated, info)
        if self.same_step and (terminated or truncated):
            # same-step autoreset: keep the final observation, start the next episode now
            b.final_obs[i] = b.obs[i]
            b.final_lives[i] = info["lives"]
            b.has_final[i] = True
            reset_info = game.reset()
            b.lives[i] = reset_info["lives"]
            b.frame_number[i] = reset_info["frame_number"]
            b.episode_frame_number[i] = reset_info["episode_frame_number"]
        else:
            b.has_final[i] = False

    def render(self, env_ids: Sequence[int]) -> list:
        return [self._game(i, None).render_rgb() for i in env_ids]

    def close(self) -> None:
        for game in self.games.values():
            game.close()
        self.games = {}


class _Waits:
    """Whether to watch for the next command (a brief spin) or sleep in read(2) at once.

    A tight training loop sends the next step within ~100 µs of the last reply (the other
    workers' remaining work plus the trainer's own); catching it by watching saves a wake-up
    on both sides. A trainer that thinks for longer than the spin would only lose cores to
    it, so after a few long waits in a row the worker sleeps at once, until a short one again.
    """

    LONG_WAITS_BEFORE_SLEEPING = 3

    def __init__(self) -> None:
        self.spin = True
        self._answered = 0
        self._long = 0

    def answered(self) -> None:
        self._answered = time.perf_counter_ns()

    def arrived(self) -> None:
        if not self._answered:
            return
        waited = (time.perf_counter_ns() - self._answered) * 1e-9
        self._answered = 0
        self._long = self._long + 1 if waited > SPIN_SECONDS else 0
        self.spin = self._long < self.LONG_WAITS_BEFORE_SLEEPING


def run(conn: Connection, shm_name: str, layout: Layout, rom: str, options: AtariOptions,
        env_ids: Sequence[int], same_step: bool,
        initial_resets: Sequence[Tuple[int, Optional[int]]]) -> None:
    """Worker entry point: build the games, answer READY, then serve commands until CLOSE.

    ``initial_resets`` are resets to run before READY: a restarted worker recreates its games
    and resets them with deterministic seeds.
    """
    # Ctrl-C goes to the whole process group: the trainer decides, workers keep still.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    buffers = None
    worker = None
    try:
        buffers = SharedBuffers(layout, name=shm_name)
        worker = Worker(buffers, rom, options, env_ids, same_step)
        worker.reset(initial_resets)
        conn.send((READY, os.getpid()))
        wake = buffers.wake
        seen = int(wake[worker.first])  # commands received; the trainer bumps it per command
        waits = _Waits()

        def answer() -> None:
            conn.send_bytes(DONE)

        while True:
            if waits.spin:
                wait_change(wake, worker.first, seen, SPIN_SECONDS)
            try:
                data = conn.recv_bytes()
            except EOFError:  # the trainer is gone
                return
            waits.arrived()
            seen += 1
            try:
                if data[:1] == STEP:
                    worker.step(data[3:], int.from_bytes(data[1:3], "little"), answer)
                    waits.answered()
                    continue
                message = ForkingPickler.loads(data)
                command = message[0]
                if command == RESET:
                    worker.reset(message[1])
                    conn.send_bytes(DONE)
                elif command == RENDER:
                    conn.send((RENDER, worker.render(message[1])))
                elif command == CLOSE:
                    return
                else:
                    raise ValueError(f"unknown worker command {command!r}")
            except Exception:  # noqa: BLE001 - shipped to the trainer with its traceback
                conn.send((ERROR, traceback.format_exc()))
    except Exception:  # noqa: BLE001
        try:
            conn.send((ERROR, traceback.format_exc()))
        except OSError:
            pass
    finally:
        if worker is not None:
            worker.close()
        if buffers is not None:
            buffers.close()
        conn.close()
