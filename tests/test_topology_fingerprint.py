"""Every shipped topology builds to the same fabric as a straightforward reference build.

The builder takes shortcuts for speed (a link spec's links kept as one group, facts and power
figures computed once per spec, the port check as one count, the graph built on first use of
``Fabric.graph``). The reference here takes none: link ends from ``fnmatchcase`` and the pattern,
each link's two directions computed afresh, static power link by link, and the graph edge by
edge as ``Fabric`` built it eagerly before. Every channel field, every node, the exact static
power figures (floats, in order) and the graph (nodes, edges, keys, data, adjacency order) must
agree.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from fnmatch import fnmatchcase
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.topology import builder
from simulator.topology.fabric import Channel, Fabric
from simulator.topology.patterns import pairs, select
from simulator.topology.validate import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
SHIPPED = sorted(TOPOLOGIES.rglob("*.yaml"))


def _same_channels(got: list[Channel], want: list[Channel]) -> bool:
    """Every field of every channel equal (dataclass equality), energy kinds in the same order."""
    return got == want and [tuple(c.energy_pJ_per_bit) for c in got] == [tuple(c.energy_pJ_per_bit) for c in want]


def _reference_ends(model, devices: dict) -> list[list[tuple[str, str]]]:
    """Per link spec and place, in the builder's order: ``(a, b)`` of each physical link."""
    def ends(spec, names: list[str], prefix: str) -> list[tuple[str, str]]:
        a, b = ([prefix + n for n in names if any(fnmatchcase(n, g) for g in globs)]
                for globs in (spec.from_, spec.to))
        return [(x, y) for x, y, n in pairs(spec.pattern, a, b, spec.links_per_pair) for _ in range(n)]

    out = []
    for enc in model.enclosures:
        for instance in ([enc.name] if enc.count is None else [f"{enc.name}{i}" for i in range(enc.count)]):
            local = [n.removeprefix(f"{instance}.") for n, d in devices.items()
                     if d.group == instance and n.startswith(f"{instance}.")]
            out += [ends(spec, local, f"{instance}.") for spec in enc.links]
    out += [ends(spec, list(devices), "") for spec in model.links]
    return out


def _reference(path: Path) -> tuple[list[Channel], list[tuple[str, float]]]:
    """Channel records and static power of ``path``, built the long way (no faults)."""
    model = load_topology(path)
    sources = model.sources
    catalog = builder._catalog(builder._parts_files(model, sources), sources)
    devices = builder._expand_devices(model, catalog, sources)
    groups = builder._expand_links(model, devices, catalog, sources)
    assert [list(g.ends) for g in groups] == _reference_ends(model, devices)
    channels: list[Channel] = []
    power: dict[str, float] = {}
    for dev in devices.values():
        if dev.part.kind not in ("gpu", "host") or dev.part.static_power_W:
            key = builder.DEVICE_POWER_KEY[dev.part.kind]
            power[key] = power.get(key, 0.0) + dev.part.static_power_W
    for group in groups:
        for a, b in group.ends:
            fwd, back = builder._directions(group, (devices[a].part.kind, devices[b].part.kind))
            link = len(channels) // 2
            channels.append(Channel(id=2 * link, link=link, src=a, dst=b, **fwd))
            channels.append(Channel(id=2 * link + 1, link=link, src=b, dst=a, **back))
            if group.retimer is not None:
                power["retimer"] = power.get("retimer", 0.0) + group.spec.retimers * group.retimer.power_W
            key = builder.CABLE_POWER_KEY.get(group.cable.kind)
            if key:
                power[key] = power.get(key, 0.0) + 2 * group.cable.power_W_per_end(group.gen)
    return channels, list(power.items())


def _eager_graph(fabric: Fabric) -> nx.MultiDiGraph:
    """The graph as ``Fabric.from_parts`` used to build it: node by node, then edge by edge."""
    graph = nx.MultiDiGraph()
    for node in fabric.nodes.values():
        graph.add_node(node.name, node=node)
    for ch in fabric.channels:
        graph.add_edge(ch.src, ch.dst, key=ch.id, ch=ch)
    return graph


