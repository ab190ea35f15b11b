"""The ``fastatari`` command: ``fastatari bench``, ``list``, ``play`` and ``evaluate``."""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from fastatari.bench import BenchConfig
    from fastatari.tools.play import PlayResult

DEFAULT_PLOT = os.path.join("bench-results", "vector.png")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except BrokenPipeError:  # `fastatari list | head`: the reader left; nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C: the envs were closed on the way out
        print(f"fastatari {args.command}: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastatari", description="The fastest way to run Atari (ALE) games for RL.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_bench_command(commands)
    add_list_command(commands)
    add_play_command(commands)
    add_evaluate_command(commands)
    return parser


def version() -> str:
    """fastatari's version (``fastatari.__version__``, the one source), and the ale-py it runs."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    from fastatari import __version__

    try:
        ale_py = installed("ale-py")
    except PackageNotFoundError:
        ale_py = "unknown"
    return f"{__version__} (ale-py {ale_py})"


def add_evaluate_command(commands: argparse._SubParsersAction) -> None:
    from fastatari.core.protocols import PROTOCOLS
    from fastatari.evaluation.evaluate import SUITES
    from fastatari.evaluation.scores import DEFAULT_TABLE, tables

    evaluate = commands.add_parser(
        "evaluate", help="score a policy on a suite under a named protocol (human-normalized)",
        description="Run every game of a suite at once in one multi-game pool under a "
                    "protocol's evaluation settings, then print per-game returns and "
                    "human-normalized scores with 95% intervals and their aggregates. A "
                    "--policy runs its code (a module is imported, TorchScript is a program): "
                    "use only policies you trust.")
    where = evaluate.add_mutually_exclusive_group()
    where.add_argument("--suite", choices=sorted(SUITES), default="atari5",
                       help="games to evaluate (default: %(default)s)")
    where.add_argument("--game", action="append", dest="games", metavar="GAME",
                       help="a game instead of a suite (repeatable)")
    evaluate.add_argument("--protocol", choices=sorted(PROTOCOLS), default="machado2018",
                          help="its evaluation variant is used (default: %(default)s)")
    evaluate.add_argument("--episodes", type=positive_int, default=10,
                          help="episodes per game and seed (default: %(default)s)")
    evaluate.add_argument("--seeds", type=positive_int, default=1,
                          help="seeds (runs) per game (default: %(default)s)")
    evaluate.add_argument("--policy", help="module:function taking a batch of observations and "
                                           "returning actions, or a TorchScript file (default: "
                                           "uniform random)")
    evaluate.add_argument("--seed", type=seed_value, default=0)
    evaluate.add_argument("--table", choices=tables(), default=DEFAULT_TABLE,
                          help="reference scores (default: %(default)s)")
    evaluate.add_argument("--max-frames", type=positive_int, dest="max_num_frames_per_episode",
                          help="cap episodes at this many frames (default: the protocol's)")
    evaluate.add_argument("--num-workers", type=positive_int)
    evaluate.add_argument("--ray", action="store_true", help="run on fastatari.ray's actors")
    evaluate.add_argument("--json", metavar="PATH", help="the whole record (missing folders "
                                                         "are created; checked before the run)")
    evaluate.add_argument("--csv", metavar="PATH", help="one row per game and aggregate")
    evaluate.add_argument("--plot", metavar="PATH",
                          help="per-game and aggregate intervals, in the format of the "
                               "extension (.png, .pdf, .svg, ...; PNG without one)")
    evaluate.add_argument("--follow-symlinks", action="store_true",
                          help="write outputs through symbolic links")
    evaluate.set_defaults(handler=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    from fastatari._files import check_output
    from fastatari.evaluation.evaluate import evaluate, plot_format

    options = {} if args.max_num_frames_per_episode is None else {
        "max_num_frames_per_episode": args.max_num_frames_per_episode}
    outputs = [(path, write) for path, write in ((args.json, "write_json"),
                                                 (args.csv, "write_csv"), (args.plot, "plot"))
               if path]
    try:
        # every output is checked before the run, not found unwritable after it
        for path, _ in outputs:
            check_output(path, args.follow_symlinks, "the results")
        if args.plot:
            plot_format(args.plot)
        result = evaluate(args.games or args.suite, protocol=args.protocol,
                          episodes=args.episodes, seeds=args.seeds, policy=args.policy,
                          seed=args.seed, table=args.table, num_workers=args.num_workers,
                          use_ray=args.ray, **options)
    except BrokenPipeError:
        raise
    except (ImportError, ValueError, TypeError, OSError) as error:
        print(f"fastatari evaluate: error: {error}", file=sys.stderr)
        return 2
    print(result.summary())
    failed = 0
    for path, write in outputs:  # one that fails (a full disk) does not stop the others
        try:
            getattr(result, write)(path, follow_symlinks=args.follow_symlinks)
        except OSError as error:
            print(f"fastatari evaluate: error: could not write {path!r}: {error}",
                  file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def add_bench_command(commands: argparse._SubParsersAction) -> None:
    import textwrap

    from fastatari.bench import REGISTRY, SECTIONS, BenchConfig

    defaults = BenchConfig()
    # the sections listed under the options, one each, as argparse lists the options
    width = max(len(section.name) for section in REGISTRY)
    sections = "\n".join(textwrap.fill(section.help, 79,
                                       initial_indent=f"  {section.name:{width}}  ",
                                       subsequent_indent=" " * (width + 4))
                         for section in REGISTRY)
    bench = commands.add_parser(
        "bench", help="measure steps/s against the raw-ALE ceiling and gymnasium",
        description=textwrap.fill(
            "Time fastatari against the raw-ALE emulation ceiling and gymnasium's reference "
            "pipeline in one run (round-robin rounds, medians), its kernels against "
            "OpenCV/numpy, and its vector env against EnvPool, ale_py's and gymnasium's. The "
            "diagnostics (transport, trainer, multigame, ...) run from a checkout: python -m "
            "benchmarks --help.", 79),
        epilog=f"sections (--section):\n{sections}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
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
    bench.add_argument("--seed", type=seed_value, default=defaults.seed)
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


def add_play_command(commands: argparse._SubParsersAction) -> None:
    from fastatari.tools.play import POLICIES

    play = commands.add_parser(
        "play", help="play a game with a random policy; --record writes a video",
        description="Run a game with a simple policy, print each episode's return and length, "
                    "and with --record write a video of the raw screen next to what the "
                    "agent sees (one frame per step).")
    play.add_argument("game", help="game name or id, e.g. breakout")
    play.add_argument("--policy", default="random", choices=sorted(POLICIES),
                      help="how actions are chosen (default: %(default)s)")
    play.add_argument("--steps", type=positive_int, default=1000,
                      help="agent steps to run (default: %(default)s)")
    play.add_argument("--seed", type=seed_value, default=0,
                      help="seeds the first reset and the policy (default: %(default)s)")
    play.add_argument("--record", metavar="PATH",
                      help="write a side-by-side video: .mp4 (OpenCV) or .gif (Pillow), "
                           "written as it plays (memory stays one frame); missing folders are "
                           "created")
    play.add_argument("--fps", type=positive_float,
                      help="video frames per second (default: real time, 60 / frame skip)")
    play.add_argument("--follow-symlinks", action="store_true",
                      help="let --record write through a symbolic link (refused otherwise; "
                           "an existing file is overwritten)")
    play.add_argument("--all-frames", action="store_true",
                      help="video: show every frame of the observation stack, not only the "
                           "newest")
    options = play.add_argument_group("AtariOptions")
    options.add_argument("--frame-skip", type=positive_int, help="emulator frames per step")
    options.add_argument("--screen-size", type=screen_size, metavar="N|WxH",
                         help="observation size: a square side or width x height")
    options.add_argument("--stack-size", type=positive_int, help="frames per observation")
    options.add_argument("--no-grayscale", dest="grayscale_obs", action="store_false",
                         default=None, help="RGB observations")
    options.add_argument("--channels-last", action="store_true", default=None,
                         help="(H, W, k) observation layout")
    options.add_argument("--sticky", dest="repeat_action_probability", type=probability,
                         metavar="P", help="sticky-action probability (default 0.25)")
    play.set_defaults(handler=run_play)


def positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def seed_value(text: str) -> int:
    """A seed as ale-py takes it: a non-negative int."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative int, got {text}")
    return value


def probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def screen_size(text: str) -> int | tuple[int, int]:
    try:
        parts = [positive_int(part) for part in text.lower().split("x")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise argparse.ArgumentTypeError(f"expected N or WxH (like 84 or 80x105), got {text!r}")


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
    from fastatari.bench import DEFAULT_SECTIONS, QUICK, BenchConfig

    # --quick sets the sizes; explicit flags still win over it
    sizes = dict(QUICK) if args.quick else {}
    for name in ("rounds", "steps", "kernel_calls", "vector_steps", "vector_envs",
                 "startup_repeats"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    sections = tuple(dict.fromkeys(args.sections)) if args.sections else DEFAULT_SECTIONS
    return BenchConfig(game=args.game, seed=args.seed, sections=sections, **sizes)


def run_bench(args: argparse.Namespace) -> int:
    from fastatari._files import check_output
    from fastatari.bench import publish, run_benchmark, write_plot

    config = bench_config(args)
    plot = args.plot or (os.path.join(os.path.dirname(args.json), "vector.png")
                         if args.json else DEFAULT_PLOT)
    try:  # minutes of measurement are not spent on an output that cannot be written
        for path in (args.json, plot if "vector" in config.sections else None):
            if path:
                check_output(path, what="the report")
    except OSError as error:
        print(f"fastatari bench: error: {error}", file=sys.stderr)
        return 2
    report = run_benchmark(config, progress=tqdm_bar())
    vector = report.results.get("vector")
    if vector is not None:
        path = plot
        why_not = write_plot(vector, path, f"{report.config['game']}, "
                             f"{report.environment['cpu']}, {vector.usable_cores} cores")
        if why_not:
            print(f"no plot: {why_not}", file=sys.stderr)
    publish(report, args.json)
    return 0


def tqdm_bar() -> Callable[[int], object]:
    from tqdm import tqdm

    # on stderr, so that stdout holds only the Markdown
    return lambda total: tqdm(total=total, desc="rounds", unit="round", file=sys.stderr,
                              leave=False, dynamic_ncols=True)


PLAY_OPTIONS = ("frame_skip", "screen_size", "stack_size", "grayscale_obs", "channels_last",
                "repeat_action_probability")


def run_play(args: argparse.Namespace) -> int:
    from fastatari.tools.play import play

    # only the flags given, so AtariOptions' defaults stay the single source of them
    options = {name: getattr(args, name) for name in PLAY_OPTIONS
               if getattr(args, name) is not None}
    bar = optional_bar(args.steps)

    def on_episode(index: int, ret: float, length: int) -> None:
        line = f"episode {index + 1}: return {ret:g}, length {length} steps"
        if bar is None:
            print(line, flush=True)
        else:
            bar.write(line, file=sys.stdout)

    try:
        result = play(args.game, args.steps, policy=args.policy, seed=args.seed,
                      record=args.record, fps=args.fps, all_frames=args.all_frames,
                      follow_symlinks=args.follow_symlinks,
                      on_episode=on_episode, on_step=bar.update if bar else None, **options)
    except BrokenPipeError:  # not a bad input: main() handles it
        raise
    except (ImportError, ValueError, OSError) as error:
        # a bad --record path, format or option, or a missing library: one line, no traceback
        print(f"fastatari play: error: {error}", file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    print(play_summary(args.game, result))
    if args.record:
        print(f"wrote {args.record} ({result.frames_written} frames)")
    return 0


def play_summary(game: str, result: PlayResult) -> str:
    """One line: steps, speed, and the finished episodes' returns and lengths."""
    import numpy as np

    speed = result.steps / result.seconds if result.seconds > 0 else float("inf")
    line = f"{game}: {result.steps} steps in {result.seconds:.2f} s ({speed:,.0f} steps/s)"
    if result.episodes:
        returns = np.array([r for r, _ in result.episodes])
        lengths = np.array([n for _, n in result.episodes])
        line += (f", {len(returns)} episodes: return mean {returns.mean():g} "
                 f"(min {returns.min():g}, max {returns.max():g}), length mean "
                 f"{lengths.mean():g}")
    else:
        line += ", no episode finished"
    ret, length = result.unfinished
    if length:
        line += f"; unfinished episode: return {ret:g} after {length} steps"
    return line


def optional_bar(total: int):
    """A tqdm bar on stderr when tqdm is installed, else None."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # delay: a run that fails at once (bad option, missing library) shows no bar
    return tqdm(total=total, desc="steps", unit="step", file=sys.stderr, leave=False,
                dynamic_ncols=True, delay=0.5)


def run_list(args: argparse.Namespace) -> int:
    from fastatari.core.games import game_ids

    print("\n".join(game_ids()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
