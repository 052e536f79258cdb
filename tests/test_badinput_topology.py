"""Bad topology files: exit code 2, one line ``FILE:LINE: field: what is wrong``, no traceback.

Runs the real console entry point (``python -m simulator``) in a subprocess, so the test sees
exactly what a user sees on stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BAD = Path(__file__).parent / "data" / "bad"

# file, line, text the message must contain (field path and the physics of the complaint)
CASES = [
    ("broken_yaml.yaml", 4, "YAML syntax error"),
    ("wrong_type.yaml", 3, "devices[0].count: Input should be a valid integer"),
    ("unknown_key.yaml", 8, "links[0].colour: unknown key 'colour' (allowed: name, from, to"),
    ("unknown_part.yaml", 4, "devices[1].part:"),
    ("bad_unit.yaml", 8, "links[0].cable.length: '3 ns' is a time, expected a length"),
    ("too_many_retimers.yaml", 10, "links[0].retimers: a PCIe link takes at most 2 retimers"),
    ("copper_reach.yaml", 8, "links[0].cable.length: passive copper at 200 Gb/s per lane reaches"),
    ("too_many_links.yaml", 8, "has 12 nvlink ports but the links give it 18"),
    ("dangling.yaml", 6, "links[1].to: no device matches nvswitch0"),
    ("missing_parts_file.yaml", 2, "parts[0]:"),
    ("scheduling_on_gpu.yaml", 8, "devices[2].scheduling: extra is a gpu (h100); only switches have"),
    ("unknown_allocator.yaml", 7, "devices[1].scheduling.arbiter: Input should be 'round_robin', 'islip'"),
]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simulator", "describe", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name,line,text", CASES, ids=[c[0].removesuffix(".yaml") for c in CASES])
def test_bad_topology_is_one_located_line(name: str, line: int, text: str) -> None:
    path = BAD / name
    proc = _run(str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{path}:{line}: " in lines[0]
    assert text in lines[0]


def test_unknown_part_names_the_known_parts() -> None:
    proc = _run(str(BAD / "unknown_part.yaml"))
    assert "nvswitch9" in proc.stderr and "nvswitch4" in proc.stderr and "h100" in proc.stderr


def test_missing_file() -> None:
    proc = _run("no/such/topology.yaml")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "fabricsim: no/such/topology.yaml: no such topology file (nor a shipped topology of that name: see fabricsim list)")
