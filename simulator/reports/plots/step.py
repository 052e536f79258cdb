"""Where a decode or prefill step's time goes, one horizontal bar per (system, workload): compute
split into attention, GEMM and other kernels, then the communication left exposed (issue 27, item 8:
a step scenario's figure shows the step, not only static power).

Per-layer times are scaled so the compute parts add up to the step's compute on the critical path
(the embedding and LM head are spread over them in proportion); the bar's length is the step time.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, palette, save_png

PARTS = (("attention_per_layer_us", "attention kernels"), ("gemm_per_layer_us", "GEMMs"),
         ("other_per_layer_us", "other kernels (norms, rotary, residual, cache writes)"))


def build_step_breakdown(rows: Sequence[tuple[str, Mapping]]) -> Figure:
    """``rows``: (label, a decode/prefill result row with per-layer times, compute_us and time_us)."""
    fig = new_figure(9, 2.0 + 0.7 * len(rows))
    ax = fig.subplots()
    colours = palette(len(PARTS) + 1)
    labels = [textwrap.fill(label, 38) for label, _ in rows]
    for y, (_, r) in enumerate(rows):
        layer = sum(float(r.get(k) or 0.0) for k, _ in PARTS)
        scale = float(r["compute_us"]) / layer if layer else 0.0
        left = 0.0
        for (key, name), colour in zip(PARTS, colours):
            width = float(r.get(key) or 0.0) * scale / 1e3
            ax.barh(y, width, left=left, color=colour, label=name if y == 0 else None)
            left += width
        exposed = max(0.0, float(r["time_us"]) - float(r["compute_us"])) / 1e3
        ax.barh(y, exposed, left=left, color=colours[-1], hatch="//", edgecolor="white",
                label="exposed communication" if y == 0 else None)
        ax.text(left + exposed, y, f"  {float(r['time_us']) / 1e3:,.2f} ms"
                + (f", {r['bottleneck']}" if r.get("bottleneck") else ""), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("step time (ms, simulated): compute on the critical path, then exposed communication")
    ax.set_title("Where the step's time goes")
    ax.set_xlim(right=ax.get_xlim()[1] * 1.35)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig


def step_breakdown(rows: Sequence[tuple[str, Mapping]], path: str | Path) -> Path:
    return save_png(build_step_breakdown(rows), path)
