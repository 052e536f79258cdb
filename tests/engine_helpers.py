"""Shared builders for the packet-engine tests: tiny workloads on synthetic fabrics."""

from __future__ import annotations

from simulator.engine.packet import EngineObserver
from simulator.engine.transfer import Transfer, Workload
from simulator.topology.fabric import Fabric


def channel(fabric: Fabric, u: str, v: str) -> int:
    """Id of the (first) channel u -> v."""
    return min(fabric.graph[u][v])


def flows(*pairs: tuple[str, str, int]) -> Workload:
    """Independent transfers (src, dst, bytes) all starting at t=0."""
    return Workload("test", tuple(Transfer(i, s, d, b) for i, (s, d, b) in enumerate(pairs)))


def ring_pinned(fabric: Fabric, n: int, hops: int, nbytes: int) -> Workload:
    """GPU i sends to GPU i+hops along the ring clockwise (pinned path, no VC escape)."""
    ts = []
    for i in range(n):
        d = (i + hops) % n
        path = [channel(fabric, f"gpu{i}", f"sw{i}")]
        path += [channel(fabric, f"sw{(i + k) % n}", f"sw{(i + k + 1) % n}") for k in range(hops)]
        path.append(channel(fabric, f"sw{d}", f"gpu{d}"))
        ts.append(Transfer(i, f"gpu{i}", f"gpu{d}", nbytes, paths=(tuple(path),)))
    return Workload("ring", tuple(ts))


class DeliveryLog(EngineObserver):
    """Records (time, transfer id, bytes) of every delivered packet."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, int, int]] = []

    def delivered(self, packet, t_s: float) -> None:
        self.rows.append((t_s, packet.tid, packet.bytes))

    def bytes_before(self, t_s: float) -> dict[int, int]:
        out: dict[int, int] = {}
        for t, tid, b in self.rows:
            if t <= t_s:
                out[tid] = out.get(tid, 0) + b
        return out
