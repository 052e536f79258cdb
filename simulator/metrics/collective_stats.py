"""nccl-tests figures from a run: algorithm and bus bandwidth (decimal GB/s), nccl-tests row layout.

algbw = S / t with S in nccl-tests' size convention (whole array for all_gather, reduce_scatter,
alltoall); busbw = algbw x factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall
(n-1)/n; broadcast, sendrecv and copies 1), from nccl-tests doc/PERFORMANCE.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.units import GB
from simulator.workloads.collectives.ops import OPS, busbw_factor
from simulator.workloads.traces.nccl_tests_log import PER_RANK_COUNT_OPS, TYPE_BYTES

TYPE_SIZE = TYPE_BYTES
"""Bytes per element of nccl-tests' data types (for the count column)."""


def element_count(op: str, size_bytes: int, n_gpus: int, dtype: str = "float") -> int:
    """The ``count`` column of nccl-tests for ``op`` at buffer size ``size_bytes``."""
    count = size_bytes // TYPE_SIZE[dtype]
    return count // n_gpus if op in PER_RANK_COUNT_OPS else count


def round_to_elements(op: str, nbytes: int, n_gpus: int, dtype: str = "float") -> int:
    """``nbytes`` rounded down to whole elements (of every rank for all_gather-like ops), as
    nccl-tests sizes its buffers: the size column is count x type bytes (x ranks)."""
    unit = TYPE_SIZE[dtype] * (n_gpus if op in PER_RANK_COUNT_OPS else 1)
    return max(unit, nbytes - nbytes % unit)


def algbw_GBps(nbytes: float, time_s: float) -> float:
    """Algorithm bandwidth (GB/s, GB = 10^9 B)."""
    return nbytes / time_s / GB if time_s > 0 else 0.0


def busbw_GBps(op: str, n: int, nbytes: float, time_s: float) -> float:
    """Bus bandwidth (GB/s): algbw x nccl-tests' factor for ``op`` on ``n`` ranks (1 for copies)."""
    factor = busbw_factor(op, n) if op in OPS else 1.0
    return algbw_GBps(nbytes, time_s) * factor


@dataclass(frozen=True, slots=True)
class CollectiveRow:
    """One nccl-tests output row."""

    bytes: int
    count: int
    type: str
    time_us: float
    algbw_GBps: float
    busbw_GBps: float

    def as_dict(self) -> dict:
        return {"bytes": self.bytes, "time_us": self.time_us, "algbw_GBps": self.algbw_GBps,
                "busbw_GBps": self.busbw_GBps}


def row(workload: Workload, result: RunResult, dtype: str = "float") -> CollectiveRow:
    """The nccl-tests row of one run of a collective (or copy) workload; time = makespan."""
    meta = workload.meta
    nbytes, t = int(meta["bytes"]), result.makespan_s
    return CollectiveRow(bytes=nbytes, count=element_count(str(meta.get("op")), nbytes, int(meta.get("n", 1)), dtype),
                       type=dtype, time_us=t * 1e6,
                         algbw_GBps=algbw_GBps(nbytes, t),
                         busbw_GBps=algbw_GBps(nbytes, t) * float(meta.get("busbw_factor", 1.0)))
