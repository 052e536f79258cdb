"""Faults that strike during a run (``at:``, flow engine), against closed forms.

A fault at time t leaves what moved before t alone and runs the rest on the surviving fabric:
for a run bound by one bottleneck that keeps a fraction f of its capacity, the makespan is
t + (T - t) / f, with T the healthy makespan (fixed latencies are far below the tolerances).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.engine.dispatch import PACKET_TIMED_FAULTS, simulate
from simulator.engine.flow import run_flow
from simulator.errors import InputError, Origin
from simulator.hardware.faults import FaultSpec
from simulator.topology.builder import build_fabric
from simulator.topology.faults import apply_faults, timed_faults
from simulator.workloads.collectives import build_collective
from simulator.workloads.copies import build_copy

from engine_helpers import flows
from fault_helpers import fault

GIB = 2**30
HGX = "topologies/hgx_h100.yaml"
PCIE = "topologies/pcie_server.yaml"


@pytest.fixture(scope="module")
def hgx_ring():
    healthy = build_fabric(HGX)
    w = build_collective(healthy, healthy.gpus, "all_reduce", GIB, "ring", "Simple")
    return healthy, w, run_flow(healthy, w).makespan_s


def test_nvswitch_down_mid_ring_reroutes_and_finishes_at_the_closed_form(hgx_ring):
    """NVSwitch 0 fails 1 ms into a 1 GiB ring all_reduce: the rest runs on 13 of 18 links."""
    _, w, healthy_s = hgx_ring
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0", at="1ms")])
    res = run_flow(f, w)
    assert all(res.invariants.values()), res.invariants
    assert res.makespan_s == pytest.approx(1e-3 + (healthy_s - 1e-3) * 18 / 13, rel=0.005)
    [event] = res.fault_events
    assert event["at_s"] == pytest.approx(1e-3) and event["faults"] == ["switch_down device=hgx.nvsw0 at=1ms"]
    again = run_flow(f, w)
    assert np.array_equal(res.finish_s, again.finish_s) and again.fault_events == res.fault_events


def test_bytes_rerouted_are_what_the_lost_routes_still_had_to_move():
    """One 1 GiB GPU 0 -> GPU 1 flow over all 18 routes; NVSwitch 0 (5 of them) fails at 1 ms:
    5/18 of the bytes not yet moved are rerouted, and the rest runs at 13/18 of the rate."""
    healthy = build_fabric(HGX)
    w = flows(("hgx.gpu0", "hgx.gpu1", GIB))
    healthy_s = run_flow(healthy, w).makespan_s  # B / R plus a route latency of ~1 us
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0", at="1ms")])
    res = run_flow(f, w)
    left = GIB * (1 - 1e-3 / healthy_s)
    assert res.fault_events[0]["bytes_rerouted"] == pytest.approx(left * 5 / 18, rel=1e-3)
    assert res.fault_events[0]["transfers_rerouted"] == 1
    assert res.makespan_s == pytest.approx(1e-3 + (healthy_s - 1e-3) * 18 / 13, rel=1e-3)


def test_fault_at_zero_is_the_static_fault_and_after_the_end_is_no_fault(hgx_ring):
    healthy, w, healthy_s = hgx_ring
    at0 = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0", at=0.0)])
    static = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0")])
    ws = build_collective(static, static.gpus, "all_reduce", GIB, "ring", "Simple")
    assert run_flow(at0, w).makespan_s == pytest.approx(run_flow(static, ws).makespan_s, rel=1e-3)
    late = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0", at="1s")])
    res = run_flow(late, w)
    # the same run: transfers move one by one instead of in classes of identical ones (flow engine)
    assert res.makespan_s == pytest.approx(healthy_s, rel=1e-12) and res.fault_events == []


@pytest.mark.parametrize("spec, fraction", [
    ({"kind": "degraded_width", "from": "server.gpu0", "to": "server.psw0", "lanes": 8}, 0.5),
    ({"kind": "ber", "from": "server.gpu0", "to": "server.psw0", "ber": 1e-6}, None),
])
def test_link_degraded_mid_copy_follows_the_closed_form(spec, fraction):
    """A PCIe copy whose link drops to x8 (half) or to BER 1e-6 (the retry efficiency) at 5 ms."""
    healthy = build_fabric(PCIE)
    w = build_copy(healthy, "h2d", ("server.gpu0",), GIB)
    healthy_s = run_flow(healthy, w).makespan_s
    f = build_fabric(PCIE, [fault(**spec, at="5ms")])
    if fraction is None:  # the link's rate after the fault over before
        fraction = f.changes[0].fabric.channels[0].rate_Bps / healthy.channels[0].rate_Bps
        assert 0.5 < fraction < 0.999
    res = run_flow(f, w)
    assert res.fault_events[0]["bytes_rerouted"] == 0  # nothing lost: the link still carries it
    assert res.makespan_s == pytest.approx(5e-3 + (healthy_s - 5e-3) / fraction, rel=0.002)


def test_fault_that_cuts_a_transfer_off_mid_run_is_a_clear_error():
    f = build_fabric(PCIE, [fault(kind="retimer_down", from_="server.gpu0", to="server.psw0", at="1ms")])
    assert any("from 1ms on" in w and "no links" in w for w in f.warnings)
    w = build_copy(f, "h2d", ("server.gpu0",), GIB)
    with pytest.raises(InputError, match=r"from 1ms on \(retimer_down .*\) server.cpu has no route to server.gpu0"):
        run_flow(f, w)


def test_packet_engine_refuses_faults_at_a_time_and_auto_picks_flow():
    f = build_fabric(HGX, [fault(kind="link_down", from_="hgx.gpu0", to="hgx.nvsw0", at="10us")])
    w = build_collective(f, f.gpus[:2], "all_reduce", 2**20, "ring", "Simple")
    with pytest.raises(InputError, match="does not support faults at a time; use --engine flow"):
        simulate(f, w, engine="packet")
    assert simulate(f, w, engine="auto").engine == "flow"
    _register()
    r = CliRunner().invoke(app, ["bench", HGX, "--sizes", "1M", "--engine", "packet",
                                 "--fault", "link_down:from=hgx.gpu0,to=hgx.nvsw0,at=10us"])
    assert r.exit_code == 2 and r.output.strip().splitlines()[-1] == f"fabricsim: {PACKET_TIMED_FAULTS}", r.output
    assert "Traceback" not in r.output


def test_bad_times_are_input_errors_at_the_flag_and_the_file(tmp_path):
    _register()
    r = CliRunner().invoke(app, ["bench", HGX, "--sizes", "1M", "--fault", "switch_down:device=hgx.nvsw0,at=5m"])
    assert r.exit_code == 2 and "--fault" in r.output and "'5m' is a length, expected a time" in r.output, r.output
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {kind: switch_down, device: hgx.nvsw0, at: 1ms}\n"
                      "  - {kind: switch_down, device: hgx.nvsw9, at: 2ms}\n")
    r = CliRunner().invoke(app, ["bench", HGX, "--sizes", "1M", "--fault", str(faults)])
    assert r.exit_code == 2 and f"{faults}:3: faults[1].device: no switch matches hgx.nvsw9" in r.output, r.output


def test_run_reports_rerouted_bytes_and_the_trace_shows_the_fault(tmp_path):
    scen = tmp_path / "s.yaml"
    scen.write_text(f"name: s\ntopologies: [{Path(HGX).resolve()}]\nengine: flow\n"
                    "workloads:\n  - {kind: collective, name: ar, op: all_reduce, gpus: 8, sizes: 256M, algo: ring}\n"
                    "faults:\n  - {kind: switch_down, device: hgx.nvsw0, at: 200us}\n")
    out, trace = tmp_path / "out.json", tmp_path / "t.json"
    _register()
    r = CliRunner().invoke(app, ["run", str(scen), "--json", str(out), "--trace", str(trace)])
    assert r.exit_code == 0, r.output
    healthy, degraded = json.loads(out.read_text())["systems"]
    row = degraded["rows"][0]
    assert row["faults_struck"] == 1 and row["rerouted_B"] > 0 and "rerouted_B" not in healthy["rows"][0]
    assert row["time_us"] > healthy["rows"][0]["time_us"]
    events = json.loads(trace.read_text())["traceEvents"]
    [instant] = [e for e in events if e["ph"] == "i"]
    assert instant["name"] == "fault: switch_down device=hgx.nvsw0 at=200us"
    assert instant["args"]["bytes_rerouted"] == pytest.approx(row["rerouted_B"])
    ends = [e["ts"] for e in events if e["ph"] == "e" and e.get("cat") == "transfer"]
    # the degraded run is the last in the trace: it ends time_us after its start, 200 us before which the fault struck
    assert ends and max(ends) - instant["ts"] == pytest.approx(row["time_us"] - 200, rel=1e-6)


_HGX = build_fabric(HGX)


@st.composite
def timed_runs(draw):
    """HGX H100, a few GPU-to-GPU flows of up to 64 MB, one fault at a random time in the first
    ~0.3 ms (such flows last 0.1-1 ms)."""
    g, k = draw(st.integers(0, 7)), draw(st.integers(0, 3))
    kind = draw(st.sampled_from(["link_down", "degraded_width", "ber", "switch_down"]))
    spec = {"kind": kind, "at": draw(st.floats(0, 3e-4))}
    if kind == "switch_down":
        spec["device"] = f"hgx.nvsw{k}"
    else:
        spec.update({"from": f"hgx.gpu{g}", "to": f"hgx.nvsw{k}", "links": draw(st.integers(1, 4))})
        spec.update({"degraded_width": {"lanes": 1}, "ber": {"ber": 1e-6}}.get(kind, {}))
    pairs = draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(1, 64_000_000))
                          .filter(lambda p: p[0] != p[1]), min_size=1, max_size=6))
    return FaultSpec.model_validate(spec), flows(*[(f"hgx.gpu{s}", f"hgx.gpu{d}", b) for s, d, b in pairs])


def _origins(n=8):
    """Origins that place fault i's errors at ``faults[i].key`` (no file)."""
    return [Origin(path=("faults", i)) for i in range(n)]


