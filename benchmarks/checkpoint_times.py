"""What a replay memory's checkpoint costs (:mod:`fastatari.checkpoint`): bytes on disk per
transition, the first (full) save, an incremental save after new transitions, and a load.

    python benchmarks/checkpoint_times.py [--transitions 200000] [--envs 8] [--new 10000]
                                          [--folder DIR]

84x84 frames in stacks of 4, each step a new random frame per env (the worst case: no frame
repeats); wall seconds of one run each (the disk and its page cache as they are: the folder's
file system matters), and the process's peak resident memory.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from typing import List

import numpy as np
from tqdm import tqdm

from fastatari import checkpoint
from fastatari.replay import ReplayMemory


def feed(memories: List[ReplayMemory], steps: int, envs: int, rng: np.random.Generator,
         obs: np.ndarray) -> np.ndarray:
    """``steps`` steps of ``envs`` streams, the same into every memory, each step a new random
    frame per env after the stacks ``obs``; the last next observations."""
    zeros = np.zeros(envs, bool)
    for _ in tqdm(range(steps), desc="adding", unit="step", mininterval=5):
        new = rng.integers(0, 256, (envs, 1, 84, 84), dtype=np.uint8)
        nxt = np.concatenate([obs[:, 1:], new], axis=1)
        actions, rewards = rng.integers(0, 4, envs), rng.normal(size=envs)
        for memory in memories:
            memory.add(obs, nxt, actions, rewards, zeros, zeros)
        obs = nxt
    return obs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=200_000)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--new", type=int, default=10_000,
                        help="transitions before the second save")
    parser.add_argument("--folder", default=None, help="where to save (default: a temporary one)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    memory = ReplayMemory(args.transitions, (4, 84, 84), args.envs)
    obs = rng.integers(0, 256, (args.envs, 4, 84, 84), dtype=np.uint8)
    obs = feed([memory], args.transitions // args.envs, args.envs, rng, obs)
    folder = args.folder or tempfile.mkdtemp(prefix="fastatari-checkpoint-")
    try:
        began = time.perf_counter()
        full = checkpoint.save(folder, memory=memory)
        full_s = time.perf_counter() - began
        on_disk = sum(os.path.getsize(os.path.join(folder, "data", name))
                      for name in os.listdir(os.path.join(folder, "data")))
        feed([memory], args.new // args.envs, args.envs, rng, obs)
        began = time.perf_counter()
        step = checkpoint.save(folder, memory=memory)
        step_s = time.perf_counter() - began
        held = len(memory)
        del memory  # a resumed process holds only the loaded one
        loaded = ReplayMemory(args.transitions, (4, 84, 84), args.envs)
        began = time.perf_counter()
        checkpoint.load(folder, memory=loaded)
        load_s = time.perf_counter() - began
    finally:
        if args.folder is None:
            shutil.rmtree(folder)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{held:,} transitions, {args.envs} envs: {on_disk / held:,.0f} bytes "
          f"on disk per transition; full save {full_s:.2f} s ({full['bytes'] / 1e9:.2f} GB); "
          f"save after {args.new:,} new: {step_s:.2f} s ({step['bytes'] / 1e6:.0f} MB); "
          f"load {load_s:.2f} s; peak resident {peak:.1f} GB")


if __name__ == "__main__":
    main()
