"""Collective operations and nccl-tests' conventions for them (size meaning, bus-bandwidth factor).

Size convention (nccl-tests doc/PERFORMANCE.md): for all_gather, reduce_scatter and alltoall the
size S is the whole array (count x n ranks); for the others it is each rank's buffer.
"""

from __future__ import annotations

from simulator.errors import unknown_choice

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
WHOLE_ARRAY_OPS = frozenset({"all_gather", "reduce_scatter", "alltoall"})
"""Ops whose size S is the whole array (count x n ranks); for the others S is one rank's buffer."""


def check_op(op: str) -> str:
    if op not in OPS:
        raise unknown_choice("op", op, OPS, field="op")
    return op


def busbw_factor(op: str, n: int) -> float:
    """busbw = algbw x factor (nccl-tests): all_reduce 2(n-1)/n; all_gather, reduce_scatter,
    alltoall (n-1)/n; broadcast, sendrecv 1."""
    check_op(op)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in WHOLE_ARRAY_OPS:
        return (n - 1) / n
    return 1.0