@settings(max_examples=30, deadline=None)
@given(timed_runs())
def test_any_fault_during_a_run_keeps_the_flow_invariants(run):
    """One fault at a random time under random flows: every byte delivered (conserved), channel
    bytes match the routes taken before and after the fault, dependencies hold, same input same
    result, and a fault that strikes before the end is reported."""
    spec, workload = run
    f = timed_faults(apply_faults(_HGX, [spec], _origins()), [spec], _origins())
    res = run_flow(f, workload)
    assert all(res.invariants.values()), res.invariants
    assert res.bytes_delivered == workload.total_bytes
    assert len(res.fault_events) == (spec.at < res.makespan_s)
    assert np.array_equal(res.finish_s, run_flow(f, workload).finish_s)


def test_describe_shows_the_fabric_left_after_the_last_fault():
    _register()
    r = CliRunner().invoke(app, ["describe", HGX, "--json", "--fault", "switch_down:device=hgx.nvsw0,at=1ms"])
    s = json.loads(r.output)
    assert s["switch_chips"] == 3 and s["faults"] == ["switch_down device=hgx.nvsw0 at=1ms"]


def test_switch_failing_under_an_nvls_reduction_is_a_clear_error():
    """NVLS reduces in the NVSwitch chips: a transfer that ends at a chip that fails cannot move
    (NCCL would abort the call); the error names the time, the fault and the way out."""
    f = build_fabric(HGX, [fault(kind="switch_down", device="hgx.nvsw0", at="10us")])
    w = build_collective(f, f.gpus, "all_reduce", 256 * 2**20, "nvls", "Simple")
    with pytest.raises(InputError, match=r"from 10us on \(switch_down .*\) hgx.nvsw0 is gone .* e\.g\. ring"):
        run_flow(f, w)
