"""Hops taken ahead of the event queue (``engine.packet.ahead``): which channels one stream owns,
and that sending packets on over them at once is the same simulation as one event per hop."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.packet import PacketConfig, run_packet
from simulator.engine.packet.ahead import NEVER, exclusive_channels, suffix_start
from simulator.engine.packet.network import PacketNetwork
from simulator.engine.transfer import Transfer, Workload
from simulator.topology import synthetic
from simulator.topology.fabric import Fabric

from engine_helpers import channel, flows

PACKET = 256


def test_a_chain_is_owned_by_its_stream_after_the_first_hop():
    route = (0, 2, 4, 6)
    solo = exclusive_channels([route], eligible={0, 2, 4, 6})
    assert solo == {2, 4, 6}  # the first hop is injected: the source's flows share it
    assert suffix_start(route, solo) == 1


def test_channels_shared_by_streams_are_not_exclusive():
    # two sources merge at a switch output (incast): the output arbitrates, its inputs are not alone
    assert exclusive_channels([(0, 4), (1, 4)], eligible={0, 1, 4}) == set()
    # one input feeds two outputs: each output is fed by one stream, but the input's crossbar read
    # is shared between them
    assert exclusive_channels([(0, 4), (0, 5)], eligible={0, 4, 5}) == set()
    # the same channel reached at two route positions rides two VCs: two requesters
    assert exclusive_channels([(0, 4, 6), (4, 6)], eligible={0, 4, 6}) == set()
    # a route may end where the stream goes on: its packets are delivered, they never queue there
    assert exclusive_channels([(0, 4), (0,)], eligible={0, 4}) == {4}
    # a channel whose node is not eligible (matching crossbar, FIFO inputs, responses) stays by event
    assert exclusive_channels([(0, 4, 6)], eligible={0, 4}) == {4}
    assert suffix_start((0, 4, 6), {4}) == NEVER  # only a suffix to the destination is taken ahead


def test_the_switch_side_decides_eligibility():
    fabric = synthetic.chain(4)
    work = flows(("gpu0", "gpu1", 4 * PACKET))
    assert PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET)).solo == {2, 4, 6}
    assert PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET, queueing="fifo")).solo == set()
    assert PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET, arbiter="islip")).solo == set()
    assert PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET, take_ahead=False)).solo == set()


def _arrival_events(net: PacketNetwork) -> list[int]:
    """Count the arrival events ``net`` runs at its switches and GPUs."""
    count = [0]
    for buf in net.inbufs:
        def counting(p, arrive=buf.arrive_cb):
            count[0] += 1
            arrive(p)

        buf.arrive_cb = counting
    return count


def test_a_free_chain_schedules_no_arrival_events():
    fabric = synthetic.chain(8, switch_latency_s=100e-9)
    n = 200
    work = flows(("gpu0", "gpu1", n * PACKET))
    by_event = PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET, take_ahead=False))
    ahead = PacketNetwork(fabric, work, PacketConfig(packet_bytes=PACKET))
    arrivals_by_event, arrivals_ahead = _arrival_events(by_event), _arrival_events(ahead)
    a, b = by_event.run(), ahead.run()
    assert arrivals_by_event[0] == n * 7  # one per packet at each switch
    assert arrivals_ahead[0] == 0
    assert a.makespan_s == b.makespan_s and a.events == b.events  # each hop still keeps its number


def _varied_chain(rates: list[float], credit) -> Fabric:
    """gpu0 - sw1 - ... - gpu1 with link i at ``rates[i]`` (B/s): serializers that wait on a slower
    link downstream or outrun a faster one."""
    base = synthetic.chain(len(rates), credit=credit, switch_latency_s=30e-9)
    chans = []
    for ch in base.channels:
        r = rates[ch.id // 2]
        chans.append(replace(ch, rate_Bps=r, line_rate_Bps=r))
    return Fabric.from_parts("varied-chain", base.nodes.values(), chans)


@st.composite
def runs(draw):
    """A fabric, traffic and engine knobs where some routes have exclusive suffixes and some
    packets must fall back to events (credits short, slower links downstream, later streams)."""
    shape = draw(st.sampled_from(["chain", "star", "ring"]))
    n = draw(st.integers(3, 5))
    hops = draw(st.integers(1, n - 1))
    # a ring needs a VC per route position to be deadlock-free (distance classes)
    vcs = hops + 2 if shape == "ring" else draw(st.sampled_from([1, 3]))
    credit = synthetic.default_credit(buffer_bytes=draw(st.integers(1, 8)) * PACKET * vcs, credit_bytes=64,
                                      return_delay_s=draw(st.sampled_from([0.0, 15e-9, 200e-9])),
                                      batch=draw(st.sampled_from([1, 2])))
    if shape == "chain":
        rates = draw(st.lists(st.sampled_from([25e9, 50e9, 100e9]), min_size=2, max_size=5))
        fabric = _varied_chain(rates, credit)
        pairs = [("gpu0", "gpu1", draw(st.integers(1, 40)) * PACKET)]
        if draw(st.booleans()):
            pairs.append(("gpu0", "gpu1", draw(st.integers(1, 20)) * PACKET))
        delays = [0.0, draw(st.sampled_from([0.0, 100e-9, 2e-6]))]
        work = Workload("t", tuple(Transfer(i, s, d, b, delay_s=delays[i]) for i, (s, d, b) in enumerate(pairs)))
    elif shape == "star":
        fabric = synthetic.star(n, credit=credit, switch_latency_s=20e-9)
        pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                        st.integers(1, 24 * PACKET)), min_size=1, max_size=6))
        work = flows(*[(f"gpu{s}", f"gpu{d}", b) for s, d, b in pairs])
    else:  # a ring of switches, GPU i -> GPU i+k on pinned paths: long exclusive runs, VCs
        fabric = synthetic.ring(n, credit=credit)
        ts = []
        for i in range(draw(st.integers(1, n))):
            d = (i + hops) % n
            path = [channel(fabric, f"gpu{i}", f"sw{i}")]
            path += [channel(fabric, f"sw{(i + k) % n}", f"sw{(i + k + 1) % n}") for k in range(hops)]
            path.append(channel(fabric, f"sw{d}", f"gpu{d}"))
            ts.append(Transfer(i, f"gpu{i}", f"gpu{d}", draw(st.integers(1, 24)) * PACKET, paths=(tuple(path),)))
        work = Workload("ring", tuple(ts))
    cfg = PacketConfig(packet_bytes=PACKET, header_bytes=draw(st.sampled_from([0, 16])),
                       switching=draw(st.sampled_from(["cut_through", "store_and_forward"])),
                       speedup=draw(st.sampled_from([1.0, 2.0])), vcs=vcs,
                       seed=draw(st.integers(0, 3)))
    return fabric, work, cfg


def _same_run(a, b) -> None:
    """The same simulation, up to the engine's time tolerance: where an event lands within
    ``EPS_S`` (1e-15 s) of a serializer's free time, running it by event may send a packet those
    1e-15 s earlier than taking it ahead (float rounding of sums of delays, ~1e-23 s here)."""
    close = dict(rtol=1e-12, atol=1e-20)
    np.testing.assert_allclose(b.makespan_s, a.makespan_s, **close)
    np.testing.assert_allclose(b.finish_s, a.finish_s, **close)
    np.testing.assert_allclose(b.start_s, a.start_s, **close)
    np.testing.assert_allclose(b.channel_busy_s, a.channel_busy_s, **close)
    np.testing.assert_allclose(b.channel_credit_stall_s, a.channel_credit_stall_s, **close)
    np.testing.assert_allclose(np.sort(b.packet_latency_s), np.sort(a.packet_latency_s), **close)
    np.testing.assert_allclose(np.sort(b.queue_delay_s), np.sort(a.queue_delay_s), rtol=1e-9, atol=1e-20)
    assert np.array_equal(a.channel_bytes, b.channel_bytes)
    assert a.switch_grants == b.switch_grants and a.bytes_delivered == b.bytes_delivered
    assert all(b.invariants.values())


@settings(max_examples=150, deadline=None)
@given(runs())
def test_taking_hops_ahead_is_the_same_simulation(run):
    fabric, work, cfg = run
    _same_run(run_packet(fabric, work, replace(cfg, take_ahead=False)), run_packet(fabric, work, cfg))


@pytest.mark.parametrize("buffer_packets", [1, 2, 64])
def test_a_chain_short_of_credits_falls_back_to_events_and_back(buffer_packets):
    """With one or two packets of buffer most hops wait for credits: those packets go by event, the
    packets behind them keep their order, and the run is the one hop by hop."""
    credit = synthetic.default_credit(buffer_bytes=buffer_packets * PACKET, credit_bytes=64,
                                      return_delay_s=200e-9)
    fabric = _varied_chain([100e9, 50e9, 100e9, 25e9], credit)
    work = flows(("gpu0", "gpu1", 300 * PACKET))
    _same_run(run_packet(fabric, work, PacketConfig(packet_bytes=PACKET, take_ahead=False)),
              run_packet(fabric, work, PacketConfig(packet_bytes=PACKET)))
