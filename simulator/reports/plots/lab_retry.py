"""The retry lab's figure: goodput against bit error rate, one line per replay-buffer size.

Markers are the seeded go-back-N simulation, dashed lines of the same colour the closed form of
``hardware.retry``. GB/s = 1e9 B/s, one direction; BER axis logarithmic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png


def build_lab_retry(rows: Sequence[Mapping]) -> Figure:
    """Figure from retry-lab rows (keys ``ber``, ``replay_buffer_bytes``, ``simulated_GBps``,
    ``closed_form_GBps``, ``rate_GBps``, ``generation``)."""
    if not rows:
        raise ValueError("the retry-lab plot needs at least one row")
    fig = new_figure(7.5, 4.8)
    ax = fig.subplots()
    buffers = sorted({r["replay_buffer_bytes"] for r in rows})
    for colour, buf in zip(palette(len(buffers)), buffers):
        pts = sorted((r for r in rows if r["replay_buffer_bytes"] == buf), key=lambda r: r["ber"])
        x = [r["ber"] for r in pts]
        ax.plot(x, [r["closed_form_GBps"] for r in pts], "--", color=colour, linewidth=1.2)
        ax.plot(x, [r["simulated_GBps"] for r in pts], "o", color=colour, markersize=5,
                label=f"{buf / 1024:g} KiB ({pts[0]['window_packets']} packets)")
    ax.axhline(rows[0]["rate_GBps"], color="0.5", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("bit error rate after FEC")
    ax.set_ylabel("goodput (GB/s, one direction)")
    ax.set_ylim(0, rows[0]["rate_GBps"] * 1.08)
    ax.set_title(f"{rows[0]['generation']} go-back-N retry: simulated (markers), closed form (dashed); "
                 f"round trip {rows[0]['round_trip_packets']} packets", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(title="replay buffer", fontsize="small", loc="upper left", bbox_to_anchor=(0.0, 0.86))
    return fig


def lab_retry(rows: Sequence[Mapping], path: str | Path) -> Path:
    """Write :func:`build_lab_retry` to a PNG at ``path``; returns the path."""
    return save_png(build_lab_retry(rows), path)
