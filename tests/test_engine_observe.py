"""Observer, Perfetto trace and link metrics of the packet engine; the observer-free fast path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simulator.engine.packet import EngineObserver, PacketConfig, run_packet
from simulator.engine.transfer import Transfer, Workload
from simulator.metrics.link_stats import grant_shares, jain_index, latency_summary, link_stats
from simulator.reports.trace import TraceWriter
from simulator.topology import synthetic

from engine_helpers import flows

PACKET = 1024


def test_trace_has_named_tracks_slices_and_counters(tmp_path):
    fabric = synthetic.chain(3)
    trace = TraceWriter()
    res = run_packet(fabric, flows(("gpu0", "gpu1", PACKET * 20)), PacketConfig(packet_bytes=PACKET), trace)
    doc = json.loads(trace.write(tmp_path / "t.json").read_text())
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert "sw1 (switch)" in names and "ch0 -> sw1" in names
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == 20 * 3  # one slice per packet-hop
    busy_us = sum(e["dur"] for e in slices if e["tid"] == 1)
    assert busy_us == pytest.approx(res.channel_busy_s[0] * 1e6)
    counters = {e["name"].split()[0] for e in events if e["ph"] == "C"}
    assert counters == {"credits", "queue"}
    ts = [e["ts"] for e in events if e["ph"] != "M"]
    assert ts == sorted(ts)


def test_trace_bounds_its_size():
    trace = TraceWriter(max_events=50)
    run_packet(synthetic.chain(3), flows(("gpu0", "gpu1", PACKET * 100)), PacketConfig(packet_bytes=PACKET), trace)
    assert len(trace.events) == 50 and trace.document()["otherData"]["dropped_events"] > 0


def test_link_stats_and_latency():
    fabric = synthetic.star(3, credit=synthetic.default_credit(buffer_bytes=4 * PACKET, credit_bytes=256))
    res = run_packet(fabric, flows(("gpu1", "gpu0", PACKET * 200), ("gpu2", "gpu0", PACKET * 200)),
                     PacketConfig(packet_bytes=PACKET))
    stats = {(s.src, s.dst): s for s in link_stats(res, fabric)}
    egress = stats[("sw0", "gpu0")]
    assert egress.utilization == pytest.approx(1.0, abs=0.01)  # incast saturates the egress
    assert egress.throughput_GBps == pytest.approx(50.0, rel=0.01)
    assert stats[("gpu1", "sw0")].credit_stall_fraction > 0.3  # each ingress waits on the egress
    lat = latency_summary(res)
    assert lat.packets == 400 and lat.p50_s <= lat.p99_s <= lat.max_s and lat.mean_queue_s > 0
    shares = grant_shares(res)["sw0"]
    assert shares == pytest.approx({"gpu1": 0.5, "gpu2": 0.5})
    assert jain_index(shares.values()) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)


RESULT_ARRAYS = ("start_s", "finish_s", "channel_bytes", "channel_busy_s", "channel_credit_stall_s",
                 "packet_latency_s", "queue_delay_s")


def _same_result(a, b) -> None:
    for name in RESULT_ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert (a.makespan_s, a.bytes_delivered, a.switch_grants, a.events, a.invariants) == \
           (b.makespan_s, b.bytes_delivered, b.switch_grants, b.events, b.invariants)


@pytest.mark.parametrize("case", ["nvls", "multi_hop", "coarse_stalls", "voq_off_incast"])
def test_fast_path_equals_the_event_per_delivery_path(case):
    """Without an observer the engine accounts deliveries ahead and streams single-hop injections;
    with one it takes the reference path (an event per delivery). Results must be bit-identical,
    including the per-packet latency order and the event count."""
    P = 256
    if case == "nvls":  # GPU -> switch and switch -> GPU transfers, a DAG with delays, uneven sizes
        fabric = synthetic.star(4, reduction=True, credit=synthetic.default_credit(
            buffer_bytes=3 * P, credit_bytes=16, return_delay_s=20e-9, batch=4))
        ups = [Transfer(i, f"gpu{i}", "sw0", P * 30 + 5 * i) for i in range(4)]
        downs = [Transfer(4 + i, "sw0", f"gpu{i}", P * 30 + 5 * i, deps=(0, 1, 2, 3), delay_s=1e-8 * i)
                 for i in range(4)]
        wl, cfg = Workload("nvls", tuple(ups + downs)), PacketConfig(packet_bytes=P)
    elif case == "multi_hop":
        fabric = synthetic.chain(4, switch_latency_s=50e-9)
        wl, cfg = flows(("gpu0", "gpu1", P * 40), ("gpu1", "gpu0", P * 25 + 3)), PacketConfig(packet_bytes=P)
    elif case == "coarse_stalls":  # packets larger than the buffer: every hop waits for credits
        fabric = synthetic.single_link(latency_s=300e-9, credit=synthetic.default_credit(buffer_bytes=2 * P, credit_bytes=P))
        wl, cfg = flows(("gpu0", "gpu1", 8 * P * 20 + 1), ("gpu0", "gpu1", 8 * P * 3)), PacketConfig(packet_bytes=8 * P)
    else:
        fabric = synthetic.star(4, credit=synthetic.default_credit(buffer_bytes=2 * P, credit_bytes=64))
        wl = flows(*[(f"gpu{i}", "gpu0", P * 20 + i) for i in (1, 2, 3)], ("gpu1", "gpu2", P * 10))
        cfg = PacketConfig(packet_bytes=P, queueing="fifo")
    fast = run_packet(fabric, wl, cfg)
    reference = run_packet(fabric, wl, cfg, EngineObserver())
    _same_result(fast, reference)
    assert fast.bytes_delivered == wl.total_bytes


def test_packet_stats_off_keeps_timings_and_drops_the_per_packet_arrays():
    fabric = synthetic.star(4)
    wl = flows(("gpu1", "gpu0", PACKET * 50), ("gpu2", "gpu0", PACKET * 50), ("gpu3", "gpu1", PACKET * 20))
    full = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET))
    lean = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET, packet_stats=False))
    assert len(full.packet_latency_s) == 120 and len(lean.packet_latency_s) == len(lean.queue_delay_s) == 0
    assert lean.makespan_s == full.makespan_s and (lean.finish_s == full.finish_s).all()
    assert lean.events == full.events and all(lean.invariants.values())


@pytest.mark.parametrize("observed", [False, True])
def test_long_runs_keep_every_kth_packet_and_the_same_timings(observed):
    """Beyond ``packet_stats_limit`` packets the figures are a systematic sample: on one flow
    (delivery order = send order) exactly every k-th packet of the full arrays, k a power of two."""
    fabric = synthetic.chain(3)
    wl = flows(("gpu0", "gpu1", PACKET * 100))
    obs = EngineObserver() if observed else None
    full = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET), obs)
    lean = run_packet(fabric, wl, PacketConfig(packet_bytes=PACKET, packet_stats_limit=16), obs)
    assert full.packet_sample_every == 1 and len(full.packet_latency_s) == 100
    # 16 kept -> every 2nd (8 kept) -> ... -> every 8th: packets 0, 8, ..., 96
    assert lean.packet_sample_every == 8
    np.testing.assert_array_equal(lean.packet_latency_s, full.packet_latency_s[::8])
    np.testing.assert_array_equal(lean.queue_delay_s, full.queue_delay_s[::8])
    assert lean.makespan_s == full.makespan_s and lean.events == full.events


def test_packet_stats_limit_must_keep_two_packets():
    from simulator.errors import InputError

    with pytest.raises(InputError, match="packet_stats_limit"):
        PacketConfig(packet_stats_limit=1)
