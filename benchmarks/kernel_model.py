"""Cost of the kernel model per decode step: what a serving run pays to ask it, cached and not.

A serving run asks the kernel model for every iteration's step (batch and context change as
requests come and go), millions of times. ``GpuKernels`` caches each kernel's answer by its shape
(functools.lru_cache per method), so a step already seen costs a few dictionary lookups.
Prints microseconds of CPU per step: first ask (cold: every kernel computed) and repeated (warm).
Measured here (2 cores), 20,000 distinct steps: 52 us first ask, 0.4 us asked again (20 us before
``step_cost`` itself was cached: only the kernels were).

    python benchmarks/kernel_model.py [--steps 20000]
"""

from __future__ import annotations

import argparse
import time

from simulator.hardware.catalog import load_catalog
from simulator.hardware.kernels import GpuKernels, kernel_model
from simulator.workloads.attention.layer import step_cost
from simulator.workloads.attention.model import ModelShape


def shapes(n: int) -> list[ModelShape]:
    """``n`` decode steps of Llama-3-70B TP8: batch 1-256, context 1k-32k (a serving run's mix)."""
    out = []
    for i in range(n):
        batch, context = 1 + (i * 37) % 256, 1024 + (i * 613) % 31744
        out.append(ModelShape(80, 8192, 64, 8, 128, batch, context, tp=8, ffn_hidden=28672, vocab=128256))
    return out


def per_step_us(gk: GpuKernels, steps: list[ModelShape]) -> float:
    start = time.process_time()
    for m in steps:
        step_cost(gk, m, "decode")
    return (time.process_time() - start) / len(steps) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    args = parser.parse_args()
    spec = load_catalog().device("h200").gpu
    steps = shapes(args.steps)
    cold_gk = kernel_model("h200", spec, "eager")  # a fresh model: empty caches
    cold = per_step_us(cold_gk, steps)
    warm = per_step_us(cold_gk, steps)
    distinct = len({(m.batch, m.context) for m in steps})
    print(f"decode step, Llama-3-70B TP8 on H200, {args.steps} steps ({distinct} distinct shapes):")
    print(f"  first ask (kernels computed): {cold:8.1f} us CPU per step")
    print(f"  asked again (cached):         {warm:8.1f} us CPU per step")


if __name__ == "__main__":
    main()
