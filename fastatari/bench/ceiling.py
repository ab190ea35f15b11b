"""The emulation ceiling in parallel: bare loops in processes of their own, run together.

A loop process is started with ``spawn`` (fork is unsafe once thread pools exist), builds its
loop, ``make_loop(*args)`` (a module-level function, so that it pickles), says it is ready,
then runs round ``r`` on command and sends back ``(r, what the round returned)``; ``None`` or
a closed pipe ends it. Ctrl-C is the parent's to handle. The ``vector`` section runs
:class:`ParallelCeiling`; the ``multigame`` section its own loops over every game.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
from typing import Any, Callable, Sequence

from fastatari.bench.harness import TIMEOUT, BenchConfig, bare_loop


def _serve(conn, make_loop: Callable[..., Callable[[int], Any]], args: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    run = make_loop(*args)
    conn.send("ready")
    while True:
        try:
            round_index = conn.recv()
        except EOFError:
            return
        if round_index is None:
            return
        conn.send((round_index, run(round_index)))


class LoopProcesses:
    """A process per entry of ``args``, process ``k`` running ``make_loop(*args[k])``'s loop;
    all of them live until :meth:`close`."""

    def __init__(self, make_loop: Callable[..., Callable[[int], Any]],
                 args: Sequence[tuple], name: str) -> None:
        context = mp.get_context("spawn")
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        try:
            for k, loop_args in enumerate(args):
                parent, child = context.Pipe()
                process = context.Process(target=_serve, args=(child, make_loop, loop_args),
                                          daemon=True, name=f"{name}-{k}")
                process.start()
                child.close()
                self.processes.append(process)
                self.conns.append(parent)
            for conn in self.conns:
                if self._reply(conn) != "ready":
                    raise RuntimeError("a ceiling process did not start")
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.processes)

    @staticmethod
    def _reply(conn) -> Any:
        if not conn.poll(TIMEOUT):
            raise TimeoutError(f"a ceiling process did not answer within {TIMEOUT} s")
        return conn.recv()

    def run(self, round_index: int) -> list[Any]:
        """Round ``round_index`` in every process at once; what each returned, in order."""
        for conn in self.conns:
            conn.send(round_index)
        replies = []
        for conn in self.conns:
            index, value = self._reply(conn)
            if index != round_index:
                raise RuntimeError(f"a ceiling process answered round {index}, "
                                   f"expected {round_index}")
            replies.append(value)
        return replies

    def close(self) -> None:
        """Ask every process to stop, then make sure it is gone."""
        for conn in self.conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        for process in self.processes:
            process.join(timeout=5.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=5.0)
        for conn in self.conns:
            conn.close()
        self.processes, self.conns = [], []


class ParallelCeiling:
    """``processes`` bare loops (:func:`fastatari.bench.harness.bare_loop`) of the config's
    game, ``vector_steps`` agent steps in all per round; a round's rate is all their steps over
    the wall time of the slowest."""

    def __init__(self, config: BenchConfig, processes: int) -> None:
        steps = max(1, config.vector_steps // processes)
        self.units = steps * processes  # agent steps per round, all processes together
        self.loops = LoopProcesses(
            bare_loop, [(config.game, config.seed + k, config.rounds, steps)
                        for k in range(processes)], "fastatari-bench-ceiling")

    def __len__(self) -> int:
        return len(self.loops)

    def run(self, round_index: int) -> None:
        self.loops.run(round_index)

    def close(self) -> None:
        self.loops.close()
