"""Interconnect power or energy per system as stacked bars: static vs dynamic, by component kind.

One bar per system. Static parts (always-on: switch chips, optics, retimers, SerDes idle) are solid,
dynamic parts (pJ/bit x bits moved) hatched, a component kind keeps its colour in both. The
quantity is either average power over the run (W) or energy of the run (J; one run = one op).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal, Mapping

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter

from simulator.metrics.energy import EnergyReport
from simulator.reports.plots._figure import new_figure, palette, save_png

Quantity = Literal["power_W", "energy_J"]
DYNAMIC_HATCH = "///"
LABEL_CHARS = 16
"""Longest line of a system's name under its bar: with 1.6 in per bar, longer names overlap."""


def wrap_label(name: str, width: int = LABEL_CHARS) -> str:
    """``name`` broken into lines of at most ``width`` characters (at spaces where it can)."""
    return textwrap.fill(name, width=width, break_long_words=True)


def as_energy_report(report: EnergyReport | Mapping) -> EnergyReport:
    """Accept an :class:`EnergyReport` or its ``as_dict()`` form (e.g. read back from JSON)."""
    if isinstance(report, EnergyReport):
        return report
    return EnergyReport(duration_s=float(report["duration_s"]), static_W=dict(report["static_W"]),
                        dynamic_J=dict(report["dynamic_J"]),
                        bytes_delivered=int(report.get("bytes_delivered", 0)))


def components(report: EnergyReport, quantity: Quantity) -> tuple[dict[str, float], dict[str, float]]:
    """(static, dynamic) by component kind, in W (average over the run) or J (whole run)."""
    if quantity == "energy_J":
        return report.static_J, dict(report.dynamic_J)
    if quantity != "power_W":
        raise ValueError(f"quantity must be 'power_W' or 'energy_J', not {quantity!r}")
    if report.duration_s > 0:
        return dict(report.static_W), {k: j / report.duration_s for k, j in report.dynamic_J.items()}
    if any(report.dynamic_J.values()):
        raise ValueError("a run of zero duration cannot have dynamic power")
    return dict(report.static_W), {k: 0.0 for k in report.dynamic_J}


def build_power_breakdown(reports: Mapping[str, EnergyReport | Mapping], quantity: Quantity = "power_W",
                          title: str = "") -> Figure:
    """Stacked bar per system of static (solid) and dynamic (hatched) parts by component kind."""
    if not reports:
        raise ValueError("power breakdown needs at least one system")
    parts = {name: components(as_energy_report(r), quantity) for name, r in reports.items()}
    kinds = sorted({k for static, dynamic in parts.values() for d in (static, dynamic) for k, v in d.items() if v > 0})
    colours = dict(zip(kinds, palette(len(kinds))))
    unit = "W" if quantity == "power_W" else "J"
    fig = new_figure(max(7.5, 1.6 * len(parts) + 4.0), 5.0)
    ax = fig.add_subplot()
    for x, (system, (static, dynamic)) in enumerate(parts.items()):
        bottom = 0.0
        for values, hatch in ((static, None), (dynamic, DYNAMIC_HATCH)):
            for kind in kinds:
                value = values.get(kind, 0.0)
                if value > 0:
                    ax.bar(x, value, bottom=bottom, width=0.6, color=colours[kind], hatch=hatch,
                           edgecolor="white" if hatch is None else "black", linewidth=0.5)
                    bottom += value
        ax.annotate(EngFormatter(unit=unit, places=1)(bottom), (x, bottom), xytext=(0, 3), textcoords="offset points",
                    ha="center", fontsize="small")
    ax.set_xticks(range(len(parts)), [wrap_label(name) for name in parts])
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylim(0, max(1e-30, ax.get_ylim()[1]) * 1.08)
    ax.set_ylabel("average interconnect power over the run (W)" if quantity == "power_W"
                  else "interconnect energy per operation (J)")
    ax.set_title(textwrap.fill(title, 60) if title else ("Interconnect power: static vs dynamic by component" if quantity == "power_W"
                           else "Interconnect energy per op: static vs dynamic by component"))
    handles = [Patch(facecolor=colours[k], label=k) for k in kinds]
    handles += [Patch(facecolor="white", edgecolor="black", label="static (solid)"),
                Patch(facecolor="white", edgecolor="black", hatch=DYNAMIC_HATCH, label="dynamic (hatched)")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def power_breakdown(reports: Mapping[str, EnergyReport | Mapping], path: str | Path,
                    quantity: Quantity = "power_W", title: str = "") -> Path:
    """Write :func:`build_power_breakdown` to a PNG at ``path``; returns the path."""
    return save_png(build_power_breakdown(reports, quantity, title), path)
