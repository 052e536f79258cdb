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


SHAPE_CASES = [("hgx_h100", 8), ("gb200_nvl72", 16), ("hopper_ib_rack", 16), ("pcie_server", 4),
               ("gb200_nvl72_x8_ib", 144)]


@pytest.mark.parametrize("topology,n", SHAPE_CASES)
def test_a_protocol_changes_bytes_delays_and_rates_never_the_shape(topology, n):
    """The contract the tuner's skipping rests on (``tuner.choose``): at one channel count, every
    protocol of an algorithm gives the same transfers (ends, routes, dependencies), each carrying
    its data / the protocol's efficiency in wire bytes (to the byte)."""
    from simulator.hardware.protocols import PROTOCOL_NAMES, load_protocols
    from simulator.workloads.collectives import ALGORITHMS, why_not

    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    gpus, table = tuple(fabric.gpus[:n]), load_protocols()
    compared = 0
    for name, algo in ALGORITHMS.items():
        for op in sorted(algo.ops):
            shapes = {}
            for p in PROTOCOL_NAMES:
                if why_not(fabric, gpus, op, name, p, table):
                    continue
                w = build_collective(fabric, gpus, op, 3 << 20, name, p, channels=4)
                eff = table.protocol(p).efficiency
                shapes[p] = ([(t.src, t.dst, t.paths, t.deps) for t in w.transfers],
                             [t.bytes * eff for t in w.transfers], eff)
            for p, (shape, data, eff) in shapes.items():
                first, first_data, _ = next(iter(shapes.values()))
                assert shape == first, (name, op, p)
                assert all(abs(a - b) <= 1.0 for a, b in zip(data, first_data)), (name, op, p)
                compared += 1
    assert compared >= 10


@pytest.mark.parametrize("topology,n,op", [
    ("gb200_nvl72_x16_ib", None, "all_reduce"), ("hopper_ib_rack", None, "all_gather"),
    ("gb200_nvl72", None, "all_reduce"), ("hgx_h100", None, "reduce_scatter"), ("pcie_server", None, "all_reduce"),
])
def test_candidates_left_unbuilt_could_not_have_won(topology, n, op):
    """Skipping candidates whose channel-load bound exceeds the best estimate changes nothing: the
    same algorithm, protocol and estimate as building every candidate, from latency-bound to
    bandwidth-bound sizes; and at 1 GiB some candidate is skipped (else this test proves nothing)."""
    from simulator.hardware.protocols import load_protocols

    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    gpus, table = tuple(fabric.gpus[:n] if n else fabric.gpus), load_protocols()
    built = []
    original = tuner.estimate

    def counting(fabric, workload):
        built.append(workload.meta["protocol"])
        return original(fabric, workload)

    def run(nbytes, skip):
        tuner.estimate, built[:] = counting, []
        try:
            return tuner.choose(fabric, gpus, op, nbytes, "auto", "auto", table, skip=skip), len(built)
        finally:
            tuner.estimate = original

    for nbytes in (1 << 10, 1 << 20, 1 << 30):
        every, all_built = run(nbytes, skip=False)
        fewer, some_built = run(nbytes, skip=True)
        assert fewer[:3] == every[:3], nbytes
        if nbytes == 1 << 30:
            assert some_built < all_built, (topology, some_built, all_built)


def test_an_estimate_build_merges_identical_transfers_and_estimates_the_same(monkeypatch):
    """An estimate's build (``sample``) merges identical transfers into one of k x bytes at k x rate
    (``DagBuilder.merge``): the same estimate to float rounding, from several times fewer transfers
    (72 channels over the NVSwitch planes and a pair's two NICs repeat their transfers)."""
    from simulator.workloads.collectives import base

    fabric = build_fabric(TOPOLOGIES / "gb200_nvl72_x8_ib.yaml")
    gpus = tuple(fabric.gpus)
    sample = tuner.sample_node(fabric, gpus)
    for algo, protocol in (("ring", "LL128"), ("tree", "Simple"), ("hierarchical", "Simple")):
        merged = build_collective(fabric, gpus, "all_reduce", 1 << 30, algo, protocol, sample=sample)
        monkeypatch.setattr(base.DagBuilder, "workload", _unmerged(base.DagBuilder.workload))
        every = build_collective(fabric, gpus, "all_reduce", 1 << 30, algo, protocol, sample=sample)
        monkeypatch.undo()
        assert len(merged.transfers) * 2 < len(every.transfers), algo
        assert sum(t.bytes for t in merged.transfers) == sum(t.bytes for t in every.transfers)
        a, b = tuner.estimate(fabric, merged), tuner.estimate(fabric, every)
        assert a.time_s == pytest.approx(b.time_s, rel=1e-12) and a.load_s == pytest.approx(b.load_s, rel=1e-12)
        assert a.least_bytes == b.least_bytes


def _unmerged(workload):
    """``DagBuilder.workload`` as if nothing had been merged: every entry repeated k times."""
    def unmerged(self, name, meta):
        from simulator.engine.transfer import Transfer

        if not self.merge:
            return workload(self, name, meta)
        first, out = {}, []
        for t, k in zip(self.transfers, self.counts):
            first[t.id] = len(out)
            for _ in range(k):
                deps = tuple(sorted(first[d] for d in t.deps))
                out.append(Transfer(len(out), t.src, t.dst, t.bytes, deps, t.delay_s, t.paths, t.tag, t.rate_Bps))
        from simulator.engine.transfer import Workload
        return Workload(name, tuple(out), meta)
    return unmerged


@pytest.mark.parametrize("topology,n,op,protocol", [("hgx_h100", 8, "all_gather", "Simple"),
                                                     ("hgx_h100", 8, "all_gather", "LL128"),
                                                     ("hgx_h200", 2, "broadcast", "Simple")])
def test_estimate_charges_responses_as_the_engines_do(topology, n, op, protocol):
    """A ring all_gather loads both ways of its NVLinks; each direction also carries the other's
    responses (``reverse_overhead``). The estimate charges them to the reverse channel as the flow
    engine does, so on a link-bound ring the two agree; without them the estimate fell short (NVL72
    ring LL128 all_gather at 512 MiB: 976 us against its run's 1061) and ``auto`` picked it over a
    faster NVLS. A 2-GPU broadcast loads one way: its responses take an idle direction and cost
    nothing."""
    from simulator.engine.dispatch import simulate

    fabric = build_fabric(TOPOLOGIES / f"{topology}.yaml")
    workload = build_collective(fabric, fabric.gpus[:n], op, 2**30, "ring", protocol)
    assert tuner.estimate(fabric, workload).time_s == pytest.approx(simulate(fabric, workload, "flow").makespan_s,
                                                                    rel=1e-3)
