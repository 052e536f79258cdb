"""Property-based reliability tests (issue 12): random small fabrics, workloads and faults through
both engines; the flow engine's max-min rates against a linear-programming solution; fuzzed fault
files. Small ``max_examples`` and no deadline keep them fast on 2 cores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.engine.flow import run_flow
from simulator.engine.flow_maxmin import max_min_rates
from simulator.engine.packet import PacketConfig, run_packet
from simulator.errors import Origin
from simulator.hardware.faults import FaultSpec
from simulator.topology import synthetic
from simulator.topology.faults import apply_faults

from engine_helpers import DeliveryLog, flows

linprog = pytest.importorskip("scipy.optimize").linprog

PACKET = 256


def _origins(n=8):
    """Origins that place fault i's errors at ``faults[i].key`` (no file)."""
    return [Origin(path=("faults", i)) for i in range(n)]


# --- both engines on random stars with faults --------------------------------------------------

@st.composite
def faulted_runs(draw):
    n = draw(st.integers(3, 5))
    fabric = synthetic.star(n, credit=synthetic.default_credit(buffer_bytes=draw(st.integers(2, 8)) * PACKET,
                                                               credit_bytes=64), switch_latency_s=20e-9)
    down = draw(st.integers(-1, n - 1))  # -1: no GPU loses its link
    faults = [FaultSpec.model_validate({"kind": "link_down", "from": f"gpu{down}", "to": "sw0"})] if down >= 0 else []
    for g in draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)):
        if g != down:
            faults.append(FaultSpec.model_validate({"kind": "degraded_width", "from": f"gpu{g}", "to": "sw0", "lanes": 1}))
    if draw(st.booleans()):
        faults.append(FaultSpec.model_validate({"kind": "ber", "from": "gpu*", "to": "sw0",
                                                "ber": draw(st.sampled_from([1e-12, 1e-8, 1e-6]))}))
    fabric = apply_faults(fabric, faults, _origins())
    alive = [g for g in range(n) if g != down]
    pairs = draw(st.lists(st.tuples(st.sampled_from(alive), st.sampled_from(alive), st.integers(1, 8 * PACKET))
                          .filter(lambda p: p[0] != p[1]), min_size=1, max_size=6))
    return fabric, flows(*[(f"gpu{s}", f"gpu{d}", b) for s, d, b in pairs]), draw(st.integers(0, 3))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulted_runs())
def test_both_engines_deliver_every_transfer_once_on_faulted_fabrics(run):
    fabric, workload, seed = run
    log = DeliveryLog()
    cfg = PacketConfig(packet_bytes=PACKET, seed=seed)
    res = run_packet(fabric, workload, cfg, log)
    assert all(res.invariants.values()), res.invariants
    assert res.bytes_delivered == workload.total_bytes
    got: dict[int, int] = {}
    for _, tid, nbytes in log.rows:
        got[tid] = got.get(tid, 0) + nbytes
    assert got == {t.id: t.bytes for t in workload.transfers}  # every byte once, none twice
    again = run_packet(fabric, workload, cfg)
    assert np.array_equal(again.finish_s, run_packet(fabric, workload, cfg).finish_s)  # same seed, same result
    # an observer turns off the take-ahead path, whose start times agree with the events' within EPS_S
    assert np.allclose(res.finish_s, again.finish_s, rtol=1e-12, atol=0.0)
    flow = run_flow(fabric, workload)
    assert all(flow.invariants.values()) and flow.bytes_delivered == workload.total_bytes
    assert np.array_equal(flow.finish_s, run_flow(fabric, workload).finish_s)
    # credits within 0..buffer, exactly-once delivery and no deadlock are checked by the packet
    # engine on every move; make sure those checks ran
    assert {"credits_in_range", "exactly_once", "deadlock_free"} <= set(res.invariants)


# --- max-min against linear programming ---------------------------------------------------------

