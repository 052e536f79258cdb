"""Plots drawn from a fabric: utilization heatmap and tiered topology drawing, up to NVL72 size."""

from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.image import AxesImage

from simulator.engine.result import RunResult
from simulator.reports.plots import build_link_utilization_heatmap, build_topology_drawing
from simulator.reports.plots import link_utilization_heatmap, topology_drawing
from simulator.reports.plots._tiers import tiers
from simulator.reports.plots.utilization import utilization_grids
from simulator.topology import synthetic
from simulator.topology.fabric import Channel, Fabric, Node

ROOT = Path(__file__).resolve().parents[1]


def _pair(first_id, link, a, b, rate_Bps, fabric="nvlink", generation="nvlink5"):
    credit = synthetic.default_credit()
    return [Channel(id=first_id + i, link=link, src=s, dst=d, fabric=fabric, generation=generation, lanes=2,
                    line_rate_Bps=rate_Bps, rate_Bps=rate_Bps * 0.94, latency_s=1e-7, credit=credit)
            for i, (s, d) in enumerate(((a, b), (b, a)))]


def _fabric(name, nodes, links) -> Fabric:
    channels = []
    for link, spec in enumerate(links):
        channels += _pair(len(channels), link, *spec)
    return Fabric.from_parts(name, nodes, channels)


def nvl72_like() -> Fabric:
    """72 GPUs in 18 trays of 4, 18 switch chips in 9 trays of 2, one 50 GB/s link GPU-chip each."""
    nodes = [Node(f"gpu{i}", "gpu", "gb200", group=f"compute{i // 4}", rank=i) for i in range(72)]
    nodes += [Node(f"nvsw{j}", "switch", "nvswitch4", group=f"switch_tray{j // 2}") for j in range(18)]
    return _fabric("nvl72-like", nodes, [(f"gpu{i}", f"nvsw{j}", 50e9) for i in range(72) for j in range(18)])


def _result(fabric, util, makespan_s=1e-3) -> RunResult:
    n = len(fabric.channels)
    return RunResult(engine="flow", makespan_s=makespan_s, start_s=np.zeros(1), finish_s=np.zeros(1),
                     bytes_injected=0, bytes_delivered=0, channel_bytes=np.zeros(n),
                     channel_busy_s=np.asarray(util, dtype=float) * makespan_s,
                     channel_credit_stall_s=np.zeros(n))


@pytest.fixture(scope="module")
def nvl72():
    return nvl72_like()


def _channel(fabric, src, dst):
    return next(ch for ch in fabric.channels if ch.src == src and ch.dst == dst)


# ---------------------------------------------------------------- tiers


def test_tiers_put_gpus_low_nics_middle_switches_high_and_the_network_above():
    nodes = [Node("gpu0", "gpu", "g", group="srv0", rank=0), Node("nic0", "nic", "cx7", group="srv0"),
             Node("nvsw0", "switch", "s", group="srv0"), Node("leaf0", "switch", "ib"),
             Node("spine0", "switch", "ib")]
    fabric = _fabric("net", nodes, [("gpu0", "nvsw0", 50e9), ("gpu0", "nic0", 64e9, "pcie", "pcie5"),
                                     ("nic0", "leaf0", 50e9, "network", "ib_ndr"),
                                     ("leaf0", "spine0", 50e9, "network", "ib_ndr")])
    assert tiers(fabric) == {"gpu0": 0, "nic0": 1, "nvsw0": 2, "leaf0": 3, "spine0": 4}


# ---------------------------------------------------------------- heatmap


def test_heatmap_writes_a_png(tmp_path, nvl72):
    util = np.random.default_rng(0).uniform(0, 1, len(nvl72.channels))
    path = link_utilization_heatmap(nvl72, _result(nvl72, util), tmp_path / "util.png")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 20_000


