"""The throughput harness, from a checkout: ``python -m benchmarks.throughput [--quick] ...``.

The harness itself lives in :mod:`fastatari.bench`, so that the installed ``fastatari bench``
command has it too; this module re-exports it and takes the same flags.
"""
from __future__ import annotations

import sys
from typing import Sequence

from fastatari.bench import BenchConfig, Report, markdown_report, run_benchmark
from fastatari.cli import main as cli_main

__all__ = ["BenchConfig", "Report", "main", "markdown_report", "run_benchmark"]


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(["bench", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
