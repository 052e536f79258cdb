"""Sweep files: the product of the axes, content hashes, and one FILE:LINE line for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simulator.errors import InputError
from simulator.runner.sweep_file import load_sweep

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def test_shipped_sweeps_expand_to_the_product_of_their_axes():
    credit = load_sweep(ROOT / "scenarios" / "sweep_credit_buffer.yaml")
    assert credit.kind == "credit_lab" and len(credit.points) == 6 * 3
    assert credit.points[1].axes == {"buffer": "2K", "cable_m": 5}  # last axis fastest
    assert credit.points[1].payload["spec"]["buffer"] == 2048
    rack = load_sweep(ROOT / "scenarios" / "sweep_rack_scale.yaml")
    assert rack.kind == "bench" and len(rack.points) == 3 * 3 * 2
    assert len({p.digest for p in rack.points}) == 18


def test_digest_changes_with_the_inputs_not_with_the_file_name(tmp_path):
    text = ("name: s\nbase:\n  bench: {{topology: {t}, engine: flow}}\naxes:\n"
            "  topology.links.rails.cable.length: [10 m, {length}]\n")
    topo = ROOT / "topologies" / "hopper_ib_rack.yaml"
    a = load_sweep(_write(tmp_path, text.format(t=topo, length="20 m")))
    (tmp_path / "other").mkdir()
    b_path = tmp_path / "other" / "renamed.yaml"
    b_path.write_text(text.format(t=topo, length="30 m"))
    b = load_sweep(b_path)
    assert a.points[0].digest == b.points[0].digest  # same inputs, same key
    assert a.points[1].digest != b.points[1].digest  # 20 m vs 30 m
    rails = next(link for link in b.points[1].payload["topology"]["links"] if link["name"] == "rails")
    assert rails["cable"]["length"] == "30 m"


def test_digest_changes_with_the_code_so_a_changed_model_never_reads_old_rows(monkeypatch):
    """The version number stays the same across changes of the model; the code's own hash does not."""
    import simulator.runner.sweep_file as sweep_file
    from simulator.runner.cache import code_fingerprint

    path = ROOT / "scenarios" / "sweep_rack_scale.yaml"
    before = load_sweep(path).points[0].digest
    assert len(code_fingerprint()) == 64 and load_sweep(path).points[0].digest == before
    monkeypatch.setattr(sweep_file, "code_fingerprint", lambda: "another model")
    assert load_sweep(path).points[0].digest != before


@pytest.mark.parametrize("text, line, words", [
    ("name: s\nbase:\n  credit_lab: {}\naxes:\n  bufer: [4K]\n", 5, "unknown axis 'bufer'"),
    ("name: s\nbase:\n  credit_lab: {}\naxes:\n  buffer: [4K, 12Q]\n", 5, "buffer = '12Q'"),
    ("name: s\nbase:\n  credit_lab: {}\n  scenario: x.yaml\naxes:\n  buffer: [4K]\n", 2, "exactly one"),
    ("name: s\nbase:\n  credit_lab: {}\naxes: {}\n", 4, "axes"),
    ("name: s\nbase:\n  bench: {topology: TOPO}\naxes:\n  topology.links.railz.generation: [ib_ndr]\n", 5,
     "no item named 'railz'"),
    ("name: s\nbase:\n  bench: {topology: missing.yaml}\naxes:\n  gpus: [8]\n", 3, "no such file"),
])
def test_bad_sweep_files_name_file_line_and_field(tmp_path, text, line, words):
    path = _write(tmp_path, text.replace("TOPO", str(ROOT / "topologies" / "hopper_ib_rack.yaml")))
    with pytest.raises(InputError) as err:
        load_sweep(path)
    assert f"{path}:{line}:" in str(err.value) and words in str(err.value)


