"""The credit lab's figure: throughput against receive buffer, one line per cable length.

Markers are the packet simulation, dashed lines of the same colour the closed form
min(payload rate, buffer / RTT); one panel per link generation. GB/s = 1e9 B/s, one direction; the
buffer axis is log2 in KiB (2^10 B).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from simulator.reports.plots._figure import new_figure, palette, save_png


def build_lab_credits(rows: Sequence[Mapping]) -> Figure:
    """Figure from credit-lab rows (keys ``generation``, ``cable_m``, ``cable``, ``buffer_bytes``,
    ``simulated_GBps``, ``closed_form_GBps``, ``line_GBps``)."""
    if not rows:
        raise ValueError("the credit-lab plot needs at least one row")
    generations = list(dict.fromkeys(r["generation"] for r in rows))
    fig = new_figure(6.5 * len(generations), 4.8)
    axes = fig.subplots(1, len(generations), squeeze=False)[0]
    for ax, gen in zip(axes, generations):
        mine = [r for r in rows if r["generation"] == gen]
        cables = sorted({r["cable_m"] for r in mine})
        for colour, m in zip(palette(len(cables)), cables):
            pts = sorted((r for r in mine if r["cable_m"] == m), key=lambda r: r["buffer_bytes"])
            x = [r["buffer_bytes"] for r in pts]
            label = f"{m:g} m {pts[0]['cable'].replace('_', ' ')}"
            ax.plot(x, [r["closed_form_GBps"] for r in pts], "--", color=colour, linewidth=1.2)
            ax.plot(x, [r["simulated_GBps"] for r in pts], "o", color=colour, label=label, markersize=5)
        buffers = sorted({r["buffer_bytes"] for r in mine})
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(buffers))
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda b, _pos: f"{b / 1024:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(mine[0]["line_GBps"], color="0.5", linewidth=0.8, linestyle=":")
        ax.set_xlabel("receive buffer (KiB)")
        ax.set_ylabel("throughput (GB/s, one direction)")
        ax.set_ylim(0, mine[0]["line_GBps"] * 1.08)
        ax.set_title(f"{gen}: simulated (markers), min(payload rate, buffer / RTT) (dashed)", fontsize="medium")
        ax.grid(True, alpha=0.3)
        ax.legend(title="cable", fontsize="small", loc="lower right")
    return fig


def lab_credits(rows: Sequence[Mapping], path: str | Path) -> Path:
    """Write :func:`build_lab_credits` to a PNG at ``path``; returns the path."""
    return save_png(build_lab_credits(rows), path)
