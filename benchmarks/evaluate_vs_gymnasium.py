"""Wall time of ``fastatari evaluate`` (random policy) against the same evaluation done game by
game with gymnasium's pipeline, as evaluation loops commonly run it (one env, episodes one after
another), in the same run, alternating. Prints each repeat's seconds and agent steps, and the
medians of the wall-time ratio and of the steps/s ratio.

    python benchmarks/evaluate_vs_gymnasium.py --suite atari5 --episodes 3 --repeats 2

Both play the protocol's evaluation settings (``machado2018:eval`` by default: ALE v5, sticky
actions 0.25, no no-ops) through gymnasium's ``AtariPreprocessing`` + ``FrameStackObservation``
(fastatari's vector env is byte-identical to it per env), uniform random actions, every episode
to its end.
"""
from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium
import numpy as np

import fastatari
from fastatari.core.games import camel_name
from fastatari.core.protocols import protocol_options
from fastatari.evaluation.evaluate import SUITES, evaluate

gymnasium.register_envs(ale_py)


def gymnasium_game_by_game(games, episodes: int, options: dict, seed: int) -> int:
    """Every game's episodes, one env at a time; the agent steps played."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    steps = 0
    rng = np.random.default_rng(seed)
    for k, game in enumerate(games):
        base = gymnasium.make(f"ALE/{camel_name(game)}-v5", frameskip=1,
                              repeat_action_probability=options["repeat_action_probability"],
                              full_action_space=options["full_action_space"],
                              max_num_frames_per_episode=options["max_num_frames_per_episode"])
        env = FrameStackObservation(AtariPreprocessing(
            base, noop_max=options["noop_max"], frame_skip=options["frame_skip"]), 4)
        n = env.action_space.n
        for e in range(episodes):
            env.reset(seed=seed + k * episodes + e)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(int(rng.integers(n)))
                steps += 1
                done = terminated or truncated
        env.close()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="atari5")
    parser.add_argument("--protocol", default="machado2018")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    games = list(SUITES[args.suite])
    options = protocol_options(f"{args.protocol}:eval")
    ours, theirs, rates = [], [], []
    for r in range(args.repeats):
        start = time.perf_counter()
        result = evaluate(games, protocol=args.protocol, episodes=args.episodes, seed=r,
                          progress=False)
        ours.append(time.perf_counter() - start)
        our_steps = sum(int(np.sum(g.lengths)) for g in result.results)
        start = time.perf_counter()
        their_steps = gymnasium_game_by_game(games, args.episodes, options, seed=r)
        theirs.append(time.perf_counter() - start)
        rates.append((our_steps / ours[-1]) / (their_steps / theirs[-1]))
        print(f"repeat {r}: fastatari evaluate {ours[-1]:.1f} s ({our_steps} steps), "
              f"gymnasium game by game {theirs[-1]:.1f} s ({their_steps} steps)", flush=True)
    ratio = statistics.median(t / o for t, o in zip(theirs, ours, strict=True))
    print(f"{args.suite} x {args.episodes} episodes, {args.protocol}:eval, random policy, "
          f"fastatari {fastatari.__version__}: gymnasium / fastatari wall time, median "
          f"{ratio:.2f}; steps/s, fastatari / gymnasium, median {statistics.median(rates):.2f} "
          f"(the random episodes differ in length between the two)")


if __name__ == "__main__":
    main()
