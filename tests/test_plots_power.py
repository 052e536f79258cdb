"""Power breakdown: bar tops equal the energy report's totals, static solid and dynamic hatched."""

from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from simulator.engine.result import RunResult
from simulator.metrics.energy import EnergyReport, energy_report
from simulator.reports.plots import build_power_breakdown, power_breakdown
from simulator.reports.plots.power import DYNAMIC_HATCH
from simulator.topology import synthetic
from simulator.topology.fabric import Fabric


def _report(static_W, pj, channel_bytes=(1e9, 5e8), makespan_s=2e-3) -> EnergyReport:
    base = synthetic.single_link()
    channels = [replace(ch, energy_pJ_per_bit=MappingProxyType(pj)) for ch in base.channels]
    fabric = Fabric.from_parts("p", base.nodes.values(), channels, static_power_W=static_W)
    n = len(channels)
    result = RunResult(engine="flow", makespan_s=makespan_s, start_s=np.zeros(1), finish_s=np.zeros(1),
                       bytes_injected=int(sum(channel_bytes)), bytes_delivered=int(sum(channel_bytes)),
                       channel_bytes=np.asarray(channel_bytes), channel_busy_s=np.zeros(n),
                       channel_credit_stall_s=np.zeros(n))
    return energy_report(fabric, result)


COPPER = _report({"switch_chip": 3000.0, "gpu_serdes": 500.0}, {"gpu_serdes": 5.0, "switch_serdes": 4.0})
OPTICAL = _report({"switch_chip": 3000.0, "gpu_serdes": 500.0, "optics": 20000.0},
                  {"gpu_serdes": 5.0, "switch_serdes": 4.0, "optics": 15.0})


def _bars(ax):
    """x position -> list of (height, hatched) segments."""
    bars: dict[float, list] = {}
    for patch in ax.patches:
        bars.setdefault(round(patch.get_x() + patch.get_width() / 2, 6), []).append(
            (patch.get_height(), patch.get_hatch() == DYNAMIC_HATCH))
    return [bars[x] for x in sorted(bars)]


def test_writes_a_png(tmp_path):
    path = power_breakdown({"copper": COPPER, "optical": OPTICAL}, tmp_path / "power.png")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 5_000


@pytest.mark.parametrize("quantity", ["power_W", "energy_J"])
def test_bar_tops_are_the_reports_totals(quantity):
    ax = build_power_breakdown({"copper": COPPER, "optical": OPTICAL}, quantity).axes[0]
    for bar, report in zip(_bars(ax), (COPPER, OPTICAL)):
        total = report.average_power_W if quantity == "power_W" else report.total_J
        static = sum(report.static_W.values()) * (1 if quantity == "power_W" else report.duration_s)
        assert sum(h for h, _ in bar) == pytest.approx(total)
        assert sum(h for h, dyn in bar if not dyn) == pytest.approx(static)
    assert ("W" in ax.get_ylabel()) == (quantity == "power_W")


def test_static_first_then_dynamic_one_segment_per_nonzero_kind():
    ax = build_power_breakdown({"optical": OPTICAL}).axes[0]
    (bar,) = _bars(ax)
    assert [dyn for _, dyn in bar] == [False] * 3 + [True] * 3
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["gpu_serdes", "optics", "switch_chip", "switch_serdes", "static (solid)", "dynamic (hatched)"]


def test_dict_input_matches_report_input():
    a = _bars(build_power_breakdown({"x": OPTICAL}).axes[0])
    b = _bars(build_power_breakdown({"x": OPTICAL.as_dict()}).axes[0])
    assert a == b


def test_zero_traffic_is_static_only():
    idle = _report({"switch_chip": 3000.0}, {"gpu_serdes": 5.0}, channel_bytes=(0, 0))
    (bar,) = _bars(build_power_breakdown({"idle": idle}).axes[0])
    assert bar == [(3000.0, False)]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="quantity"):
        build_power_breakdown({"x": COPPER}, "volts")
    with pytest.raises(ValueError, match="zero duration"):
        build_power_breakdown({"x": EnergyReport(0.0, {"a": 1.0}, {"a": 1.0}, 1)})
    with pytest.raises(ValueError):
        build_power_breakdown({})
