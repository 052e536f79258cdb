"""The packet engine's per-hop machinery: credit updates in time order whatever order they are made
in, one cost rule per packet size, one VOQ look-up per route, one event per packet-hop."""

from __future__ import annotations

import math

import pytest

from simulator.engine.packet import EngineObserver, PacketConfig
from simulator.engine.packet.credits import credits_for
from simulator.engine.packet.link import CostTable
from simulator.engine.packet.network import PacketNetwork
from simulator.topology import synthetic

from engine_helpers import flows

PACKET = 4096


def _port(observer=None, buffer_bytes=64 * PACKET, packet_bytes=PACKET):
    credit = synthetic.default_credit(buffer_bytes=buffer_bytes, credit_bytes=256, return_delay_s=20e-9)
    fabric = synthetic.single_link(rate_Bps=50e9, latency_s=10e-9, credit=credit)
    net = PacketNetwork(fabric, flows(("gpu0", "gpu1", PACKET)), PacketConfig(packet_bytes=packet_bytes),
                        observer=observer)
    return net.ports[0]


def test_credit_updates_made_out_of_order_come_back_in_time_order():
    port = _port()
    k = credits_for(PACKET, 256)
    port.credits.take(0, 3 * k)
    lag = port.ret_lag
    for t_free in (3e-9, 1e-9, 2e-9):  # a switch's outputs free their packets in any order
        port.release(t_free, 0, PACKET)
    times = [t for t, _, _ in port.rets[port.ret_i:]]
    assert times == sorted(times) == [1e-9 + lag, 2e-9 + lag, 3e-9 + lag]
    assert port.ret_due == 1e-9 + lag
    port._absorb(2e-9 + lag)  # two have landed, the third is on its way
    assert port.credits.used == [k]
    assert port.ret_due == 3e-9 + lag
    port._absorb(math.inf)
    assert port.credits.used == [0] and not port.credits.violations
    assert port.rets == [] and port.ret_due == math.inf


def test_an_observer_sees_every_credit_update_as_it_lands():
    class Credits(EngineObserver):
        def __init__(self):
            self.seen = []

        def credits(self, cid, t_s, available):
            self.seen.append((t_s, available))

    obs = Credits()
    port = _port(observer=obs)
    k = credits_for(PACKET, 256)
    port.credits.take(0, 2 * k)
    port.release(5e-9, 0, PACKET)
    port.release(4e-9, 0, PACKET)
    port._absorb(math.inf)
    total = port.credits.total
    assert obs.seen == [(4e-9 + port.ret_lag, total - k), (5e-9 + port.ret_lag, total)]


def test_cost_is_the_credit_rule_worked_out_once_per_size():
    calls = []

    def rule(wire):
        calls.append(wire)
        return credits_for(wire, 256), 0.0

    table = CostTable(rule)
    assert [table[w] for w in (4096, 100, 4096, 100, 4096)] == [(16, 0.0), (1, 0.0)] * 2 + [(16, 0.0)]
    assert calls == [4096, 100]


def test_a_packet_bigger_than_the_buffer_takes_all_of_it_and_frees_early():
    port = _port(buffer_bytes=8 * 1024, packet_bytes=1 << 20)  # coarse mode
    assert port.cost(1 << 20) == (port.max_k, port.max_bytes * port.spb)
    assert port.cost(1000) == (credits_for(1000, 256), 0.0)


def test_packets_of_a_route_share_its_voqs_and_each_is_the_one_lookup():
    class Sends(EngineObserver):
        def __init__(self):
            self.packets = []

        def link_busy(self, cid, start_s, end_s, packet):
            self.packets.append(packet)

    obs = Sends()
    fabric = synthetic.chain(4)
    net = PacketNetwork(fabric, flows(("gpu0", "gpu1", 20 * PACKET)), PacketConfig(packet_bytes=PACKET),
                        observer=obs)
    net.run()
    first = obs.packets[0]
    assert all(p.voqs is first.voqs for p in obs.packets)
    route = first.route
    for hop in range(1, len(route)):
        assert first.voqs[hop] is net.inbufs[route[hop - 1]].voq_for(route[hop], net.vc_at[hop])


@pytest.mark.parametrize("hops", [2, 8])
def test_one_event_per_packet_hop_on_a_free_chain(hops):
    """N packets over an uncongested cut-through chain: makespan N x s + hops x L + (hops-1) x switch
    latency; per packet one arrival event per switch, one wake-up of the source port for the next
    packet (none after the last) and the delivery (accounted ahead, its sequence number reserved);
    plus the transfer's release and finish (the run ends before the watchdog's first look)."""
    n, rate, lat, sw = 500, 50e9, 10e-9, 100e-9
    credit = synthetic.default_credit(buffer_bytes=64 * PACKET, credit_bytes=256, return_delay_s=20e-9)
    fabric = synthetic.chain(hops, rate_Bps=rate, latency_s=lat, switch_latency_s=sw, credit=credit)
    net = PacketNetwork(fabric, flows(("gpu0", "gpu1", n * PACKET)), PacketConfig(packet_bytes=PACKET))
    res = net.run()
    assert res.makespan_s == pytest.approx(n * PACKET / rate + hops * lat + (hops - 1) * sw, rel=1e-12)
    assert res.events == n * (hops - 1) + (n - 1) + n + 2
    assert net.hops() == n * hops
    assert sorted(p.sent for p in net.ports) == [0] * hops + [n] * hops  # the reverse direction idles
