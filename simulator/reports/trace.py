"""Perfetto / Chrome trace-event JSON of packet- and flow-engine runs (``--trace FILE.json``).

An ``EngineObserver``: one process per node, one thread per outgoing channel. Packet engine: every
packet serialization is a complete ("X") slice on its channel's thread; the sender's credits and
the receive buffer's queue depth are counter ("C") tracks. Flow engine (``flow_run``, called by
``engine.dispatch.simulate`` after the run): every transfer is an async slice on its sender, from
start to finish, every link a utilization counter (``metrics.link_timeline``: transfers at
their mean rate, exact for steady collectives; shown clipped at 100 %), and every fault that
struck during the run (``at:``) a global instant ("i") event with the bytes it rerouted. Timestamps are
microseconds of simulated time, as the format requires. Open the file at https://ui.perfetto.dev
or chrome://tracing.

Given a path, the writer streams events to disk as they come (no cap: the file grows with the run;
Perfetto orders them when it loads); without one it keeps up to ``max_events`` in memory, sorted on
output.
"""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import IO, Iterable

from simulator.engine.packet.observer import EngineObserver
from simulator.reports.export import FILE_MODE, guard

US_PER_S = 1e6
RUN_GAP_S = 1e-6
"""Gap between consecutive runs recorded in one trace (several sizes or workloads of one command)."""


class _Stream:
    """Trace events written to a file as they come: ``append`` and ``len`` as on a list. They go to
    a hidden file beside ``path`` that replaces it when the trace is complete (mode 0644), so a run
    that fails leaves the old file, never half a trace; the hidden file is removed however the
    run ends (an error, Ctrl-C, ``sys.exit``: a ``weakref.finalize`` that also runs at exit), as
    soon as the stream is dropped. A device or pipe (``/dev/null``) is written in place: renaming
    over it would replace it."""

    def __init__(self, path: Path, inputs: Iterable[str | Path] = ()) -> None:
        guard(path, inputs)
        self.path = path
        self.in_place = path.exists() and not path.is_file()
        self.tmp = path if self.in_place else path.with_name(f".{path.name}.partial")
        self.file: IO[str] | None = None
        self.count = 0
        self._discard: weakref.finalize | None = None
        """Removes the hidden file unless ``close`` moved it into place."""

    def append(self, event: dict) -> None:
        if self.file is None:
            self.file = self.tmp.open("w")
            if not self.in_place:
                self._discard = weakref.finalize(self, _discard, self.file, self.tmp)
            self.file.write('{"traceEvents": [\n')
        self.file.write((",\n" if self.count else "") + json.dumps(event))
        self.count += 1

    def __len__(self) -> int:
        return self.count

    def close(self, other: dict) -> None:
        """End the JSON document with ``other`` as its ``otherData``."""
        if self.file is None:
            self.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "fabricsim"}})
        assert self.file is not None
        self.file.write(f'\n], "displayTimeUnit": "ns", "otherData": {json.dumps(other)}}}\n')
        self.file.close()
        if not self.in_place:
            os.chmod(self.tmp, FILE_MODE)
            os.replace(self.tmp, self.path)
            if self._discard is not None:
                self._discard.detach()

    def abort(self) -> None:
        """Stop writing and remove the hidden file (the old ``path`` stays as it was)."""
        if self._discard is not None:
            self._discard()


def _discard(file: IO[str], tmp: Path) -> None:
    """Close ``file`` and remove the unfinished trace ``tmp``."""
    try:
        file.close()
    finally:
        tmp.unlink(missing_ok=True)


