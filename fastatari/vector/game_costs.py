"""The calibration of ``game_costs.json``: each game's emulation cost per agent step, for the
vector env's worker assignment (:func:`fastatari.vector.assignment.assign_workers`).

``python -m fastatari.vector.game_costs [--steps N] [--out PATH]`` plays every loadable ROM with
random actions (frame skip 4, full action space, sticky actions off), in rounds that go
round-robin over the games, and writes microseconds per agent step, the median of the rounds,
to ``fastatari/vector/game_costs.json`` (what
:func:`fastatari.vector.assignment.game_costs` reads). Only the ratios between games are used, so
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

from fastatari.core.game import AtariGame
from fastatari.core.games import game_ids
from fastatari.core.options import AtariOptions
from fastatari.vector.assignment import COSTS_FILE


def step_costs(roms: list[str], steps: int, rounds: int, seed: int = 0,
               progress=None) -> dict[str, float]:
    """Median microseconds per agent step of each ROM under random play. Rounds go round-robin
    over the games (a short loop of each per round), so a burst of other load on the machine
    slows one round of every game rather than every round of one."""
    options = AtariOptions(repeat_action_probability=0.0, full_action_space=True)
    rng = np.random.default_rng(seed)
    games = {}
    for rom in roms:
        games[rom] = AtariGame(rom, options, seed=seed)
        games[rom].reset(seed)
    times: dict[str, list[float]] = {rom: [] for rom in roms}
    for r in range(rounds + 1):  # round 0 warms up
        for rom, game in games.items():
            actions = rng.integers(0, game.num_actions, steps).tolist()
            start = time.perf_counter()
            for a in actions:
                _, terminated, truncated, _ = game.step(a)
                if terminated or truncated:
                    game.reset()
            if r:
                times[rom].append((time.perf_counter() - start) / steps * 1e6)
        if progress:
            progress(r, rounds)
    for game in games.values():
        game.close()
    return {rom: statistics.median(t) for rom, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fastatari.vector.game_costs",
        description="Measure each game's emulation cost per agent step and write the table the "
                    "vector env's cost-balanced assignment reads.")
    parser.add_argument("--steps", type=int, default=40, help="agent steps per game per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default=COSTS_FILE)
    args = parser.parse_args(argv)
    roms = list(game_ids())

    def progress(r: int, rounds: int) -> None:
        print(f"round {r}/{rounds}", file=sys.stderr)

    costs = {rom: round(us, 1) for rom, us in
             step_costs(roms, args.steps, args.rounds, progress=progress).items()}
    table = {"about": "microseconds per agent step (frame skip 4, random actions); written by "
                      "python -m fastatari.vector.game_costs",
             "machine": platform.processor() or platform.machine(),
             "us_per_step": costs}
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
