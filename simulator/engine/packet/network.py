"""Wires the packet engine's parts for one fabric and runs one workload: ports, input buffers,
switch schedulers, injectors, the transfer DAG and the event loop. Behaviour lives in the parts
(``link``, ``switch``, ``scheduler``, ``source``, ``credits``, ``ledger``); this module connects
them and runs the transfer DAG.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from simulator.engine.packet.ahead import exclusive_channels, suffix_start
from simulator.engine.packet.allocators import DESIGNS
from simulator.engine.packet.arbiters import RoundRobin
from simulator.engine.packet.config import PacketConfig, SwitchSetup
from simulator.engine.packet.credits import CREDIT_POLICIES, CreditBatcher, credits_for
from simulator.engine.packet.events import EventQueue
from simulator.engine.packet.invariants import check_invariants
from simulator.engine.packet.ledger import DeliveryLedger
from simulator.engine.packet.link import OutputPort, serialization_rate_Bps
from simulator.engine.packet.packet import Wake
from simulator.engine.packet.scheduler import CrossbarScheduler
from simulator.engine.packet.source import Flow, Injector, split_packets
from simulator.engine.packet.switch import InputBuffer
from simulator.engine.packet.watchdog import Watchdog, deadlock_report
from simulator.engine.result import RunResult
from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes

log = logging.getLogger(__name__)

INJECT_RANK = 1 << 40
"""Local injection arbitrates after every input channel (ranks are channel ids)."""
SCHEDULED_KINDS = ("switch",)
"""Node kinds that may run the matching crossbar (NVSwitch, InfiniBand/Ethernet switches); other
forwarding nodes (PCIe switches, NICs, GPUs) always arbitrate per output."""


PACE_PACKETS = 8
"""Packets a rate-limited transfer hands to its injectors at a time (its pacing unit): fine packets
when the run moves trains of them (``PacketConfig.fine_packet_bytes``), rounded up to whole
trains, so the CTA's bursts are as large as in the fine run, or one train larger."""


