"""Packet and flow engines agree within 5% on every shipped topology where no arbitration effect
exists (issue 8): the same transfer DAG, the same channel capacities, the same CTA limits, the same
reverse-direction responses; the packet engine at the largest packet that keeps every credit loop
exact (``fine_packet_bytes``), the flow engine with the fluid credit bound.

Left out on purpose: all-to-all through a switch, where several inputs contend for one output and
the packet engine's arbitration (not modelled by max-min fair sharing) sets the rate (docs/model.md).
"""

from __future__ import annotations

import pytest

from simulator.runner.sweeps import SweepSpec, sweep
from simulator.topology.builder import build_fabric

MIB = 2**20
CASES = [
    ("hgx_h200.yaml", "all_reduce", 8, 16 * MIB),
    ("hgx_h200.yaml", "all_gather", 2, 16 * MIB),
    ("hgx_h100.yaml", "reduce_scatter", 8, 16 * MIB),
    ("hgx_h100.yaml", "h2d", 8, 16 * MIB),
    ("dgx_a100.yaml", "all_reduce", 8, 16 * MIB),
    ("dgx_a100.yaml", "broadcast", 4, 8 * MIB),
    ("pcie_server.yaml", "all_reduce", 8, 4 * MIB),
    ("pcie_server.yaml", "d2h", 4, 4 * MIB),
    ("gb200_nvl72.yaml", "all_reduce", 8, 16 * MIB),
    ("gb200_nvl72_optical.yaml", "p2p", 2, 64 * MIB),
    ("hopper_ib_rack.yaml", "all_gather", 16, 8 * MIB),
    ("teaching.yaml", "sendrecv", 2, 4 * MIB),
]


@pytest.mark.parametrize("topology, op, gpus, nbytes", CASES, ids=[f"{t[:-5]}-{o}-{g}" for t, o, g, _ in CASES])
def test_packet_and_flow_agree(topology, op, gpus, nbytes):
    fabric = build_fabric(f"topologies/{topology}")
    rows = {}
    for engine in ("flow", "packet"):
        rows[engine] = sweep(fabric, SweepSpec(op=op, gpus=gpus, sizes=(nbytes,), engine=engine))[0]
    flow, packet = rows["flow"], rows["packet"]
    assert (flow["algo"], flow["protocol"], flow["channels"]) == (packet["algo"], packet["protocol"], packet["channels"])
    assert packet["engine"] == "packet" and packet["packet_bytes"]
    assert packet["time_us"] == pytest.approx(flow["time_us"], rel=0.05)
