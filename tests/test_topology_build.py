"""Built fabrics keep the contract: paired directions, positive rates, ranks, physical latencies, routes."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.hardware.catalog import load_catalog
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import Fabric
from simulator.topology.routing import equal_cost_routes

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
NAMES = sorted(p.stem for p in TOPOLOGIES.glob("*.yaml"))


@pytest.fixture(scope="module")
def fabrics() -> dict[str, Fabric]:
    return {name: build_fabric(TOPOLOGIES / f"{name}.yaml") for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_every_channel_has_its_reverse(name: str, fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics[name]
    assert len(fabric.channels) == 2 * fabric.n_links
    for ch in fabric.channels:
        back = fabric.reverse(ch)
        assert (back.src, back.dst, back.link) == (ch.dst, ch.src, ch.link) and back.id != ch.id
        assert (back.rate_Bps, back.line_rate_Bps, back.latency_s, back.lanes) == \
               (ch.rate_Bps, ch.line_rate_Bps, ch.latency_s, ch.lanes)


@pytest.mark.parametrize("name", NAMES)
def test_rates_latencies_credits_are_physical(name: str, fabrics: dict[str, Fabric]) -> None:
    for ch in fabrics[name].channels:
        assert 0 < ch.rate_Bps < ch.line_rate_Bps  # protocol overhead is never free
        assert ch.latency_s > 0 and ch.lanes > 0
        assert 0 < ch.credit.credit_bytes <= ch.credit.buffer_bytes
        assert all(v >= 0 for v in ch.energy_pJ_per_bit.values()) and ch.energy_pJ_per_bit


@pytest.mark.parametrize("name", NAMES)
def test_gpu_ranks_are_dense_and_in_declaration_order(name: str, fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics[name]
    assert [fabric.nodes[g].rank for g in fabric.gpus] == list(range(len(fabric.gpus)))
    assert all(n.rank == -1 for n in fabric.nodes.values() if n.kind != "gpu")


def test_build_is_deterministic() -> None:
    a, b = (build_fabric(TOPOLOGIES / "hopper_ib_rack.yaml") for _ in range(2))
    assert a.channels == b.channels and a.nodes == b.nodes and a.static_power_W == b.static_power_W


def test_nvl72_groups_and_switch_properties(fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics["gb200_nvl72"]
    gpu0 = fabric.nodes[fabric.gpus[0]]
    assert gpu0.name == "compute0.gpu0" and gpu0.group == "compute0"
    assert fabric.nodes[fabric.gpus[71]].group == "compute17"
    part = load_catalog().device("nvswitch4")
    switches = [n for n in fabric.nodes.values() if n.kind == "switch"]
    assert len(switches) == 18 and all(n.reduction == part.reduction and n.latency_s == part.latency_s
                                       and n.static_power_W == part.static_power_W for n in switches)


def test_latency_is_phy_plus_cable_plus_optics(fabrics: dict[str, Fabric]) -> None:
    catalog = load_catalog()
    gen = catalog.link("nvlink5")
    copper = fabrics["gb200_nvl72"].channels[0]
    optical = fabrics["gb200_nvl72_optical"].channels[0]
    assert copper.latency_s == pytest.approx(gen.phy_latency_s + 1.0 * catalog.cable("copper_passive").ns_per_m * 1e-9)
    assert optical.latency_s == pytest.approx(gen.phy_latency_s + catalog.cable("optical").latency_s(2.0, gen))
    assert optical.latency_s > copper.latency_s
    # optics power is static (module watts); per-bit energy only carries what traffic adds on top
    overhead = gen.line_rate_Bps / gen.payload_rate_Bps
    assert optical.energy_pJ_per_bit.get("optics", 0.0) == pytest.approx(catalog.cable("optical").pJ_per_bit * overhead)
    assert copper.energy_pJ_per_bit["gpu_serdes"] == pytest.approx(gen.serdes_pJ_per_bit * overhead)


def test_retimer_adds_its_latency(fabrics: dict[str, Fabric]) -> None:
    catalog = load_catalog()
    gen, retimer = catalog.link("pcie5", width=16), catalog.retimer("pcie5_retimer")
    ch = fabrics["pcie_server"].channels[0]
    assert ch.retimers == 1
    assert ch.latency_s == pytest.approx(gen.phy_latency_s + catalog.cable("trace").latency_s(0.3, gen)
                                         + retimer.latency_s)
    overhead = gen.line_rate_Bps / gen.payload_rate_Bps
    assert ch.energy_pJ_per_bit.get("retimer", 0.0) == pytest.approx(retimer.pJ_per_bit * overhead)


# --- routes -------------------------------------------------------------------------------------

def _all_pairs(fabric: Fabric):
    return ((a, b) for a in fabric.gpus for b in fabric.gpus if a != b)


def test_nvl72_routes_spread_over_all_18_chips(fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics["gb200_nvl72"]
    for a, b in _all_pairs(fabric):
        routes = equal_cost_routes(fabric, a, b)
        assert len(routes) == 18 and all(len(r) == 2 for r in routes)
        assert len({fabric.channels[r[0]].dst for r in routes}) == 18


@pytest.mark.parametrize("name,links", [("hgx_h100", 18), ("hgx_h200", 18), ("dgx_a100", 12)])
def test_hgx_routes_use_every_nvlink_of_the_gpu(name: str, links: int, fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics[name]
    for a, b in _all_pairs(fabric):
        routes = equal_cost_routes(fabric, a, b)
        first = {r[0] for r in routes}
        assert len(routes) == links and len(first) == links
        assert first == {c.id for c in fabric.out_channels(a) if c.fabric == "nvlink"}
        assert all(fabric.channels[c].fabric == "nvlink" for r in routes for c in r)


def test_hgx_split_is_5_4_4_5(fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics["hgx_h100"]
    per_switch = [sum(1 for c in fabric.out_channels(fabric.gpus[0]) if c.dst == f"hgx.nvsw{i}") for i in range(4)]
    assert per_switch == [5, 4, 4, 5]


def test_ib_rack_routes_inside_and_between_nodes(fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics["hopper_ib_rack"]
    for a, b in _all_pairs(fabric):
        routes = equal_cost_routes(fabric, a, b)
        assert routes
        kinds = {fabric.channels[c].fabric for r in routes for c in r}
        same_node = fabric.nodes[a].group == fabric.nodes[b].group
        assert kinds == ({"nvlink"} if same_node else {"pcie", "network"})


def test_pcie_server_routes_over_pcie_through_switches(fabrics: dict[str, Fabric]) -> None:
    fabric = fabrics["pcie_server"]
    for a, b in _all_pairs(fabric):
        routes = equal_cost_routes(fabric, a, b)
        assert routes and all(fabric.channels[c].fabric == "pcie" for r in routes for c in r)
