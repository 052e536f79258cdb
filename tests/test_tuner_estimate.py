"""The tuner's estimate from one node's insides (tuner.sample_node) chooses as the whole-workload one.

``auto`` on a multi-node fabric of alike nodes predicts each candidate from the transfers inside the
first node and every transfer between nodes; ``predict_s`` must give exactly the time it gives for
the whole workload, hence the same choice, on the shipped multi-node topologies over sizes from
latency-bound to bandwidth-bound.
"""

from pathlib import Path

import pytest

from simulator.topology.builder import build_fabric
from simulator.workloads.collectives import build_collective, tuner

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
SIZES = (1 << 15, 1 << 20, 1 << 25, 1 << 30)


def _choices(monkeypatch, fabric, gpus, op, nbytes, sampled: bool):
    if not sampled:
        monkeypatch.setattr(tuner, "sample_node", lambda fabric, gpus: None)  # the build-everything tuner
    w = build_collective(fabric, gpus, op, nbytes)
    monkeypatch.undo()
    return w.meta["algo"], w.meta["protocol"], w.meta["channels"], w.meta["predicted_s"], len(w.transfers)


@pytest.mark.parametrize("topology,n,op,sizes", [
    ("hopper_ib_rack", None, "all_reduce", SIZES),
    ("hopper_ib_rack", None, "all_gather", SIZES),
    ("hopper_ib_rack", None, "alltoall", (1 << 20, 1 << 30)),
    ("gb200_nvl72_x8_ib", 144, "all_reduce", (1 << 15, 1 << 25, 1 << 30)),
    ("gb200_nvl72_x16_ib_2to1", 288, "all_reduce", (1 << 30,)),
])
def test_estimate_from_one_node_chooses_as_the_whole_workload(monkeypatch, topology, n, op, sizes):
    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    gpus = tuple(fabric.gpus[:n] if n else fabric.gpus)
    assert tuner.sample_node(fabric, gpus) is not None  # the estimate is sampled here
    for nbytes in sizes:
        whole = _choices(monkeypatch, fabric, gpus, op, nbytes, sampled=False)
        sampled = _choices(monkeypatch, fabric, gpus, op, nbytes, sampled=True)
        assert sampled[:3] == whole[:3], nbytes
        assert sampled[3] == pytest.approx(whole[3], rel=1e-12), nbytes
        assert sampled[4] == whole[4]  # the chosen workload is built whole


def test_no_sample_on_one_node_or_after_faults():
    one = build_fabric(TOPOLOGIES / "gb200_nvl72.yaml")
    assert tuner.sample_node(one, tuple(one.gpus)) is None
    racks = build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")
    assert tuner.sample_node(racks, tuple(racks.gpus[:144])) == racks.nodes[racks.gpus[0]].group
    racks.faults.append("a link down")  # nodes no longer alike: estimate from whole workloads
    assert tuner.sample_node(racks, tuple(racks.gpus[:144])) is None
