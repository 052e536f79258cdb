"""Deadlock detection, invariants (each broken on purpose), determinism, spreading over parallel paths."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.engine.packet import PacketConfig, credit_limited_rate_Bps, run_packet
from simulator.engine.packet.invariants import Faults
from simulator.engine.transfer import Transfer, Workload
from simulator.errors import InputError, SimulationError
from simulator.topology import synthetic
from simulator.topology.fabric import Fabric

from engine_helpers import flows, ring_pinned

PACKET = 256
TINY = synthetic.default_credit(buffer_bytes=2 * PACKET, credit_bytes=PACKET)


def test_vcless_ring_deadlock_is_detected_with_its_cycle():
    fabric = synthetic.ring(4, credit=TINY)
    with pytest.raises(SimulationError) as info:
        run_packet(fabric, ring_pinned(fabric, 4, hops=3, nbytes=PACKET * 200), PacketConfig(packet_bytes=PACKET))
    err = info.value
    ring = {min(fabric.graph[f"sw{i}"][f"sw{(i + 1) % 4}"]) for i in range(4)}
    assert set(err.cycle) == ring
    assert "credit dependency cycle" in str(err) and "sw3->sw0" in str(err)
    assert err.result.invariants["deadlock_free"] is False


def test_empty_event_queue_with_held_packets_is_a_deadlock():
    fabric = synthetic.ring(4, credit=TINY)
    cfg = PacketConfig(packet_bytes=PACKET, watchdog_interval_s=1.0)  # watchdog too slow to fire first
    with pytest.raises(SimulationError, match="event queue ran empty"):
        run_packet(fabric, ring_pinned(fabric, 4, hops=3, nbytes=PACKET * 200), cfg)


def test_distance_class_vcs_remove_the_deadlock():
    credit = synthetic.default_credit(buffer_bytes=5 * 2 * PACKET, credit_bytes=PACKET)
    fabric = synthetic.ring(4, credit=credit)
    res = run_packet(fabric, ring_pinned(fabric, 4, hops=3, nbytes=PACKET * 200),
                     PacketConfig(packet_bytes=PACKET, vcs=5))
    assert all(res.invariants.values()) and res.bytes_delivered == 4 * PACKET * 200


def _chain_run(faults=None, **cfg):
    fabric = synthetic.chain(3)
    return run_packet(fabric, flows(("gpu0", "gpu1", PACKET * 50), ("gpu1", "gpu0", PACKET * 50)),
                      PacketConfig(packet_bytes=PACKET, **cfg), faults=faults)


def test_clean_run_holds_every_invariant():
    res = _chain_run()
    assert res.invariants == {"bytes_conserved": True, "credits_in_range": True, "exactly_once": True,
                              "all_transfers_finished": True, "deadlock_free": True}
    assert res.bytes_injected == res.bytes_delivered == 2 * PACKET * 50
    assert np.isclose(res.channel_bytes.sum(), 3 * 2 * PACKET * 50)


@pytest.mark.parametrize("faults, broken", [
    (Faults(drop_seq=7), "bytes_conserved"),
    (Faults(duplicate_seq=3), "exactly_once"),
    (Faults(extra_credit_channel=4), "credits_in_range"),
])
def test_each_invariant_fails_loudly(faults, broken):
    with pytest.raises(SimulationError, match=broken) as info:
        _chain_run(faults)
    assert info.value.result.invariants[broken] is False


def test_same_seed_same_result_and_seed_matters():
    fabric = synthetic.star(4)
    wl = Workload("spread", tuple(Transfer(i, f"gpu{i % 4}", f"gpu{(i + 1) % 4}", 3000 + 97 * i)
                                  for i in range(24)))
    a = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET, seed=3))
    b = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET, seed=3))
    for name in ("start_s", "finish_s", "channel_bytes", "channel_busy_s", "channel_credit_stall_s",
                 "packet_latency_s", "queue_delay_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert (a.makespan_s, a.switch_grants, a.events) == (b.makespan_s, b.switch_grants, b.events)


def test_traffic_spreads_over_parallel_links():
    """Two parallel links gpu0->sw0: a transfer uses both and finishes in half the time."""
    base = synthetic.star(2)
    n = len(base.channels)
    dup = [replace(c, id=n + i, link=c.link + 10) for i, c in enumerate(base.channels)]
    fabric = Fabric.from_parts("double", base.nodes.values(), list(base.channels) + dup)
    res = run_packet(fabric, flows(("gpu0", "gpu1", PACKET * 1000)), PacketConfig(packet_bytes=PACKET))
    used = res.channel_bytes[res.channel_bytes > 0]
    assert len(used) == 4 and used.min() == used.max()
    assert res.makespan_s == pytest.approx(PACKET * 500 / 50e9, rel=0.02)


def test_dependencies_delays_and_switch_endpoints():
    fabric = synthetic.star(2, reduction=True)
    wl = Workload("dag", (
        Transfer(0, "gpu0", "sw0", PACKET * 4),                 # ends at the switch (NVLS-style)
        Transfer(1, "sw0", "gpu1", PACKET * 4, deps=(0,)),      # starts at the switch
        Transfer(2, "gpu1", "gpu1", 0, deps=(1,), delay_s=1e-6),  # pure delay
    ))
    res = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET))
    assert res.start_s[1] >= res.finish_s[0]
    assert res.finish_s[2] == pytest.approx(res.finish_s[1] + 1e-6)
    assert res.start_s[2] == pytest.approx(res.finish_s[1])
    assert res.bytes_delivered == PACKET * 8


def test_coarse_packets_stream_through_a_buffer_that_covers_the_loop():
    """1 MiB-style units on a small buffer: line rate when the buffer covers rate x RTT."""
    credit = synthetic.default_credit(buffer_bytes=8 * PACKET, credit_bytes=16, return_delay_s=20e-9)
    fabric = synthetic.chain(2, latency_s=10e-9, credit=credit)  # 2 KiB covers 50 GB/s x ~30 ns
    big = 64 * PACKET
    res = run_packet(fabric, flows(("gpu0", "gpu1", big * 40)), PacketConfig(packet_bytes=big))
    assert big * 40 / res.makespan_s == pytest.approx(50e9, rel=0.01)
    assert all(res.invariants.values())


def test_coarse_unit_just_above_the_buffer_still_streams_at_line_rate():
    """A unit a few credits larger than the usable buffer (16 KiB on HGX H100's 16 KiB NVLink 4
    buffer with batches of 16): the buffer covers the loop many times over, so the link runs at its
    rate, as with small packets. Closed form of the coarse rule (``OutputPort.release``): the next
    unit starts at end + max(0, loop - W x s/B), with W x s/B = 16144 B / 50 GB/s = 323 ns > the
    ~60 ns loop. (The earlier rule advanced by (w - W) x s/B only and gave w / (w x s/B + loop).)"""
    credit = synthetic.default_credit(buffer_bytes=16 * 1024, credit_bytes=16, return_delay_s=20e-9, batch=16)
    fabric = synthetic.chain(2, latency_s=20e-9, credit=credit)
    unit = 16 * 1024
    res = run_packet(fabric, flows(("gpu0", "gpu1", unit * 40)), PacketConfig(packet_bytes=unit))
    assert unit * 40 / res.makespan_s == pytest.approx(50e9, rel=0.01)
    assert all(res.invariants.values())


def test_coarse_unit_on_a_buffer_short_of_the_loop_closed_form():
    """Buffer W below rate x loop: one unit of w > W per (loop + (w - W) x s/B), the rule's closed form."""
    fabric = synthetic.single_link(latency_s=500e-9, credit=TINY)
    ch = fabric.channels[0]
    big = 8 * PACKET
    n = 50
    res = run_packet(fabric, flows(("gpu0", "gpu1", big * n)), PacketConfig(packet_bytes=big))
    spb = 1 / ch.rate_Bps
    W = ch.credit.buffer_bytes - (ch.credit.batch - 1) * ch.credit.credit_bytes
    loop = ch.latency_s + ch.credit.return_delay_s + ch.latency_s
    period = max(big * spb, loop + (big - W) * spb)
    assert loop > W * spb  # the case under test
    # n units, one per period, the last one's tail lands one serialization + latency after it starts
    assert res.makespan_s == pytest.approx((n - 1) * period + big * spb + ch.latency_s, rel=1e-9)


def test_coarse_packets_are_slowed_by_a_buffer_too_small_for_the_loop():
    fabric = synthetic.single_link(latency_s=500e-9, credit=TINY)
    big = 8 * PACKET
    res = run_packet(fabric, flows(("gpu0", "gpu1", big * 50)), PacketConfig(packet_bytes=big))
    fine = credit_limited_rate_Bps(fabric.channels[0], PACKET)
    coarse = big * 50 / res.makespan_s
    assert fine < coarse < 50e9 * 0.5  # optimistic against the fine-grained loop, still credit-bound


def test_batch_larger_than_buffer_is_an_input_error():
    credit = synthetic.default_credit(buffer_bytes=4 * PACKET, credit_bytes=PACKET, batch=5)
    with pytest.raises(InputError, match="batch"):
        run_packet(synthetic.single_link(credit=credit), flows(("gpu0", "gpu1", 10)), PacketConfig(packet_bytes=PACKET))


def test_unknown_arbiter_is_an_input_error():
    with pytest.raises(InputError, match="unknown arbiter"):
        PacketConfig(arbiter="lottery")
