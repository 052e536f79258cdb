"""The flow and packet engines agree on collectives of >= 16 MiB (busbw within 5%)."""

import pytest

from simulator.engine.flow import run_flow
from simulator.metrics.collective_stats import row
from simulator.topology.synthetic import star
from simulator.workloads.collectives import build_collective

packet = pytest.importorskip("simulator.engine.packet", reason="packet engine not available")
from simulator.engine.packet.config import PacketConfig  # noqa: E402


@pytest.mark.parametrize("algo,op", [("ring", "all_reduce"), ("nvls", "all_reduce"), ("ring", "all_gather")])
def test_flow_and_packet_busbw_agree(algo, op):
    f = star(8, rate_Bps=50e9, latency_s=10e-9, switch_latency_s=100e-9, reduction=True)
    w = build_collective(f, f.gpus, op, 16 << 20, algo, "Simple")
    flow = row(w, run_flow(f, w)).busbw_GBps
    pkt = row(w, packet.run_packet(f, w, PacketConfig(packet_bytes=16384))).busbw_GBps
    assert pkt == pytest.approx(flow, rel=0.05)


def test_alltoall_incast_packet_is_below_fluid_bound():
    """7-to-1 incast on every port: switch arbitration (head-of-line blocking) costs the packet
    engine bandwidth the fluid max-min model does not see; the flow result is an upper bound."""
    f = star(8, rate_Bps=50e9, latency_s=10e-9, switch_latency_s=100e-9)
    w = build_collective(f, f.gpus, "alltoall", 16 << 20, "direct", "Simple")
    flow = row(w, run_flow(f, w)).busbw_GBps
    pkt = row(w, packet.run_packet(f, w, PacketConfig(packet_bytes=16384))).busbw_GBps
    assert 0.8 * flow <= pkt <= flow * 1.001
