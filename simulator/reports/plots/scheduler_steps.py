"""One cell time of the matching crossbar, drawn: request, grant, accept (iSLIP's three steps).

The picks come from the engine's own allocator (``grant``/``accept`` never change state; the
pointer update is shown separately), so the figure shows what the simulator does, not a sketch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from simulator.engine.packet.allocators import ALLOCATORS
from simulator.reports.plots._figure import new_figure, palette, save_png


def one_round(arbiter: str, requests: Sequence[Sequence[int]], grant_ptr: Sequence[int] | None = None,
              accept_ptr: Sequence[int] | None = None, seed: int = 0):
    """First request-grant-accept round of ``arbiter`` on the request matrix (``requests[i][j]``:
    input i has a packet for output j). Returns (grants {output: input}, accepts {input: output},
    allocator before the update, allocator after it)."""
    n = len(requests)
    make = ALLOCATORS[arbiter]
    before = make(n, n, np.random.default_rng(seed), [1] * n)
    if grant_ptr is not None:
        before.grant_ptr = list(grant_ptr)
    if accept_ptr is not None:
        before.accept_ptr = list(accept_ptr)
    after = make(n, n, np.random.default_rng(seed), [1] * n)
    after.__dict__.update({k: list(v) if isinstance(v, list) else v for k, v in before.__dict__.items()})
    by_out = {j: [i for i in range(n) if requests[i][j]] for j in range(n)}
    grants = {j: after.grant(j, ins, {}) for j, ins in by_out.items() if ins}
    for j, i in grants.items():
        after.granted(j, i, True)
    got: dict[int, list[int]] = {}
    for j, i in sorted(grants.items()):
        got.setdefault(i, []).append(j)
    accepts = {i: after.accept(i, outs, {}) for i, outs in got.items()}
    for i, j in accepts.items():
        after.accepted(i, j, True)
    return grants, accepts, before, after


def build_scheduler_steps(requests: Sequence[Sequence[int]], grant_ptr: Sequence[int],
                          accept_ptr: Sequence[int], arbiter: str = "islip") -> Figure:
    """Three panels (request, grant, accept) of one iSLIP-style round on an N x N switch."""
    n = len(requests)
    grants, accepts, before, after = one_round(arbiter, requests, grant_ptr, accept_ptr)
    fig = new_figure(11.0, 4.6)
    axes = fig.subplots(1, 3)
    colours = palette(n)
    y = [n - 1 - k for k in range(n)]
    titles = ("1. Request: every input asks each output\nit holds a packet for (its VOQs)",
              "2. Grant: each output picks one request,\nthe first at or after its grant pointer",
              "3. Accept: each input picks one grant,\nthe first at or after its accept pointer")
    for step, ax in enumerate(axes):
        for i in range(n):
            for j in range(n):
                if not requests[i][j]:
                    continue
                if step == 0:
                    style = dict(color=colours[i], lw=1.6, alpha=0.9)
                elif step == 1:
                    granted = grants.get(j) == i
                    style = dict(color=colours[i], lw=2.6 if granted else 0.8, alpha=0.95 if granted else 0.25,
                                 ls="-" if granted else ":")
                elif accepts.get(i) == j:
                    style = dict(color=colours[i], lw=3.2, alpha=1.0)
                elif grants.get(j) == i:  # granted, not accepted: this output stays free
                    style = dict(color="0.45", lw=1.6, alpha=0.9, ls="--")
                else:
                    style = dict(color=colours[i], lw=0.8, alpha=0.2, ls=":")
                ax.plot([0, 1], [y[i], y[j]], **style)
        for k in range(n):
            ax.text(-0.05, y[k], f"in{k}", ha="right", va="center", fontsize="small", color=colours[k])
            ax.text(1.05, y[k], f"out{k}", ha="left", va="center", fontsize="small")
        if step == 1:
            for j in range(n):
                ax.text(1.05, y[j] - 0.3, f"g={before.grant_ptr[j]}", ha="left", va="center", fontsize="x-small",
                        color="0.35")
        if step == 2:
            for i in range(n):
                ax.text(-0.05, y[i] - 0.3, f"a={before.accept_ptr[i]}", ha="right", va="center",
                        fontsize="x-small", color="0.35")
        ax.set_xlim(-0.45, 1.45)
        ax.set_ylim(-0.8, n - 0.4)
        ax.axis("off")
        ax.set_title(titles[step], fontsize="medium")
    matched = ", ".join(f"in{i}->out{j}" for i, j in sorted(accepts.items()))
    moved = ", ".join(f"g{j}:{before.grant_ptr[j]}->{after.grant_ptr[j]}" for j in sorted(accepts.values()))
    rejected = ", ".join(f"out{j}->in{i}" for j, i in sorted(grants.items()) if accepts.get(i) != j)
    fig.suptitle(f"One {arbiter} iteration: matched {matched}; grants not accepted (dashed): {rejected or 'none'}.\n"
                 f"Grant pointers move one past the input only when their grant is accepted ({moved}); the "
                 f"unmatched inputs and outputs try again in the next iteration.", fontsize="small")
    return fig


def scheduler_steps(path: str | Path, requests: Sequence[Sequence[int]] = ((1, 1, 0, 1), (1, 0, 1, 0),
                                                                          (0, 1, 0, 0), (1, 0, 0, 1)),
                    grant_ptr: Sequence[int] = (0, 0, 1, 0), accept_ptr: Sequence[int] = (1, 0, 2, 0)) -> Path:
    """Write :func:`build_scheduler_steps` (a 4 x 4 example) to a PNG at ``path``."""
    return save_png(build_scheduler_steps(requests, grant_ptr, accept_ptr), path)
