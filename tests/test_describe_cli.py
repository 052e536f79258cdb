"""``fabricsim describe``: one JSON object on stdout with --json, rich tables otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"
KEYS = {"name", "gpus", "switch_chips", "links", "lane_pairs", "per_gpu_GBps", "bisection_GBps",
        "power_W", "cables", "warnings"}


def _describe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simulator", "describe", *args],
                          capture_output=True, text=True, timeout=120)


def test_json_is_exactly_one_object() -> None:
    proc = _describe(str(TOPOLOGIES / "gb200_nvl72.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole stdout, nothing else
    assert KEYS <= set(summary)
    assert (summary["gpus"], summary["switch_chips"], summary["links"], summary["lane_pairs"]) == (72, 18, 1296, 5184)
    assert summary["per_gpu_GBps"]["nvlink"] == {"per_direction": 900.0, "bidirectional": 1800.0}
    assert summary["power_W"]["total"] == sum(v for k, v in summary["power_W"].items() if k != "total")


def test_rich_summary_names_directions() -> None:
    proc = _describe(str(TOPOLOGIES / "hopper_ib_rack.yaml"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "72 GPUs" in out and "per direction" in out and "bidirectional" in out
    assert "per GPU, network" in out and "optics" in out


def test_bandwidth_is_the_data_rate() -> None:
    """describe's per-GPU figure is the data rate (after encoding/FEC), the level the glossary
    names: not the raw line rate, not the payload rate after protocol overhead."""
    from simulator.hardware.catalog import load_catalog

    proc = _describe(str(TOPOLOGIES / "gb200_nvl72.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    per_gpu = json.loads(proc.stdout)["per_gpu_GBps"]["nvlink"]["per_direction"]
    link = load_catalog().links["nvlink5"]
    data, line = link.line_rate_Bps / 1e9, link.pairs_per_direction * link.lane.rate_bps / 8e9
    assert per_gpu == 18 * data == 900.0
    assert per_gpu not in (18 * line, 18 * link.payload_rate_Bps / 1e9)
