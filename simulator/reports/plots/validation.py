"""Predicted vs published figures (``fabricsim validate --plot``): every entry, bandwidth and latency.

Top: busbw against message size, one colour per system; a published figure is a star, its
prediction a hollow circle of the same colour drawn over it (a system with one entry is one star
in one ring), joined by a line where a system has several sizes. Bottom: the error of every entry,
bandwidth and latency alike, as a horizontal bar against the pass band (+-threshold).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png
from simulator.reports.plots.busbw import set_log2_size_axis

METRIC_WORDS = {"busbw_GBps": "busbw", "algbw_GBps": "algbw", "time_us": "latency"}


def system_label(row: Mapping) -> str:
    """A published entry's system: topology file name, algorithm, GPUs."""
    return f"{str(row['topology']).split('/')[-1].removesuffix('.yaml')} {row['algo']} {row['gpus']} GPUs"


def entry_label(row: Mapping) -> str:
    """An entry's name with its metric, unless the name says it already."""
    word = METRIC_WORDS.get(row["metric"], row["metric"])
    return row["name"] if word in row["name"].lower() else f"{row['name']} ({word})"


SPREAD_OCTAVES = 0.12
"""How far apart (in powers of two of the size axis) the points of systems sharing a size are drawn."""


def build_validation_figure(rows: Sequence[Mapping], threshold_pct: float) -> Figure:
    """The two panels of predicted vs published ``rows`` (``runner.validation.predict`` rows)."""
    if not rows:
        raise ValueError("validation plot needs at least one entry")
    bandwidth = [r for r in rows if r["metric"] == "busbw_GBps"]
    systems = list(dict.fromkeys(system_label(r) for r in rows))
    colours = dict(zip(systems, palette(len(systems))))
    fig = new_figure(10.0, 4.0 + 0.32 * len(rows))
    upper, lower = fig.subfigures(2, 1, height_ratios=[3.2, 0.9 + 0.3 * len(rows)])  # own layouts: long
    top, bottom = upper.subplots(), lower.subplots()  # entry names do not squeeze the size axis
    at_size: dict[int, list[str]] = {}  # systems sharing a size sit side by side, not on one another
    for r in bandwidth:
        at_size.setdefault(r["bytes"], [])
        if system_label(r) not in at_size[r["bytes"]]:
            at_size[r["bytes"]].append(system_label(r))

    def spread(size: int, system: str) -> float:
        there = at_size[size]
        return size * 2 ** (SPREAD_OCTAVES * (there.index(system) - (len(there) - 1) / 2))

    for system in systems:
        mine = sorted((r["bytes"], r["predicted"], r["published"]) for r in bandwidth if system_label(r) == system)
        if not mine:
            continue
        sizes = [spread(m[0], system) for m in mine]
        top.plot(sizes, [m[1] for m in mine], color=colours[system], linewidth=1.2, marker="o", markersize=11,
                 markerfacecolor="none", markeredgewidth=1.6, zorder=4, label=f"{system}: predicted")
        top.scatter(sizes, [m[2] for m in mine], marker="*", s=110, color=colours[system], edgecolors="black",
                    linewidths=0.5, zorder=3, label=f"{system}: published")
    if bandwidth:
        set_log2_size_axis(top, [r["bytes"] for r in bandwidth])
        widest = max(len(v) for v in at_size.values())
        lo, hi = min(at_size), max(at_size)
        margin = 2 ** (SPREAD_OCTAVES * widest / 2 + 0.25)
        top.set_xlim(lo / margin, hi * margin)
        top.set_ylim(bottom=0, top=max(max(r["predicted"], r["published"]) for r in bandwidth) * 1.1)
        top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    top.set_xlabel("message size (bytes; binary prefixes, 1K = 1024 B)")
    top.set_ylabel("busbw (GB/s per GPU, one direction)")
    top.set_title("Predicted (rings) vs published (stars)")
    top.grid(True, alpha=0.3)

    labels = [entry_label(r) for r in rows]
    errors = [r["error_pct"] for r in rows]
    y = list(range(len(rows)))[::-1]
    bottom.axvspan(-threshold_pct, threshold_pct, color="0.9", zorder=0, label=f"pass: |error| <= {threshold_pct:g}%")
    bottom.barh(y, errors, color=[colours[system_label(r)] for r in rows],
                edgecolor=["black" if r["passed"] else "red" for r in rows], linewidth=[0.5 if r["passed"] else 1.5
                                                                                    for r in rows])
    bottom.axvline(0, color="black", linewidth=0.8)
    bottom.set_yticks(y, labels, fontsize="small")
    reach = max(threshold_pct * 1.5, max(abs(e) for e in errors) * 1.15)
    bottom.set_xlim(-reach, reach)
    for yy, e in zip(y, errors):
        bottom.annotate(f"{e:+.1f}%", (e, yy), xytext=(4 if e >= 0 else -4, 0), textcoords="offset points",
                        ha="left" if e >= 0 else "right", va="center", fontsize="x-small")
    bottom.set_xlabel("prediction error (% of published; red edge: outside the pass band)")
    bottom.legend(loc="lower right", fontsize="x-small")
    bottom.grid(True, axis="x", alpha=0.3)
    return fig


def validation_plot(rows: Sequence[Mapping], threshold_pct: float, path: str | Path) -> Path:
    """Write :func:`build_validation_figure` to ``path`` (.png, .svg or .pdf); returns the path."""
    return save_png(build_validation_figure(rows, threshold_pct), path)
