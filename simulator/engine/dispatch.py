"""One entry point for both engines: ``simulate(fabric, workload, engine=...)``.

``auto`` picks the packet engine while the run is small enough to replay packet by packet in
seconds and the flow (max-min fair) engine beyond that. The estimate counts packet-hops: bytes of
each transfer / packet size x hops of its first route.
"""

from __future__ import annotations

from dataclasses import replace
from collections.abc import Callable

from simulator.engine.flow import FlowConfig, run_flow
from simulator.engine.choices import ENGINES, EngineName
from simulator.engine.packet import EngineObserver, PacketConfig, run_packet
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes

AUTO_PACKET_HOP_BUDGET = 300_000
"""Above this many estimated packet-hops ``auto`` uses the flow engine. Assumption: a few seconds is
what an automatic choice may cost. The packet engine does ~600-690k packet-hops/s on a chain and
~170-220k/s on a loaded 72-GPU switch fabric (arbitration, VOQs, both link directions; measured on
the project's 2-core machine, December 2026), so this keeps an automatic packet run to 1-2 s."""


def packet_hops(fabric: Fabric, workload: Workload, packet_bytes: int) -> int:
    """Estimated packet-hops of ``workload`` cut into ``packet_bytes`` packets."""
    hops_of: dict[tuple[str, str], int] = {}
    total = 0
    for t in workload.transfers:
        if t.bytes == 0:
            continue
        if t.paths:
            hops = len(t.paths[0])
        else:
            key = (t.src, t.dst)
            if key not in hops_of:
                hops_of[key] = len(equal_cost_routes(fabric, t.src, t.dst)[0])
            hops = hops_of[key]
        total += -(-t.bytes // packet_bytes) * hops
    return total


PACKET_TIMED_FAULTS = "--engine packet does not support faults at a time; use --engine flow"
"""The input error of a packet-engine run on a fabric with faults that strike during the run."""


def choose_engine(fabric: Fabric, workload: Workload, packet: PacketConfig) -> str:
    """``packet`` when the estimated packet-hops fit the budget, else ``flow``; always ``flow``
    when faults strike during the run (the packet engine cannot change its fabric mid-run)."""
    if fabric.changes:
        return "flow"
    return "packet" if packet_hops(fabric, workload, packet.packet_bytes) <= AUTO_PACKET_HOP_BUDGET else "flow"


def simulate(fabric: Fabric, workload: Workload, engine: EngineName = "auto",
             packet: PacketConfig | None = None, flow: FlowConfig | None = None,
             observer: EngineObserver | None = None, seed: int | None = None,
             progress: Callable[[int], None] | None = None) -> RunResult:
    """Run ``workload`` on ``fabric`` with the chosen engine (``auto``: see module docstring).
    ``progress(packet_hops)``: called now and then during a packet-engine run."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", field="engine")
    packet = packet or PacketConfig()
    if seed is not None:
        packet = replace(packet, seed=seed)
    if engine == "auto":
        engine = choose_engine(fabric, workload, packet)
    if engine == "packet":
        if fabric.changes:
            raise InputError(PACKET_TIMED_FAULTS)
        return run_packet(fabric, workload, packet, observer, progress=progress)
    result = run_flow(fabric, workload, flow or FlowConfig())
    flow_seen = getattr(observer, "flow_run", None)  # the flow engine has no per-event hooks:
    if flow_seen is not None:  # an observer that can use the whole run gets it afterwards
        flow_seen(fabric, workload, result)
    return result
