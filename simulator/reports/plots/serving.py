"""Serving figures: the throughput-latency curve over request rates, and latency CDFs.

``serving_curves``: for each system x deployment, one line through its rates, x = output tokens
per second per GPU, y = TPOT p50 (left) and TTFT p99 (right), log y; the SLOs as dashed lines. A
system that serves more at the same latency lies to the right: NVL72 vs Hopper in one figure.

``serving_cdf``: at the highest rate each ran, the empirical CDF of TTFT (left) and TPOT (right) of
every request, one line per system x deployment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from simulator.reports.plots._figure import new_figure, palette, save_png

_STYLES = ("-", "--", ":", "-.")
_PLAIN = FuncFormatter(lambda value, _pos: f"{value:g}")
"""Log-axis ticks as plain numbers (20, 50, 100), not powers of ten."""
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _plain_log(axis) -> None:  # noqa: ANN001 - a matplotlib Axis
    """A log axis ticked at 1, 2 and 5 of each decade, labelled as plain numbers."""
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(_PLAIN)
    axis.set_minor_formatter(NullFormatter())


def _series(rows: Sequence[dict]) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        out.setdefault((r["system"], r["deployment"]), []).append(i)
    return out


def _styles(keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    """One colour per system, one line style and marker per deployment."""
    systems = list(dict.fromkeys(k[0] for k in keys))
    deployments = list(dict.fromkeys(k[1] for k in keys))
    colours = palette(len(systems))
    return {k: {"color": colours[systems.index(k[0])], "linestyle": _STYLES[deployments.index(k[1]) % len(_STYLES)],
                "marker": _MARKERS[deployments.index(k[1]) % len(_MARKERS)]} for k in keys}


def _panels(rows: Sequence[dict]):  # noqa: ANN202
    """A figure of two panels side by side, the rows' series and their styles."""
    fig = new_figure(11.0, 4.6)
    left, right = fig.subplots(1, 2)
    series = _series(rows)
    return fig, left, right, series, _styles(list(series))


def serving_curves(rows: Sequence[dict], slo: dict, path: str | Path, title: str,
                   inputs: Iterable[str | Path] = ()) -> Path:
    fig, left, right, series, styles = _panels(rows)
    for key, idx in series.items():
        # in order of offered rate: past saturation the curve turns back (served tokens/s stop growing)
        pts = [(rows[i]["output_tok_per_s_per_gpu"], rows[i]["tpot_p50_ms"], rows[i]["ttft_p99_ms"])
               for i in sorted(idx, key=lambda j: rows[j]["rate_per_s"] or 0.0)]
        x = [p[0] for p in pts]
        label = f"{key[0]} · {key[1]}"
        left.plot(x, [p[1] for p in pts], label=label, **styles[key])
        right.plot(x, [p[2] for p in pts], label=label, **styles[key])
    for ax, what, limit in ((left, "TPOT p50 (ms)", slo.get("tpot_s")), (right, "TTFT p99 (ms)", slo.get("ttft_s"))):
        ax.set_xlabel("output tokens per second per GPU")
        ax.set_ylabel(what)
        ax.set_yscale("log")
        _plain_log(ax.yaxis)
        ax.grid(True, which="both", alpha=0.3)
        if limit:
            ax.axhline(limit * 1e3, color="grey", linestyle="--", linewidth=1)
            ax.annotate(f"SLO {limit * 1e3:g} ms", (0.01, limit * 1e3), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=8, color="grey")
    left.set_title("time per output token vs throughput", fontsize=10)
    right.set_title("time to first token (p99) vs throughput", fontsize=10)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize=8)
    fig.suptitle(f"{title}\none point per offered request rate, joined in order of rate (simulated)", fontsize=11)
    return save_png(fig, path, inputs)


def serving_cdf(rows: Sequence[dict], latencies: Sequence[dict], path: str | Path, title: str,
                inputs: Iterable[str | Path] = ()) -> Path:
    fig, left, right, series, styles = _panels(rows)
    for key, idx in series.items():
        i = max(idx, key=lambda j: rows[j]["rate_per_s"] or 0.0)
        rate = rows[i]["rate_per_s"]
        label = f"{key[0]} · {key[1]}" + ("" if rate is None else f" at {rate:g} req/s")
        style = {k: v for k, v in styles[key].items() if k != "marker"}
        for ax, name in ((left, "ttft_s"), (right, "tpot_s")):
            values = np.sort(np.asarray(latencies[i][name], dtype=float)) * 1e3
            if values.size:
                ax.plot(values, np.arange(1, values.size + 1) / values.size, label=label, **style)
    for ax, what in ((left, "TTFT (ms)"), (right, "TPOT (ms)")):
        ax.set_xlabel(what)
        ax.set_ylabel("fraction of requests")
        ax.set_xscale("log")
        _plain_log(ax.xaxis)
        ax.set_ylim(0, 1.0)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)), fontsize=8)
    fig.suptitle(f"{title}\nlatency of every request at the highest rate (simulated)", fontsize=11)
    return save_png(fig, path, inputs)
