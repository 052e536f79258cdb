"""A sweep's metric against its first axis: one line per combination of the other axes.

Numeric axis values (sizes such as "16K" are turned into bytes) go on a log axis when they span
more than a factor of 16, else a linear one; other values (algorithm, topology file) are
categories in file order. Failed points are left out of the lines. Combinations whose points are
all equal are drawn once, their legend entry naming every value they share it with
(``topology=a or b (equal)``): no series hides under another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png
from simulator.units import UnitError, parse_size


METRIC_LABELS = {"busbw_GBps": "bus bandwidth (GB/s per GPU, one direction; 1 GB = 1e9 B)",
                 "algbw_GBps": "algorithm bandwidth (GB/s, 1 GB = 1e9 B)", "time_us": "time (us, simulated)",
                 "energy_J": "energy (J)", "avg_power_W": "average interconnect power (W)"}
"""Y-axis labels of the metrics a sweep plots (anything else is shown by its column name)."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(parse_size(str(value)))
    except (UnitError, ValueError):
        return None


def _short(value: Any) -> str:
    """File names without folder and suffix (topology axes), anything else as written."""
    text = str(value)
    return Path(text).stem if text.endswith((".yaml", ".yml")) else text


def build_sweep_plot(rows: Sequence[dict], axes: Sequence[str], metric: str, title: str) -> Figure:
    """The figure (see module docstring); ``rows`` as from ``sweep_points.result_rows``."""
    x_axis, others = axes[0], list(axes[1:])
    ok = [r for r in rows if "error" not in r and r.get(metric) is not None]
    xs = list(dict.fromkeys(r[x_axis] for r in ok))
    numeric = all(_number(x) is not None for x in xs)
    fig = new_figure(7.5, 4.6)
    ax = fig.add_subplot()
    series: dict[tuple, list[tuple[Any, float]]] = {}
    for r in ok:
        series.setdefault(tuple(r[a] for a in others), []).append((r[x_axis], float(r[metric])))
    groups: dict[tuple, list[tuple]] = {}  # equal points -> the combinations that give them
    for key, points in series.items():
        groups.setdefault(tuple(sorted(points, key=lambda p: str(p[0]))), []).append(key)
    colours = palette(max(1, len(groups)))
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-.")]
    for i, (colour, (points, keys)) in enumerate(zip(colours, groups.items())):
        if numeric:
            pts = sorted((_number(x), y) for x, y in points)
        else:
            pts = sorted((xs.index(x), y) for x, y in points)
        label = ", ".join(f"{a}={' or '.join(dict.fromkeys(_short(k[j]) for k in keys))}"
                          for j, a in enumerate(others)) or metric
        label += " (equal)" if len(keys) > 1 else ""
        marker, line = styles[i % len(styles)]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, linestyle=line, color=colour,
                label=label, markersize=7 - 1.5 * (i % len(styles)))
    if numeric:
        values = [_number(x) for x in xs]
        if min(values) > 0 and max(values) / min(values) > 16:
            ax.set_xscale("log", base=2 if all(isinstance(x, str) for x in xs) else 10)
        ax.set_xticks(values, [str(x) for x in xs])
    else:
        ax.set_xticks(range(len(xs)), [_short(x) for x in xs],
                      rotation=15 if len(xs) > 4 else 0)
    ax.set_xlabel(x_axis)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(groups) > 1 or others:
        ax.legend(fontsize=8, loc="best")
    return fig


def sweep_plot(rows: Sequence[dict], axes: Sequence[str], metric: str, path: str | Path, title: str,
               inputs: Sequence[str | Path] = ()) -> Path:
    """Write :func:`build_sweep_plot` as PNG."""
    return save_png(build_sweep_plot(rows, axes, metric, title), path, inputs)
