"""Plots made from results: pure functions, data in and PNG path out, headless (Agg, no pyplot).

Each plot has a ``build_*`` function returning the :class:`matplotlib.figure.Figure` (for tests and
notebooks) and a writer that saves it as PNG and returns the path.
"""

from simulator.reports.plots.busbw import build_busbw_vs_size, busbw_vs_size
from simulator.reports.plots.credit_recorder import CreditRecorder
from simulator.reports.plots.credits import build_credit_timeseries, credit_timeseries
from simulator.reports.plots.power import build_power_breakdown, power_breakdown
from simulator.reports.plots.topology import build_topology_drawing, topology_drawing
from simulator.reports.plots.utilization import build_link_utilization_heatmap, link_utilization_heatmap

__all__ = [
    "build_busbw_vs_size", "busbw_vs_size",
    "build_credit_timeseries", "credit_timeseries", "CreditRecorder",
    "build_link_utilization_heatmap", "link_utilization_heatmap",
    "build_power_breakdown", "power_breakdown",
    "build_topology_drawing", "topology_drawing",
]
