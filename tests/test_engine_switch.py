"""Switch behaviour: arbitration shares, starvation, VOQs against head-of-line blocking, switching modes."""

from __future__ import annotations

import pytest

from simulator.engine.packet import PacketConfig, run_packet
from simulator.engine.packet.allocators import ARBITERS, make_arbiter
from simulator.topology import synthetic

from engine_helpers import DeliveryLog, channel, flows

PACKET = 1024
BIG = synthetic.default_credit(buffer_bytes=1 << 30, credit_bytes=256)
"""A buffer so deep credits never bind inside these tests."""


def _incast(arbiter: str, n_inputs: int = 4, weights=None) -> tuple[list[float], DeliveryLog]:
    """n_inputs GPUs saturate gpu0 through sw0; shares of delivered bytes while all contend."""
    fabric = synthetic.star(n_inputs + 1)
    nbytes = PACKET * 2000
    log = DeliveryLog()
    cfg = PacketConfig(packet_bytes=PACKET, arbiter=arbiter,
                       arbiter_weights={"sw0": weights or {}})
    res = run_packet(fabric, flows(*[(f"gpu{i}", "gpu0", nbytes) for i in range(1, n_inputs + 1)]), cfg, log)
    first_finish = float(min(res.finish_s))
    got = log.bytes_before(0.5 * first_finish)
    total = sum(got.values())
    return [got.get(i, 0) / total for i in range(n_inputs)], log


@pytest.mark.parametrize("arbiter", ["round_robin", "islip", "oldest_first"])
def test_fair_arbiters_share_equally_within_1pct(arbiter):
    shares, _ = _incast(arbiter)
    assert max(shares) - min(shares) < 0.01 * max(shares)


def test_fixed_priority_starves_the_low_input():
    shares, _ = _incast("fixed_priority", weights={"gpu1": 4, "gpu2": 3, "gpu3": 2, "gpu4": 1})
    assert shares[0] > 0.99 and shares[3] == 0.0


def test_weighted_rr_shares_follow_weights():
    shares, _ = _incast("weighted_rr", n_inputs=2, weights={"gpu1": 3, "gpu2": 1})
    assert shares[0] == pytest.approx(0.75, abs=0.01)


def test_switch_grants_are_reported_per_input():
    fabric = synthetic.star(3)
    res = run_packet(fabric, flows(("gpu1", "gpu0", PACKET * 10), ("gpu2", "gpu0", PACKET * 30)),
                     PacketConfig(packet_bytes=PACKET))
    assert res.switch_grants["sw0"]["gpu1"] == 10 and res.switch_grants["sw0"]["gpu2"] == 30


def test_round_robin_pointer_rotates():
    class R:
        def __init__(self, rank):
            self.rank, self.weight = rank, 1

    rr = make_arbiter("round_robin")
    reqs = [R(1), R(5), R(9)]
    assert [rr.pick(reqs).rank for _ in range(4)] == [1, 5, 9, 1]
    # iSLIP is a matching allocator now (allocators/), not a per-output arbiter
    assert set(ARBITERS) == {"round_robin", "oldest_first", "fixed_priority", "weighted_rr"}


def test_allocator_registry_matches_the_topology_contract():
    from simulator.engine.packet.allocators import ALLOCATORS
    from simulator.topology.fabric import ALLOCATOR_NAMES

    assert set(ALLOCATORS) == set(ALLOCATOR_NAMES) and set(ARBITERS) <= set(ALLOCATORS)


def _hol(voq: bool) -> float:
    """gpu0 sends to a congested gpu1 (also fed by gpu2, gpu3) and to an idle gpu4; rate to gpu4."""
    fabric = synthetic.star(5, credit=BIG)
    nbytes = PACKET * 600
    wl = flows(("gpu0", "gpu1", nbytes * 4), ("gpu0", "gpu4", nbytes),
               ("gpu2", "gpu1", nbytes * 4), ("gpu3", "gpu1", nbytes * 4))
    res = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET, queueing="voq" if voq else "fifo"))
    return nbytes / (res.finish_s[1] - res.start_s[1])


