"""Wall time of the continuous-batching scheduler alone: 100,000 requests through
``simulator.workloads.serving.scheduler`` with a synthetic iteration cost cached by shape
(``functools.lru_cache`` on the caller's side, as a serving run will wrap the kernel model), at a
few request rates, so the figure shows how the loop grows with load. The cost is a stand-in (no
kernel model, no fabric): what is timed is the scheduler's own bookkeeping.

Set-up: a Llama-3-70B-like replica on 8 GPUs (KV of 40,960 B per token per GPU: 80 layers x 1 KV
head per GPU x head_dim 128 x 2 B x K and V), 40 GB of KV per GPU (assumption: an H200's 141 GB
minus 17.5 GB of weights per GPU minus activations, rounded down), vLLM's 16-token blocks,
max_num_seqs 256, max_num_batched_tokens 8192; prompts lognormal of mean 1024 tokens, outputs of mean
256 (sigma 1 in log space); Poisson arrivals.

    python benchmarks/serving_scheduler.py [--requests 100000] [--rates 10,20,40]

Measured here (2 cores, Python 3.11), 100,000 requests each: 5.4 s at 10 requests/s (560,000
iterations of small batches), 4.4 s at 20 (145,000 iterations, near the replica's capacity), 5.2 s at
40 (past it: the queue grows, TTFT p50 about 1,000 s); about 10 us of CPU per iteration, so wall time
follows the iteration count, which falls as batches fill. A third to a half of the shapes repeat.
"""

from __future__ import annotations

import argparse
import time
from functools import lru_cache

from simulator.workloads.serving.kv_blocks import KVBlockAllocator, kv_bytes_per_token
from simulator.workloads.serving.metrics import summarize
from simulator.workloads.serving.requests import LognormalLength, PoissonArrivals, generate
from simulator.workloads.serving.scheduler import BatchShape, ContinuousBatchingScheduler, SchedulerConfig

FIXED_S = 0.012
"""assumption: seconds per iteration independent of the batch (weights read once per step)."""
PER_TOKEN_S = 2e-5
"""assumption: seconds per token computed (the GEMMs' rows)."""
PER_CONTEXT_TOKEN_S = 2e-8
"""assumption: seconds per context token a decode attends to (KV reads)."""
KV_BUDGET_BYTES = 40e9
"""assumption: KV-cache bytes per GPU (module docstring)."""


def iteration_s(shape: BatchShape) -> float:
    """The synthetic cost of one iteration, seconds."""
    context = sum(bucket * count for bucket, count in shape.decode_contexts) + shape.prefill_context_tokens
    return FIXED_S + PER_TOKEN_S * shape.tokens + PER_CONTEXT_TOKEN_S * context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rates", default="10,20,40", help="request rates per second, comma-separated")
    args = parser.parse_args()
    config = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=8192)
    print(f"{args.requests} requests, Llama-3-70B-like TP8 replica, synthetic cost cached by shape")
    print(f"{'rate (req/s)':>12} {'wall (s)':>9} {'iterations':>10} {'preempt':>8} {'shapes':>7} "
          f"{'cache hits':>10} {'simulated (s)':>13} {'TTFT p50 (s)':>12} {'TPOT p50 (ms)':>13}")
    for rate in (float(r) for r in args.rates.split(",")):
        requests = generate(PoissonArrivals(rate), LognormalLength(1024, 1.0), LognormalLength(256, 1.0),
                            args.requests, seed=25)
        kv = KVBlockAllocator.from_budget(KV_BUDGET_BYTES, kv_bytes_per_token(80, 1, 128, 2))
        cost = lru_cache(maxsize=None)(iteration_s)
        start = time.perf_counter()
        run = ContinuousBatchingScheduler(config, kv, cost).run(requests)
        wall = time.perf_counter() - start
        info = cost.cache_info()
        summary = summarize(run)
        print(f"{rate:12g} {wall:9.2f} {run.iterations:10d} {run.preemptions:8d} {info.misses:7d} "
              f"{info.hits / (info.hits + info.misses):10.1%} {summary.span_s:13.0f} {summary.ttft.p50_s:12.3f} "
              f"{summary.tpot.p50_s * 1e3:13.2f}")


if __name__ == "__main__":
    main()
