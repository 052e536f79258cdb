"""Seconds to read a 1 MB nccl-tests log and to validate a 144-GPU log (issue 24: "the time to read a
1 MB log and to validate a 144-GPU log").

The 1 MB log is made of the shapes the reader takes (``tests/data/nccl_tests/``): NCCL INFO lines,
launcher prefixes and several tests, repeated up to ``--megabytes`` (each repetition a test of its
own), and read with :func:`simulator.workloads.traces.nccl_tests_log.parse_text`, best of
``--repeats``. The 144-GPU log is an all_reduce_perf run over two full GB200 NVL72 racks as nccl-tests
prints it by default (``-b 8 -e 16G -f 2``: 32 sizes, 144 '#  Rank' lines; the times are placeholders,
the check times fabricsim), validated on ``gb200_nvl72_x8_ib`` through the whole ``fabricsim validate
--nccl-tests`` path (plan and run, engine ``auto``), once. Usage:

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


def rack_pair_log() -> str:
    """An all_reduce_perf log of 144 ranks, 72 on each of two NVL72 racks, 8 B to 16 GiB."""
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    for rank in range(144):
        tray, gpu = divmod(rank, 4)
        lines.append(f"#  Rank {rank:3d} Group  0 Pid {1000 + rank:6d} on rack{tray // 18}-tray{tray % 18:02d} device "
                     f" {gpu} [0x{gpu + 1:02x}] NVIDIA GB200")
    lines += ["#", "#                                                              out-of-place                       "
              "in-place", "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
              "time   algbw   busbw #wrong", "#        (B)    (elements)                               (us)  (GB/s)  "
              "(GB/s)            (us)  (GB/s)  (GB/s)"]
    total = 0.0
    for i in range(32):
        size = 8 << i
        time_us = round(30.0 + size / 400e3, 1)  # a placeholder: 400 GB/s algbw after 30 us
        algbw = size / time_us / 1e3
        busbw = algbw * 2 * 143 / 144
        total += 2 * busbw
        row = f"{size:12d} {size // 4:13d}     float     sum      -1 {time_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0"
        lines.append(row + row[row.index("-1") + 2:])
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {total / 64:.3f}", ""]
    return "\n".join(lines)


def validate_seconds(tmp: Path) -> tuple[float, int]:
    """Wall seconds of ``fabricsim validate --nccl-tests`` on the 144-GPU log, and the rows compared."""
    from simulator.runner.validate import ValidateRequest, run_validate
    from simulator.topology.placement import Placement

    log = tmp / "all_reduce_144gpu.log"
    log.write_text(rack_pair_log())
    start = time.perf_counter()
    outcome = run_validate(ValidateRequest(logs=(str(log),), topology="gb200_nvl72_x8_ib",
                                           placement=Placement(per_rack=72)))
    return time.perf_counter() - start, sum(len(rows) for _, rows in outcome.results)


def main() -> None:
    import tempfile

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
    with tempfile.TemporaryDirectory() as tmp:
        seconds, compared = validate_seconds(Path(tmp))
    print(f"validated a 144-GPU all_reduce log (2 NVL72 racks, {compared} sizes, 8 B-16 GiB) in {seconds:.1f} s")


if __name__ == "__main__":
    main()
