"""Measure each game's emulation cost per agent step, for the vector env's worker assignment.

``python -m fastatari.bench.calibrate [--steps N] [--out PATH]`` plays every loadable ROM with
random actions (frame skip 4, full action space, sticky actions off) and writes microseconds per
agent step, the median of a few rounds, to ``fastatari/game_costs.json`` (what
:func:`fastatari.vector.lineup.game_costs` reads). Only the ratios between games are used, so
a table measured on one machine serves others.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

from fastatari.game import AtariGame
from fastatari.games import game_ids
from fastatari.options import AtariOptions
from fastatari.vector.lineup import COSTS_FILE


def step_cost(rom: str, steps: int, rounds: int = 3, seed: int = 0) -> float:
    """Median microseconds per agent step of ``rom`` under random play."""
    options = AtariOptions(repeat_action_probability=0.0, full_action_space=True)
    game = AtariGame(rom, options, seed=seed)
    rng = np.random.default_rng(seed)
    game.reset(seed)
    times = []
    for _ in range(rounds):
        actions = rng.integers(0, game.num_actions, steps).tolist()
        start = time.perf_counter()
        for a in actions:
            _, terminated, truncated, _ = game.step(a)
            if terminated or truncated:
                game.reset()
        times.append((time.perf_counter() - start) / steps * 1e6)
    game.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="agent steps per round")
    parser.add_argument("--out", default=COSTS_FILE)
    args = parser.parse_args(argv)
    costs = {}
    roms = game_ids()
    for k, rom in enumerate(roms):
        costs[rom] = round(step_cost(rom, args.steps), 1)
        print(f"[{k + 1}/{len(roms)}] {rom}: {costs[rom]} us/step", file=sys.stderr)
    table = {"about": "microseconds per agent step (frame skip 4, random actions); written by "
                      "python -m fastatari.bench.calibrate",
             "machine": platform.processor() or platform.machine(),
             "us_per_step": costs}
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
