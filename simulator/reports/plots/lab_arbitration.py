"""The arbitration lab's figure: each input's share of one saturated output, per arbiter.

Grouped bars (one group per arbiter, one bar per input, the same colour per input across groups),
Jain's fairness index written above each group, and the equal share 1/N dotted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png


def build_lab_arbitration(rows: Sequence[Mapping]) -> Figure:
    """Figure from arbitration-lab rows (keys ``arbiter``, ``jain``, ``inputs``: list of
    ``{"input", "weight", "share"}``)."""
    if not rows:
        raise ValueError("the arbitration-lab plot needs at least one row")
    names = [x["input"] for x in rows[0]["inputs"]]
    n = len(names)
    width = 0.8 / n
    fig = new_figure(max(6.0, 1.6 * len(rows) + 1.5), 4.2)
    ax = fig.subplots()
    for i, (colour, name) in enumerate(zip(palette(n), names)):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(rows))]
        ax.bar(xs, [100 * r["inputs"][i]["share"] for r in rows], width, color=colour, label=name)
    for g, r in enumerate(rows):
        top = 100 * max(x["share"] for x in r["inputs"])
        ax.text(g, top + 2, f"Jain {r['jain']:.3f}", ha="center", fontsize="small")
    ax.axhline(100 / n, color="0.4", linestyle=":", linewidth=1, label=f"1/{n}")
    labels = []
    for r in rows:
        weighted = any(x["weight"] != 1 for x in r["inputs"])
        weights = "\nweights " + "/".join(str(x["weight"]) for x in r["inputs"]) if weighted else ""
        labels.append(r["arbiter"].replace("_", " ") + weights)
    ax.set_xticks(range(len(rows)), labels, fontsize="small")
    ax.set_ylabel("share of the output (%)")
    ax.set_ylim(0, 125)
    ax.set_title(f"{n} inputs saturating one output: share per input", fontsize="medium")
    ax.legend(fontsize="small", ncols=n + 1, loc="upper left")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def lab_arbitration(rows: Sequence[Mapping], path: str | Path) -> Path:
    """Write :func:`build_lab_arbitration` to a PNG at ``path``; returns the path."""
    return save_png(build_lab_arbitration(rows), path)
