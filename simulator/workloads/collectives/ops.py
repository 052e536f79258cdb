"""Collective operations and nccl-tests' conventions for them (size meaning, bus-bandwidth factor).

Size convention (nccl-tests doc/PERFORMANCE.md and each test's ``GetCollByteCount`` in ``src/*.cu``):
for all_gather, reduce_scatter, alltoall, gather and scatter the size S is the whole array (count x
n ranks); for the others it is each rank's buffer.
"""

from __future__ import annotations

from simulator.errors import unknown_choice

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "gather", "scatter",
       "sendrecv")
WHOLE_ARRAY_OPS = frozenset({"all_gather", "reduce_scatter", "alltoall", "gather", "scatter"})
"""Ops whose size S is the whole array (count x n ranks); for the others S is one rank's buffer."""
P2P_OPS = frozenset({"alltoall", "sendrecv", "gather", "scatter"})
"""Ops NCCL runs on its point-to-point channels: nccl-tests' alltoall, gather and scatter are
ncclSend/ncclRecv calls in one group (src/alltoall.cu, gather.cu, scatter.cu)."""


def check_op(op: str) -> str:
    if op not in OPS:
        raise unknown_choice("op", op, OPS, field="op")
    return op


def busbw_factor(op: str, n: int) -> float:
    """busbw = algbw x factor (nccl-tests): all_reduce 2(n-1)/n; all_gather, reduce_scatter,
    alltoall, gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1 (``*GetBw`` in ``src/*.cu``)."""
    check_op(op)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in WHOLE_ARRAY_OPS:
        return (n - 1) / n
    return 1.0