def lexicographic_max_min(n_flows, entries, capacity, weight):
    """Max-min fair rates by repeated LPs: raise the common level t of the unfrozen flows as far
    as the capacities allow, freeze every flow that cannot go above t, repeat."""
    n_ch = len(capacity)
    a = np.zeros((n_ch, n_flows))
    for f, c in entries:
        a[c, f] += weight[f]
    rate = np.zeros(n_flows)
    frozen = np.zeros(n_flows, dtype=bool)
    while not frozen.all():
        free = np.flatnonzero(~frozen)
        # variables: x (n_flows), t; maximise t
        c_obj = np.zeros(n_flows + 1)
        c_obj[-1] = -1.0
        a_ub = [np.concatenate((a[k], [0.0])) for k in range(n_ch)]
        b_ub = list(capacity)
        for f in free:  # t - x_f <= 0
            row = np.zeros(n_flows + 1)
            row[f], row[-1] = -1.0, 1.0
            a_ub.append(row)
            b_ub.append(0.0)
        bounds = [(rate[f], rate[f]) if frozen[f] else (0, None) for f in range(n_flows)] + [(0, None)]
        t = -linprog(c_obj, A_ub=np.array(a_ub), b_ub=b_ub, bounds=bounds, method="highs").fun
        for f in free:  # can f rise above t while every other free flow keeps at least t?
            obj = np.zeros(n_flows + 1)
            obj[f] = -1.0
            bnd = [(rate[g], rate[g]) if frozen[g] else (t, None) for g in range(n_flows)] + [(0, 0)]
            best = -linprog(obj, A_ub=np.array([r for r in a_ub[:n_ch]]), b_ub=b_ub[:n_ch], bounds=bnd,
                            method="highs").fun
            if best <= t * (1 + 1e-7) + 1e-9:
                frozen[f], rate[f] = True, t
    return rate


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_max_min_rates_equal_the_lexicographic_lp_solution(data):
    n_ch = data.draw(st.integers(1, 5))
    n_flows = data.draw(st.integers(1, 6))
    capacity = np.array(data.draw(st.lists(st.integers(1, 100), min_size=n_ch, max_size=n_ch)), dtype=float)
    weight = np.array(data.draw(st.lists(st.integers(1, 3), min_size=n_flows, max_size=n_flows)), dtype=float)
    entries = []
    for f in range(n_flows):
        chans = data.draw(st.lists(st.integers(0, n_ch - 1), min_size=1, max_size=n_ch, unique=True))
        entries += [(f, c) for c in chans]
    ef = np.array([f for f, _ in entries])
    ec = np.array([c for _, c in entries])
    got = max_min_rates(n_flows, ef, ec, capacity, weight=weight)
    want = lexicographic_max_min(n_flows, entries, capacity, weight)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-9), (got, want)


# --- fuzzed fault files -------------------------------------------------------------------------

_register()
_runner = CliRunner()
_scalar = st.one_of(st.sampled_from(["hgx.gpu0", "hgx.nvsw0", "hgx.*", "hgx", "nope", "", "1e-8", "x8", "150us",
                                     "5 m", "-1us", "1M"]),
                    st.integers(-2, 20), st.floats(-1, 2, allow_nan=False), st.booleans(), st.none())
_fault = st.dictionaries(
    st.sampled_from(["kind", "from", "to", "device", "enclosure", "lanes", "ber", "links", "at", "colour"]),
    st.one_of(st.sampled_from(["link_down", "degraded_width", "switch_down", "retimer_down", "ber"]), _scalar,
              st.lists(_scalar, max_size=2)), max_size=5)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_fault, _scalar), min_size=1, max_size=3))
def test_fuzzed_fault_files_exit_2_with_file_and_line(tmp_path, faults):
    import yaml

    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump({"faults": faults}, default_flow_style=False))
    r = _runner.invoke(app, ["bench", "topologies/hgx_h100.yaml", "--sizes", "1M", "--engine", "flow", "--gpus", "2",
                        "--fault", str(path)])
    assert r.exit_code in (0, 2), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    if r.exit_code == 2:
        line = r.output.strip().splitlines()[-1]
        assert line.startswith(f"fabricsim: {path}:"), line


