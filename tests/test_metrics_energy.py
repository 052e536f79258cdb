"""Energy accounting adds up: parts sum to the total, idle runs cost only static power."""

from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from simulator.engine.result import RunResult
from simulator.metrics.energy import energy_report
from simulator.topology import synthetic
from simulator.topology.fabric import Fabric


def _fabric_with_energy() -> Fabric:
    base = synthetic.single_link()
    pj = MappingProxyType({"gpu_serdes": 5.0, "optics": 20.0})
    channels = [replace(ch, energy_pJ_per_bit=pj) for ch in base.channels]
    return Fabric.from_parts("energy", base.nodes.values(), channels,
                             static_power_W={"switch_core": 100.0, "optics": 30.0})


def _result(channel_bytes, makespan_s) -> RunResult:
    n = len(channel_bytes)
    return RunResult(engine="flow", makespan_s=makespan_s, start_s=np.zeros(1), finish_s=np.zeros(1),
                     bytes_injected=int(sum(channel_bytes)), bytes_delivered=int(sum(channel_bytes)),
                     channel_bytes=np.asarray(channel_bytes), channel_busy_s=np.zeros(n),
                     channel_credit_stall_s=np.zeros(n))


def test_dynamic_energy_is_bits_times_pj_per_bit():
    fabric = _fabric_with_energy()
    report = energy_report(fabric, _result([1e9, 0], makespan_s=1e-3))
    assert report.dynamic_J["gpu_serdes"] == pytest.approx(8e9 * 5e-12)
    assert report.dynamic_J["optics"] == pytest.approx(8e9 * 20e-12)


def test_parts_sum_to_total_and_power_is_energy_over_time():
    fabric = _fabric_with_energy()
    report = energy_report(fabric, _result([3e8, 1e8], makespan_s=2e-3))
    parts = sum(report.static_J.values()) + sum(report.dynamic_J.values())
    assert report.total_J == pytest.approx(parts)
    assert report.average_power_W == pytest.approx(report.total_J / 2e-3)
    # transport energy per byte: the dynamic part only (static power is drawn whether or not bytes move)
    assert report.pJ_per_byte == pytest.approx(sum(report.dynamic_J.values()) / 4e8 * 1e12)
    assert report.pJ_per_byte < report.total_J / 4e8 * 1e12


def test_zero_traffic_costs_static_only():
    fabric = _fabric_with_energy()
    report = energy_report(fabric, _result([0, 0], makespan_s=1.0))
    assert report.total_dynamic_J == 0
    assert report.total_J == pytest.approx(130.0)
    assert report.average_power_W == pytest.approx(130.0)
