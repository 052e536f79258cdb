"""Bus bandwidth against message size: one line per system, published measurements as markers.

busbw follows nccl-tests: GB/s with 1 GB = 10^9 B, per GPU and per direction. Sizes are bytes on a
log2 axis labelled the way nccl-tests names them (1K = 1024 B, 8G = 8 GiB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from simulator.reports.plots._figure import new_figure, palette, save_png

MAX_LABELLED_TICKS = 12
"""Most size labels on the x axis; beyond this, every 2nd/4th/... power of two is labelled, counting
down from the largest size."""


def size_label(n_bytes: float) -> str:
    """nccl-tests style binary size: 512, 1K, 64M, 8G (K = 1024)."""
    for suffix, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n_bytes >= scale and n_bytes % scale == 0:
            return f"{int(n_bytes // scale)}{suffix}"
    return f"{n_bytes:g}"


def set_log2_size_axis(ax: Axes, sizes: Sequence[float]) -> None:
    """Log2 x axis over ``sizes`` (bytes) with power-of-two ticks and binary labels."""
    ax.set_xscale("log", base=2)
    lo = int(np.floor(np.log2(min(sizes))))
    hi = int(np.ceil(np.log2(max(sizes))))
    step = 1
    while (hi - lo) // step + 1 > MAX_LABELLED_TICKS:
        step *= 2
    # anchored at the largest size: the bandwidth plateau is what readers look up
    ax.xaxis.set_major_locator(FixedLocator([2.0**e for e in range(hi, lo - 1, -step)][::-1]))
    ax.xaxis.set_minor_locator(FixedLocator([2.0**e for e in range(lo, hi + 1)]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: size_label(x)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(2.0**lo / 1.2, 2.0**hi * 1.2)


def build_busbw_vs_size(series: Mapping[str, Sequence[tuple[int, float]]],
                        published: Sequence[tuple[str, int, float]] = (),
                        title: str = "", *, points_label: str = "published",
                        line_label: str = "simulated") -> Figure:
    """Figure of busbw (GB/s) against size (B): a line per system, a marker per published point.

    ``series`` maps system name to ``(size_bytes, busbw_GBps)`` pairs; ``published`` holds
    ``(system, size_bytes, busbw_GBps)``. A published system gets the colour of its simulated line.
    Legends read ``system (simulated)`` and ``system (published)``; ``line_label`` and
    ``points_label`` replace the words in brackets (e.g. ``fabricsim`` and ``measured``).
    """
    systems = list(series) + sorted({p[0] for p in published} - set(series))
    colours = dict(zip(systems, palette(len(systems))))
    sizes = [s for points in series.values() for s, _ in points] + [p[1] for p in published]
    if not sizes:
        raise ValueError("busbw plot needs at least one simulated or published point")
    if min(sizes) <= 0:
        raise ValueError("message sizes must be positive (bytes) on a log2 axis")
    fig = new_figure(8.0, 4.8)
    ax = fig.add_subplot()
    for system, points in series.items():
        ordered = sorted(points)
        ax.plot([s for s, _ in ordered], [b for _, b in ordered], marker=".", color=colours[system],
                label=f"{system} ({line_label})")
    for system in systems:
        mine = [(s, b) for name, s, b in published if name == system]
        if mine:
            ax.scatter([s for s, _ in mine], [b for _, b in mine], marker="*", s=140,
                       color=colours[system], edgecolors="black", linewidths=0.6, zorder=3,
                       label=f"{system} ({points_label})")
    set_log2_size_axis(ax, sizes)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("message size (bytes; binary prefixes, 1K = 1024 B)")
    ax.set_ylabel("busbw (GB/s per GPU, one direction; 1 GB = 1e9 B)")
    ax.set_title(title or "Bus bandwidth vs message size (nccl-tests busbw)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return fig


def busbw_vs_size(series: Mapping[str, Sequence[tuple[int, float]]],
                  published: Sequence[tuple[str, int, float]] = (), *, path: str | Path,
                  title: str = "", points_label: str = "published", line_label: str = "simulated") -> Path:
    """Write :func:`build_busbw_vs_size` to a PNG at ``path``; returns the path."""
    return save_png(build_busbw_vs_size(series, published, title, points_label=points_label,
                                        line_label=line_label), path)
