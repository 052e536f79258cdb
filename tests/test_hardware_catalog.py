"""The catalog: every number sourced, strict parts files, FILE:LINE errors, extra parts files."""

import textwrap

import pytest

from simulator.errors import InputError
from simulator.hardware.catalog import load_catalog
from simulator.hardware.errors import HardwareError
from simulator.hardware.part import Part

CAT = load_catalog()


def _numeric_fields_without_source(part: Part) -> list[str]:
    """Independent of Part's own validator: every number set on a part needs a source entry."""
    missing = []
    for name in type(part).model_fields:
        value = getattr(part, name)
        is_num = isinstance(value, (int, float)) and not isinstance(value, bool)
        is_num_map = isinstance(value, dict) and value and all(isinstance(v, (int, float)) for v in value.values())
        explicitly_set = name in part.model_fields_set or value
        if (is_num or is_num_map) and explicitly_set and not part.sources.get(name, "").strip():
            missing.append(name)
    return missing


def test_every_part_in_the_catalog_is_sourced():
    count = 0
    for section, name, part in CAT.parts():
        for path, sub in part.walk(f"{section}.{name}"):
            assert not _numeric_fields_without_source(sub), (path, _numeric_fields_without_source(sub))
            count += 1
    assert count > 40


def test_derived_pcie_links_are_sourced_too():
    for width in (1, 4, 16):
        link = CAT.link("pcie6", width=width, max_payload_B=512)
        assert not _numeric_fields_without_source(link)


def test_expected_parts_exist():
    assert {"nvlink3", "nvlink4", "nvlink5", "ib_ndr", "pcie3", "pcie4", "pcie5", "pcie6"} <= set(CAT.links)
    assert {"a100", "h100", "h200", "b200", "gb200", "nvswitch2", "nvswitch3", "nvswitch4",
            "ib_switch_ndr", "cx7", "pcie5_switch", "host_cpu"} <= set(CAT.devices)
    assert set(CAT.cables) == {"trace", "copper_passive", "copper_active", "optical"}
    assert {"pcie5_retimer", "pcie6_retimer"} <= set(CAT.retimers)


def test_parts_are_frozen():
    with pytest.raises(Exception):
        CAT.link("nvlink5").pairs_per_direction = 4


def test_unknown_part_lists_choices():
    with pytest.raises(HardwareError, match="unknown device 'h900'; known: a100, b200"):
        CAT.device("h900")


def _write(tmp_path, text, name="extra.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_extra_parts_file_adds_a_part_with_units(tmp_path):
    path = _write(tmp_path, """\
        cables:
          long_copper:
            kind: copper_active
            ns_per_m: 4.5
            classes:
              - {lane_rate_bps: 100 Gbps, reach_m: 7 m, module_lanes: 8, module_power_W: 7 W,
                 sources: {lane_rate_bps: a, reach_m: b, module_lanes: c, module_power_W: d}}
            sources: {ns_per_m: "datasheet: <= 4.5 ns/m"}
        """)
    cat = load_catalog([path])
    cable = cat.cable("long_copper")
    assert cable.reach_m(100e9) == 7.0 and cable.classes[0].module_power_W == 7.0
    assert "long_copper" not in load_catalog().cables     # built-in catalog untouched


@pytest.mark.parametrize("body, line, field, message", [
    ("""\
     devices:
       gpu_x:
         kind: gpu
         ports: {nvlink: 4}
         sources: {ports: "assumption: test"}
     """, 2, "devices.gpu_x", "gpu device needs a 'gpu' section"),
    ("""\
     links:
       mylink:
         fabric: nvlink
         lane: pam4_100g
         pairs_per_direction: 2
         protocol_efficiency: 0.8
         phy_latency_s: 10 ns
         credit_buffer_B: 4096
         credit_unit_B: 16
         credit_return_delay_s: 0
         sources: {pairs_per_direction: x, protocol_efficiency: x, credit_buffer_B: x, credit_unit_B: x}
     """, 2, "links.mylink", "no source for phy_latency_s"),
    ("""\
     retimers:
       r:
         generation: pcie5
         lanes: 16
         latency_s: 64 m
     """, 5, "retimers.r.latency_s", "is a length, expected a time"),
    ("""\
     cables:
       c:
         kind: copper
     """, 3, "cables.c.kind", "Input should be"),
    ("""\
     links:
       l2:
         lane: pam9
     """, 3, "links.l2.lane", "unknown SerDes lane 'pam9'"),
    ("""\
     devices:
       sw9:
         kind: switch
         ports: {nvlink: 8}
         generations: {nvlink: nvlink9}
         sources: {ports: "assumption: test"}
     """, 5, "devices.sw9.generations.nvlink", "unknown link generation 'nvlink9'"),
    ("""\
     widgets: {}
     """, 1, "widgets", "unknown section"),
    ("""\
     devices:
       x: [1, 2
     """, 3, None, "YAML syntax error"),
])
def test_bad_parts_file_reports_file_line_field(tmp_path, body, line, field, message):
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        load_catalog([path])
    e = err.value
    assert e.file == str(path) and e.line == line and e.field == field
    assert message in str(e)
    assert str(e).startswith(f"{path}:{line}: ")
    assert "\n" not in str(e)


def test_redefining_a_builtin_part_names_both_files(tmp_path):
    path = _write(tmp_path, """\
        retimers:
          pcie6_retimer: {generation: pcie6}
        """)
    with pytest.raises(InputError, match=r"extra.yaml:2: retimers.pcie6_retimer: part 'pcie6_retimer' "
                                         r"is already defined in .*retimers.yaml"):
        load_catalog([path])


def test_a_pcie_name_collides_with_a_link_name(tmp_path):
    path = _write(tmp_path, "links:\n  pcie5: {}\n")
    with pytest.raises(InputError, match="already defined in .*pcie.yaml"):
        load_catalog([path])


def test_missing_parts_file(tmp_path):
    with pytest.raises(InputError, match="cannot read parts file"):
        load_catalog([tmp_path / "nope.yaml"])


def test_unpublished_figures_are_labelled_assumptions():
    """A source that admits a guess must say so up front, so audits can grep 'assumption:'."""
    labelled = 0
    for section, name, part in CAT.parts():
        for path, sub in part.walk(f"{section}.{name}"):
            for field, text in sub.sources.items():
                low = text.lower()
                assert len(text) >= 10, (path, field)
                if "unpublished" in low or "guess" in low:
                    assert low.startswith("assumption:"), (path, field, text)
                labelled += low.startswith("assumption:")
    assert labelled > 20
