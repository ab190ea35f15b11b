"""The emulation ceiling in parallel: bare loops in processes of their own, run together.

A loop process is started with ``spawn`` (fork is unsafe once thread pools exist), builds its
loop, ``make_loop(*args)`` (a module-level function, so that it pickles), says it is ready,
then runs round ``r`` on command and sends back ``(r, what the round returned)``; ``None`` or
a closed pipe ends it. Ctrl-C is the parent's to handle. The ``vector`` section runs
:func:`parallel_ceiling`; the diagnostics (``benchmarks/``) their own loops.
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
    with contextlib.suppress(EOFError):
        while (round_index := conn.recv()) is not None:
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
            if any(self._reply(conn) != "ready" for conn in self.conns):
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
        replies = [self._reply(conn) for conn in self.conns]
        if any(index != round_index for index, _ in replies):
            raise RuntimeError(f"a ceiling process answered another round than {round_index}")
        return [value for _, value in replies]

    def close(self) -> None:
        """Ask every process to stop, then make sure it is gone. Safe to call again."""
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


def parallel_ceiling(config: BenchConfig, processes: int) -> tuple[LoopProcesses, int]:
    """``processes`` bare loops (:func:`~fastatari.bench.harness.bare_loop`) of the config's
    game, ``vector_steps`` agent steps in all per round (returned with them): a round's rate is
    all their steps over the wall time of the slowest."""
    steps = max(1, config.vector_steps // processes)
    return LoopProcesses(bare_loop, [(config.game, config.seed + k, config.rounds, steps)
                                     for k in range(processes)],
                         "fastatari-bench-ceiling"), steps * processes