_BASE_SCENARIO = {
    "name": "fuzz", "topologies": ["TOPO"], "engine": "flow",
    "workloads": [{"kind": "collective", "name": "ar", "op": "all_reduce", "gpus": 2, "sizes": "1M"}],
    "faults": [{"kind": "ber", "from": "gpu0", "to": "gpu1", "ber": 1e-9, "at": "1us"}],
}
_KEYS = [("name",), ("engine",), ("seed",), ("packet_bytes",), ("topologies",), ("workloads", 0, "kind"),
         ("workloads", 0, "op"), ("workloads", 0, "gpus"), ("workloads", 0, "sizes"), ("workloads", 0, "algo"),
         ("workloads", 0, "name"), ("workloads", 0, "colour"), ("workloads",), ("faults",), ("faults", 0, "kind"),
         ("faults", 0, "from"), ("faults", 0, "ber"), ("faults", 0, "at"), ("faults", 0, "lanes")]


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_KEYS), _scalar), min_size=1, max_size=3))
def test_fuzzed_scenario_files_exit_2_with_file_and_line(tmp_path, edits):
    import copy

    import yaml

    data = copy.deepcopy(_BASE_SCENARIO)
    data["topologies"] = [str((__import__("pathlib").Path("topologies/teaching.yaml")).resolve())]
    for keys, value in edits:
        target = data
        for k in keys[:-1]:
            target = target[k] if isinstance(target, (dict, list)) else target
        if isinstance(target, dict):
            target[keys[-1]] = value
        elif isinstance(target, list) and isinstance(keys[-1], int) and keys[-1] < len(target):
            target[keys[-1]] = value
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=False))
    r = _runner.invoke(app, ["run", str(path)])
    assert r.exit_code in (0, 2), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    if r.exit_code == 2:
        assert r.output.strip().splitlines()[-1].startswith(f"fabricsim: {path}:"), r.output


_BASE_SWEEP = {
    "name": "fuzz",
    "base": {"bench": {"topology": "TOPO", "op": "all_reduce", "gpus": 2, "bytes": "1M", "engine": "flow"}},
    "axes": {"bytes": ["1M", "2M"]},
}
_SWEEP_KEYS = [("name",), ("base",), ("base", "bench"), ("base", "bench", "topology"), ("base", "bench", "op"),
               ("base", "bench", "gpus"), ("base", "bench", "bytes"), ("base", "bench", "engine"),
               ("base", "bench", "colour"), ("base", "credit_lab"), ("axes",), ("axes", "bytes"), ("axes", "gpus"),
               ("axes", "algo"), ("axes", "topology.links.0.cable"), ("axes", "buffer")]
_PYTHON_ERROR = ("TypeError", "KeyError", "AttributeError", "ValueError", "IndexError", "AssertionError",
                 "ZeroDivisionError", "RuntimeError")


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_SWEEP_KEYS), st.one_of(_scalar, st.lists(_scalar, max_size=2))),
                min_size=1, max_size=3))
def test_fuzzed_sweep_files_exit_2_with_file_and_line(tmp_path, edits):
    """Sweep files with random values: ``--dry-run`` exits 0 or 2 with FILE:LINE, never a
    traceback; the first point of a file that loads runs to rows or to an input error (never a
    Python exception caught by the sweep's per-point guard)."""
    import copy

    import yaml

    from simulator.runner.sweep_file import load_sweep
    from simulator.runner.sweep_points import execute

    data = copy.deepcopy(_BASE_SWEEP)
    data["base"]["bench"]["topology"] = str((__import__("pathlib").Path("topologies/teaching.yaml")).resolve())
    for keys, value in edits:
        target = data
        for k in keys[:-1]:
            target = target.get(k) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[keys[-1]] = value
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=False))
    r = _runner.invoke(app, ["sweep", str(path), "--dry-run"])
    assert r.exit_code in (0, 2), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    if r.exit_code == 2:
        assert r.output.strip().splitlines()[-1].startswith(f"fabricsim: {path}:"), r.output
        return
    point = load_sweep(path).points[0]
    out = execute(point.payload)
    assert "rows" in out or not out["error"].startswith(_PYTHON_ERROR), out
