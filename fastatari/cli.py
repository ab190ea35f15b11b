"""The ``fastatari`` command: ``fastatari bench`` and ``fastatari list``."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from fastatari.bench import BenchConfig

DEFAULT_PLOT = os.path.join("bench-results", "vector.png")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastatari", description="The fastest way to run Atari (ALE) games for RL.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_bench_command(commands)
    add_list_command(commands)
    return parser


def add_bench_command(commands: argparse._SubParsersAction) -> None:
    from fastatari.bench import SECTIONS, BenchConfig

    defaults = BenchConfig()
    bench = commands.add_parser(
        "bench", help="measure steps/s against the raw-ALE ceiling and gymnasium",
        description="Time fastatari against the raw-ALE emulation ceiling and gymnasium's "
                    "reference pipeline in one run (round-robin rounds, medians), and its "
                    "kernels against OpenCV/numpy.")
    bench.add_argument("--game", default=defaults.game,
                       help="game name or id (default: %(default)s)")
    bench.add_argument("--rounds", type=positive_int, help=f"default {defaults.rounds}")
    bench.add_argument("--steps", type=positive_int,
                       help=f"agent steps per round per system (default {defaults.steps})")
    bench.add_argument("--kernel-calls", type=positive_int,
                       help=f"kernel steps per round (default {defaults.kernel_calls})")
    bench.add_argument("--vector-steps", type=positive_int,
                       help="vector section: agent steps per round per system "
                            f"(default {defaults.vector_steps})")
    bench.add_argument("--vector-envs", type=int_list, metavar="N,N,...",
                       help="vector section: num_envs for the scaling table (default "
                            f"{','.join(map(str, defaults.vector_envs))})")
    bench.add_argument("--startup-repeats", type=positive_int,
                       help="vector section: fresh interpreters per system for start-up and "
                            f"memory (default {defaults.startup_repeats})")
    bench.add_argument("--seed", type=int, default=defaults.seed)
    bench.add_argument("--section", action="append", choices=SECTIONS, dest="sections",
                       help="measure only this section (repeatable; default: all)")
    bench.add_argument("--quick", action="store_true",
                       help="fewer, shorter rounds: a smoke run, not figures to quote")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    bench.add_argument("--plot", metavar="PATH",
                       help="vector section: the scaling plot (PNG; default vector.png beside "
                            f"the JSON, else {DEFAULT_PLOT})")
    bench.set_defaults(handler=run_bench)


def add_list_command(commands: argparse._SubParsersAction) -> None:
    games = commands.add_parser("list", help="print the games fastatari runs, one per line")
    games.set_defaults(handler=run_list)


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(sorted({positive_int(part) for part in text.split(",") if part.strip()}))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected positive ints like 1,8,64: {error}") from None


def bench_config(args: argparse.Namespace) -> BenchConfig:
    from fastatari.bench import QUICK, SECTIONS, BenchConfig

    # --quick sets the sizes; explicit flags still win over it
    sizes = dict(QUICK) if args.quick else {}
    for name in ("rounds", "steps", "kernel_calls", "vector_steps", "vector_envs",
                 "startup_repeats"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    sections = tuple(dict.fromkeys(args.sections)) if args.sections else SECTIONS
    return BenchConfig(game=args.game, seed=args.seed, sections=sections, **sizes)


def run_bench(args: argparse.Namespace) -> int:
    from fastatari.bench import markdown_report, run_benchmark

    report = run_benchmark(bench_config(args), progress=tqdm_bar())
    if report.vector is not None:
        from fastatari.bench_vector import write_plot

        path = args.plot or (os.path.join(os.path.dirname(args.json), "vector.png")
                             if args.json else DEFAULT_PLOT)
        why_not = write_plot(report.vector, path, f"{report.config['game']}, "
                             f"{report.environment['cpu']}, {report.vector.usable_cores} cores")
        if why_not:
            print(f"no plot: {why_not}", file=sys.stderr)
    print(markdown_report(report))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report.to_dict(), out, indent=2)
            out.write("\n")
    return 0


def tqdm_bar() -> Callable[[int], object]:
    from tqdm import tqdm

    # on stderr, so that stdout holds only the Markdown
    return lambda total: tqdm(total=total, desc="rounds", unit="round", file=sys.stderr,
                              leave=False, dynamic_ncols=True)


def run_list(args: argparse.Namespace) -> int:
    from fastatari.games import game_ids

    print("\n".join(game_ids()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
