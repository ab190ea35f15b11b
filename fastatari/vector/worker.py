"""The worker process: owns several games, steps them on command, writes into shared memory.

It imports only numpy, ale_py and fastatari's game layer (no OpenCV). Commands arrive as small
tuples on a pipe; observations never travel through it: each game writes its stack straight
into its slot of the shared block.
"""

from __future__ import annotations

import os
import signal
import traceback
from multiprocessing.connection import Connection
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fastatari.game import AtariGame
from fastatari.options import AtariOptions
from fastatari.vector.buffers import Layout, SharedBuffers

# Commands (trainer -> worker)
STEP = "step"  # (STEP, step_ids, reset_ids): act on step_ids, autoreset reset_ids
RESET = "reset"  # (RESET, [(env_id, seed or None), ...])
RENDER = "render"  # (RENDER, env_ids) -> ("render", [rgb, ...])
CLOSE = "close"
# Replies (worker -> trainer)
READY = "ready"  # (READY, pid)
DONE = "done"  # (DONE, env_ids)
ERROR = "error"  # (ERROR, traceback text)


class Worker:
    """The games of one worker and the writes of their results into the shared arrays."""

    def __init__(self, buffers: SharedBuffers, rom: str, options: AtariOptions,
                 env_ids: Sequence[int], same_step: bool) -> None:
        self.buffers = buffers
        self.same_step = same_step
        self.rom = rom
        self.options = options
        # Games are built at their first reset, with its seed: loading a ROM costs ~80 ms and
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

    def reset(self, requests: Sequence[Tuple[int, Optional[int]]]) -> List[int]:
        for i, seed in requests:
            info = self._game(i, seed).reset(seed)
            self._write(i, 0.0, False, False, info)
            self.buffers.has_final[i] = False
        return [i for i, _ in requests]

    def step(self, step_ids: Sequence[int], reset_ids: Sequence[int]) -> List[int]:
        b = self.buffers
        actions = b.action
        for i in step_ids:
            game = self.games[i]
            reward, terminated, truncated, info = game.step(int(actions[i]))
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
        self.reset([(i, None) for i in reset_ids])
        return list(step_ids) + list(reset_ids)

    def render(self, env_ids: Sequence[int]) -> list:
        return [self._game(i, None).render_rgb() for i in env_ids]

    def close(self) -> None:
        for game in self.games.values():
            game.close()
        self.games = {}


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
        while True:
            try:
                message = conn.recv()
            except EOFError:  # the trainer is gone
                return
            command = message[0]
            try:
                if command == STEP:
                    conn.send((DONE, worker.step(message[1], message[2])))
                elif command == RESET:
                    conn.send((DONE, worker.reset(message[1])))
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