def test_voq_removes_head_of_line_blocking():
    # gpu0's link carries the two flows alternately (25 GB/s each); its packets to gpu1 get one
    # third of that output (16.7 GB/s). A FIFO input holds the gpu4 packets behind them.
    fifo, voq = _hol(False), _hol(True)
    assert fifo == pytest.approx(50e9 / 3, rel=0.03)
    assert voq == pytest.approx(25e9, rel=0.03)


@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_zero_load_latency_of_a_chain(switching):
    hops, lat, sw = 4, 10e-9, 30e-9
    fabric = synthetic.chain(hops, rate_Bps=50e9, latency_s=lat, switch_latency_s=sw)
    res = run_packet(fabric, flows(("gpu0", "gpu1", PACKET)), PacketConfig(packet_bytes=PACKET, switching=switching))
    ser = PACKET / 50e9
    expected = hops * lat + (hops - 1) * sw + (ser if switching == "cut_through" else hops * ser)
    assert res.makespan_s == pytest.approx(expected, rel=1e-9)


def test_speedup_creates_no_bandwidth():
    """One input feeding two idle outputs: the ingress link stays the bottleneck at any speedup."""
    star = synthetic.star(3, credit=BIG)
    wl = flows(("gpu0", "gpu1", PACKET * 400), ("gpu0", "gpu2", PACKET * 400))
    slow = run_packet(star, wl, PacketConfig(packet_bytes=PACKET, speedup=1.0)).makespan_s
    fast = run_packet(star, wl, PacketConfig(packet_bytes=PACKET, speedup=2.0)).makespan_s
    assert fast == pytest.approx(slow, rel=0.02) == pytest.approx(PACKET * 800 / 50e9, rel=0.02)


def test_fifo_inputs_register_one_requester_per_input_and_output():
    from simulator.engine.packet.network import PacketNetwork

    fabric = synthetic.star(4)
    wl = flows(("gpu0", "gpu1", PACKET * 50), ("gpu0", "gpu2", PACKET * 50), ("gpu3", "gpu1", PACKET * 50))
    net = PacketNetwork(fabric, wl, PacketConfig(packet_bytes=PACKET, queueing="fifo"))
    net.run()
    egress = [p for p, ch in zip(net.ports, fabric.channels) if ch.src == "sw0"]
    assert sorted(len(p.reqs) for p in egress) == [0, 0, 1, 2]


# -- the matching crossbar --------------------------------------------------------------------------
SCHEDULED_YAML = """
name: scheduled switch
devices:
  - {name: gpu, part: h100, count: 3}
  - name: nvswitch
    part: nvswitch3
    scheduling: {arbiter: pim, iterations: 3, speedup: 2, queueing: fifo, output_queue_packets: 8}
links:
  - {from: "gpu*", to: nvswitch, generation: nvlink4}
"""


def test_topology_scheduling_reaches_the_switch_and_wins_over_run_defaults(tmp_path):
    from simulator.engine.packet.allocators.pim import PIM
    from simulator.engine.packet.network import PacketNetwork
    from simulator.topology.builder import build_fabric

    path = tmp_path / "t.yaml"
    path.write_text(SCHEDULED_YAML)
    fabric = build_fabric(path)
    sched = fabric.nodes["nvswitch"].scheduling
    assert (sched.arbiter, sched.iterations, sched.speedup, sched.queueing) == ("pim", 3, 2.0, "fifo")
    wl = flows(("gpu0", "gpu1", PACKET * 40), ("gpu2", "gpu1", PACKET * 40))
    net = PacketNetwork(fabric, wl, PacketConfig(packet_bytes=PACKET, arbiter="round_robin", speedup=1.0))
    s = net.schedulers["nvswitch"]
    assert isinstance(s.allocator, PIM) and s.iterations == 3 and s.capacity == 8
    port = net.ports[channel(fabric, "nvswitch", "gpu1")]
    assert s.slot_s == pytest.approx(PACKET * port.spb / 2)
    assert all(b.fifo for b in net.inbufs if fabric.channels[b.cid].dst == "nvswitch")
    res = net.run()
    assert all(res.invariants.values()) and res.switch_grants["nvswitch"] == {"gpu0": 40, "gpu2": 40}


