"""How fast can a synchronous vector step be at all? ``python -m benchmarks.barrier_bound``.

A sync step returns when every env has stepped, so with envs split into blocks (one per worker,
one worker per core) a step lasts as long as its slowest block. This script plays the blocks
one after another in one process, timing each block's work per step exactly as a worker does
it (fastatari's game step: frame skip, no-op starts after each reset, preprocessing), and
reports, without any transport or process cost:

* ``work``: the mean block time per step, the step time if every block finished together;
* ``barrier``: the mean slowest block per step, the step time a perfect transport would give;
* the ceiling: the bare ``ale.act`` loop per block of envs (the harness's ceiling; with several
  games, each game's own loop, weighted by its share of envs, as the multigame section's).

``ceiling / barrier`` bounds a sync step's ratio to the ceiling (``fastatari bench``'s vector
section measures the barrier with the same blocks, one game, as its "sync barrier bound" row,
round by round beside the systems). ``--game`` takes one game, a
comma-separated list (env ``i`` plays game ``i`` mod its length; the assignment then groups
each worker's envs by game, as ``make_vec(balance=True)`` does) or ``atari57`` for the suite.
A reset is ~4.5 ms of emulation in one piece while a normal step is ~0.25 ms per env, so the
blocks with a reset set the pace in the few steps where one happens.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from fastatari.bench.harness import bare_loop, block_times
from fastatari.core.game import AtariGame
from fastatari.vector.assignment import assign_workers, make_assignment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="breakout")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=2, help="workers (one per core)")
    parser.add_argument("--steps", type=int, default=4000)
    args = parser.parse_args()

    if args.game == "atari57":
        from fastatari.evaluation.suites import ATARI_57 as names
    else:
        names = tuple(args.game.split(","))
    roms = [names[i % len(names)] for i in range(args.envs)]
    assignment, options = make_assignment(roms if len(names) > 1 else roms[0], args.envs,
                                  {"repeat_action_probability": 0.0,
                                   "full_action_space": len(names) > 1})
    games = [AtariGame(rom, options, seed=i) for i, rom in enumerate(assignment.games)]
    for i, game in enumerate(games):
        game.reset(i)
    blocks = assign_workers(assignment, args.blocks)
    rng = np.random.default_rng(0)
    actions = rng.integers(games[0].num_actions, size=(args.steps, args.envs))
    times, resets = block_times(games, blocks, actions)
    clock = time.perf_counter

    bare_steps = max(200, args.steps * args.envs // len(assignment.names))  # per game
    per_step = {}
    for name in assignment.names:
        run = bare_loop(name, 0, 1, bare_steps)  # the harness's ceiling loop
        start = clock()
        run(1)
        per_step[name] = (clock() - start) / bare_steps
    # one block of bare steps: each env's game's own loop, the block's mean share of the envs
    ceiling = np.mean([per_step[g] for g in assignment.games]) * args.envs / args.blocks

    work, barrier = times.mean(), times.max(axis=1).mean()
    print(f"{args.game if len(names) < 4 else f'{len(names)} games'}: {args.envs} envs in "
          f"{args.blocks} blocks, {args.steps} steps, "
          f"{resets} resets ({resets / args.steps:.3f} per step)")
    print(f"ceiling (bare ale.act loop)   {ceiling * 1e6:8.0f} us per block-step")
    print(f"work    (mean block)          {work * 1e6:8.0f} us  -> {ceiling / work:.3f} of the "
          "ceiling if blocks finished together")
    print(f"barrier (slowest block)       {barrier * 1e6:8.0f} us  -> {ceiling / barrier:.3f} of "
          "the ceiling at best for a sync step")


if __name__ == "__main__":
    main()
