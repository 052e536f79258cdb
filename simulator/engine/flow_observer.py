"""Observer hooks for flow-engine runs with faults during the run, replayed from the result.

The flow engine has no packets to report while it runs; after a run on a fabric with faults at a
time (``Fabric.changes``) ``replay_flow`` hands an observer every transfer as one slice and every
fault as it struck (``RunResult.fault_events``), so a trace shows what the faults did.
"""

from __future__ import annotations

from types import SimpleNamespace

from simulator.engine.packet import EngineObserver
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.topology.fabric import Fabric


class FlowObserver(EngineObserver):
    """An ``EngineObserver`` that also takes flow-engine runs; the added hooks do nothing."""

    def flow_transfer(self, tid: int, src: str, dst: str, start_s: float, finish_s: float) -> None:
        """Transfer ``tid`` from ``src`` to ``dst`` ran from ``start_s`` to ``finish_s``."""

    def fault_struck(self, event: dict) -> None:
        """Faults struck (one entry of ``RunResult.fault_events``: at_s, faults, bytes_rerouted,
        transfers_rerouted)."""


def replay_flow(observer: FlowObserver, fabric: Fabric, workload: Workload, result: RunResult) -> None:
    """Hand a finished flow-engine run to ``observer``: started, transfers, faults, finished."""
    observer.run_started(SimpleNamespace(fabric=fabric, workload=workload))
    for t in workload.transfers:
        observer.flow_transfer(t.id, t.src, t.dst, float(result.start_s[t.id]), float(result.finish_s[t.id]))
    for event in result.fault_events:
        observer.fault_struck(event)
    observer.run_finished(result)
