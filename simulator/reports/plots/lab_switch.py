"""The switch lab's figure: saturation throughput per design beside the published value, and mean
queueing delay vs offered load (the classic iSLIP figure, McKeown 1999 Fig. 7), in cell times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png


def build_lab_switch(rows: Sequence[Mapping], curves: Sequence[Mapping]) -> Figure:
    """Figure from ``switch_lab`` rows (throughput panel) and ``delay_curves`` points (delay panel)."""
    if not rows and not curves:
        raise ValueError("the switch-lab plot needs saturation rows or delay curves")
    panels = int(bool(rows)) + int(bool(curves))
    fig = new_figure(6.0 * panels, 4.6)
    axes = list(fig.subplots(1, panels, squeeze=False)[0])
    if rows:
        ax = axes.pop(0)
        y = list(range(len(rows)))[::-1]
        colours = palette(len(rows))
        ax.barh(y, [r["throughput"] for r in rows], 0.6, color=colours)
        for yi, r in zip(y, rows):
            ax.text(r["throughput"] + 0.01, yi, f"{r['throughput']:.3f}", va="center", fontsize="small")
            if r.get("published") is not None:
                ax.vlines(r["published"], yi - 0.4, yi + 0.4, colors="k", linestyles="--",
                          label="published" if yi == max(y2 for y2, r2 in zip(y, rows)
                                                         if r2.get("published") is not None) else None)
        ax.set_yticks(y, [r["design"] for r in rows], fontsize="small")
        ax.set_xlim(0, 1.15)
        ax.set_xlabel("saturation throughput (fraction of line rate per output)")
        ax.set_title(f"{rows[0]['ports']}x{rows[0]['ports']} switch, uniform i.i.d. traffic, saturated",
                     fontsize="medium")
        ax.legend(fontsize="small", loc="lower right")
        ax.grid(True, axis="x", alpha=0.3)
    if curves:
        ax = axes.pop(0)
        labels = list(dict.fromkeys(c["design"] for c in curves))
        colours = palette(len(labels))
        for colour, label in zip(colours, labels):
            pts = [c for c in curves if c["design"] == label]
            ax.plot([100 * c["load"] for c in pts], [max(c["mean_delay"], 1e-2) for c in pts], "o-",
                    color=colour, markersize=3.5, label=label)
        ax.set_yscale("log")
        ax.set_ylim(1e-2, 1e3)
        ax.set_xlim(0, 100)
        ax.set_xlabel("offered load (% of line rate, Bernoulli uniform i.i.d.)")
        ax.set_ylabel("mean queueing delay (cell times)")
        ax.set_title(f"Delay vs load, {curves[0]['ports']}x{curves[0]['ports']} switch", fontsize="medium")
        ax.legend(fontsize="small", loc="upper left")
        ax.grid(True, which="both", alpha=0.3)
    return fig


def lab_switch(rows: Sequence[Mapping], curves: Sequence[Mapping], path: str | Path) -> Path:
    """Write :func:`build_lab_switch` to a PNG at ``path``; returns the path."""
    return save_png(build_lab_switch(rows, curves), path)
