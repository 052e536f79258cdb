"""What every engine consumes: transfers with dependencies (a DAG), emitted by the workloads layer.

Defined here, in the engine layer, because the engines are below the workloads: workloads import
this module, engines never import workloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Transfer(NamedTuple):
    """Move ``bytes`` from node ``src`` to node ``dst`` once every transfer in ``deps`` has finished
    and a further ``delay_s`` has passed.

    ``bytes == 0`` is a pure delay (kernel compute, protocol latency) on ``src``; it finishes
    ``delay_s`` after its deps. ``paths`` optionally pins the equal-cost paths (each a tuple of
    channel ids) the data is spread over; ``None`` lets the engine route over all shortest paths.

    Immutable, and a named tuple rather than a frozen dataclass: a collective on a thousand GPUs
    makes hundreds of thousands, and a named tuple is built about six times faster.
    """

    id: int
    src: str
    dst: str
    bytes: int
    deps: tuple[int, ...] = ()
    delay_s: float = 0.0
    paths: tuple[tuple[int, ...], ...] | None = None
    tag: str = ""
    """Label for reports and traces, e.g. ``ring.ch3.rs.step2``."""
    rate_Bps: float = 0.0
    """Most bytes/s the sender can push, whatever the links offer (0: no limit): the copy or reduce
    rate of the one CTA (NCCL channel) or copy engine that drives this transfer. Engines treat it
    as one more capacity the transfer alone crosses."""


@dataclass(frozen=True, slots=True)
class Workload:
    """A named DAG of transfers. Ids are 0..N-1 and deps point only to lower ids (checked)."""

    name: str
    transfers: tuple[Transfer, ...]
    meta: dict = field(default_factory=dict, hash=False, compare=False)
    """Facts for reports: op, algo, protocol, message bytes, bus-bandwidth factor..."""

    def __post_init__(self) -> None:
        for i, t in enumerate(self.transfers):
            if t.id != i:
                raise ValueError(f"transfer ids must be 0..N-1 in order; got {t.id} at {i}")
            if t.deps and (max(t.deps) >= i or min(t.deps) < 0):
                raise ValueError(f"transfer {i} depends on a later or unknown transfer: {t.deps}")
            if t.bytes < 0 or t.delay_s < 0 or t.rate_Bps < 0:
                raise ValueError(f"transfer {i} has negative bytes, delay or rate")

    @property
    def total_bytes(self) -> int:
        return sum(t.bytes for t in self.transfers)