def test_nvl72_heatmap_is_gpu_by_chip_per_direction_with_a_0_to_1_colorbar(nvl72):
    util = np.zeros(len(nvl72.channels))
    util[_channel(nvl72, "gpu5", "nvsw3").id] = 0.9
    util[_channel(nvl72, "nvsw17", "gpu70").id] = 0.4
    fig = build_link_utilization_heatmap(nvl72, _result(nvl72, util))
    up_ax, down_ax, colorbar_ax = fig.axes
    images = [ax.get_images()[0] for ax in (up_ax, down_ax)]
    assert all(isinstance(im, AxesImage) and im.get_clim() == (0.0, 1.0) for im in images)
    assert colorbar_ax.get_ylim() == (0.0, 1.0)
    up, down = (im.get_array() for im in images)
    assert up.shape == down.shape == (18, 18)  # a row per compute tray of 4 GPUs, their mean
    assert up[5 // 4, 3] == pytest.approx(0.9 / 4) and up.sum() == pytest.approx(0.9 / 4)
    assert down[70 // 4, 17] == pytest.approx(0.4 / 4) and down.sum() == pytest.approx(0.4 / 4)
    assert [t.get_text() for t in up_ax.get_yticklabels()][:3] == [f"compute{i} (4 GPUs)" for i in range(3)]
    assert "single links from 0% to 90%" in fig._suptitle.get_text()


def test_parallel_links_are_averaged_and_missing_links_masked():
    nodes = [Node(f"gpu{i}", "gpu", "g", rank=i) for i in range(2)] + [Node(f"sw{j}", "switch", "s") for j in range(2)]
    fabric = _fabric("parallel", nodes, [("gpu0", "sw0", 50e9), ("gpu0", "sw0", 50e9), ("gpu1", "sw1", 50e9)])
    util = np.zeros(len(fabric.channels))
    util[0], util[2] = 0.2, 0.6  # gpu0 -> sw0 on both parallel links
    rows, cols, up, down = utilization_grids(fabric, _result(fabric, util))
    assert rows == ["gpu0", "gpu1"] and cols == ["sw0", "sw1"]
    assert up[0, 0] == pytest.approx(0.4) and down[0, 0] == 0.0
    assert np.isnan(up[0, 1]) and np.isnan(up[1, 0])


def test_heatmap_refuses_a_result_from_another_fabric(nvl72):
    small = synthetic.single_link()
    with pytest.raises(ValueError, match="channels"):
        build_link_utilization_heatmap(nvl72, _result(small, np.zeros(2)))


# ---------------------------------------------------------------- topology drawing


def test_nvl72_drawing_has_one_line_per_link_gpus_below_chips(tmp_path, nvl72):
    fig = build_topology_drawing(nvl72)
    ax = fig.axes[0]
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines.get_segments()) == 18 * 9  # one line per compute tray x switch tray
    assert [t.get_text() for t in ax.get_yticklabels()] == ["GPUs", "NVLink switch chips"]
    points = np.vstack([c.get_offsets() for c in ax.collections if not isinstance(c, LineCollection)])
    assert len(points) == 90
    assert sorted(set(points[:, 1])) == [0.0, 1.0] and (points[:, 1] == 0).sum() == 72
    title = fig._suptitle.get_text()
    assert "72 GPUs" in title and "1296 physical links" in title
    assert topology_drawing(nvl72, tmp_path / "t.png").stat().st_size > 20_000


def test_line_width_is_proportional_to_per_direction_line_rate():
    nodes = [Node(f"gpu{i}", "gpu", "g", rank=i) for i in range(3)] + [Node("sw0", "switch", "s")]
    # gpu0: two parallel 50 GB/s links (100 GB/s per direction), gpu1: one, gpu2: one at 25 GB/s
    fabric = _fabric("widths", nodes, [("gpu0", "sw0", 50e9), ("gpu0", "sw0", 50e9), ("gpu1", "sw0", 50e9),
                                       ("gpu2", "sw0", 25e9)])
    ax = build_topology_drawing(fabric).axes[0]
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    widths = lines.get_linewidths()
    assert len(widths) == 3
    assert widths[0] / widths[1] == pytest.approx(2.0) and widths[1] / widths[2] == pytest.approx(2.0)
    legend = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    lanes = fabric.channels[0].lanes
    assert f"nvlink5 x{lanes}, 2 links per device pair: 100 GB/s per direction" in legend


def test_same_tier_links_are_arcs_that_clear_the_tier():
    ax = build_topology_drawing(synthetic.ring(6)).axes[0]
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    arcs = [seg for seg in lines.get_segments() if seg[0][1] == seg[-1][1]]
    assert len(arcs) == 6 and all(seg[:, 1].max() > seg[0][1] for seg in arcs)


def test_draws_the_shipped_gb200_nvl72(tmp_path):
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(ROOT / "topologies/gb200_nvl72.yaml")
    ax = build_topology_drawing(fabric).axes[0]
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert fabric.n_links == 1296 and len(lines.get_segments()) == 18 * 9  # tray-to-tray bundles
    assert topology_drawing(fabric, tmp_path / "nvl72.png").stat().st_size > 20_000
