"""Per-direction link utilization (busy time / makespan) as a heatmap that stays readable at NVL72 size.

A full device x device matrix of a rack is mostly empty (GPUs never link to GPUs). Instead every
physical link is placed by its two ends: the row is the end in the lower tier (GPU, then NIC, then
switch), the column the end in the higher tier. The left panel shows the upward direction
(row -> column), the right panel the downward one (column -> row). NVL72 becomes two 72 x 18
grids (GPU x NVSwitch chip). Parallel links between the same two devices are averaged; beyond
``MAX_DEVICE_ROWS`` devices along an axis the devices of one enclosure are averaged into one row (an
NVL72 becomes 18 compute trays x 18 chips), and the title gives the range over single links.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from simulator.engine.result import RunResult
from simulator.reports.plots._figure import new_figure, save_png
from simulator.reports.plots._tiers import sort_key, tiers
from simulator.topology.fabric import Fabric

MAX_DEVICE_ROWS = 24
"""Above this many devices along an axis, the devices of one enclosure (tray, server) share a row."""
MAX_TICK_LABELS = 80
"""Most device names printed along one heatmap axis; beyond it every k-th name is shown."""
EMPTY_COLOUR = "#e8e8e8"
"""Cells with no link."""


def utilization_grids(fabric: Fabric, result: RunResult) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Row names, column names, and (rows x cols) mean utilization up and down; NaN where no link."""
    util = result.utilization()
    if len(util) != len(fabric.channels):
        raise ValueError(f"result has {len(util)} channels, fabric {fabric.name!r} has {len(fabric.channels)}")
    tier = tiers(fabric)
    key = sort_key(fabric, tier)
    cells: dict[tuple[str, str, bool], list[float]] = defaultdict(list)
    for ch in fabric.channels:
        low, high = sorted((ch.src, ch.dst), key=key)
        cells[(low, high, ch.src == low)].append(float(util[ch.id]))
    rows = sorted({low for low, _, _ in cells}, key=key)
    cols = sorted({high for _, high, _ in cells}, key=key)
    row_index = {n: i for i, n in enumerate(rows)}
    col_index = {n: i for i, n in enumerate(cols)}
    up = np.full((len(rows), len(cols)), np.nan)
    down = np.full((len(rows), len(cols)), np.nan)
    for (low, high, upward), values in cells.items():
        (up if upward else down)[row_index[low], col_index[high]] = float(np.mean(values))
    return rows, cols, up, down


def by_enclosure(fabric: Fabric, names: list[str], grid: np.ndarray, axis: int) -> tuple[list[str], np.ndarray]:
    """``grid`` with the rows (``axis=0``) or columns (``axis=1``) of one enclosure (tray, server)
    averaged into one, labelled ``tray (k devices)``; devices outside any enclosure keep their own."""
    order: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        order.setdefault(fabric.nodes[name].group or name, []).append(i)
    labels = [g if len(ix) == 1 and g == names[ix[0]] else f"{g} ({len(ix)} {_plural(fabric, names[ix[0]], len(ix))})"
              for g, ix in order.items()]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice (no link) stays NaN
        parts = [np.nanmean(np.take(grid, ix, axis=axis), axis=axis, keepdims=True) for ix in order.values()]
    return labels, np.concatenate(parts, axis=axis)


def _plural(fabric: Fabric, name: str, count: int) -> str:
    kind = {"gpu": "GPU", "switch": "chip", "nic": "NIC"}.get(fabric.nodes[name].kind, "device")
    return kind + ("s" if count != 1 else "")


def _ticks(names: list[str]) -> tuple[list[int], list[str]]:
    step = max(1, -(-len(names) // MAX_TICK_LABELS))
    idx = list(range(0, len(names), step))
    return idx, [names[i] for i in idx]


def _label_size(names: list[str]) -> float:
    return 8 if len(names) <= 24 else 5


def format_time(seconds: float) -> str:
    """Seconds in the closest readable unit: 12.5 µs, 3.2 ms."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def build_link_utilization_heatmap(fabric: Fabric, result: RunResult, title: str = "") -> Figure:
    """Two heatmaps (up, down) of per-direction channel utilization, colour scale fixed to 0..1."""
    rows, cols, up, down = utilization_grids(fabric, result)
    device_range = (np.nanmin(np.r_[up.ravel(), down.ravel()]), np.nanmax(np.r_[up.ravel(), down.ravel()]))
    merged = []
    if len(rows) > MAX_DEVICE_ROWS:  # 72 GPU names are unreadable: one row per tray
        names = rows
        rows, up = by_enclosure(fabric, names, up, 0)
        _, down = by_enclosure(fabric, names, down, 0)
        merged.append("rows")
    if len(cols) > MAX_DEVICE_ROWS:
        names = cols
        cols, up = by_enclosure(fabric, names, up, 1)
        _, down = by_enclosure(fabric, names, down, 1)
        merged.append("columns")
    height = min(14.0, max(4.5, 0.13 * len(rows) + 1.8))
    width = min(16.0, max(7.0, 2 * (0.22 * len(cols) + 1.6) + 1.5))
    fig = new_figure(width, height)
    axes = fig.subplots(1, 2, sharey=True)
    cmap = colormaps["viridis"].with_extremes(bad=EMPTY_COLOUR)
    for ax, grid, direction in ((axes[0], up, "up: row -> column"), (axes[1], down, "down: column -> row")):
        image = ax.imshow(np.ma.masked_invalid(grid), vmin=0.0, vmax=1.0, cmap=cmap, aspect="auto",
                          interpolation="nearest")
        ax.set_title(direction, fontsize="medium")
        xi, xl = _ticks(cols)
        ax.set_xticks(xi, xl, rotation=90, fontsize=_label_size(cols))
        ax.set_xlabel("upper-tier device (switch chip / NIC)")
    yi, yl = _ticks(rows)
    axes[0].set_yticks(yi, yl, fontsize=_label_size(rows))
    axes[0].set_ylabel("lower-tier device (GPU / NIC)")
    colorbar = fig.colorbar(image, ax=list(axes), shrink=0.9)
    colorbar.set_label("utilization per direction (busy / makespan)")
    averaged = "parallel links" + (f" and the devices of an enclosure ({' and '.join(merged)})" if merged else "")
    fig.suptitle((title or f"{fabric.name}: link utilization per direction, makespan {format_time(result.makespan_s)}")
                 + f"\n{averaged} averaged; " + (f"every link at {device_range[0]:.0%}" if
                                                     round(device_range[0], 2) == round(device_range[1], 2) else
                                                     f"single links from {device_range[0]:.0%} to {device_range[1]:.0%}"),
                 fontsize="medium")
    return fig


def link_utilization_heatmap(fabric: Fabric, result: RunResult, path: str | Path, title: str = "") -> Path:
    """Write :func:`build_link_utilization_heatmap` to a PNG at ``path``; returns the path."""
    return save_png(build_link_utilization_heatmap(fabric, result, title), path)
