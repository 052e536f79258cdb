"""Packet engine: what one packet-hop costs in events, and how much of a run a packet train could fuse.

Runs one collective (or copy) on the packet engine at its fine packet size and counts, for the
question "can several packets of one flow move as one event (a packet train) and give the same
result?" (issue 9, docs/model.md section 7.1):

- CPU microseconds and events per packet-hop;
- wake-ups that found their port busy and re-armed (the reverse direction's responses,
  ``OutputPort.respond``, pushed the port's ``busy_until`` past a wake-up already scheduled);
- shares of packet-hops that are one-hop sends from an injector, on a port with a reverse direction
  that carries responses, on a port with more than one requester, and right behind a packet of the
  same flow at the same port, and of those the ones that start the moment it ends (what a train
  of that flow would fuse; a gap is the reverse direction's responses or credits);
- events that share their exact time with an event of the same port or of its reverse direction:
  their order is the global push order (sequence numbers), and a train that handles packets ahead
  of their time changes it (the tie order a train would have to keep);
- the median gap between an event and the next one pending anywhere (a conservative window
  "nothing else happens before the next packet of this port" holds no second packet when this is
  far below a packet's serialization time).

The counters wrap ``OutputPort.kick``/``_send`` and the event loop for one run and are removed
afterwards; the run itself is unchanged (same result as without them). Run from the repository
root, e.g.::

    python benchmarks/event_anatomy.py gb200_nvl72 all_reduce 72 4M
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from contextlib import contextmanager
from heapq import heappop
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.packet import PacketConfig  # noqa: E402  (after the path line)
from simulator.engine.packet.events import EventQueue  # noqa: E402
from simulator.engine.packet.link import EPS_S, OutputPort  # noqa: E402
from simulator.engine.packet.network import PacketNetwork  # noqa: E402
from simulator.engine.packet.packet import Packet  # noqa: E402
from simulator.engine.packet.sizing import fine_packet_bytes  # noqa: E402
from simulator.runner.sweeps import SweepSpec, build_workload  # noqa: E402
from simulator.topology.builder import build_fabric  # noqa: E402
from simulator.units import parse_size  # noqa: E402


def _target(net: PacketNetwork, ev) -> OutputPort | None:
    """The port an event acts on: a port's wake-up, or the next port of an arriving packet."""
    if isinstance(ev, Packet):
        nxt = ev.hop + 1
        return net.ports[ev.route[nxt]] if nxt < len(ev.route) else None
    owner = getattr(ev.callback, "__self__", None)
    return owner if isinstance(owner, OutputPort) else None


@contextmanager
def counting(net: PacketNetwork, n: Counter, gaps: list[float]):
    """Count kicks, sends and event ties of ``net``'s run while the block lasts."""
    kick, send = OutputPort.kick, OutputPort._send
    last: dict[int, tuple] = {}

    def counted_kick(port, ev=None):
        n["kicks"] += 1
        if port.busy_until > port.events.now + EPS_S:
            n["busy_kicks"] += 1
        return kick(port, ev)

    def counted_send(port, r, p, vc, k, now):
        n["hops"] += 1
        n["one_hop"] += p.hop < 0 and p.last == 0
        n["reverse"] += port.reverse is not None
        n["shared"] += port.shared
        flow = (p.tid, p.route)
        before = last.get(port.cid)
        if before is not None and before[0] == flow:
            n["same_flow"] += 1
            n["back_to_back"] += now <= before[1] + EPS_S
        ahead = send(port, r, p, vc, k, now)
        last[port.cid] = (flow, port.busy_until)
        return ahead

    def counted_run(queue):
        heap = queue.heap
        queue.stopped = False
        group_t, group = None, []
        while heap and not queue.stopped:
            t, _, ev = heappop(heap)
            queue.now = t
            n["events"] += 1
            if heap:
                gaps.append(heap[0][0] - t)
            if t != group_t:
                _ties(group, n)
                group_t, group = t, []
            group.append(_target(net, ev))
            ev.callback(ev)
        _ties(group, n)

    OutputPort.kick, OutputPort._send = counted_kick, counted_send
    run = EventQueue.run
    EventQueue.run = counted_run
    try:
        yield
    finally:
        OutputPort.kick, OutputPort._send = kick, send
        EventQueue.run = run


def _ties(group: list, n: Counter) -> None:
    """Count the events of one time that share it with an event of the same port or its reverse."""
    seen = Counter(id(p) for p in group if p is not None)
    for p in group:
        if p is not None and (seen[id(p)] > 1 or (p.reverse is not None and seen[id(p.reverse)])):
            n["coupled_ties"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topology", help="shipped topology name or YAML path")
    parser.add_argument("op", help="collective or copy, as in bench --op")
    parser.add_argument("gpus", type=int)
    parser.add_argument("size", help="bytes per rank, e.g. 4M")
    args = parser.parse_args()
    path = Path(args.topology)
    if not path.exists():
        path = Path(__file__).resolve().parent.parent / "topologies" / f"{args.topology.removesuffix('.yaml')}.yaml"
    fabric = build_fabric(path)
    size = parse_size(args.size)
    workload = build_workload(fabric, SweepSpec(op=args.op, gpus=args.gpus, sizes=(size,), engine="packet"), size)
    packet = fine_packet_bytes(fabric)
    net = PacketNetwork(fabric, workload, PacketConfig(packet_bytes=packet))
    n: Counter = Counter()
    gaps: list[float] = []
    with counting(net, n, gaps):
        c0 = time.process_time()
        result = net.run()
        cpu = time.process_time() - c0
    hops = n["hops"]
    gaps.sort()
    share = {k: n[k] / hops for k in ("one_hop", "reverse", "shared", "same_flow", "back_to_back")}
    print(f"{fabric.name} {args.op} {args.gpus} GPUs {args.size} ({workload.meta.get('algo')}), "
          f"{packet} B packets: makespan {result.makespan_s * 1e6:.3f} us")
    print(f"packet_hops: {hops}  cpu_us_per_hop: {cpu / hops * 1e6:.1f} (counters included)")
    print(f"events_per_hop: {n['events'] / hops:.2f}  kicks_per_hop: {n['kicks'] / hops:.2f}  "
          f"busy_rewakes_per_hop: {n['busy_kicks'] / hops:.2f}")
    print("hop_shares: " + "  ".join(f"{k} {v:.3f}" for k, v in share.items()))
    print(f"events_tied_with_same_port_or_reverse: {n['coupled_ties'] / n['events']:.3f}")
    if gaps:
        print(f"median_gap_to_next_pending_event_ns: {gaps[len(gaps) // 2] * 1e9:.2f}")


if __name__ == "__main__":
    main()
