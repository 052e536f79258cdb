"""The retry lab: the seeded go-back-N simulation agrees with the closed form of hardware.retry."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.workloads.labs.retry import retry_row, retry_sweep


@pytest.mark.parametrize("buffer_B, ber", [(4096, 1e-5), (65536, 1e-5), (65536, 1e-6), (2048, 1e-7)])
def test_simulation_agrees_with_closed_form_within_3_percent(buffer_B, ber):
    row = retry_row("nvlink5", ber, buffer_B)
    assert abs(row["error_pct"]) < 3.0


def test_small_replay_buffer_stalls_the_link_without_errors():
    """No errors: goodput = rate x window / round trip while the buffer is below the round trip."""
    row = retry_row("nvlink5", 1e-15, 4096, packets=5000)
    assert row["window_packets"] < row["round_trip_packets"]
    assert row["closed_form_GBps"] == pytest.approx(
        row["rate_GBps"] * row["window_packets"] / row["round_trip_packets"], rel=1e-6)


def test_same_seed_same_result_and_pcie_runs():
    a = retry_sweep("pcie5", bers=(1e-6,), buffers=(8192,), packets=3000, seed=4)
    b = retry_sweep("pcie5", bers=(1e-6,), buffers=(8192,), packets=3000, seed=4)
    assert a == b and a[0]["packet_bytes"] == 284


def test_cli_json_and_bad_flag():
    _register()
    r = CliRunner().invoke(app, ["lab", "retry", "--bers", "1e-6", "--buffers", "16K", "--packets", "2000", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)[0]["replay_buffer_bytes"] == 16384
    r = CliRunner().invoke(app, ["lab", "retry", "--bers", "x"])
    assert r.exit_code == 2 and "bers" in r.output
