"""Figures people can read: no overlapping labels, no hidden points, every entry shown."""

from matplotlib.backends.backend_agg import FigureCanvasAgg

from simulator.metrics.energy import EnergyReport
from simulator.reports.plots.power import build_power_breakdown
from simulator.reports.plots.validation import build_validation_figure


def _overlaps(fig, texts) -> list[tuple[str, str]]:
    """Pairs of visible texts whose drawn boxes intersect."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_text() and t.get_visible()]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


def test_power_plot_system_names_never_overlap():
    report = EnergyReport(duration_s=1.0, static_W={"switch_chip": 5e3}, dynamic_J={"gpu_serdes": 1e3},
                          bytes_delivered=1)
    names = ["GB200 NVL72", "Hopper IB rack (9 x HGX H100)", "GB200 NVL72 x8 over InfiniBand", "DGX A100",
             "HGX H100"]
    fig = build_power_breakdown({n: report for n in names})
    ax = fig.axes[0]
    assert _overlaps(fig, ax.get_xticklabels()) == []
    assert [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()] == names  # wrapped, not cut


ROWS = [
    {"name": "HGX H100 ring all_reduce 8 GPUs", "topology": "topologies/hgx_h100.yaml", "algo": "ring", "gpus": 8,
     "bytes": 8 << 30, "metric": "busbw_GBps", "predicted": 360.0, "published": 362.0, "error_pct": -0.6,
     "passed": True},
    {"name": "NVL72 all_reduce 72 GPUs 512 MiB", "topology": "topologies/gb200_nvl72.yaml", "algo": "nvls",
     "gpus": 72, "bytes": 512 << 20, "metric": "busbw_GBps", "predicted": 810.0, "published": 585.0,
     "error_pct": 38.5, "passed": False},
    {"name": "DGX A100 all_reduce 8 B on 8 GPUs (latency)", "topology": "topologies/dgx_a100.yaml", "algo": "ring",
     "gpus": 8, "bytes": 8, "metric": "time_us", "predicted": 23.0, "published": 25.0, "error_pct": -8.0,
     "passed": True},
]


def test_validation_plot_shows_every_entry_and_single_predictions_over_their_stars():
    fig = build_validation_figure(ROWS, 10.0)
    top, bottom = fig.axes
    # the lone HGX prediction is a hollow ring drawn above its published star
    (line,) = [ln for ln in top.get_lines() if ln.get_label().startswith("hgx_h100 ring 8 GPUs")]
    stars = [c for c in top.collections if c.get_label().startswith("hgx_h100 ring 8 GPUs")]
    assert line.get_markerfacecolor() == "none" and line.get_zorder() > stars[0].get_zorder()
    assert list(line.get_ydata()) == [360.0] and list(stars[0].get_offsets()[:, 1]) == [362.0]
    # every entry, latency too, is a bar of its error; the failing one has a red edge
    labels = [t.get_text() for t in bottom.get_yticklabels()]
    assert labels == [ROWS[0]["name"] + " (busbw)", ROWS[1]["name"] + " (busbw)", ROWS[2]["name"]]
    widths = sorted(p.get_width() for p in bottom.patches if hasattr(p, "get_width") and p.get_height() < 1)
    assert widths == sorted(r["error_pct"] for r in ROWS)
    assert _overlaps(fig, bottom.get_yticklabels()) == []


def _fabric(name):
    from pathlib import Path

    from simulator.topology.builder import build_fabric

    return build_fabric(Path(__file__).resolve().parent.parent / "topologies" / f"{name}.yaml")


def test_topology_legend_names_lanes_and_links_and_nvl72_draws_tray_bundles():
    from simulator.reports.plots.topology import build_topology_drawing

    fig = build_topology_drawing(_fabric("pcie_server"))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["pcie5 x16, 1 link per device pair: 63.02 GB/s per direction"]
    nvl72 = _fabric("gb200_nvl72")
    fig = build_topology_drawing(nvl72)
    (lines,) = fig.axes[0].collections[:1]
    assert len(lines.get_paths()) == 18 * 9  # compute tray x switch tray, not 72 x 18 device pairs
    (label,) = [t.get_text() for t in fig.legends[0].get_texts()]
    # 4 GPUs x 2 chips per tray pair, one 2-lane NVLink5 link each, 50 GB/s per direction per link
    assert label == "nvlink5 x2, 8 links per enclosure pair: 400 GB/s per direction"


def test_hgx_drawing_labels_never_overlap():
    from simulator.reports.plots.topology import build_topology_drawing

    fig = build_topology_drawing(_fabric("hgx_h100"))
    ax = fig.axes[0]
    assert _overlaps(fig, ax.texts) == []
    renderer = FigureCanvasAgg(fig).get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    assert title.x0 >= 0 and title.x1 <= fig.bbox.width  # the whole title on the figure


def test_nvl72_heatmap_has_a_row_per_tray_and_credit_plot_speaks_bytes():
    import numpy as np

    from simulator.engine.flow import run_flow
    from simulator.reports.plots.credits import build_credit_timeseries
    from simulator.reports.plots.utilization import build_link_utilization_heatmap
    from simulator.workloads.collectives import build_collective

    nvl72 = _fabric("gb200_nvl72")
    result = run_flow(nvl72, build_collective(nvl72, nvl72.gpus, "all_reduce", 1 << 26, "ring", "Simple"))
    fig = build_link_utilization_heatmap(nvl72, result)
    rows = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert rows == [f"compute{i} (4 GPUs)" for i in range(18)]
    assert _overlaps(fig, fig.axes[0].get_yticklabels()) == []
    fig = build_credit_timeseries(np.array([0.0, 1e-6]), np.array([0, 512]), np.array([0, 1]), 1024,
                                  label="hgx.gpu0 -> hgx.nvsw0", credit_bytes=16)
    top = fig.axes[0]
    assert top.get_ylabel() == "credits in use\n(KiB)"
    assert max(top.get_lines()[0].get_ydata()) == 8.0  # 512 credits of 16 B = 8 KiB
    assert "hgx.gpu0 -> hgx.nvsw0" in fig._suptitle.get_text()


def test_a_sweep_plot_hides_no_series_under_an_equal_one():
    # issue 27, item 8: ring on the full and the 2:1 spine gave the same points (rail-aligned hops
    # never cross the spine), and one line hid the other; equal series are drawn once, named together
    from simulator.reports.plots.sweep import build_sweep_plot

    rows = [{"gpus": g, "algo": a, "topology": t, "busbw_GBps": bw}
            for t in ("x8_ib.yaml", "x8_ib_2to1.yaml")
            for a, bws in (("ring", (476, 364)), ("hierarchical", (520, 496))) for g, bw in zip((144, 288), bws)]
    rows.append({"gpus": 288, "algo": "tree", "topology": "x8_ib.yaml", "busbw_GBps": 300.0})
    fig = build_sweep_plot(rows, ["gpus", "algo", "topology"], "busbw_GBps", "t")
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["algo=ring, topology=x8_ib or x8_ib_2to1 (equal)",
                      "algo=hierarchical, topology=x8_ib or x8_ib_2to1 (equal)", "algo=tree, topology=x8_ib"]
    assert len(ax.get_lines()) == 3
