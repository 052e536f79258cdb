"""Sweep files: the product of the axes, content hashes, and one FILE:LINE line for bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    assert rack.kind == "bench" and len(rack.points) == 3 * 2 * 2
    assert len({p.digest for p in rack.points}) == 12


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