def _check_graph(fabric: Fabric) -> None:
    graph, want = fabric.graph, _eager_graph(fabric)
    assert fabric.graph is graph  # built once
    assert list(graph.nodes(data=True)) == list(want.nodes(data=True))
    got_edges = list(graph.edges(keys=True, data=True))
    assert [(u, v, k) for u, v, k, _ in got_edges] == [(u, v, k) for u, v, k in want.edges(keys=True)]
    assert all(d == {"ch": fabric.channels[k]} and d["ch"] is fabric.channels[k] for _, _, k, d in got_edges)
    for node in graph:
        assert list(graph.succ[node]) == list(want.succ[node])
        assert list(graph.pred[node]) == list(want.pred[node])
        assert fabric.out_channels(node) == sorted((d["ch"] for _, _, d in want.out_edges(node, data=True)),
                                                   key=lambda c: c.id)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(TOPOLOGIES)))
def test_build_matches_reference(path: Path) -> None:
    healthy = builder.build_fabric(path, healthy=True)
    channels, power = _reference(path)
    assert _same_channels(healthy.channels, channels)
    assert list(healthy.static_power_W.items()) == power
    gpus = [n for n in healthy.nodes.values() if n.kind == "gpu"]
    assert healthy.gpus == [n.name for n in gpus] and [n.rank for n in gpus] == list(range(len(gpus)))
    _check_graph(healthy)
    if load_topology(path).faults:  # the file's faults applied: fabrics rebuilt from records
        fabric = builder.build_fabric(path)
        for one in [fabric] + [change.fabric for change in fabric.changes]:
            _check_graph(one)


MIXED = """\
name: mixed ends
enclosures:
  - name: box
    count: 2
    devices:
      - {name: gpu, part: h100, count: 2}
      - {name: nic, part: cx7, count: 2}
      - {name: psw, part: pcie5_switch}
    links:
      - {name: up, from: ["gpu1", "nic0", "gpu0"], to: "psw", generation: pcie5, width: 8}
devices:
  - {name: cpu, part: host_cpu}
links:
  - {from: ["box*.nic1", "box1.psw"], to: cpu, generation: pcie5, width: 16, retimers: 1,
     cable: {kind: copper_passive, length: 0.5 m}}
"""


def test_mixed_ends_match_reference(tmp_path: Path) -> None:
    """One link spec joining ends of different kinds (GPU and NIC to a PCIe switch, NIC and PCIe
    switch to a host): each link gets the energy of its own ends, in enclosure instances and at
    the top level."""
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    fabric = builder.build_fabric(path)
    channels, power = _reference(path)
    for dst in ("cpu", "box0.psw"):
        assert len({tuple(c.energy_pJ_per_bit) for c in fabric.channels if c.dst == dst}) == 2
    assert _same_channels(fabric.channels, channels) and list(fabric.static_power_W.items()) == power
    _check_graph(fabric)


def test_reference_sees_a_difference() -> None:
    """The comparison fails when one field of one channel differs (the test can fail)."""
    path = TOPOLOGIES / "hgx_h100.yaml"
    fabric = builder.build_fabric(path, healthy=True)
    channels, _ = _reference(path)
    assert _same_channels(fabric.channels, channels)
    changed = replace(channels[1], latency_s=channels[1].latency_s * (1 + 1e-15))
    assert not _same_channels(fabric.channels, channels[:1] + [changed] + channels[2:])
    energy = channels[1].energy_pJ_per_bit
    reordered = replace(channels[1], energy_pJ_per_bit=MappingProxyType(dict(reversed(energy.items()))))
    assert len(energy) > 1 and not _same_channels(fabric.channels, channels[:1] + [reordered] + channels[2:])


GLOB_CHARS = "ab*?[]!-."


@given(names=st.lists(st.text(alphabet="ab.-[]*", max_size=5), max_size=8),
       globs=st.lists(st.text(alphabet=GLOB_CHARS, max_size=6), max_size=3))
def test_select_is_fnmatchcase(names: list[str], globs: list[str]) -> None:
    """One compiled pattern selects exactly the names ``fnmatchcase`` matches with any glob."""
    assert select(names, globs) == [n for n in names if any(fnmatchcase(n, g) for g in globs)]
