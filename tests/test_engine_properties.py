"""Property test: on a deadlock-free shape (a star), any mix of traffic and engine knobs conserves
bytes, keeps credits in range and delivers every packet once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.packet import PacketConfig, run_packet
from simulator.engine.packet.allocators import ALLOCATORS
from simulator.topology import synthetic

from engine_helpers import flows

PACKET = 256


@st.composite
def scenarios(draw):
    n = draw(st.integers(2, 5))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                    st.integers(1, 12 * PACKET)), min_size=1, max_size=8))
    credit = synthetic.default_credit(buffer_bytes=draw(st.integers(2, 8)) * PACKET, credit_bytes=64,
                                      return_delay_s=draw(st.sampled_from([0.0, 15e-9])),
                                      batch=draw(st.sampled_from([1, 2, 4])))
    cfg = PacketConfig(packet_bytes=PACKET, header_bytes=draw(st.sampled_from([0, 16])),
                       arbiter=draw(st.sampled_from(sorted(ALLOCATORS))),
                       queueing=draw(st.sampled_from(["voq", "fifo"])),
                       switching=draw(st.sampled_from(["cut_through", "store_and_forward"])),
                       speedup=draw(st.sampled_from([1.0, 1.5, 2.0])), seed=draw(st.integers(0, 5)),
                       crossbar=draw(st.sampled_from(["auto", "matching"])), iterations=draw(st.integers(1, 3)),
                       output_queue_packets=draw(st.integers(1, 3)), shared_buffer=draw(st.booleans()))
    return synthetic.star(n, credit=credit, switch_latency_s=20e-9), \
        flows(*[(f"gpu{s}", f"gpu{d}", b) for s, d, b in pairs]), cfg


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_any_star_run_holds_invariants(scenario):
    fabric, workload, cfg = scenario
    res = run_packet(fabric, workload, cfg)
    assert all(res.invariants.values())
    assert res.bytes_delivered == workload.total_bytes
    assert (res.finish_s >= res.start_s).all()
    assert (res.channel_busy_s <= res.makespan_s * (1 + 1e-9)).all()
