"""Perfetto / Chrome trace-event JSON of a packet-engine run (``--trace FILE.json``).

An ``EngineObserver``: one process per node, one thread per outgoing channel; every packet
serialization is a complete ("X") slice on its channel's thread; the sender's credits and the
receive buffer's queue depth are counter ("C") tracks. Flow-engine runs with faults during the
run (``FlowObserver``) add each transfer as a slice on its sender's "flow transfers" thread and
each fault as a global instant ("i") event with the bytes it rerouted. Timestamps are microseconds of simulated
time, as the format requires. Open the file at https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path

from simulator.engine.flow_observer import FlowObserver

US_PER_S = 1e6
RUN_GAP_S = 1e-6
"""Gap between consecutive runs recorded in one trace (several sizes or workloads of one command)."""


FLOW_THREAD = 0
"""Thread id of a node's flow-engine transfers (channel threads are channel id + 1)."""


class TraceWriter(FlowObserver):
    """Collects trace events during a run; ``write(path)`` saves them.

    Several runs (a sweep, a scenario) are laid end to end on one time axis, ``RUN_GAP_S`` apart;
    the same fabric is assumed for all of them. ``max_events`` bounds memory on big runs: later slices and counters are dropped and the drop
    count is recorded in the file's metadata (a trace of millions of packets is unreadable anyway).
    """

    def __init__(self, max_events: int = 1_000_000) -> None:
        self.max_events = max_events
        self.events: list[dict] = []
        self.dropped = 0
        self._pid: dict[str, int] = {}
        self._chan: dict[int, tuple[int, int, str]] = {}
        """Channel id -> (sender pid, thread id, label)."""
        self._dst_pid: dict[int, int] = {}
        """Channel id -> pid of the node whose receive buffer it fills."""
        self._tags: list[str] = []
        self._offset_s = 0.0
        """Start of the current run on the trace's time axis: runs are laid end to end."""
        self._end_s = 0.0
        self._flow_threads: set[int] = set()
        """Pids whose "flow transfers" thread is named already."""

    # -- observer hooks -----------------------------------------------------------------------
    def run_started(self, network) -> None:
        self._offset_s = self._end_s + (RUN_GAP_S if self._end_s else 0.0)
        if self._pid:  # a later run of the same command: devices already named
            self._tags = [t.tag or f"transfer{t.id}" for t in network.workload.transfers]
            return
        fabric = network.fabric
        self._tags = [t.tag or f"transfer{t.id}" for t in network.workload.transfers]
        for i, name in enumerate(sorted(fabric.nodes)):
            self._pid[name] = i + 1
            self.events.append({"ph": "M", "name": "process_name", "pid": i + 1, "tid": 0,
                                "args": {"name": f"{name} ({fabric.nodes[name].kind})"}})
        for ch in fabric.channels:
            pid = self._pid[ch.src]
            label = f"ch{ch.id} -> {ch.dst}"
            self._chan[ch.id] = (pid, ch.id + 1, label)
            self._dst_pid[ch.id] = self._pid[ch.dst]
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": ch.id + 1,
                                "args": {"name": label}})

    def run_finished(self, result) -> None:
        self._end_s = self._offset_s + result.makespan_s

    def _room(self) -> bool:
        if len(self.events) < self.max_events:
            return True
        self.dropped += 1
        return False

    def link_busy(self, cid: int, start_s: float, end_s: float, packet) -> None:
        if self._room():
            pid, tid, _ = self._chan[cid]
            self.events.append({"ph": "X", "name": self._tags[packet.tid], "pid": pid, "tid": tid,
                                "ts": (self._offset_s + start_s) * US_PER_S, "dur": (end_s - start_s) * US_PER_S,
                                "args": {"packet": packet.seq, "bytes": packet.bytes, "hop": packet.hop}})

    def credits(self, cid: int, t_s: float, available: int) -> None:
        if self._room():
            pid, _, label = self._chan[cid]
            self.events.append({"ph": "C", "name": f"credits {label}", "pid": pid, "ts": (self._offset_s + t_s) * US_PER_S,
                                "args": {"credits": available}})

    def queue(self, cid: int, t_s: float, depth: int) -> None:
        if self._room():
            self.events.append({"ph": "C", "name": f"queue from ch{cid}", "pid": self._dst_pid[cid],
                                "ts": (self._offset_s + t_s) * US_PER_S, "args": {"packets": depth}})

    def flow_transfer(self, tid: int, src: str, dst: str, start_s: float, finish_s: float) -> None:
        pid = self._pid[src]
        if pid not in self._flow_threads:
            self._flow_threads.add(pid)
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": FLOW_THREAD,
                                "args": {"name": "flow transfers"}})
        if self._room():
            self.events.append({"ph": "X", "name": self._tags[tid], "pid": pid, "tid": FLOW_THREAD,
                                "ts": (self._offset_s + start_s) * US_PER_S, "dur": (finish_s - start_s) * US_PER_S,
                                "args": {"to": dst}})

    def fault_struck(self, event: dict) -> None:
        self.events.append({"ph": "i", "s": "g", "name": "fault: " + "; ".join(event["faults"]), "pid": 0, "tid": 0,
                            "ts": (self._offset_s + event["at_s"]) * US_PER_S,
                            "args": {"bytes_rerouted": event["bytes_rerouted"],
                                     "transfers_rerouted": event["transfers_rerouted"]}})

    # -- output ---------------------------------------------------------------------------------
    def document(self) -> dict:
        """The trace as a JSON-ready dict (events sorted by time; metadata first)."""
        meta = [e for e in self.events if e["ph"] == "M"]
        timed = sorted((e for e in self.events if e["ph"] != "M"), key=lambda e: e["ts"])
        return {"traceEvents": meta + timed, "displayTimeUnit": "ns",
                "otherData": {"generator": "fabricsim packet engine", "dropped_events": self.dropped}}

    def write(self, path: str | Path) -> Path:
        """Save the trace as Chrome trace-event JSON; returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.document()))
        return path
