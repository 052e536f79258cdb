"""A fabric drawn in tiers: GPUs at the bottom, NICs/PCIe switches/hosts above, switch chips on top.

Devices of one enclosure (``Node.group``: tray, server) sit together on a shaded band. Each pair of
linked devices gets one line whatever the number of parallel links (a direction is not drawn twice);
its width is proportional to their combined data rate per direction and its colour says NVLink, PCIe
or network. Beyond ``MAX_DRAWN_EDGES`` device pairs one line joins each pair of enclosures instead (an NVL72's
1,296 GPU-to-chip links become 162 tray-to-tray bundles of 8), so a rack-scale spine stays legible;
the legend says what a line stands for, with the lanes of each link.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from simulator.reports.plots._figure import new_figure, save_png
from simulator.reports.plots._tiers import NETWORK_LEAF_TIER, NVLINK_SWITCH_TIER, sort_key, tiers
from simulator.topology.fabric import Channel, Fabric
from simulator.units import GB

FABRIC_COLOURS = {"nvlink": "#5f9e00", "pcie": "#e07b00", "network": "#1f5fbf", "c2c": "#8a3ffc"}
KIND_STYLE = {  # marker, colour
    "gpu": ("s", "#2d2d2d"), "switch": ("D", "#7a1fa2"), "nic": ("^", "#1f5fbf"),
    "pcie_switch": ("v", "#e07b00"), "host": ("o", "#8c8c8c"),
}
TIER_NAMES = {0: "GPUs", 1: "NICs / PCIe switches / hosts", NVLINK_SWITCH_TIER: "NVLink switch chips",
              NETWORK_LEAF_TIER: "network leaf switches"}
MAX_DRAWN_EDGES = 200
"""Above this many linked device pairs, lines join enclosures (trays, servers) instead of devices."""
MAX_NODE_LABELS = 24
"""A tier with more devices than this is labelled by group instead of by device."""
ARC_POINTS = 24
ARC_RISE = 0.35
"""Height (in tier spacings) of the arc joining two far-apart devices of one tier."""
LABEL_CHARS_FLAT = 48
"""Device labels of one tier are written horizontally only if they total at most this many characters."""
GROUP_GAP = 0.6
"""Empty slots between two groups in a tier (in device widths)."""


@dataclass(frozen=True, slots=True)
class Edge:
    """The links between two devices, drawn as one line."""

    a: str
    b: str
    links: int
    rate_Bps: float
    """Combined data rate (after encoding and FEC) of the parallel links, one direction (B/s)."""
    fabric: str
    generation: str
    lanes: int = 0
    """Lanes of each link (PCIe x16, NVLink5 x2, ...)."""


def edges(fabric: Fabric) -> list[Edge]:
    """One :class:`Edge` per linked device pair, in a stable order."""
    first_direction: dict[int, Channel] = {}
    for ch in fabric.channels:
        first_direction.setdefault(ch.link, ch)
    grouped: dict[tuple[str, str], list[Channel]] = defaultdict(list)
    for ch in first_direction.values():
        grouped[tuple(sorted((ch.src, ch.dst)))].append(ch)
    return [Edge(a, b, len(chs), sum(c.line_rate_Bps for c in chs), chs[0].fabric, chs[0].generation, chs[0].lanes)
            for (a, b), chs in sorted(grouped.items())]


def bundles(fabric: Fabric, links: list[Edge], pos: dict[str, tuple[float, float]]
            ) -> tuple[list[Edge], dict[str, tuple[float, float]]]:
    """The device-pair edges merged per pair of enclosures (trays, servers) of each tier: one line per
    enclosure pair, carrying all their links; and the position of every enclosure (its members'
    centre). A device outside any enclosure stands for itself."""
    def key(name: str) -> str:
        return f"{fabric.nodes[name].group or name}@{pos[name][1]:g}"

    members: dict[str, list[str]] = defaultdict(list)
    for name in pos:
        members[key(name)].append(name)
    centre = {k: (float(np.mean([pos[m][0] for m in ms])), pos[ms[0]][1]) for k, ms in members.items()}
    merged: dict[tuple[str, str, str, str, int], list[Edge]] = defaultdict(list)
    for e in links:
        a, b = sorted((key(e.a), key(e.b)))
        merged[(a, b, e.fabric, e.generation, e.lanes)].append(e)
    out = [Edge(a, b, sum(e.links for e in es), sum(e.rate_Bps for e in es), kind, gen, lanes)
           for (a, b, kind, gen, lanes), es in sorted(merged.items())]
    return out, centre


def positions(fabric: Fabric) -> tuple[dict[str, tuple[float, float]], dict[int, list[str]], dict[int, int]]:
    """x in 0..1 and y = tier level for every node; nodes per tier in drawing order; tier -> level."""
    tier = tiers(fabric)
    key = sort_key(fabric, tier)
    by_tier: dict[int, list[str]] = defaultdict(list)
    for name in sorted(fabric.nodes, key=key):
        by_tier[tier[name]].append(name)
    level = {t: i for i, t in enumerate(sorted(by_tier))}
    pos: dict[str, tuple[float, float]] = {}
    for t, names in by_tier.items():
        slots, slot = [], 0.0
        for i, name in enumerate(names):
            if i and fabric.nodes[name].group != fabric.nodes[names[i - 1]].group:
                slot += GROUP_GAP
            slots.append(slot)
            slot += 1.0
        for name, s in zip(names, slots):
            pos[name] = ((s + 0.5) / slot, float(level[t]))
    return pos, dict(by_tier), level


def _path(a: tuple[float, float], b: tuple[float, float]) -> np.ndarray:
    """A straight segment between tiers; an arc bowing upward within a tier, so it clears the nodes."""
    if a[1] != b[1]:
        return np.array([a, b])
    s = np.linspace(0.0, 1.0, ARC_POINTS)
    x = a[0] + (b[0] - a[0]) * s
    return np.column_stack([x, a[1] + ARC_RISE * 4 * s * (1 - s) * min(1.0, 3 * abs(b[0] - a[0]))])


def _tier_name(t: int) -> str:
    return TIER_NAMES.get(t, f"network switches, {t - NETWORK_LEAF_TIER} hop(s) above leaf")


def _draw_groups(ax, fabric: Fabric, names: list[str], pos, y: float, label_groups: bool) -> None:
    for group, members in groupby(names, key=lambda n: fabric.nodes[n].group):
        if not group:
            continue
        xs = [pos[n][0] for n in members]
        pad = 0.35 / max(len(names), 2)
        ax.add_patch(Rectangle((min(xs) - pad, y - 0.13), max(xs) - min(xs) + 2 * pad, 0.26,
                               facecolor="#f2f2f2", edgecolor="#c8c8c8", linewidth=0.5, zorder=0))
        if label_groups:
            ax.text((min(xs) + max(xs)) / 2, y - 0.17, group, ha="center", va="top", rotation=90,
                    fontsize=5.5, color="#555555")


def build_topology_drawing(fabric: Fabric, title: str = "") -> Figure:
    """Tiered drawing of ``fabric`` (see module docstring)."""
    pos, by_tier, level = positions(fabric)
    links = edges(fabric)
    per = "device pair"
    ends = pos
    if len(links) > MAX_DRAWN_EDGES:  # a spine of hundreds of lines is a hairball: one per enclosure pair
        links, centres = bundles(fabric, links, pos)
        ends, per = {**pos, **centres}, "enclosure pair"
    widest = max(len(names) for names in by_tier.values())
    fig = new_figure(float(np.clip(0.2 * widest + 3, 8, 18)), 2.2 * len(by_tier) + 1.6)
    ax = fig.add_subplot()
    n = max(len(links), 1)
    lw_max = float(np.clip(25 / np.sqrt(n), 0.6, 5.0))
    alpha = float(np.clip(5 / np.sqrt(n), 0.12, 0.9))
    top_rate = max((e.rate_Bps for e in links), default=1.0)
    ax.add_collection(LineCollection(
        [_path(ends[e.a], ends[e.b]) for e in links],
        linewidths=[max(0.2, lw_max * e.rate_Bps / top_rate) for e in links],
        colors=[FABRIC_COLOURS.get(e.fabric, "black") for e in links], alpha=alpha, zorder=1))
    for t, names in by_tier.items():
        y = float(level[t])
        many = len(names) > MAX_NODE_LABELS
        _draw_groups(ax, fabric, names, pos, y, label_groups=many)
        size = float(np.clip(1500 / len(names), 6, 120))
        for kind in sorted({fabric.nodes[name].kind for name in names}):
            mine = [name for name in names if fabric.nodes[name].kind == kind]
            marker, colour = KIND_STYLE[kind]
            ax.scatter([pos[m][0] for m in mine], [pos[m][1] for m in mine], s=size, marker=marker,
                       color=colour, zorder=3, linewidths=0)
        if not many:
            flat = _labels_fit(names, fig.get_figwidth())
            for name in names:
                ax.text(pos[name][0], y + (0.17 if t == max(by_tier) else -0.17), name, ha="center",
                        va="bottom" if t == max(by_tier) else "top", fontsize=6.5, rotation=0 if flat else 90)
    legend = {}
    for e in links:
        lanes = f" x{e.lanes}" if e.lanes else ""
        count = f"{e.links} link{'s' if e.links != 1 else ''}"
        label = f"{e.generation}{lanes}, {count} per {per}: {e.rate_Bps / GB:.4g} GB/s per direction"
        legend.setdefault(label, Line2D([], [], color=FABRIC_COLOURS.get(e.fabric, "black"),
                                        linewidth=max(0.8, lw_max * e.rate_Bps / top_rate), label=label))
    fig.legend(handles=list(legend.values()), loc="outside lower center", fontsize="small",
               title="data rate (1 GB = 1e9 B)", title_fontsize="small")
    ax.set_xlim(-0.02, 1.02)
    lowest = by_tier[min(by_tier)]
    rotated = len(lowest) > MAX_NODE_LABELS or not _labels_fit(lowest, fig.get_figwidth())
    ax.set_ylim(-0.8 if rotated else -0.45, len(by_tier) - 0.45)
    ax.set_yticks([level[t] for t in by_tier], [_tier_name(t) for t in by_tier])
    ax.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    n_switch = sum(1 for node in fabric.nodes.values() if node.kind == "switch")
    fig.suptitle(title or f"{fabric.name}: {len(fabric.gpus)} GPUs, {n_switch} switch chips, "
                 f"{fabric.n_links} physical links (width ∝ data rate per direction)")
    return fig


def _labels_fit(names: list[str], width_in: float) -> bool:
    """Whether ``names`` fit side by side at 6.5 pt (about 4 pt a character) in the drawing's width
    (about 85 % of the figure's), else they are written vertically."""
    if sum(len(n) for n in names) > LABEL_CHARS_FLAT:
        return False
    slot_pt = 0.85 * width_in * 72 / max(len(names), 1)
    return max((len(n) for n in names), default=0) * 4.0 < 0.9 * slot_pt


def topology_drawing(fabric: Fabric, path: str | Path, title: str = "") -> Path:
    """Write :func:`build_topology_drawing` to a PNG at ``path``; returns the path."""
    return save_png(build_topology_drawing(fabric, title), path)
