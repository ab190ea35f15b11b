"""A replay memory on disk (``disk=FOLDER``) against the same memory in memory: sampling time
with the frames in the page cache, the process's resident memory, and the memory's own
checkpoint (``save`` into its folder, which links its complete chunks; ``open`` after the
process that made it is gone).

    python benchmarks/replay_on_disk.py [--transitions 1000000] [--envs 8] [--folder DIR]
                                        [--no-twin]

84x84 frames in stacks of 4, each step a new random frame per env (none repeats: the worst
case; fed as ``checkpoint_times.py`` feeds its memory);
``--no-twin`` leaves out the in-memory twin (for a memory larger than RAM: then only the disk
memory is made, sampled and measured). Resident memory is the kernel's split of it
(``/proc/self/status``, Linux): ``RssAnon`` is the process's own, ``RssFile`` the mapped
frames' pages that happen to be cached, which the system drops first when it needs memory.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import tempfile
import time
from typing import Dict

import numpy as np
from checkpoint_times import feed  # (this folder is the script's import path)

from fastatari.replay import ReplayMemory


def resident() -> Dict[str, float]:
    """The process's resident memory, GB, by kind (empty where /proc is not)."""
    try:
        with open("/proc/self/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    return {line.split(":")[0]: int(line.split()[1]) / 2**20 for line in lines
            if line.startswith(("RssAnon", "RssFile", "VmHWM"))}


def sample_time(memory: ReplayMemory, batches: int, batch_size: int) -> float:
    """Seconds per batch of ``batch_size`` (after a first pass over the same draws, so the
    pages they touch are cached)."""
    for _ in range(2):
        rng = np.random.default_rng(7)
        began = time.perf_counter()
        for _ in range(batches):
            memory.sample(batch_size, rng)
        seconds = (time.perf_counter() - began) / batches
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--batches", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--new", type=int, default=10_000,
                        help="transitions added before the second save")
    parser.add_argument("--folder", default=None, help="the memory's folder (default: temporary)")
    parser.add_argument("--no-twin", action="store_true", help="no in-memory twin")
    args = parser.parse_args()
    folder = args.folder or tempfile.mkdtemp(prefix="fastatari-disk-")
    os.makedirs(folder, exist_ok=True)
    shape, n = (4, 84, 84), args.envs
    try:
        disk = ReplayMemory(args.transitions, shape, n, disk=folder)
        memories = [disk] if args.no_twin else [disk, ReplayMemory(args.transitions, shape, n)]
        began = time.perf_counter()
        rng = np.random.default_rng(0)
        obs = feed(memories, args.transitions // n, n, rng,
                   rng.integers(0, 256, (n, *shape), dtype=np.uint8))
        fill_s = time.perf_counter() - began
        rss = resident()
        on_disk = disk.frames.nbytes  # (frames: live chunk files)
        print(f"{len(disk):,} transitions of {n} envs added in {fill_s:.0f} s "
              f"({'both memories' if len(memories) == 2 else 'the disk memory only'}); "
              f"frames on disk {on_disk / 1e9:.2f} GB; resident: "
              + ", ".join(f"{k} {v:.2f} GB" for k, v in rss.items()))
        times = [sample_time(m, args.batches, args.batch_size) for m in memories]
        line = f"sample({args.batch_size}): on disk {times[0] * 1e6:.0f} us"
        if len(times) == 2:
            line += f", in memory {times[1] * 1e6:.0f} us: ratio {times[0] / times[1]:.2f}"
            batches = [m.sample(256, np.random.default_rng(3)) for m in memories]
            same = all(np.array_equal(a, b) for a, b in zip(*batches, strict=True))
            line += f"; samples byte-identical: {same}"
        print(line)
        del memories
        began = time.perf_counter()
        first = disk.save()
        first_s = time.perf_counter() - began
        feed([disk], args.new // n, n, rng, obs)
        began = time.perf_counter()
        second = disk.save()
        second_s = time.perf_counter() - began
        del disk
        gc.collect()  # (its own folder goes: the process that made it is gone)
        began = time.perf_counter()
        opened = ReplayMemory.open(folder)
        open_s = time.perf_counter() - began
        opened.sample(args.batch_size, np.random.default_rng(0))
        print(f"save into its folder {first_s:.2f} s ({first['bytes'] / 1e6:.0f} MB written, "
              f"{first['linked'] / 1e9:.2f} GB linked); after {args.new:,} new {second_s:.2f} s "
              f"({second['bytes'] / 1e6:.0f} MB written, {second['linked'] / 1e6:.0f} MB "
              f"linked); open {open_s:.2f} s ({len(opened):,} transitions, every file checked)")
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
