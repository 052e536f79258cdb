"""Seconds to read a 1 MB nccl-tests log (issue 24: "the time to read a 1 MB log").

The log is made of the shapes the reader takes (``tests/data/nccl_tests/``): NCCL INFO lines, launcher
prefixes and several tests, repeated up to ``--megabytes`` (each repetition a test of its own), and
read with :func:`simulator.workloads.traces.nccl_tests_log.parse_text`, best of ``--repeats``. Usage:

    python benchmarks/nccl_tests_read.py [--megabytes 1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "nccl_tests"
PIECES = ("info_interleaved.log", "several_runs.log", "ompi_prefixes.log", "slurm_prefixes.log", "garbled.log")


def log_text(megabytes: float) -> str:
    """The pieces repeated to about ``megabytes`` MB (10^6 B)."""
    piece = "".join((DATA / name).read_text() for name in PIECES)
    return piece * max(1, round(megabytes * 1e6 / len(piece.encode())))


def main() -> None:
    from simulator.workloads.traces.nccl_tests_log import parse_text

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    text = log_text(args.megabytes)
    best, runs = float("inf"), ()
    for _ in range(args.repeats):
        start = time.perf_counter()
        runs = parse_text(text, "bench.log")
        best = min(best, time.perf_counter() - start)
    lines = text.count("\n")
    rows = sum(len(r.rows) for r in runs)
    warnings = sum(len(r.warnings) for r in runs)
    print(f"read {len(text.encode()) / 1e6:.2f} MB ({lines} lines, {len(runs)} tests, {rows} rows, {warnings} "
          f"warnings) in {best * 1e3:.0f} ms (best of {args.repeats}; {lines / best / 1e3:.0f} k lines/s)")


if __name__ == "__main__":
    main()