def test_islip_cannot_run_per_output():
    from simulator.errors import InputError

    with pytest.raises(InputError, match="matching allocator"):
        run_packet(synthetic.star(3), flows(("gpu1", "gpu0", PACKET)),
                   PacketConfig(packet_bytes=PACKET, arbiter="islip", crossbar="output"))


@pytest.mark.parametrize("arbiter", ["round_robin", "islip", "pim", "oldest_first"])
def test_matching_crossbar_shares_one_output_equally(arbiter):
    """Incast through the matching crossbar: every fair allocator gives each input 1/N."""
    fabric = synthetic.star(5)
    log = DeliveryLog()
    res = run_packet(fabric, flows(*[(f"gpu{i}", "gpu0", PACKET * 800) for i in range(1, 5)]),
                     PacketConfig(packet_bytes=PACKET, arbiter=arbiter, crossbar="matching"), log)
    got = log.bytes_before(0.5 * float(min(res.finish_s)))
    shares = [got.get(i, 0) / sum(got.values()) for i in range(4)]
    # PIM picks at random: binomial spread, about 1 point per input over these ~1,600 packets
    assert max(shares) - min(shares) < (0.06 if arbiter == "pim" else 0.02)
    egress = res.channel_busy_s[channel(fabric, "sw0", "gpu0")]
    assert egress == pytest.approx(res.makespan_s, rel=0.02)  # the output never idles


def test_matching_weighted_rr_follows_weights():
    fabric = synthetic.star(3)
    log = DeliveryLog()
    res = run_packet(fabric, flows(("gpu1", "gpu0", PACKET * 900), ("gpu2", "gpu0", PACKET * 900)),
                     PacketConfig(packet_bytes=PACKET, arbiter="weighted_rr", crossbar="matching",
                                  arbiter_weights={"sw0": {"gpu1": 3, "gpu2": 1}}), log)
    got = log.bytes_before(0.5 * float(min(res.finish_s)))
    assert got[0] / (got[0] + got[1]) == pytest.approx(0.75, abs=0.01)


def test_matching_crossbar_zero_load_latency_adds_at_most_one_slot():
    """A lone packet waits only for the next slot boundary (cut-through chain, speedup 1)."""
    hops, lat, sw = 4, 10e-9, 30e-9
    fabric = synthetic.chain(hops, rate_Bps=50e9, latency_s=lat, switch_latency_s=sw)
    res = run_packet(fabric, flows(("gpu0", "gpu1", PACKET)),
                     PacketConfig(packet_bytes=PACKET, crossbar="matching"))
    ser = PACKET / 50e9
    ideal = hops * lat + (hops - 1) * sw + ser
    assert ideal <= res.makespan_s <= ideal + (hops - 1) * ser * (1 + 1e-6)


@pytest.mark.parametrize("shared", [False, True])
def test_matching_crossbar_keeps_vcs_deadlock_free(shared):
    """A ring that deadlocks without VCs runs to completion with distance-class VCs through the
    matching crossbar, also when the output queues share one pool (each queue keeps a slot of its own)."""
    from engine_helpers import ring_pinned

    n, hops = 6, 4
    fabric = synthetic.ring(n, credit=synthetic.default_credit(buffer_bytes=16 * PACKET, credit_bytes=256))
    res = run_packet(fabric, ring_pinned(fabric, n, hops, PACKET * 40),
                     PacketConfig(packet_bytes=PACKET, vcs=hops + 2, arbiter="islip", crossbar="matching",
                                  output_queue_packets=1, shared_buffer=shared))
    assert all(res.invariants.values())