def test_cli_exits_2_with_one_line(tmp_path):
    path = _write(tmp_path, "name: s\nbase:\n  credit_lab: {}\naxes:\n  bufer: [4K]\n")
    proc = subprocess.run([sys.executable, "-m", "simulator", "sweep", str(path)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and f"{path}:5:" in proc.stderr and "Traceback" not in proc.stderr


# --- every axis value checked when the file loads (issue 28, item 7) ------------------------------

HGX = ROOT / "topologies" / "hgx_h100.yaml"
BENCH = f"name: s\nbase:\n  bench: {{topology: {HGX}, engine: flow, bytes: 1M}}\naxes:\n"
LAB = "name: s\nbase:\n  credit_lab: {}\naxes:\n"


@pytest.mark.parametrize("text, words", [
    (BENCH + "  algo: [ring, rign]\n", "algo = 'rign': unknown algo 'rign'; choose auto, ring, tree, direct, nvls, "
                                       "nvls_tree, collnet_chain, pat, hierarchical; did you mean 'ring'?"),
    (BENCH + "  op: [all_reduce, allreduce]\n", "op = 'allreduce': unknown op 'allreduce'"),
    (BENCH + "  protocol: [Simple, simpel]\n", "did you mean 'Simple'?"),
    (BENCH + "  gpus: [8, 100000]\n", "gpus = 100000: HGX H100 has 8 GPUs, asked for 100000"),
    (LAB + "  generation: [nvlink5, nvlink9]\n", "generation = 'nvlink9': unknown link generation 'nvlink9'"),
    (LAB + "  cable_m: [1, .inf]\n", "cable_m = inf: Input should be a finite number"),
    (LAB + "  cable_m: [1, 100000]\n", "cable_m = 100000:"),
    (LAB + "  buffer: [4K, 99999999999T]\n", "buffers must be at most 16777216 B (16 MiB)"),
])
def test_a_bad_axis_value_is_refused_at_its_line_before_any_point_runs(tmp_path, text, words):
    """Was: the valid points simulated, then exit 1 'point 1 ... failed' without the sweep's line
    (and OverflowError for the buffer)."""
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_sweep(path)
    assert str(err.value).startswith(f"{path}:5: axes.") and words in str(err.value), str(err.value)
    assert "Error:" not in str(err.value) and "\n" not in str(err.value)


def test_a_dotted_axis_error_cites_the_sweep_file_not_the_topology(tmp_path):
    topo = ROOT / "topologies" / "hopper_ib_rack.yaml"
    path = _write(tmp_path, f"name: s\nbase:\n  bench: {{topology: {topo}, engine: flow}}\naxes:\n"
                            "  topology.links.rails.cable.length: [10 m,\n    9000 m]\n")
    with pytest.raises(InputError) as err:
        load_sweep(path)
    text = str(err.value)
    assert text.startswith(f"{path}:6: axes.topology.links.rails.cable.length[1]: "
                           "topology.links.rails.cable.length = '9000 m': links[0].cable.length: optical cable")
    assert str(topo) not in text


def test_a_scenario_axis_is_checked_against_the_topologies(tmp_path):
    scenario = ROOT / "scenarios" / "nvl72_vs_hopper.yaml"
    path = _write(tmp_path, f"name: s\nbase:\n  scenario: {scenario}\naxes:\n  seed: [1]\n"
                            f"  topology: [{HGX}]\n")
    with pytest.raises(InputError) as err:
        load_sweep(path)
    assert str(err.value).startswith(f"{path}:6: axes.topology[0]: ") and "has 8" in str(err.value)


def test_a_bad_base_is_blamed_on_the_base(tmp_path):
    path = _write(tmp_path, f"name: s\nbase:\n  bench: {{topology: {HGX}, gpus: 99}}\naxes:\n  algo: [ring, tree]\n")
    with pytest.raises(InputError, match=r":2: base: the base case: gpus: HGX H100 has 8 GPUs, asked for 99"):
        load_sweep(path)


_VALUES = st.one_of(st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(["ring", "rign", "tree", "auto", "Simple", "LL", "ll128", "nvlink5", "nvlink9",
                                     "ib_ndr", "pcie5", "4K", "64K", "12Q", "1e3", "-8", "99999999999T", "0",
                                     "all_reduce", "alltoall", "h2d", "p2p", "packet", "flow", ".inf", "", "~"]),
                    st.text(max_size=6), st.booleans(), st.none())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["bench", "lab"]), data=st.data())
def test_fuzzed_axis_values_load_or_are_one_line_at_the_sweep_file(tmp_path, kind, data):
    axes = ["op", "gpus", "bytes", "algo", "protocol", "engine", "packet_bytes", "seed"] if kind == "bench" else \
        ["generation", "buffer", "cable_m"]
    name = data.draw(st.sampled_from(axes))
    values = data.draw(st.lists(_VALUES, min_size=1, max_size=3))
    path = tmp_path / "fuzz.yaml"
    path.write_text((BENCH if kind == "bench" else LAB) + f"  {name}: {json.dumps(values)}\n")
    try:
        sweep = load_sweep(path)
    except InputError as err:
        assert str(err).startswith(f"{path}:") and "\n" not in str(err), str(err)
        return
    # what loads runs: every point's inputs pass the checks a worker makes (a cheap one: no simulation)
    from simulator.runner.sweep_check import PointCheck
    for point in sweep.points:
        PointCheck().check(point.payload)


@pytest.mark.parametrize("axes, line, words", [
    ("  gpus: [1]\n", 5, "axes.gpus[0]: gpus = 1: algo: no algorithm/protocol can run all_reduce on these 1 GPUs"),
    ("  algo: [nvls]\n  op: [alltoall]\n", 4, "axes: point 0 (algo=nvls, op=alltoall): algo: nvls cannot run "
                                              "alltoall here: nvls does not implement alltoall"),
])
def test_a_collective_no_algorithm_can_run_is_refused_at_load(tmp_path, axes, line, words):
    path = _write(tmp_path, BENCH + axes)
    with pytest.raises(InputError) as err:
        load_sweep(path)
    assert str(err.value).startswith(f"{path}:{line}: {words}"), str(err.value)


def test_a_scenario_sweep_finds_chakra_traces_beside_the_scenario(tmp_path):
    from simulator.runner.sweep_points import execute

    scenario = ROOT / "scenarios" / "chakra_tp_layer.yaml"
    path = _write(tmp_path, f"name: s\nbase:\n  scenario: {scenario}\naxes:\n  seed: [1]\n")
    (point,) = load_sweep(path).points
    rows = execute({k: v for k, v in point.payload.items() if k != "hashed"})["rows"]  # was: no trace files
    assert [r["ranks"] for r in rows] == [8, 8] and not any(isinstance(v, list) for r in rows for v in r.values())
    bad = _write(tmp_path, f"name: s\nbase:\n  scenario: {scenario}\naxes:\n"
                           "  scenario.workloads.TP8 layer forward.chakra: [nowhere]\n")
    with pytest.raises(InputError, match=r"sweep.yaml:5: .*no Chakra trace files"):
        load_sweep(bad)
