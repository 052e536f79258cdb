"""Deadlock detection: "packets in flight, no progress" stops the run with a report naming the
blocked buffers and the cycle of credit dependencies.

Two ways a run can be stuck: every port waits for credits that no one will return, so the event queue
runs empty with packets still held (checked when the loop ends), or events keep happening without a
packet moving (a livelock, or a stuck run with a periodic timer): the ``Watchdog`` samples the
packet-hop counter every ``interval_s`` while packets are in flight and stops the run if it did not
move. It sleeps (schedules nothing) while no packets are in flight, so it never keeps a run alive.
Without an observer the engine accounts a delivery when the packet's final hop starts
(``PacketNetwork.deliver_ahead``): the watchdog then sees it delivered up to one link latency early,
which can only move the report of a run that is already stuck by one interval.
"""

from __future__ import annotations

import networkx as nx

from simulator.engine.packet.packet import Wake
from simulator.errors import SimulationError

MAX_LISTED = 12
"""Blocked buffers named in a report; the rest are counted."""


class Watchdog:
    """Periodic no-progress check while packets are in flight."""

    __slots__ = ("net", "interval_s", "armed", "last_hops")

    def __init__(self, net, interval_s: float) -> None:
        self.net = net
        self.interval_s = interval_s
        """No-progress time that declares a deadlock (s)."""
        self.armed = False
        self.last_hops = -1

    def arm(self) -> None:
        """Start sampling (called when traffic starts); idempotent."""
        if not self.armed:
            self.armed = True
            self.last_hops = -1
            events = self.net.events
            at = events.now + self.interval_s
            events.push(at, Wake(self._check, at))

    def _check(self, ev) -> None:
        net = self.net
        self.armed = False
        if net.done:
            return
        held = net.packets_held()
        # nothing else scheduled (deliveries accounted ahead are not events): nothing can free a credit
        led = net.ledger
        idle = not net.events.heap and led.last_delivery_s <= net.events.now
        if held and idle:
            deadlock_report(net, net.result(0.0), reason="the event queue ran empty")
        if idle or not held and led.packets_injected <= led.packets_delivered:
            return  # sleep; the next transfer start re-arms
        hops = net.hops() + led.packets_delivered
        if held and hops == self.last_hops:
            deadlock_report(net, net.result(0.0), reason=f"no packet moved for {self.interval_s:.3g} s")
        self.arm()
        self.last_hops = hops


def wait_for_graph(net) -> nx.DiGraph:
    """Channel -> channel edges: packets held in the receive buffer of the first wait for the second."""
    graph = nx.DiGraph()
    for buf in net.inbufs:
        if not buf.held:
            continue
        for nxt in buf.waiting_for():
            graph.add_edge(buf.cid, nxt)
    return graph


def _channel(net, cid: int) -> str:
    ch = net.fabric.channels[cid]
    return f"ch{cid} {ch.src}->{ch.dst}"


def deadlock_report(net, result, reason: str) -> None:
    """Raise ``SimulationError`` describing where packets are stuck and the credit-dependency cycle."""
    now = net.events.now
    lines = [f"deadlock at t={now * 1e6:.3f} us: {reason}; {net.ledger.in_flight()} "
             f"packets in flight, {net.n_transfers - net.n_done} of {net.n_transfers} transfers unfinished"]
    blocked = [b for b in net.inbufs if b.held]
    lines.append(f"blocked buffers ({len(blocked)}):")
    for buf in blocked[:MAX_LISTED]:
        port = net.ports[buf.cid]
        cr = port.credits
        waits = sorted(set(buf.waiting_for()))
        lines.append(f"  {_channel(net, buf.cid)}: {buf.held} packets held, "
                     f"{sum(cr.used)}/{cr.total} credits in use; heads wait for "
                     + ", ".join(_channel(net, c) + (" (no credits)" if net.ports[c].blocked else "")
                                 for c in waits))
    if len(blocked) > MAX_LISTED:
        lines.append(f"  ... and {len(blocked) - MAX_LISTED} more")
    graph = wait_for_graph(net)
    try:
        cycle = [u for u, _ in nx.find_cycle(graph, source=sorted(graph.nodes))] if graph else []
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        lines.append("credit dependency cycle: " + " -> ".join(_channel(net, c) for c in cycle)
                     + f" -> ch{cycle[0]}")
    else:
        lines.append("no credit dependency cycle among held buffers (starved by a source or a fault)")
    result.invariants["deadlock_free"] = False
    err = SimulationError("\n".join(lines))
    err.result = result
    err.cycle = cycle
    raise err
