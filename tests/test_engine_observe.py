"""Observer, Perfetto trace and link metrics of the packet engine."""

from __future__ import annotations

import json

import pytest

from simulator.engine.packet import PacketConfig, run_packet
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
