"""Chakra execution traces: the schema against its .proto, a write/read round trip, the DAG each node
kind becomes (against closed forms), skipped kinds reported once, and bad traces as input errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.engine.flow import run_flow
from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.topology.builder import build_fabric
from simulator.topology.routing import equal_cost_routes, route_latency_s, route_rate_Bps
from simulator.hardware.kernels import kernel_model
from simulator.workloads.traces import chakra_schema as schema
from simulator.workloads.traces.chakra import build_chakra, load_traces, rank_report, write_trace
from simulator.workloads.traces.chakra_example import LayerShape, tp_layer_nodes

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "simulator" / "workloads" / "traces"
T = schema.NODE_TYPES


@pytest.fixture(scope="module")
def hgx():
    return build_fabric(ROOT / "topologies" / "hgx_h100.yaml")


@pytest.fixture(scope="module")
def h100():
    return kernel_model("h100", load_catalog().device("h100").gpu)


def node(id, type, name="", deps=(), duration_us=0, **attrs):  # noqa: A002, ANN001, ANN201
    n = schema.message_class("Node")(id=id, name=name or f"n{id}", type=T[type], data_deps=list(deps),
                                     duration_micros=duration_us)
    for key, value in attrs.items():
        n.attr.add(name=key, int64_val=value)
    return n


def write(tmp_path: Path, ranks: list[list]) -> Path:
    for r, nodes in enumerate(ranks):
        write_trace(tmp_path / f"t.{r}.et", nodes)
    return tmp_path / "t"


def test_runtime_schema_matches_the_shipped_proto():
    text = (TRACES / "et_def.proto").read_text()
    for name, fields in schema.MESSAGES.items():
        body = re.search(r"message %s \{(.*?)\n\}" % name, text, re.S).group(1)
        found = {m.group(2): int(m.group(3)) for m in re.finditer(r"(\w+) (\w+) = (\d+);", body)}
        assert found == {f: n for f, n, *_ in fields}, name
    for name, values in schema.ENUMS.items():
        body = re.search(r"enum %s \{(.*?)\}" % name, text, re.S).group(1)
        assert dict((k, int(v)) for k, v in re.findall(r"(\w+) = (\d+);", body)) == values


def test_example_round_trips_byte_for_byte(tmp_path):
    ranks = tp_layer_nodes(LayerShape(tp=4))
    prefix = write(tmp_path, ranks)
    back = load_traces(prefix)
    assert [t.rank for t in back] == [0, 1, 2, 3] and back[0].version == "0.0.4"
    for written, read in zip(ranks, back):
        assert [n.SerializeToString() for n in written] == [n.SerializeToString() for n in read.nodes]
    attrs = {a.name: schema.attr_value(a) for a in back[0].nodes[1].attr}
    assert attrs == {"comm_type": schema.COMM_TYPES["ALL_REDUCE"], "comm_size": 2 * 4096 * 8192}


def test_compute_nodes_take_their_duration_or_their_kernel_cost(tmp_path, hgx, h100):
    flops = 10**13
    prefix = write(tmp_path, [[node(0, "COMP_NODE", duration_us=100)],
                              [node(0, "COMP_NODE", num_ops=flops, tensor_size=1)]])
    built = build_chakra(hgx, hgx.gpus[:2], load_traces(prefix), h100)
    report = rank_report(built, run_flow(hgx, built.workload).finish_s)
    assert report["per_rank"][0]["compute_us"] == pytest.approx(100)
    # one kernel: its fixed cost plus the FLOPs at the power-capped sustained tensor rate
    expect_us = (h100.kernel_s + flops / (h100.spec.bf16_flops * h100.arch.tensor_sustained_efficiency)) * 1e6
    assert report["per_rank"][1]["compute_us"] == pytest.approx(expect_us)
    assert report["step_us"] == pytest.approx(expect_us)
    assert all(r["exposed_comm_us"] == pytest.approx(0, abs=1e-9) for r in report["per_rank"])


def test_send_recv_waits_for_both_sides_and_costs_its_bytes(tmp_path, hgx, h100):
    S = 1 << 30
    prefix = write(tmp_path, [
        [node(0, "COMP_NODE", duration_us=10), node(1, "COMM_SEND_NODE", deps=[0], comm_dst=1, comm_size=S, comm_tag=7)],
        [node(0, "COMM_RECV_NODE", comm_src=0, comm_size=S, comm_tag=7), node(1, "COMP_NODE", deps=[0], duration_us=5)],
    ])
    built = build_chakra(hgx, hgx.gpus[:2], load_traces(prefix), h100)
    report = rank_report(built, run_flow(hgx, built.workload).finish_s)
    routes = equal_cost_routes(hgx, hgx.gpus[0], hgx.gpus[1])
    transfer_s = S / sum(route_rate_Bps(hgx, r) for r in routes) + max(route_latency_s(hgx, r) for r in routes)
    assert report["step_us"] == pytest.approx(10 + transfer_s * 1e6 + 5, rel=1e-3)
    assert report["per_rank"][1]["exposed_comm_us"] == pytest.approx(10 + transfer_s * 1e6, rel=1e-3)


def test_unknown_node_kinds_are_skipped_and_reported_once(tmp_path, hgx, h100):
    rank = [node(0, "COMP_NODE", duration_us=10), node(1, "MEM_LOAD_NODE", deps=[0]),
            node(2, "METADATA_NODE", deps=[1]), node(3, "COMP_NODE", deps=[2], duration_us=20)]
    prefix = write(tmp_path, [rank, rank])
    built = build_chakra(hgx, hgx.gpus[:2], load_traces(prefix), h100)
    assert built.warnings() == ["skipped 2 MEM_LOAD_NODE node(s): not modelled by fabricsim",
                                "skipped 2 METADATA_NODE node(s): not modelled by fabricsim"]
    report = rank_report(built, run_flow(hgx, built.workload).finish_s)
    assert report["step_us"] == pytest.approx(30)  # node 3 still waits for node 0 through the skipped ones


def test_collective_matches_bench(tmp_path, hgx, h100):
    from simulator.workloads.collectives import build_collective

    S = 64 << 20
    rank = [node(0, "COMM_COLL_NODE", comm_type=schema.COMM_TYPES["ALL_REDUCE"], comm_size=S)]
    prefix = write(tmp_path, [rank] * 8)
    built = build_chakra(hgx, hgx.gpus, load_traces(prefix), h100, algo="ring", protocol="Simple")
    # the trace's collective is the bench's call with NCCL's kernel paying the trace's launch-mode fixed cost
    alone = run_flow(hgx, build_collective(hgx, hgx.gpus, "all_reduce", S, "ring", "Simple",
                                           kernel_fixed_s=h100.kernel_s)).makespan_s
    assert rank_report(built, run_flow(hgx, built.workload).finish_s)["step_us"] == pytest.approx(alone * 1e6)


@pytest.mark.parametrize("ranks, words", [
    ([[node(0, "COMP_NODE", deps=[5])]], "depends on node 5"),
    ([[node(0, "COMM_SEND_NODE", comm_dst=1, comm_size=8)], [node(0, "COMP_NODE")]], "no matching COMM_RECV_NODE"),
    ([[node(0, "COMM_COLL_NODE", comm_type=0, comm_size=8), node(1, "COMM_COLL_NODE", comm_type=0, comm_size=8, deps=[0])],
      [node(0, "COMM_COLL_NODE", comm_type=0, comm_size=8, deps=[1]), node(1, "COMM_COLL_NODE", comm_type=0, comm_size=8)]],
     "cycle"),
])
def test_bad_traces_are_input_errors(tmp_path, hgx, h100, ranks, words):
    prefix = write(tmp_path, ranks)
    with pytest.raises(InputError, match=words):
        build_chakra(hgx, hgx.gpus[:len(ranks)], load_traces(prefix), h100)


def test_malformed_and_missing_files_name_the_file(tmp_path):
    (tmp_path / "x.0.et").write_bytes(b"\xff\xff")
    with pytest.raises(InputError, match="x.0.et"):
        load_traces(tmp_path / "x")
    write_trace(tmp_path / "y.0.et", [])
    write_trace(tmp_path / "y.2.et", [])
    with pytest.raises(InputError, match=r"ranks must be 0..N-1, found \[0, 2\], none for rank 1"):
        load_traces(tmp_path / "y")


def test_shipped_scenario_runs_end_to_end(tmp_path):
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "simulator", "run", str(ROOT / "scenarios" / "chakra_tp_layer.yaml"),
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    systems = json.loads(out.read_text())["systems"]
    for system in systems:
        (row,) = system["rows"]
        assert row["ranks"] == 8 and len(row["per_rank"]) == 8 and row["skipped"] == "none"
        assert row["time_us"] == pytest.approx(row["compute_us"] + row["communication_us"])
    nvl72, hgx_row = (s["rows"][0] for s in systems)
    assert nvl72["compute_us"] < hgx_row["compute_us"]  # 2.5 vs 0.99 PFLOP/s BF16


def test_chakra_example_never_overwrites(tmp_path):
    args = [sys.executable, "-m", "simulator", "chakra-example", str(tmp_path / "l"), "--tp", "2"]
    assert subprocess.run(args, capture_output=True, text=True, cwd=ROOT).returncode == 0
    again = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 2 and "exists" in again.stderr
