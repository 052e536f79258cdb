"""The HOL lab's figure: free-flow throughput with FIFO inputs vs VOQs, and incast throughput with
a static vs a shared credit pool (closed forms as dashed ticks). GB/s = 1e9 B/s, one direction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png


def build_lab_hol(result: Mapping[str, Sequence[Mapping]]) -> Figure:
    """Figure from the HOL lab's result: ``{"voq": rows, "pools": rows}`` (either may be empty)."""
    voq, pools = list(result.get("voq", ())), list(result.get("pools", ()))
    panels = [p for p in (voq, pools) if p]
    if not panels:
        raise ValueError("the HOL-lab plot needs VOQ rows or credit-pool rows")
    fig = new_figure(5.0 * len(panels), 4.2)
    axes = list(fig.subplots(1, len(panels), squeeze=False)[0])
    colours = palette(3)
    if voq:
        ax = axes.pop(0)
        labels = [("VOQ" if r["voq"] else "FIFO") + f"\nspeedup {r['speedup']:g}" for r in voq]
        x = range(len(voq))
        ax.bar([i - 0.2 for i in x], [r["free_GBps"] for r in voq], 0.4, color=colours[0],
               label="free flow (victim -> idle GPU)")
        ax.bar([i + 0.2 for i in x], [r["incast_GBps"] + r["hot_GBps"] for r in voq], 0.4, color=colours[1],
               label="hot output (incast + victim)")
        ax.axhline(voq[0]["available_GBps"], color="0.4", linestyle=":", linewidth=1,
                   label="victim link minus its hot packets")
        for i, r in enumerate(voq):
            ax.text(i - 0.2, r["free_GBps"] + 0.5, f"{r['free_GBps']:.1f}", ha="center", fontsize="small")
        ax.set_xticks(list(x), labels)
        ax.set_ylabel("throughput (GB/s, one direction)")
        ax.set_ylim(0, voq[0]["line_GBps"] * 1.3)
        ax.set_title(f"Head-of-line blocking ({voq[0]['n_incast']} GPUs incast on the hot output)",
                     fontsize="medium")
        ax.legend(fontsize="small", loc="upper left")
        ax.grid(True, axis="y", alpha=0.3)
    if pools:
        ax = axes.pop(0)
        x = range(len(pools))
        ax.bar(list(x), [r["sink_GBps"] for r in pools], 0.5, color=colours[2], label="simulated")
        for i, r in enumerate(pools):
            ax.hlines(r["closed_form_GBps"], i - 0.3, i + 0.3, colors="k", linestyles="--",
                      label="closed form" if i == 0 else None)
            ax.text(i, r["sink_GBps"] + 0.5, f"{r['sink_GBps']:.1f}", ha="center", fontsize="small")
        ax.set_xticks(list(x), [f"{r['policy']}\n{r['window_bytes'] / 1024:.3g} KiB for the busy VC"
                                for r in pools])
        ax.set_ylabel("incast throughput (GB/s, one direction)")
        ax.set_ylim(0, pools[0]["line_GBps"] * 1.3)
        ax.set_title(f"Credit pools, {pools[0]['vcs']} VCs, {pools[0]['cable_m']:g} m link", fontsize="medium")
        ax.legend(fontsize="small", loc="upper left")
        ax.grid(True, axis="y", alpha=0.3)
    return fig


def lab_hol(result: Mapping[str, Sequence[Mapping]], path: str | Path) -> Path:
    """Write :func:`build_lab_hol` to a PNG at ``path``; returns the path."""
    return save_png(build_lab_hol(result), path)