class TraceWriter(EngineObserver):
    """Collects trace events during a run; ``write(path)`` saves them.

    Several runs (a sweep, a scenario) are laid end to end on one time axis, ``RUN_GAP_S`` apart;
    the same fabric is assumed for all of them. ``path``: stream events into that file as they
    come (``write()`` finishes it). Without a path, ``max_events`` bounds memory: later slices and
    counters are dropped and the drop count is recorded in the file's metadata.
    """

    def __init__(self, max_events: int = 1_000_000, path: str | Path | None = None,
                 inputs: Iterable[str | Path] = ()) -> None:
        self.max_events = max_events
        self.path = Path(path) if path is not None else None
        self.events: list[dict] | _Stream = _Stream(self.path, inputs) if self.path else []
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
        self._ids = 0
        """Async slice ids used by earlier flow runs (ids stay unique across runs)."""

    # -- observer hooks -----------------------------------------------------------------------
    def run_started(self, network) -> None:
        self._begin(network.fabric, network.workload)

    def _begin(self, fabric, workload) -> None:
        """A run starts: lay it after the previous one; name devices and channels once."""
        self._offset_s = self._end_s + (RUN_GAP_S if self._end_s else 0.0)
        self._tags = [t.tag or f"transfer{t.id}" for t in workload.transfers]
        if self._pid:  # a later run of the same command: devices already named
            return
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
        if self.path is not None or len(self.events) < self.max_events:
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

    # -- flow-engine runs -----------------------------------------------------------------------
    def flow_run(self, fabric, workload, result) -> None:
        """A finished flow-engine run: transfer slices and link-utilization counters."""
        from simulator.metrics.link_timeline import flow_link_steps

        self._begin(fabric, workload)
        for t in workload.transfers:
            if t.bytes == 0 or not self._room():
                continue
            pid = self._pid[t.src]
            common = {"cat": "transfer", "name": self._tags[t.id], "id": self._ids + t.id + 1, "pid": pid, "tid": 0}
            self.events.append({**common, "ph": "b", "ts": self._us(result.start_s[t.id]),
                                "args": {"bytes": t.bytes, "to": t.dst}})
            self.events.append({**common, "ph": "e", "ts": self._us(result.finish_s[t.id])})
        for step in flow_link_steps(fabric, workload, result):
            if self._room():
                pid, _, label = self._chan[step.channel]
                percent = min(100.0, 100.0 * step.load_Bps / fabric.channels[step.channel].rate_Bps)
                self.events.append({"ph": "C", "name": f"utilization {label}", "pid": pid, "ts": self._us(step.t_s),
                                    "args": {"percent": round(percent, 3)}})
        for event in result.fault_events:  # faults that struck during the run (``at:``)
            self.events.append({"ph": "i", "s": "g", "name": "fault: " + "; ".join(event["faults"]), "pid": 0,
                                "tid": 0, "ts": self._us(event["at_s"]),
                                "args": {"bytes_rerouted": event["bytes_rerouted"],
                                         "transfers_rerouted": event["transfers_rerouted"]}})
        self._ids += len(workload.transfers)
        self.run_finished(result)

    def _us(self, t_s: float) -> float:
        """Trace time (us) of simulated time ``t_s`` of the current run."""
        return (self._offset_s + float(t_s)) * US_PER_S

    # -- output ---------------------------------------------------------------------------------
    def _other(self) -> dict:
        return {"generator": "fabricsim", "dropped_events": self.dropped}

    def document(self) -> dict:
        """The trace as a JSON-ready dict (events sorted by time; metadata first); in-memory only."""
        if isinstance(self.events, _Stream):
            raise ValueError("a streamed trace is on disk, not in memory")
        meta = [e for e in self.events if e["ph"] == "M"]
        timed = sorted((e for e in self.events if e["ph"] != "M"), key=lambda e: e["ts"])
        return {"traceEvents": meta + timed, "displayTimeUnit": "ns", "otherData": self._other()}

    def write(self, path: str | Path | None = None) -> Path:
        """Save the trace as Chrome trace-event JSON (a streamed trace: finish its file); returns
        the path."""
        if isinstance(self.events, _Stream):
            self.events.close(self._other())
            return self.events.path
        path = Path(path if path is not None else self.path)
        path.write_text(json.dumps(self.document()))
        return path
