"""Wires the packet engine's parts for one fabric and runs one workload: ports, input buffers,
injectors, the transfer DAG and the event loop. Behaviour lives in the parts (``link``, ``switch``,
``source``, ``credits``, ``arbiters``); this module connects them and keeps the run's totals.
"""

from __future__ import annotations

import logging
import time
from array import array
from heapq import heappop, heappush

import numpy as np
import simpy

from simulator.engine.packet.arbiters import make_arbiter
from simulator.engine.packet.config import PacketConfig
from simulator.engine.packet.invariants import check_invariants
from simulator.engine.packet.credits import CREDIT_POLICIES, CreditBatcher, credits_for
from simulator.engine.packet.link import OutputPort, serialization_rate_Bps
from simulator.engine.packet.packet import Packet, Wake
from simulator.engine.packet.source import Flow, Injector, split_packets
from simulator.engine.packet.switch import InputBuffer, VirtualOutputQueue
from simulator.engine.packet.watchdog import Watchdog, deadlock_report
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes

log = logging.getLogger(__name__)

INJECT_RANK = 1 << 40
"""Local injection arbitrates after every input channel (ranks are channel ids)."""


PACE_PACKETS = 8
"""Packets a rate-limited transfer hands to its injectors at a time (its pacing unit)."""


class PacketNetwork:
    """One run of the packet engine over ``fabric`` (build once, ``run`` once)."""

    def __init__(self, fabric: Fabric, workload: Workload, config: PacketConfig,
                 observer=None, faults=None) -> None:
        self.fabric = fabric
        self.workload = workload
        self.config = config
        self.obs = observer
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(config.seed)
        self.vcs = config.vcs
        self.fifo_mode = not config.voq
        self.done = False
        self.coarse: list[str] = []
        """Channels whose buffer is smaller than one packet (first one named; see the warning)."""
        self.eager = observer is None and faults is None
        """Account final-hop deliveries when the tail is sent instead of by an event when it lands
        (see ``deliver_ahead``); observers and fault injection see the event-per-delivery path."""
        self._build_channels()
        self._build_transfers()

        self.watchdog = Watchdog(self, config.watchdog_interval_s or self.auto_watchdog_interval_s())
        self.arrive_cbs = (self._arrive,)
        self.deliver_cbs = (self._deliver,)
        if faults is not None:
            faults.install(self)

    # -- construction ---------------------------------------------------------------------------
    def _build_channels(self) -> None:
        fabric, cfg = self.fabric, self.config
        nodes = fabric.nodes
        policy = CREDIT_POLICIES[cfg.credit_policy]
        full_wire = cfg.wire_bytes
        self.ports: list[OutputPort] = []
        self.inbufs: list[InputBuffer] = []
        self.injectors: dict[int, Injector] = {}
        parallel: dict[tuple[str, str], int] = {}
        for ch in fabric.channels:
            parallel[(ch.src, ch.dst)] = parallel.get((ch.src, ch.dst), 0) + 1
        for ch in fabric.channels:
            spec = ch.credit
            total = spec.buffer_bytes // spec.credit_bytes
            vc_min = credits_for(cfg.vc_min_bytes or full_wire, spec.credit_bytes)
            counter = policy(total, cfg.vcs, vc_min)
            need = credits_for(full_wire, spec.credit_bytes)
            # with batched returns up to batch-1 credits stay at the receiver: a packet taking more
            # than (largest VC share - (batch-1)) could wait forever
            max_k = counter.max_take() - (spec.batch - 1)
            where = f"channel {ch.id} ({ch.src}->{ch.dst})"
            if max_k < 1:
                raise InputError(f"{where}: credit batch {spec.batch} does not fit the "
                                 f"{counter.max_take()} credits a VC may hold; credits could never "
                                 f"return", field="credit.batch")
            if need > max_k and not self.coarse:
                self.coarse.append(where)
                log.warning("%s: a %d B packet is larger than the usable buffer (%d credits of %d B); "
                            "coarse mode: a packet takes the whole buffer and streams through it "
                            "(see OutputPort.release); use smaller packets to study credit loops", where, full_wire, max_k, spec.credit_bytes)
            try:
                back = fabric.reverse(ch).latency_s
            except KeyError:
                back = ch.latency_s
            rate = serialization_rate_Bps(ch, cfg.header_bytes)
            src_node, dst_node = nodes[ch.src], nodes[ch.dst]
            arb = make_arbiter(cfg.arbiter_for(ch.src), cfg.islip_iterations)
            self.ports.append(OutputPort(
                self, ch, spb=1.0 / rate, node_latency=src_node.latency_s,
                next_latency=dst_node.latency_s, credits=counter,
                batcher=CreditBatcher(spec.batch, cfg.vcs), ret_lag=spec.return_delay_s + back,
                full_wire=full_wire, max_k=max_k, arbiter=arb, speedup=cfg.speedup,
                cut_through=cfg.switching == "cut_through", vc_max=cfg.vcs - 1, obs=self.obs))
            name = ch.src if parallel[(ch.src, ch.dst)] == 1 else f"{ch.src}/ch{ch.id}"
            weight = cfg.arbiter_weights.get(ch.dst, {}).get(ch.src, 1)
            self.inbufs.append(InputBuffer(ch.id, cfg.vcs, name, weight))
        for ch, port in zip(self.fabric.channels, self.ports):
            if ch.reverse_overhead:
                port.reverse = self.ports[self.fabric.reverse(ch).id]
                port.response_spb = ch.reverse_overhead * port.reverse.spb

    def _build_transfers(self) -> None:
        transfers = self.workload.transfers
        n = len(transfers)
        P = self.config.packet_bytes
        self.n_transfers = n
        self.start_s = np.full(n, np.nan)
        self.started = bytearray(n)
        """Per transfer: its first packet left (a plain flag, cheaper to test than a NaN)."""
        self.finish_s = np.full(n, np.nan)
        self.left = [t.bytes for t in transfers]
        """Payload bytes of each transfer not yet delivered."""
        self.deps_left = [len(t.deps) for t in transfers]
        self.dependents: list[list[int]] = [[] for _ in range(n)]
        for t in transfers:
            for d in t.deps:
                self.dependents[d].append(t.id)
        base, total = [], 0
        for t in transfers:
            base.append(total)
            total += -(-t.bytes // P) if t.src != t.dst else 0  # a local copy sends no packets
            if t.paths is not None:
                self._check_paths(t)
        self.seq_base = base
        self.n_packets = total
        self.seen = bytearray(total)
        """Per packet number: delivered once already."""
        self.duplicates = 0
        self.n_done = 0
        self.bytes_injected = 0
        self.bytes_delivered = 0
        self.packets_injected = 0
        self.packets_delivered = 0
        self.latency = array("d")
        self.queue_delay = array("d")
        self.delivered_at = array("d")
        """Eager mode: delivery time of each entry of ``latency``/``queue_delay`` (recorded in send
        order, sorted into delivery order at the end)."""
        self.last_delivery_t = [-np.inf] * n
        self.last_delivery_eid = [0] * n
        """Eager mode, per transfer: event key (time, event id) of its latest delivery so far."""
        self.last_delivery_s = -np.inf
        """Eager mode: latest delivery time accounted so far (s)."""

    def _check_paths(self, t) -> None:
        chans = self.fabric.channels
        for path in t.paths:
            ok = bool(path) and chans[path[0]].src == t.src and chans[path[-1]].dst == t.dst and all(
                chans[a].dst == chans[b].src for a, b in zip(path, path[1:]))
            if not ok:
                raise InputError(f"path {path} does not lead from {t.src} to {t.dst}",
                                 field=f"transfers[{t.id}].paths")

    def auto_watchdog_interval_s(self) -> float:
        """1000 worst credit round-trips (incl. one full packet and switch latency), at least 1 us:
        far beyond any legitimate pause while packets are in flight. Assumption, not a measurement."""
        worst = 0.0
        for port in self.ports:
            worst = max(worst, port.full_wire * port.spb + port.latency + port.ret_lag + port.next_latency)
        return max(1e-6, 1000 * worst)

    # -- hot path: arrival, delivery ------------------------------------------------------------
    def _voq(self, inbuf: InputBuffer, nxt: int, key: int) -> VirtualOutputQueue:
        q = inbuf.voqs[key] = VirtualOutputQueue(inbuf, inbuf.cid, inbuf.weight, inbuf.name)
        self.ports[nxt].add_requester(q)
        return q

    def _arrive(self, p: Packet) -> None:
        """``p`` may leave the node it reached: queue it for its next channel and poke that port."""
        hop = p.hop + 1
        route = p.route
        nxt = route[hop]
        inbuf = self.inbufs[route[p.hop]]
        inbuf.held += 1
        vcs = self.vcs
        vc = hop if hop < vcs else vcs - 1
        key = nxt * vcs + vc
        q = inbuf.voqs.get(key)
        if q is None:
            q = self._voq(inbuf, nxt, key)
        if self.fifo_mode:
            fifo = inbuf.fifos[p.hop if p.hop < vcs else vcs - 1]
            fifo.append(p)
            if len(fifo) > 1:
                if self.obs is not None:
                    self.obs.queue(inbuf.cid, self.env._now, inbuf.held)
                return
        q.push(p)
        if self.obs is not None:
            self.obs.queue(inbuf.cid, self.env._now, inbuf.held)
        self.ports[nxt].kick()

    def unstage(self, inbuf: InputBuffer, p: Packet) -> None:
        """FIFO mode: ``p`` left ``inbuf``; its successor becomes the head and may request."""
        vcs = self.vcs
        hop = p.hop - 1
        fifo = inbuf.fifos[hop if hop < vcs else vcs - 1]
        fifo.popleft()
        if fifo:
            nxt_p = fifo[0]
            h = nxt_p.hop + 1
            nxt = nxt_p.route[h]
            vc = h if h < vcs else vcs - 1
            key = nxt * vcs + vc
            q = inbuf.voqs.get(key)
            if q is None:
                q = self._voq(inbuf, nxt, key)
            q.push(nxt_p)
            self.ports[nxt].wake(self.env._now)

    def _account(self, p: Packet, t: float) -> int:
        """Count ``p`` as delivered at ``t`` (bytes, exactly-once check, latency); returns its bytes."""
        nbytes = p.bytes
        self.bytes_delivered += nbytes
        self.packets_delivered += 1
        seq = p.seq
        if self.seen[seq]:
            self.duplicates += 1
        else:
            self.seen[seq] = 1
        self.latency.append(t - p.t_inject)
        self.queue_delay.append(p.queue_s)
        return nbytes

    def _deliver(self, p: Packet) -> None:
        """``p``'s tail reached its destination: account, maybe finish the transfer (its buffer space
        was already queued for return by the sending port)."""
        now = self.env._now
        nbytes = self._account(p, now)
        if self.obs is not None:
            self.obs.delivered(p, now)
        tid = p.tid
        left = self.left[tid] - nbytes
        self.left[tid] = left
        if left == 0:
            self._finish(tid, now)

    def deliver_ahead(self, p: Packet, t: float) -> None:
        """Eager mode: ``p``'s tail will reach its destination at ``t`` (its final hop just started).

        Accounts the delivery now and schedules nothing, except the transfer's finish when this was
        its last outstanding packet: that event gets the key (time, event id) of the latest delivery
        of the transfer, so it runs exactly where the reference path's last delivery event would
        (each delivery still draws its event id, keeping every other event's order and the event
        count unchanged). Halves the events of single-hop traffic such as NVLS up/down transfers.
        """
        env = self.env
        eid = next(env._eid)
        nbytes = self._account(p, t)
        self.delivered_at.append(t)
        if t > self.last_delivery_s:
            self.last_delivery_s = t
        tid = p.tid
        if t >= self.last_delivery_t[tid]:  # ties: the later event id is the later delivery
            self.last_delivery_t[tid] = t
            self.last_delivery_eid[tid] = eid
        left = self.left[tid] - nbytes
        self.left[tid] = left
        if left == 0:
            t = self.last_delivery_t[tid]
            heappush(env._queue, (t, 1, self.last_delivery_eid[tid],
                                  Wake(lambda ev: self._finish(tid, env._now), t)))

    # -- transfer DAG ---------------------------------------------------------------------------
    def _release(self, tid: int) -> None:
        """All deps of ``tid`` finished: start it after its ``delay_s`` (always via an event, so long
        chains of zero-byte transfers never recurse)."""
        delay = self.workload.transfers[tid].delay_s
        self.env.schedule(Wake(lambda ev: self._start(tid, delay), self.env._now + delay), 1, delay)

    def _start(self, tid: int, delay: float) -> None:
        t = self.workload.transfers[tid]
        now = self.env._now
        if t.bytes == 0 or t.src == t.dst:
            self.start_s[tid] = now - delay if t.bytes == 0 else now
            if t.bytes:
                self.bytes_injected += t.bytes
                self.bytes_delivered += t.bytes
                self.left[tid] = 0
            self._finish(tid, now)
            return
        routes = t.paths if t.paths is not None else equal_cost_routes(self.fabric, t.src, t.dst)
        offset = int(self.rng.integers(len(routes))) if len(routes) > 1 else 0
        seq = [0]
        if t.rate_Bps:
            self._pace(tid, routes, offset, seq, 0)
        else:
            self._inject(tid, t.bytes, routes, offset, seq, now)
        self.watchdog.arm()

    def _inject(self, tid: int, nbytes: int, routes, offset: int, seq: list[int], now: float) -> None:
        """Hand ``nbytes`` of transfer ``tid`` to the injectors of its routes, as packets dealt
        round-robin from route ``offset``."""
        for ri, count, last in split_packets(nbytes, self.config.packet_bytes, len(routes), offset):
            route = tuple(routes[ri])
            first = route[0]
            inj = self.injectors.get(first)
            if inj is None:
                inj = self.injectors[first] = Injector(INJECT_RANK, self.config.packet_bytes,
                                                       self.config.header_bytes, self.seq_base)
                self.ports[first].add_requester(inj)
            inj.add(Flow(tid, route, count, last, seq))
            self.ports[first].wake(now)

    def _pace(self, tid: int, routes, offset: int, seq: list[int], sent: int) -> None:
        """A rate-limited transfer (``Transfer.rate_Bps``: the CTA behind it) hands its bytes to the
        injectors no faster than its rate: a pacing unit of ``PACE_PACKETS`` packets every
        unit / rate seconds, so it takes no more than its share of the links while it runs."""
        t = self.workload.transfers[tid]
        unit = PACE_PACKETS * self.config.packet_bytes
        nbytes = min(unit, t.bytes - sent)
        self._inject(tid, nbytes, routes, offset, seq, self.env._now)
        sent += nbytes
        if sent < t.bytes:
            gap = nbytes / t.rate_Bps
            offset = (offset + -(-nbytes // self.config.packet_bytes)) % len(routes)
            self.env.schedule(Wake(lambda ev: self._pace(tid, routes, offset, seq, sent), self.env._now + gap), 1, gap)

    def _finish(self, tid: int, now: float) -> None:
        """``tid``'s last byte arrived at ``now``. A rate-limited transfer (``Transfer.rate_Bps``:
        the CTA or copy engine behind it) is not done before its sender could have pushed its bytes:
        it completes at ``start + bytes / rate_Bps`` if that is later (its packets are paced by
        ``_pace`` in units of ``PACE_PACKETS``; this settles the last unit, which leaves at link
        rate, as the fluid model does)."""
        t = self.workload.transfers[tid]
        if t.rate_Bps and t.bytes:
            paced = float(self.start_s[tid]) + t.bytes / t.rate_Bps
            if paced > now:
                delay = paced - now
                self.env.schedule(Wake(lambda ev: self._complete(tid, self.env._now), paced), 1, delay)
                return
        self._complete(tid, now)

    def _complete(self, tid: int, now: float) -> None:
        self.finish_s[tid] = now
        if self.obs is not None:
            self.obs.transfer(tid, float(self.start_s[tid]), now)
        self.n_done += 1
        for d in self.dependents[tid]:
            self.deps_left[d] -= 1
            if self.deps_left[d] == 0:
                self._release(d)
        if self.n_done == self.n_transfers:
            self.done = True

    # -- running --------------------------------------------------------------------------------
    def packets_held(self) -> int:
        """Packets sitting in receive buffers or waiting at a source (0 once everything drained)."""
        return sum(b.held for b in self.inbufs) + sum(1 for i in self.injectors.values() if i.head is not None)

    def hops(self) -> int:
        """Packet-hops so far (progress measure and speed figure)."""
        return sum(p.sent for p in self.ports)

    def run(self) -> RunResult:
        """Run to completion; raise ``SimulationError`` on deadlock or a broken invariant."""
        wall0 = time.perf_counter()
        if self.obs is not None:
            self.obs.run_started(self)
        for t in self.workload.transfers:
            if not t.deps:
                self._release(t.id)
        if not self.workload.transfers:
            self.done = True
        env = self.env
        queue = env._queue
        pop = heappop
        # SimPy's ``Environment.step`` inlined: every event here is engine-made (``Packet``,
        # ``Wake``) and always ``_ok``, so the loop only pops, sets the clock and calls back
        while queue and not self.done:
            now, _, _, ev = pop(queue)
            env._now = now
            for cb in ev.callbacks:
                cb(ev)
        if self.eager and not self.done and self.last_delivery_s > env._now:
            env._now = self.last_delivery_s  # stuck run: the reference path's clock ran to the last landing
        now = env._now
        for port in self.ports:
            port._absorb(float("inf"))  # credit updates still on the wire: the counters must settle
            if port.stall_since >= 0:  # close open credit stalls (only on a stuck run)
                port.stall_s += now - port.stall_since
                port.stall_since = -1.0
        result = self._result(time.perf_counter() - wall0)
        if not self.done and self.packets_held():
            deadlock_report(self, result, reason="the event queue ran empty")
        check_invariants(self, result)
        if self.obs is not None:
            self.obs.run_finished(result)
        return result

    def _in_delivery_order(self, values: array) -> np.ndarray:
        """Per-packet figures in delivery order (eager mode records them in send order; a stable
        sort by delivery time restores the order of (time, event id), as event ids grow with sends)."""
        out = np.frombuffer(values, dtype=np.float64).copy()
        if self.delivered_at:
            when = np.frombuffer(self.delivered_at, dtype=np.float64)
            if (np.diff(when) < 0).any():
                out = out[np.argsort(when, kind="stable")]
        return out

    def _result(self, wall_s: float) -> RunResult:
        ports = self.ports
        finish = self.finish_s
        makespan = float(np.nanmax(finish)) if self.n_done else 0.0
        grants: dict[str, dict[str, int]] = {}
        nodes = self.fabric.nodes
        for port, ch in zip(ports, self.fabric.channels):
            if nodes[ch.src].kind != "switch":
                continue
            per = grants.setdefault(ch.src, {})
            for r in port.reqs:
                per[r.name] = per.get(r.name, 0) + r.grants
        queue = self.env._queue
        return RunResult(
            engine="packet", makespan_s=makespan, start_s=self.start_s.copy(), finish_s=finish.copy(),
            bytes_injected=self.bytes_injected, bytes_delivered=self.bytes_delivered,
            channel_bytes=np.array([p.bytes for p in ports], dtype=np.int64),
            channel_busy_s=np.array([p.busy_s for p in ports]),
            channel_credit_stall_s=np.array([p.stall_s for p in ports]),
            packet_latency_s=self._in_delivery_order(self.latency),
            queue_delay_s=self._in_delivery_order(self.queue_delay),
            switch_grants=grants, events=next(self.env._eid) - len(queue), wall_s=wall_s)
