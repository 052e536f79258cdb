"""Invariants checked at the end of every run, recorded in ``RunResult.invariants``; a broken one
raises ``SimulationError`` with a report. ``Faults`` breaks them on purpose (tests only).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import SimulationError


def check_invariants(net, result) -> None:
    """Fill ``result.invariants``; raise ``SimulationError`` listing every one that failed."""
    problems: dict[str, str] = {}
    led = net.ledger
    if led.bytes_injected != led.bytes_delivered:
        problems["bytes_conserved"] = (f"bytes injected {led.bytes_injected} != delivered "
                                       f"{led.bytes_delivered}")
    elif net.done and led.bytes_delivered != net.workload.total_bytes:
        problems["bytes_conserved"] = (f"delivered {led.bytes_delivered} B of the workload's "
                                       f"{net.workload.total_bytes} B")
    bad = [(port, v) for port in net.ports for v in port.credits.violations]
    if net.done:  # drained: every credit is back at its sender or held for a batch at the receiver
        bad += [(port, f"vc{vc}: {used} credits in use after the run, {held} held for a batch")
                for port in net.ports
                for vc, (used, held) in enumerate(zip(port.credits.used, port.batcher.held))
                if used != held]
    if bad:
        problems["credits_in_range"] = "; ".join(f"{p.name} {v}" for p, v in bad[:5]) + (
            f" (+{len(bad) - 5} more)" if len(bad) > 5 else "")
    missing = led.n_packets - sum(led.seen) if net.done else 0
    if led.duplicates or missing or led.packets_delivered != led.packets_injected:
        problems["exactly_once"] = (f"{led.duplicates} duplicate deliveries, {missing} packets never "
                                    f"delivered, {led.packets_injected} injected vs "
                                    f"{led.packets_delivered} delivered")
    if not net.done:
        problems["all_transfers_finished"] = (f"{net.n_transfers - net.n_done} of {net.n_transfers} "
                                              f"transfers unfinished")
    for name in ("bytes_conserved", "credits_in_range", "exactly_once", "all_transfers_finished"):
        result.invariants[name] = name not in problems
    result.invariants.setdefault("deadlock_free", True)
    if problems:
        err = SimulationError("invariant violated at t={:.3f} us:\n".format(net.events.now * 1e6)
                              + "\n".join(f"  {k}: {v}" for k, v in problems.items()))
        err.result = result
        err.problems = problems
        raise err


@dataclass(frozen=True)
class Faults:
    """Deliberate defects for tests of the invariant checks (never used by real runs).

    ``drop_seq``: that packet vanishes at its first switch; ``duplicate_seq``: that packet is
    delivered twice; ``extra_credit_channel``: that channel's receiver returns one credit too many
    on its first delivery.
    """

    drop_seq: int | None = None
    duplicate_seq: int | None = None
    extra_credit_channel: int | None = None

    def install(self, net) -> None:
        """Wrap the input buffers' arrival and the ledger's delivery handlers."""
        deliver = net.ledger.deliver
        faults = self
        done_extra = []

        def faulty(arrive):
            def faulty_arrive(p):
                if p.seq == faults.drop_seq:
                    return
                arrive(p)
            return faulty_arrive

        def faulty_deliver(p):
            deliver(p)
            if p.seq == faults.duplicate_seq:
                deliver(p)
            cid = p.route[-1]
            if cid == faults.extra_credit_channel and not done_extra:
                done_extra.append(1)
                net.ports[cid].credits.give(0, 1)  # one credit nobody took

        for buf in net.inbufs:
            buf.arrive_cb = faulty(buf.arrive)
        net.ledger.deliver_cb = faulty_deliver
