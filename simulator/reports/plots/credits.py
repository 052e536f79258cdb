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
                            queue_unit: str = "packets", slots=None, credit_bytes: int | None = None) -> Figure:
    """Two stacked panels sharing a time axis in µs: credits in use (with the buffer size dashed)
    above, in bytes of the receive buffer (KiB from 1 KiB on) when ``credit_bytes`` (bytes per
    credit) is given, else in credits; the sender's queue depth (in ``queue_unit``) below. ``slots`` (a ``SlotTimeline``-like
    object with ``times_s``, ``in_use``, ``steps``, ``slot_bytes``) adds a third panel: the same
    credit idea one level up, the NCCL FIFO slots of one channel in use."""
    t = np.asarray(times_s, dtype=float)
    c = np.asarray(credits, dtype=float)
    q = np.asarray(queue_depth, dtype=float)
    _check(t, c, q)
    fig = new_figure(8.0, 7.0 if slots is not None else 5.0)
    axes = fig.subplots(3 if slots is not None else 2, 1, sharex=slots is None)
    top, bottom = axes[0], axes[1]
    t_us = t / US
    scale, unit = 1.0, "credits"
    buffer_text = f"buffer = {buffer_credits} credits"
    if credit_bytes:
        scale, unit = (credit_bytes / 1024, "KiB") if buffer_credits * credit_bytes >= 1024 else (credit_bytes, "B")
        buffer_text = (f"buffer = {buffer_credits * credit_bytes * 1.0 / (1024 if unit == 'KiB' else 1):g} {unit} "
                       f"({buffer_credits} credits of {credit_bytes:,} B)")
    top.step(t_us, c * scale, where="post", color="C0", label="credits in use (receive buffer occupancy)")
    top.axhline(buffer_credits * scale, color="C3", linestyle="--", label=buffer_text)
    top.set_ylim(0, max(buffer_credits, float(c.max(initial=0))) * scale * 1.15 or 1)
    top.set_ylabel(f"credits in use\n({unit})")
    top.legend(loc="lower right", fontsize="small")
    top.grid(True, alpha=0.3)
    bottom.step(t_us, q, where="post", color="C1")
    bottom.set_ylim(bottom=0, top=max(1.0, float(q.max(initial=0)) * 1.15))
    bottom.set_ylabel(f"queue depth\n({queue_unit})")
    bottom.set_xlabel("simulated time (µs)")
    bottom.grid(True, alpha=0.3)
    if slots is not None:
        ax = axes[2]
        ax.step(np.asarray(slots.times_s) / US, slots.in_use, where="post", color="C2",
                label="FIFO slots filled, not yet freed (protocol credits)")
        ax.axhline(slots.steps, color="C3", linestyle="--",
                   label=f"NCCL_STEPS = {slots.steps} slots of {slots.slot_bytes // 1024} KiB")
        ax.set_ylim(0, slots.steps * 1.3)
        ax.set_ylabel("slots in use\n(one channel, one peer)")
        ax.set_xlabel("time from the channel's first slot (µs)")
        ax.legend(loc="upper right", fontsize="small")
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Credit loop of {label or 'one link'} (one direction)"
                 + (" and one NCCL channel's FIFO" if slots is not None else ""))
    return fig


def credit_timeseries(times_s: Sequence[float], credits: Sequence[float], queue_depth: Sequence[float],
                      buffer_credits: int, path: str | Path, label: str = "",
                      queue_unit: str = "packets", slots=None, credit_bytes: int | None = None) -> Path:
    """Write :func:`build_credit_timeseries` to a PNG at ``path``; returns the path."""
    return save_png(build_credit_timeseries(times_s, credits, queue_depth, buffer_credits, label,
                                            queue_unit, slots, credit_bytes), path)
