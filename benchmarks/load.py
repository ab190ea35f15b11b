"""Load from outside the harness: how many cores other processes took while a section ran.

The ceiling and every system share the machine with those processes, so the figures mean
little when that load is not near 0; each section reports it, with one warning above
:data:`OTHER_LOAD_WARNING`.
"""
from __future__ import annotations

import contextlib
import os
import time

from fastatari.bench.systems import descendants

OTHER_LOAD_WARNING = 0.1  # cores taken by other processes that make a run suspect


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, steal) jiffies of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal


def _tree_jiffies() -> int:
    """CPU jiffies of this process, its live descendants and the dead ones they reaped."""
    total = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total


class LoadWatch:
    """How many cores other processes on the machine (and the hypervisor) took meanwhile: the
    ceiling and every system share the machine with them, so the figures mean little when this
    is not near 0. Linux only; elsewhere it reports NaN."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, int, int, int] | None:
        try:
            busy, steal = _cpu_jiffies()
            return time.perf_counter(), busy, steal, _tree_jiffies()
        except OSError:
            return None

    def stop(self) -> dict[str, float]:
        end = self._sample()
        if self.start is None or end is None:
            return {"other_cores": float("nan"), "steal_cores": float("nan")}
        wall = max(end[0] - self.start[0], 1e-9)
        ticks = os.sysconf("SC_CLK_TCK")
        busy, steal, ours = (end[i] - self.start[i] for i in (1, 2, 3))
        return {"other_cores": max(0.0, busy - ours) / ticks / wall,
                "steal_cores": steal / ticks / wall}


def not_idle_warning(other_cores: float, what: str = "the figures") -> str:
    """The warning that opens a section's load line when others took more than
    :data:`OTHER_LOAD_WARNING` cores (NaN, not measured: none); else ``""``."""
    if other_cores > OTHER_LOAD_WARNING:
        return f"**Warning: the machine was not idle; {what} are not to be trusted.** "
    return ""


def load_line(load: dict[str, float], during: str, restarts: str) -> str:
    """One section's last line: the warning if any, the other processes' cores (``load``, from
    :meth:`LoadWatch.stop`) on average ``during`` what, and its ``restarts`` (e.g. ``worker
    restarts: 0``)."""
    other = load.get("other_cores", float("nan"))
    return (f"{not_idle_warning(other)}Other load: processes outside the harness took "
            f"{other:.2f} cores on average during {during}; {restarts}.")
