"""--trace on flow-engine runs: transfer slices and link utilization, streamed to disk, no cap."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.engine.dispatch import simulate
from simulator.engine.flow import run_flow
from simulator.metrics.link_timeline import flow_link_steps
from simulator.reports.trace import TraceWriter
from simulator.topology.synthetic import star
from simulator.workloads.collectives import build_collective

ROOT = Path(__file__).resolve().parent.parent
_register()
runner = CliRunner()


def _integrals(fabric, steps) -> np.ndarray:
    """Bytes per channel: the integral of each step function."""
    total = np.zeros(len(fabric.channels))
    by: dict[int, list] = {}
    for s in steps:
        by.setdefault(s.channel, []).append(s)
    for cid, ss in by.items():
        assert ss[-1].load_Bps == 0  # every link falls idle at the end
        total[cid] = sum(a.load_Bps * (b.t_s - a.t_s) for a, b in zip(ss, ss[1:]))
    return total


@pytest.mark.parametrize("granularity", ["steady", "chunked"])
def test_link_timeline_carries_exactly_the_bytes_the_engine_counted(granularity):
    f = star(4, rate_Bps=50e9, latency_s=100e-9)
    w = build_collective(f, f.gpus, "all_reduce", 16 << 20, "ring", "Simple", granularity=granularity,
                         chunk_bytes=1 << 20)
    r = run_flow(f, w)
    steps = flow_link_steps(f, w, r)
    assert _integrals(f, steps) == pytest.approx(r.channel_bytes, rel=1e-9)
    if granularity == "steady":  # concurrent steady flows: the engine's own rates, never above a link's
        assert max(s.load_Bps / f.channels[s.channel].rate_Bps for s in steps) <= 1 + 1e-9


def test_ring_all_reduce_on_a_star_keeps_every_link_at_full_rate():
    # ideal ring, zero latency: every link is busy at its full rate from start to end
    f = star(4, rate_Bps=50e9, latency_s=0.0)
    w = build_collective(f, f.gpus, "all_reduce", 16 << 20, "ring", "ideal")
    r = run_flow(f, w)
    for s in flow_link_steps(f, w, r):
        assert s.load_Bps in (pytest.approx(50e9), 0.0)
        assert s.t_s in (0.0, pytest.approx(r.makespan_s))


def test_flow_trace_has_a_slice_per_transfer_and_utilization_per_link(tmp_path):
    f = star(4, rate_Bps=50e9, latency_s=0.0)
    w = build_collective(f, f.gpus, "all_reduce", 16 << 20, "ring", "ideal")
    trace = TraceWriter()
    r = simulate(f, w, engine="flow", observer=trace)
    doc = json.loads(trace.write(tmp_path / "t.json").read_text())
    events = doc["traceEvents"]
    begins = [e for e in events if e["ph"] == "b"]
    ends = {e["id"]: e for e in events if e["ph"] == "e"}
    assert len(begins) == len(w.transfers) == len(ends)
    for b in begins:
        t = w.transfers[b["id"] - 1]
        assert ends[b["id"]]["ts"] - b["ts"] == pytest.approx((r.finish_s[t.id] - r.start_s[t.id]) * 1e6)
    util = [e for e in events if e["ph"] == "C" and e["name"].startswith("utilization")]
    assert {e["name"] for e in util} == {f"utilization ch{c.id} -> {c.dst}" for c in f.channels}
    assert {e["args"]["percent"] for e in util} == {100.0, 0.0}


def test_streamed_trace_is_not_capped_and_is_valid_json(tmp_path):
    f = star(4, rate_Bps=50e9, latency_s=0.0)
    path = tmp_path / "big.json"
    trace = TraceWriter(max_events=10, path=path)
    for size in (1 << 20, 1 << 22):  # two runs, laid end to end
        w = build_collective(f, f.gpus, "all_reduce", size, "ring", "Simple", granularity="chunked",
                             chunk_bytes=64 << 10)
        simulate(f, w, engine="flow", observer=trace)
    trace.write()
    doc = json.loads(path.read_text())
    assert len(doc["traceEvents"]) > 10 and doc["otherData"]["dropped_events"] == 0
    ids = [e["id"] for e in doc["traceEvents"] if e["ph"] == "b"]
    assert len(ids) == len(set(ids))  # slices of the two runs stay apart


def test_bench_traces_flow_runs(tmp_path):
    hgx = str(ROOT / "topologies" / "hgx_h100.yaml")
    out = tmp_path / "bench.json"
    result = runner.invoke(app, ["bench", hgx, "--sizes", "64M", "--engine", "flow", "--trace", str(out), "--text"])
    assert result.exit_code == 0, result.output
    events = json.loads(out.read_text())["traceEvents"]
    from simulator.runner.sweeps import SweepSpec, build_workload
    from simulator.topology.builder import build_fabric

    moving = sum(t.bytes > 0 for t in build_workload(build_fabric(hgx), SweepSpec(op="all_reduce", gpus=8,
                                                                                  sizes=(64 << 20,)), 64 << 20).transfers)
    begins = [e["id"] for e in events if e["ph"] == "b"]
    assert len(begins) == len(set(begins)) == moving  # one slice per transfer that moves bytes
    assert sorted(e["id"] for e in events if e["ph"] == "e") == sorted(begins)
    assert all(0 <= e["args"]["percent"] <= 100 for e in events if e["ph"] == "C")
    assert any(e["ph"] == "C" and e["args"]["percent"] > 50 for e in events)


def test_trace_never_overwrites_an_input_and_a_failed_run_leaves_no_half_file(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text((ROOT / "topologies" / "teaching.yaml").read_text())
    before = topo.read_text()
    result = runner.invoke(app, ["bench", str(topo), "--sizes", "1M", "--trace", str(topo)])
    assert result.exit_code == 2 and "refusing to overwrite an input file" in result.output
    assert topo.read_text() == before
    path = tmp_path / "t.json"
    trace = TraceWriter(path=path)
    f = star(2, latency_s=0.0)
    simulate(f, build_collective(f, f.gpus, "all_reduce", 1 << 20, "ring", "ideal"), engine="flow", observer=trace)
    assert not path.exists()  # in progress: the events go to a hidden partial file
    trace.write()
    assert path.exists() and oct(path.stat().st_mode & 0o777) == "0o644"
    assert not list(tmp_path.glob(".*partial"))
