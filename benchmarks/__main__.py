"""``python -m benchmarks --section NAME [...]``: the diagnostics, from a checkout.

The same harness and flags as ``fastatari bench`` (:mod:`fastatari.bench`); the sections are
:mod:`benchmarks.sections`', each run only when named (``--section`` is repeatable; ``--list``
prints them). The Markdown report goes to stdout, the progress bar to stderr.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Sequence

from benchmarks.sections import REGISTRY, SECTIONS
from fastatari.bench import QUICK, BenchConfig, publish, run_benchmark
from fastatari.cli import positive_int, seed_value, tqdm_bar


def build_parser() -> argparse.ArgumentParser:
    defaults = BenchConfig()
    width = max(len(section.name) for section in REGISTRY)
    listing = "\n".join(textwrap.fill(section.help, 79,
                                      initial_indent=f"  {section.name:{width}}  ",
                                      subsequent_indent=" " * (width + 4),
                                      break_on_hyphens=False)
                        for section in REGISTRY)
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="fastatari's diagnostics (the user-facing "
        "comparisons are `fastatari bench`).", epilog=f"sections (--section):\n{listing}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--section", action="append", choices=SECTIONS, dest="sections",
                        metavar="NAME", help="a section to run (repeatable; see below)")
    parser.add_argument("--list", action="store_true", help="print the sections' names")
    parser.add_argument("--game", default=defaults.game,
                        help="game name or id (default: %(default)s)")
    parser.add_argument("--rounds", type=positive_int, help=f"default {defaults.rounds}")
    parser.add_argument("--vector-steps", type=positive_int,
                        help=f"agent steps per round per contender (default "
                             f"{defaults.vector_steps})")
    parser.add_argument("--startup-repeats", type=positive_int,
                        help=f"start-ups per assignment (default {defaults.startup_repeats})")
    parser.add_argument("--seed", type=seed_value, default=defaults.seed)
    parser.add_argument("--quick", action="store_true",
                        help="fewer, shorter rounds, smaller grids: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    return parser


def config_of(args: argparse.Namespace) -> BenchConfig:
    sizes = dict(QUICK) if args.quick else {}  # --quick sets the sizes; explicit flags win
    for name in ("rounds", "vector_steps", "startup_repeats"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    return BenchConfig(game=args.game, seed=args.seed, sections=tuple(dict.fromkeys(args.sections)),
                       **sizes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(SECTIONS))
        return 0
    if not args.sections:
        parser.error("name a section with --section (--list prints them)")
    report = run_benchmark(config_of(args), progress=tqdm_bar(), sections=REGISTRY)
    publish(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
