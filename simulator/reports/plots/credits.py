"""Credit occupancy and queue depth of one link over time: the credit loop made visible.

Takes plain arrays, so any sampler can feed it (the packet engine's observer, a lab's closed form).
``credits`` are credits the sender has spent and not yet had back, i.e. the receive buffer's
occupancy in credit units: they live in 0..``buffer_credits``. Counters are piecewise constant
between samples, so both panels are drawn as steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from simulator.reports.plots._figure import new_figure, save_png

US = 1e-6


def _check(times_s: np.ndarray, credits: np.ndarray, queue_depth: np.ndarray) -> None:
    if times_s.ndim != 1 or times_s.size == 0:
        raise ValueError("times_s must be a non-empty 1-D array of seconds")
    if credits.shape != times_s.shape or queue_depth.shape != times_s.shape:
        raise ValueError(f"credits {credits.shape} and queue_depth {queue_depth.shape} must match "
                         f"times_s {times_s.shape}")
    if np.any(np.diff(times_s) < 0):
        raise ValueError("times_s must be non-decreasing")


def build_credit_timeseries(times_s: Sequence[float], credits: Sequence[float],
                            queue_depth: Sequence[float], buffer_credits: int, label: str = "",
                            queue_unit: str = "packets") -> Figure:
    """Two stacked panels sharing a time axis in µs: credits in use (with the buffer size dashed)
    above, the sender's queue depth (in ``queue_unit``) below."""
    t = np.asarray(times_s, dtype=float)
    c = np.asarray(credits, dtype=float)
    q = np.asarray(queue_depth, dtype=float)
    _check(t, c, q)
    fig = new_figure(8.0, 5.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    t_us = t / US
    top.step(t_us, c, where="post", color="C0", label="credits in use (receive buffer occupancy)")
    top.axhline(buffer_credits, color="C3", linestyle="--", label=f"buffer = {buffer_credits} credits")
    top.set_ylim(0, max(buffer_credits, float(c.max(initial=0))) * 1.15 or 1)
    top.set_ylabel("credits in use\n(credit units)")
    top.legend(loc="lower right", fontsize="small")
    top.grid(True, alpha=0.3)
    bottom.step(t_us, q, where="post", color="C1")
    bottom.set_ylim(bottom=0, top=max(1.0, float(q.max(initial=0)) * 1.15))
    bottom.set_ylabel(f"queue depth\n({queue_unit})")
    bottom.set_xlabel("simulated time (µs)")
    bottom.grid(True, alpha=0.3)
    fig.suptitle(f"Credit loop of {label or 'one link'} (one direction)")
    return fig


def credit_timeseries(times_s: Sequence[float], credits: Sequence[float], queue_depth: Sequence[float],
                      buffer_credits: int, path: str | Path, label: str = "",
                      queue_unit: str = "packets") -> Path:
    """Write :func:`build_credit_timeseries` to a PNG at ``path``; returns the path."""
    return save_png(build_credit_timeseries(times_s, credits, queue_depth, buffer_credits, label,
                                            queue_unit), path)
