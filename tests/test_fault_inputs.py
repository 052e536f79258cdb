"""Fault inputs (issue 28, item 8): bench --json records the faults (a faulted run no longer looks
healthy), a route the faults cut blames --fault (not --gpus), a key given twice in a --fault flag
is an error (was: the last kept), --fault missing.yaml says no such file (was a schema message),
the shipped topologies/faults/ files work as --fault (was "unknown key 'name'"), --packet-bytes 0
is an error (was: the default); a hypothesis test over --fault flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.topology.fault_file import read_faults
from simulator.errors import InputError
from simulator.hardware.faults import parse_fault_flag
from simulator.topology.builder import build_fabric

ROOT = Path(__file__).resolve().parents[1]
HGX = str(ROOT / "topologies" / "hgx_h100.yaml")
NVL72 = str(ROOT / "topologies" / "gb200_nvl72.yaml")
_register()
runner = CliRunner()


def _refused(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [x for x in result.stderr.strip().splitlines() if not x.startswith("fabricsim: warning: ")]
    assert len(lines) == 1, result.stderr  # the error: one line (after what the faults did, as warnings)
    return lines[0]


def test_bench_json_records_the_faults(tmp_path):
    out = tmp_path / "b.json"
    fault = "link_down:from=hgx.gpu0,to=hgx.nvsw0"
    result = runner.invoke(app, ["bench", HGX, "--sizes", "1M", "--engine", "flow", "--fault", fault,
                                 "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["faults"] == ["link_down from=hgx.gpu0 to=hgx.nvsw0"]
    healthy = tmp_path / "h.json"
    assert runner.invoke(app, ["bench", HGX, "--sizes", "1M", "--engine", "flow", "--json", str(healthy)]).exit_code == 0
    assert json.loads(healthy.read_text())["faults"] == []


def test_run_json_records_the_faults_per_system(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\ntopologies: [{HGX}]\nengine: flow\nworkloads:\n"
                        "  - {kind: collective, name: ar, op: all_reduce, gpus: 8, sizes: 1M}\n")
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["run", str(scenario), "--fault", "link_down:from=hgx.gpu0,to=hgx.nvsw0",
                                 "--json", str(out)])
    assert result.exit_code == 0, result.output
    healthy, degraded = json.loads(out.read_text())["systems"]
    assert healthy["faults"] == [] and degraded["faults"] == ["link_down from=hgx.gpu0 to=hgx.nvsw0"]


def test_no_route_from_faults_blames_the_faults_not_gpus():
    line = _refused(["bench", HGX, "--sizes", "1M", "--engine", "flow", "--fault", "link_down:from=hgx.gpu0,to=*"])
    assert line.startswith("fabricsim: --fault: all_reduce cannot run on HGX H100 with its faults "
                           "(link_down from=hgx.gpu0 to=*): no route from hgx.gpu0 to hgx.gpu1")
    assert "--gpus" not in line


def test_a_key_given_twice_in_a_fault_flag_is_an_error():
    with pytest.raises(ValueError, match=r"'at' given twice \(at='1us' and at='2us'\)"):
        parse_fault_flag("link_down:from=a,to=b,at=1us,at=2us")
    line = _refused(["bench", HGX, "--sizes", "1M", "--fault", "link_down:from=hgx.gpu0,to=hgx.nvsw0,at=1us,at=2us"])
    assert "'at' given twice" in line and line.startswith("fabricsim: --fault: ")


def test_a_missing_fault_file_is_no_such_file(tmp_path):
    missing = tmp_path / "missing.yaml"
    assert _refused(["bench", HGX, "--sizes", "1M", "--fault", str(missing)]).startswith(
        f"fabricsim: {missing}: no such fault file")
    assert _refused(["bench", HGX, "--sizes", "1M", "--fault", str(tmp_path)]).startswith(
        f"fabricsim: {tmp_path}: is a folder")


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "topologies" / "faults").glob("*.yaml")))
def test_the_shipped_fault_topologies_are_accepted_by_fault(name):
    path = ROOT / "topologies" / "faults" / name
    specs, origins = read_faults([str(path)])
    assert specs and all(o.sources is not None and o.flag is None for o in origins)  # each at its FILE:LINE
    fabric = build_fabric(NVL72, specs, origins=origins)
    assert fabric.faults == list(build_fabric(path).faults)  # what the topology itself applies


def test_a_plain_fault_file_may_have_a_name_and_description(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("name: one link\ndescription: x\nfaults:\n  - {kind: link_down, from: hgx.gpu0, to: hgx.nvsw0}\n")
    assert len(read_faults([str(path)])[0]) == 1
    path.write_text("name: none\nfaults: []\n")
    with pytest.raises(InputError, match=r"f.yaml:2: .*names no faults"):
        read_faults([str(path)])
    path.write_text("nmae: typo\nfaults:\n  - {kind: link_down, from: hgx.gpu0, to: hgx.nvsw0}\n")
    with pytest.raises(InputError, match=r"f.yaml:1"):
        read_faults([str(path)])


@pytest.mark.parametrize("engine", ["flow", "packet"])
@pytest.mark.parametrize("value", ["0", "-5", "3"])
def test_packet_bytes_below_64_is_an_error_not_the_default(engine, value):
    line = _refused(["bench", HGX, "--sizes", "1M", "--engine", engine, "--packet-bytes", value])
    assert line == (f"fabricsim: --packet-bytes: must be at least 64 bytes (as in scenario and sweep files), got "
                    f"{value}; omit it for the run's own unit")


# --- fuzz: a --fault flag is a fault or one line naming --fault ----------------------------------

_KEYS = st.sampled_from(["from", "to", "links", "lanes", "ber", "device", "enclosure", "at", "kind", "x"])
_VALS = st.sampled_from(["hgx.gpu0", "hgx.nvsw*", "*", "hgx.gpu*", "nope", "0", "1", "8", "-1", "1e-8", "0.5",
                         "1e-3", "2", "1us", "1e9s", "-1us", "abc", "nan", "inf", "", "a|b", "hgx"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["link_down", "degraded_width", "switch_down", "retimer_down", "ber", "lnk_down", ""]),
       pairs=st.lists(st.tuples(_KEYS, _VALS), max_size=5), sep=st.sampled_from([",", ",,", ", "]))
def test_fuzzed_fault_flags_are_faults_or_one_line(kind, pairs, sep):
    flag = f"{kind}:" + sep.join(f"{k}={v}" for k, v in pairs)
    try:
        specs, origins = read_faults([flag])
        build_fabric(HGX, specs, origins=origins)
    except InputError as err:
        assert "\n" not in str(err) and (err.field == "--fault" or err.file), str(err)


@pytest.mark.parametrize("fault, words", [
    ("{kind: link_down, from: hgx.gpu0, to: hgx.nvsw0, at: .inf}", "faults[0].at: must be a finite time"),
    ("{kind: link_down, from: hgx.gpu0, to: hgx.nvsw0, at: 1e400}", "faults[0].at: must be a finite time"),
    ("{kind: ber, from: '*', to: '*', ber: .nan}", "faults[0].ber: Input should be a finite number"),
])
def test_a_fault_that_never_strikes_or_a_nan_ber_is_refused(tmp_path, fault, words):
    path = tmp_path / "f.yaml"
    path.write_text(f"faults: [{fault}]\n")
    with pytest.raises(InputError, match=r"f\.yaml:1: " + words.replace("[", r"\[").replace("]", r"\]")):
        read_faults([str(path)])
