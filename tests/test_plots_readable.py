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
