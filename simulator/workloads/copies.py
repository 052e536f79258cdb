"""Copies: host-to-device, device-to-host (over the GPU's PCIe path) and GPU-to-GPU peer copies.

``h2d``/``d2h`` move bytes between a GPU and its nearest ``host`` node (root complex) over the
routes the topology gives (PCIe switches and retimers included, their latency is in the channels).
``p2p`` is a copy-engine transfer over the best (equal-cost) routes between two GPUs. Several GPUs
may copy at once (they then share whatever PCIe switch or uplink they have in common).

A copy pays a fixed cost before its first byte moves: the copy-engine (DMA) launch of the GPU's
architecture (``copy_launch_s``, parts/gpu_side.yaml), and for ``h2d`` the PCIe read round trip:
the GPU's copy engine reads host memory with non-posted requests, so the request must reach the
host (one route latency) before completions stream back. ``d2h`` and ``p2p`` push posted writes.
"""

from __future__ import annotations

from collections import deque

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives.base import DagBuilder, check_gpus, route_lat_s
from simulator.workloads.collectives.gpu_side import GpuSide

COPIES = ("h2d", "d2h", "p2p")


def nearest_host(fabric: Fabric, gpu: str) -> str:
    """The ``host`` node fewest links away from ``gpu`` (ties: by name), over paths that pass only
    through nodes that forward (switches, root complexes: never another GPU, as routes do)."""
    seen, frontier = {gpu}, deque([gpu])
    while frontier:
        level = sorted(frontier)
        frontier = deque()
        hosts = [n for n in level if fabric.nodes[n].kind == "host"]
        if hosts:
            return hosts[0]
        for u in level:
            if u != gpu and fabric.nodes[u].kind == "gpu":
                continue  # a GPU ends a path: it does not relay
            for v in sorted(set(fabric.graph.succ[u]) | set(fabric.graph.pred[u])):
                if v not in seen:
                    seen.add(v)
                    frontier.append(v)
    hint = f" (faults: {'; '.join(fabric.faults)})" if fabric.faults else ""
    raise InputError(f"{gpu} of {fabric.name} has no host (node of kind 'host') to copy from{hint}", field="gpus")


def build_copy(fabric: Fabric, kind: str, gpus: list[str] | tuple[str, ...], nbytes: int) -> Workload:
    """``h2d``/``d2h``: every listed GPU copies ``nbytes`` from/to its host at the same time;
    ``p2p``: ``gpus[0]`` copies ``nbytes`` to ``gpus[1]`` (pairs 0->1, 2->3, ... if more)."""
    if kind not in COPIES:
        raise InputError(f"unknown copy {kind!r}; choose one of {', '.join(COPIES)}", field="op")
    gpus = check_gpus(fabric, gpus)
    if nbytes <= 0:
        raise InputError("copy size must be positive", field="bytes")
    dag = DagBuilder()
    if kind == "p2p":
        if len(gpus) < 2 or len(gpus) % 2:
            raise InputError("p2p needs GPUs in pairs (source, destination)", field="gpus")
        for src, dst in zip(gpus[0::2], gpus[1::2]):
            dag.add(src, dst, nbytes, delay_s=GpuSide.of(fabric, (src,)).copy_launch_s, tag=f"p2p.{src}->{dst}")
    else:
        for g in gpus:
            host = nearest_host(fabric, g)
            src, dst = (host, g) if kind == "h2d" else (g, host)
            setup = GpuSide.of(fabric, (g,)).copy_launch_s
            if kind == "h2d":  # the read request travels to the host before data comes back
                setup += route_lat_s(fabric, g, host)
            dag.add(src, dst, nbytes, delay_s=setup, tag=f"{kind}.{g}")
    meta = {"op": kind, "algo": "copy", "protocol": "copy-engine", "bytes": int(nbytes),
            "n": len(gpus), "busbw_factor": 1.0}
    return dag.workload(f"{kind}.{nbytes}B.{len(gpus)}gpu", meta)