def pace_bytes(config: PacketConfig) -> int:
    """Bytes a rate-limited transfer hands over at a time (``PACE_PACKETS``)."""
    burst = PACE_PACKETS * (config.fine_packet_bytes or config.packet_bytes)
    return -(-burst // config.packet_bytes) * config.packet_bytes


WATCHDOG_RTTS = 1000
"""The watchdog's no-progress time in worst credit round trips (``auto_watchdog_interval_s``)."""
PROGRESS_RTTS = 20
"""Simulated time between two progress reports, in worst credit round trips (a few hundred
reports per run of a collective, each summing every port's packets)."""


class PacketNetwork:
    """One run of the packet engine over ``fabric`` (build once, ``run`` once)."""

    def __init__(self, fabric: Fabric, workload: Workload, config: PacketConfig,
                 observer=None, faults=None, progress=None) -> None:
        self.fabric = fabric
        self.progress = progress
        """``progress(packet_hops)``, called every ``PROGRESS_RTTS`` credit round trips of simulated
        time while the run lasts (a progress bar); it sees the run, never changes it."""
        self.progress_ticks = 0
        self.workload = workload
        self.config = config
        self.pace_bytes = pace_bytes(config)
        """Bytes a rate-limited transfer hands to its injectors at a time."""
        self.obs = observer
        self.events = EventQueue()
        self.rng = np.random.default_rng(config.seed)
        self.vcs = config.vcs
        self.done = False
        self.coarse: list[str] = []
        """Channels whose buffer is smaller than one packet (first one named; see the warning)."""
        self.eager = observer is None and faults is None
        """Account final-hop deliveries when the tail is sent (``DeliveryLedger.deliver_ahead``);
        observers and fault injection see the event-per-delivery path."""
        self._build_transfers()
        self._build_channels()
        self.watchdog = Watchdog(self, config.watchdog_interval_s or self.auto_watchdog_interval_s())
        if faults is not None:
            faults.install(self)

    # -- construction ---------------------------------------------------------------------------
    def _setups(self) -> dict[str, SwitchSetup]:
        return {name: self.config.switch_setup(node) for name, node in self.fabric.nodes.items()}

    def _build_channels(self) -> None:
        fabric, cfg = self.fabric, self.config
        nodes = fabric.nodes
        setups = self._setups()
        policy = CREDIT_POLICIES[cfg.credit_policy]
        full_wire = cfg.wire_bytes
        longest = max([len(nodes) + 1] + [len(p) for t in self.workload.transfers for p in (t.paths or ())])
        self.vc_at = [min(i, cfg.vcs - 1) for i in range(longest + 1)]
        """VC of a packet on the channel at route index i: distance classes (one table, one rule)."""
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
                if cfg.fine_packet_bytes is None:  # not a train chosen for covered loops: say so
                    log.warning("%s: a %d B packet is larger than the usable buffer (%d credits of %d B); "
                                "coarse mode: a packet takes the whole buffer and streams through it "
                                "(see OutputPort.release); use smaller packets to study credit loops",
                                where, full_wire, max_k, spec.credit_bytes)
            back = fabric.reverse_latency_s(ch)
            rate = serialization_rate_Bps(ch, cfg.header_bytes)
            src_node, dst_node = nodes[ch.src], nodes[ch.dst]
            setup = setups[ch.src]
            arbiter = DESIGNS[setup.arbiter].arbiter
            if arbiter is None or self._matching(ch.src, setup):
                arbiter = RoundRobin  # the port's own choice among a matching switch's output queues (VCs)
            self.ports.append(OutputPort(
                ch, events=self.events, ledger=self.ledger, eager=self.eager, spb=1.0 / rate,
                node_latency=src_node.latency_s, next_latency=dst_node.latency_s, credits=counter,
                batcher=CreditBatcher(spec.batch, cfg.vcs), ret_lag=spec.return_delay_s + back,
                full_wire=full_wire, max_k=max_k,
                arbiter=arbiter(),
                speedup=setup.speedup, cut_through=cfg.switching == "cut_through", vc_at=self.vc_at,
                obs=self.obs))
        self.schedulers: dict[str, CrossbarScheduler] = {}
        for k, (name, setup) in enumerate(setups.items()):
            if self._matching(name, setup):
                self.schedulers[name] = self._scheduler(k, name, setup)
        for ch in fabric.channels:
            name = ch.src if parallel[(ch.src, ch.dst)] == 1 else f"{ch.src}/ch{ch.id}"
            weight = cfg.arbiter_weights.get(ch.dst, {}).get(ch.src, 1)
            buf = InputBuffer(ch.id, name, weight, fifo=not setups[ch.dst].voq, vc_at=self.vc_at,
                              vcs=cfg.vcs, up=self.ports[ch.id], ports=self.ports,
                              sched=self.schedulers.get(ch.dst), events=self.events, obs=self.obs)
            self.inbufs.append(buf)
            self.ports[ch.id].down = buf
        reverse, overhead = fabric.response_uses()
        for ch, port in zip(fabric.channels, self.ports):
            if overhead[ch.id] > 0:
                port.reverse = self.ports[int(reverse[ch.id])]
                port.response_spb = float(overhead[ch.id]) * port.reverse.spb
        self.solo = self._exclusive(setups) if self.eager and cfg.take_ahead else set()
        """Channels one stream of packets owns (``ahead``): hops onto them are taken ahead."""
        self.suffix: dict[tuple[int, ...], int] = {}
        """Route -> index of its exclusive suffix (``ahead.suffix_start``), worked out once."""

    def _exclusive(self, setups: dict[str, SwitchSetup]) -> set[int]:
        """The run's exclusive channels (``ahead.exclusive_channels``) among those whose sending
        node arbitrates per output with VOQs and whose link's other direction carries no responses
        for either direction (a response changes the other serializer's time)."""
        answered = {port.reverse.cid for port in self.ports if port.reverse is not None}
        eligible = {ch.id for ch in self.fabric.channels
                    if ch.src not in self.schedulers and setups[ch.src].voq
                    and self.ports[ch.id].reverse is None and ch.id not in answered}
        routes = []
        for t in self.workload.transfers:
            if t.bytes and t.src != t.dst:
                routes.extend(t.paths if t.paths is not None else equal_cost_routes(self.fabric, t.src, t.dst))
        return exclusive_channels(routes, eligible)

    def _matching(self, name: str, setup: SwitchSetup) -> bool:
        return setup.matching and self.fabric.nodes[name].kind in SCHEDULED_KINDS

    def _scheduler(self, k: int, name: str, setup: SwitchSetup) -> CrossbarScheduler:
        """The matching crossbar of switch ``name`` (its own seeded generator, stream ``k``)."""
        fabric = self.fabric
        ins = [ch for ch in fabric.channels if ch.dst == name]
        outs = [self.ports[ch.id] for ch in fabric.channels if ch.src == name]
        weights = self.config.arbiter_weights.get(name, {})
        fastest = min((p.spb for p in outs), default=1.0)
        return CrossbarScheduler(
            name, [ch.id for ch in ins], [weights.get(ch.src, 1) for ch in ins], outs,
            arbiter=setup.arbiter, iterations=setup.iterations,
            slot_s=self.config.wire_bytes * fastest / setup.speedup,
            output_queue_packets=setup.output_queue_packets, shared_buffer=setup.shared_buffer,
            rng=np.random.default_rng((self.config.seed, k + 1)), events=self.events)

    def _build_transfers(self) -> None:
        transfers = self.workload.transfers
        n = len(transfers)
        P = self.config.packet_bytes
        self.n_transfers = n
        self.finish_s = np.full(n, np.nan)
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
        self.n_done = 0
        self.ledger = DeliveryLedger([t.bytes for t in transfers], total, self.events, self._finish,
                                     self.obs, self.config.packet_stats, self.config.packet_stats_limit)

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
        return max(1e-6, WATCHDOG_RTTS * worst)

    def _progress_tick(self, ev) -> None:
        """Report packet-hops so far and come back later, while other events are pending (an idle
        queue is the end of the run, or the watchdog's to judge)."""
        if ev is not None:
            self.progress_ticks += 1  # not the run's events (a pending one is not issued work either)
            self.progress(self.hops())
        if self.done or (ev is not None and not self.events.heap):
            return
        at = self.events.now + self.watchdog.interval_s * PROGRESS_RTTS / WATCHDOG_RTTS
        self.events.push(at, Wake(self._progress_tick, at))

    # -- transfer DAG ---------------------------------------------------------------------------
    def _release(self, tid: int) -> None:
        """All deps of ``tid`` finished: start it after its ``delay_s`` (always via an event, so long
        chains of zero-byte transfers never recurse)."""
        delay = self.workload.transfers[tid].delay_s
        at = self.events.now + delay
        self.events.push(at, Wake(lambda ev: self._start(tid, delay), at))

    def _start(self, tid: int, delay: float) -> None:
        t = self.workload.transfers[tid]
        now = self.events.now
        if t.bytes == 0 or t.src == t.dst:
            self.ledger.start_s[tid] = now - delay if t.bytes == 0 else now
            if t.bytes:
                self.ledger.local_copy(tid, t.bytes)
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
            ahead = self.suffix.get(route)
            if ahead is None:
                ahead = self.suffix[route] = suffix_start(route, self.solo)
            inj.add(Flow(tid, route, count, last, seq, ahead))
            self.ports[first].wake(now)

    def _pace(self, tid: int, routes, offset: int, seq: list[int], sent: int) -> None:
        """A rate-limited transfer (``Transfer.rate_Bps``: the CTA behind it) hands its bytes to the
        injectors no faster than its rate: a pacing unit (``pace_bytes``) every unit / rate
        seconds, so it takes no more than its share of the links while it runs."""
        t = self.workload.transfers[tid]
        now = self.events.now
        nbytes = min(self.pace_bytes, t.bytes - sent)
        self._inject(tid, nbytes, routes, offset, seq, now)
        sent += nbytes
        if sent < t.bytes:
            at = now + nbytes / t.rate_Bps
            offset = (offset + -(-nbytes // self.config.packet_bytes)) % len(routes)
            self.events.push(at, Wake(lambda ev: self._pace(tid, routes, offset, seq, sent), at))

    def _finish(self, tid: int, now: float) -> None:
        """``tid``'s last byte arrived at ``now``. A rate-limited transfer (``Transfer.rate_Bps``:
        the CTA or copy engine behind it) is not done before its sender could have pushed its bytes:
        it completes at ``start + bytes / rate_Bps`` if that is later (its packets are paced by
        ``_pace`` in units of ``PACE_PACKETS``; this settles the last unit, which leaves at link
        rate, as the fluid model does)."""
        t = self.workload.transfers[tid]
        if t.rate_Bps and t.bytes:
            paced = float(self.ledger.start_s[tid]) + t.bytes / t.rate_Bps
            if paced > now:
                self.events.push(paced, Wake(lambda ev: self._complete(tid, self.events.now), paced))
                return
        self._complete(tid, now)

    def _complete(self, tid: int, now: float) -> None:
        self.finish_s[tid] = now
        if self.obs is not None:
            self.obs.transfer(tid, float(self.ledger.start_s[tid]), now)
        self.n_done += 1
        for d in self.dependents[tid]:
            self.deps_left[d] -= 1
            if self.deps_left[d] == 0:
                self._release(d)
        if self.n_done == self.n_transfers:
            self.done = True
            self.events.stop()

    # -- running --------------------------------------------------------------------------------
    def packets_held(self) -> int:
        """Packets in receive buffers, output queues or waiting at a source (0 once drained)."""
        return (sum(b.held for b in self.inbufs) + sum(s.held() for s in self.schedulers.values())
                + sum(1 for i in self.injectors.values() if i.head is not None))

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
        events = self.events
        if not self.done:
            if self.progress is not None:
                self._progress_tick(None)
            events.run()
        ledger = self.ledger
        if self.eager and not self.done and ledger.last_delivery_s > events.now:
            events.now = ledger.last_delivery_s  # stuck run: the observed path's clock ran to the last landing
        now = events.now
        for port in self.ports:
            port.settle(now)
        result = self.result(time.perf_counter() - wall0)
        if self.progress is not None:
            self.progress(self.hops())
        if not self.done and self.packets_held():
            deadlock_report(self, result, reason="the event queue ran empty")
        check_invariants(self, result)
        if self.obs is not None:
            self.obs.run_finished(result)
        return result

    def switch_grants(self) -> dict[str, dict[str, int]]:
        """Switch name -> {input name -> packets it won through the switch}."""
        grants: dict[str, dict[str, int]] = {}
        nodes = self.fabric.nodes
        for buf, ch in zip(self.inbufs, self.fabric.channels):
            if nodes[ch.dst].kind == "switch" and buf.voqs:
                per = grants.setdefault(ch.dst, {})
                per[buf.name] = per.get(buf.name, 0) + sum(q.grants for q in buf.voqs.values())
        for cid, inj in self.injectors.items():
            node = self.fabric.channels[cid].src
            if nodes[node].kind == "switch":
                per = grants.setdefault(node, {})
                per[inj.name] = per.get(inj.name, 0) + inj.grants
        return grants

    def result(self, wall_s: float) -> RunResult:
        """The run's figures as they stand now (``run`` at the end; the watchdog, of a stuck run);
        ``wall_s``: the wall-clock time it took (s)."""
        ports = self.ports
        ledger = self.ledger
        finish = self.finish_s
        makespan = float(np.nanmax(finish)) if self.n_done else 0.0
        return RunResult(
            engine="packet", makespan_s=makespan, start_s=ledger.start_s.copy(), finish_s=finish.copy(),
            bytes_injected=ledger.bytes_injected, bytes_delivered=ledger.bytes_delivered,
            channel_bytes=np.array([p.bytes for p in ports], dtype=np.int64),
            channel_busy_s=np.array([p.busy_s for p in ports]),
            channel_credit_stall_s=np.array([p.stall_s for p in ports]),
            packet_latency_s=ledger.sample.in_delivery_order(ledger.sample.latency),
            queue_delay_s=ledger.sample.in_delivery_order(ledger.sample.queue_delay),
            packet_sample_every=ledger.sample.every,
            switch_grants=self.switch_grants(), events=self.events_run(), wall_s=wall_s)

    def events_run(self) -> int:
        """Events the run has handled so far: those issued, less those still pending and the
        progress reports, plus one arrival per hop taken ahead (``EventQueue.ahead``)."""
        events = self.events
        return events.issued() - len(events) - self.progress_ticks + events.ahead
