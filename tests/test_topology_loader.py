"""YAML loading: line numbers through ``extends``, merge rules, patterns, own parts files."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.errors import InputError
from simulator.topology.builder import build_fabric
from simulator.topology.loader import load_yaml
from simulator.topology.patterns import pairs
from simulator.topology.validate import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_source_map_points_at_keys_and_items(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.yaml", "name: x\ndevices:\n  - name: gpu\n    part: h100\n")
    data, sources = load_yaml(path)
    assert data == {"name": "x", "devices": [{"name": "gpu", "part": "h100"}]}
    assert sources.where(("devices", 0, "part")) == (str(path), 4)
    assert sources.where(("devices", 0, "count")) == (str(path), 3)  # not written: its item


def test_extends_merges_named_items_and_keeps_each_files_lines(tmp_path: Path) -> None:
    base = TOPOLOGIES / "hgx_h100.yaml"
    child = _write(tmp_path, "child.yaml", f"extends: {base}\nname: child\nenclosures:\n"
                   "  - name: hgx\n    devices:\n      - {name: gpu, part: h200}\n")
    model = load_topology(child)
    enc = model.enclosures[0]
    assert [d.name for d in enc.devices] == ["gpu", "nvsw", "psw", "cpu"]
    assert enc.devices[0].part == "h200" and enc.devices[0].count == 8  # count kept from the base
    assert model.sources.where(("enclosures", 0, "devices", 0, "part")) == (str(child), 6)
    assert model.sources.where(("enclosures", 0, "devices", 1, "part"))[0] == str(base)


def test_error_from_base_line_after_override(tmp_path: Path) -> None:
    """Swapping HGX GPUs for A100s breaks the base file's nvlink4 link: the error points there."""
    base = TOPOLOGIES / "hgx_h100.yaml"
    child = _write(tmp_path, "child.yaml", f"extends: {base}\nname: child\nenclosures:\n"
                   "  - name: hgx\n    devices:\n      - {name: gpu, part: a100}\n")
    with pytest.raises(InputError) as err:
        build_fabric(child)
    assert err.value.file == str(base) and err.value.line == _line_of(base, "name: nvlink,")
    assert "runs nvlink3, not nvlink4" in str(err.value)


def test_optical_variant_changes_only_the_spine_cable() -> None:
    copper = load_topology(TOPOLOGIES / "gb200_nvl72.yaml")
    optical = load_topology(TOPOLOGIES / "gb200_nvl72_optical.yaml")
    assert optical.enclosures == copper.enclosures
    assert optical.links[0].cable.kind == "optical" and copper.links[0].cable.kind == "copper_passive"
    assert optical.links[0].model_copy(update={"cable": copper.links[0].cable}) == copper.links[0]


@pytest.mark.parametrize("text,needle,message", [
    ("name: a\nname: b\n", "name: b", "duplicate key 'name'"),
    ("extends: loop.yaml\nname: a\n", "extends", "extends itself"),
    ("- just\n- a list\n", "- just", "must be a mapping"),
    ("name: a\ndevices: [{name: gpu, part: h100}]\nlinks:\n  - {from: gpu, to: gpu, generation: nvlink4}\n",
     "from: gpu", "linked to itself"),
    ("name: a\ndevices: [{name: gpu, part: h100, count: 3}]\nlinks:\n"
     "  - {from: gpu0, to: [gpu1, gpu2], pattern: one_to_one, generation: nvlink4}\n",
     "pattern: one_to_one", "one_to_one needs equal selections"),
    ("name: a\ndevices: [{name: gpu, part: h100}, {name: leaf, part: ib_switch_ndr}]\nlinks:\n"
     "  - {from: gpu, to: leaf, generation: nvlink4}\n", "generation", "leaf (ib_switch_ndr) has no nvlink ports"),
])
def test_located_errors(tmp_path: Path, text: str, needle: str, message: str) -> None:
    path = _write(tmp_path, "loop.yaml", text)
    with pytest.raises(InputError) as err:
        build_fabric(path)
    assert err.value.file == str(path) and err.value.line == _line_of(path, needle)
    assert message in str(err.value)


def test_pcie_lane_budget(tmp_path: Path) -> None:
    # a 128-lane host takes at most 8 x16 links; the 9th breaks the budget
    path = _write(tmp_path, "t.yaml", "name: a\ndevices:\n  - {name: gpu, part: h100, count: 9}\n"
                  "  - {name: cpu, part: host_cpu}\nlinks:\n"
                  "  - {from: 'gpu*', to: cpu, generation: pcie5, width: 16}\n")
    with pytest.raises(InputError, match="has 128 pcie lanes but the links use 144"):
        build_fabric(path)


def test_own_parts_file(tmp_path: Path) -> None:
    parts = _write(tmp_path, "my_parts.yaml", """\
devices:
  tiny_switch:
    kind: switch
    ports: {nvlink: 4}
    generations: {nvlink: nvlink4}
    latency_s: 50 ns
    static_power_W: 7 W
    sources: {ports: "test part", latency_s: "assumption: test", static_power_W: "assumption: test"}
""")
    topo = _write(tmp_path, "t.yaml", f"name: a\nparts: [{parts.name}]\ndevices:\n"
                  "  - {name: gpu, part: h100, count: 4}\n  - {name: sw, part: tiny_switch}\n"
                  "links:\n  - {from: 'gpu*', to: sw, generation: nvlink4}\n")
    fabric = build_fabric(topo)
    assert fabric.nodes["sw"].latency_s == pytest.approx(50e-9)
    assert fabric.static_power_W["switch_chip"] == pytest.approx(7.0)


@pytest.mark.parametrize("pattern,n_a,n_b,expected", [
    ("all", 2, 2, [(0, 0), (0, 1), (1, 0), (1, 1)]),
    ("one_to_one", 3, 3, [(0, 0), (1, 1), (2, 2)]),
    ("blocks", 4, 2, [(0, 0), (1, 0), (2, 1), (3, 1)]),
    ("blocks", 2, 4, [(0, 0), (0, 1), (1, 2), (1, 3)]),
    ("round_robin", 5, 2, [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]),
])
def test_patterns(pattern: str, n_a: int, n_b: int, expected: list[tuple[int, int]]) -> None:
    a, b = [f"a{i}" for i in range(n_a)], [f"b{j}" for j in range(n_b)]
    assert pairs(pattern, a, b, [1]) == [(a[i], b[j], 1) for i, j in expected]


def test_links_per_pair_by_destination() -> None:
    joined = pairs("all", ["g"], ["s0", "s1", "s2", "s3"], [5, 4, 4, 5])
    assert [n for _, _, n in joined] == [5, 4, 4, 5]
    with pytest.raises(ValueError, match="one per 'to' device"):
        pairs("all", ["g"], ["s0", "s1"], [5, 4, 4])
