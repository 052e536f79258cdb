"""The switch lab: an N x N switch under uniform i.i.d. traffic, per switch design, next to the
classic results of switch scheduling.

Fabric: ``synthetic.crossbar(N)``, sources ``in0..`` feed the inputs of ``sw0``, its outputs feed
sinks ``out0..``. Time unit: one *cell time*, a packet of ``CELL_BYTES`` on an output link. Every
cell picks its output uniformly at random, independently (uniform i.i.d. traffic); the switch runs
the matching crossbar (``PacketConfig(crossbar="matching")``), store-and-forward, zero-latency
links, so cells reach the inputs on the slot grid as in the papers.

- **Saturation** (``saturation``): every input always has cells waiting. The input links run at
  twice the output rate, so each input buffer (``INPUT_BUFFER_CELLS``) is full at every slot and
  refills as cells leave. Throughput = cells delivered per output per cell time, in a window after
  a warm-up. VOQ fairness = Jain's index of the cells each (input, output) pair delivered.
- **Load** (``load_point``): each input receives a cell at each slot with probability ``load``
  (Bernoulli), input links at the output rate. Queueing delay = time from a cell's arrival in its
  input buffer until its output link starts sending it, in cell times (0: straight through).

Published values (saturation throughput):

- FIFO inputs, random contention resolution: Karol, Hluchyj and Morgan, "Input versus output
  queueing on a space-division packet switch", IEEE Trans. Commun. 35(12), 1987, Table I
  (N = 1..8, limit 2 - sqrt 2 = 0.5858).
- VOQ + PIM, one iteration: 1 - (1 - 1/N)^N (Anderson et al., "High-speed switch scheduling for
  local-area networks", ACM TOCS 11(4), 1993; McKeown 1999 eq. 1).
- VOQ + iSLIP, any number of iterations: 100 % (McKeown, "The iSLIP scheduling algorithm for
  input-queued switches", IEEE/ACM ToN 7(2), 1999, section IV: the grant pointers desynchronize).
- Output queueing (here FIFO inputs with crossbar speedup N): 100 % (Karol et al. 1987; an
  output-queued switch is work-conserving).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from simulator.engine.packet import EngineObserver, PacketConfig, run_packet
from simulator.engine.transfer import Transfer, Workload
from simulator.errors import InputError, unknown_choice
from simulator.topology import synthetic
from simulator.topology.fabric import Fabric
from simulator.topology.switch_designs import Queueing
from simulator.workloads.labs.measure import jain_index

CELL_BYTES = 64
"""Cell size (B): the switch-design literature's fixed-size cell (ATM 53 B, rounded; any size gives
the same results in cell times)."""
RATE_BPS = 64e9
"""Output link rate (B/s): one 64 B cell per ns, so a cell time is 1 ns (any rate gives the same
results in cell times)."""
INPUT_SPEEDUP = 2.0
"""Saturation runs: input links at this multiple of the output rate keep every input buffer full."""
INPUT_BUFFER_CELLS_PER_PORT = 128
"""Saturation runs: input buffer of each port, in cells per switch port (N x 128 cells). The
saturation results presume every VOQ backlogged; with 8 cells per VOQ an iSLIP input finds a VOQ
empty now and then and loses 1-9 % (measured, N = 2..8), with 128 per VOQ under 0.2 %
(assumption: chosen by that measurement, not a real switch's buffer)."""
KAROL_1987 = {1: 1.0, 2: 0.7500, 3: 0.6825, 4: 0.6553, 5: 0.6399, 6: 0.6302, 7: 0.6234, 8: 0.6184}
"""Saturation throughput of FIFO input queueing, N x N, uniform traffic (Karol et al. 1987, Table I)."""
KAROL_LIMIT = 2 - math.sqrt(2)
"""The N -> infinity limit (Karol et al. 1987)."""


@dataclass(frozen=True)
class Design:
    """One switch design: input queueing, allocator, iterations, speedup."""

    label: str
    queueing: Queueing
    """Input buffers: ``voq`` or ``fifo`` (``PacketConfig.queueing``)."""
    arbiter: str
    """Scheduling design (``topology.switch_designs``)."""
    iterations: int = 1
    speedup: float = 1.0
    """Crossbar speedup; 0 stands for N."""
    output_queue_packets: int | None = None
    """Output queue per output (cells); None: unbounded at speedup N (output queueing), else the
    engine's default."""
    shared_buffer: bool = False
    """Output queues share one pool (shared-memory switch)."""

    def config(self, n: int, seed: int) -> PacketConfig:
        speedup = float(n) if self.speedup == 0 else self.speedup
        oq = self.output_queue_packets or (1 << 30 if self.speedup == 0 else PacketConfig.output_queue_packets)
        return PacketConfig(packet_bytes=CELL_BYTES, switching="store_and_forward", crossbar="matching",
                            arbiter=self.arbiter, iterations=self.iterations, queueing=self.queueing,
                            speedup=speedup, output_queue_packets=oq, shared_buffer=self.shared_buffer,
                            seed=seed)

    def published(self, n: int) -> tuple[float | None, str]:
        """Published saturation throughput for N ports and its source (None: none)."""
        if self.speedup == 0:
            return 1.0, "output queueing, Karol 1987"
        if self.queueing == "fifo":
            if n in KAROL_1987:
                return KAROL_1987[n], "Karol 1987 Table I"
            return KAROL_LIMIT, "Karol 1987, N -> infinity limit (finite N sits a little above it)"
        if self.arbiter == "pim" and self.iterations == 1:
            return 1 - (1 - 1 / n) ** n, "1-(1-1/N)^N, Anderson 1993"
        if self.arbiter == "islip":
            return 1.0, "McKeown 1999"
        return None, ""


DESIGNS: tuple[Design, ...] = (
    Design("FIFO", queueing="fifo", arbiter="pim"),
    Design("VOQ + PIM k=1", queueing="voq", arbiter="pim"),
    Design("VOQ + RRM k=1", queueing="voq", arbiter="round_robin"),
    Design("VOQ + iSLIP k=1", queueing="voq", arbiter="islip"),
    Design("VOQ + iSLIP k=2", queueing="voq", arbiter="islip", iterations=2),
    Design("VOQ + iSLIP k=3", queueing="voq", arbiter="islip", iterations=3),
    Design("VOQ + iSLIP k=4", queueing="voq", arbiter="islip", iterations=4),
    Design("Output queued (S=N)", queueing="fifo", arbiter="pim", speedup=0),
)
"""Rows of the lab table, in order. Speedup 0 stands for N."""
CURVE_DESIGNS = ("FIFO", "VOQ + PIM k=1", "VOQ + iSLIP k=1", "VOQ + iSLIP k=4", "Output queued (S=N)")
"""Designs on the delay-vs-load figure (the classic iSLIP figure)."""


def design(label: str) -> Design:
    for d in DESIGNS:
        if d.label == label:
            return d
    raise unknown_choice("design", label, [d.label for d in DESIGNS], field="design")


class CellLog(EngineObserver):
    """Per delivered cell: delivery time, transfer id, queueing delay (s)."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.tid: list[int] = []
        self.wait: list[float] = []

    def delivered(self, packet, t_s: float) -> None:
        self.t.append(t_s)
        self.tid.append(packet.tid)
        self.wait.append(packet.queue_s)


def _cell_workload(n: int, pairs: np.ndarray, slots: np.ndarray, fabric: Fabric) -> Workload:
    """One single-cell transfer per row of ``pairs`` (input, output), released at its slot of
    ``slots``; transfers are numbered in slot order (ties keep row order)."""
    ch = {(c.src, c.dst): c.id for c in fabric.channels}
    paths = [[(ch[(f"in{i}", "sw0")], ch[("sw0", f"out{j}")]) for j in range(n)] for i in range(n)]
    ts = []
    cell_s = CELL_BYTES / RATE_BPS
    order = np.argsort(slots, kind="stable")
    for idx in order:
        i, j, k = int(pairs[idx, 0]), int(pairs[idx, 1]), int(slots[idx])
        ts.append(Transfer(len(ts), f"in{i}", f"out{j}", CELL_BYTES, delay_s=k * cell_s,
                           paths=(paths[i][j],)))
    return Workload("switch-lab", tuple(ts))


def saturation(d: Design, n: int, slots: int = 2000, seed: int = 0) -> dict:
    """Saturation throughput, VOQ shares and Jain index of design ``d`` on an N x N switch, over
    ``slots`` cell times after a warm-up that fills the input buffers."""
    if n < 2:
        raise InputError(f"need at least 2 ports, got {n}", field="ports")
    rng = np.random.default_rng(seed)
    cell_s = CELL_BYTES / RATE_BPS
    buffer_cells = INPUT_BUFFER_CELLS_PER_PORT * n
    warmup = buffer_cells + 100
    credit = synthetic.default_credit(buffer_bytes=buffer_cells * CELL_BYTES, credit_bytes=CELL_BYTES)
    fabric = synthetic.crossbar(n, RATE_BPS, input_rate_Bps=INPUT_SPEEDUP * RATE_BPS, input_credit=credit)
    per_input = warmup + slots + buffer_cells + 8
    rows = np.array([(i, int(j)) for i in range(n) for j in rng.integers(n, size=per_input)])
    # all cells exist at t=0; each source sends its own in order, as fast as credits allow
    ws = _cell_workload(n, rows, np.zeros(len(rows), dtype=int), fabric)
    log = CellLog()
    run_packet(fabric, ws, d.config(n, seed), log)
    t = np.asarray(log.t)
    tid = np.asarray(log.tid)
    src = np.array([int(tr.src[2:]) for tr in ws.transfers])[tid]
    dst = np.array([int(tr.dst[3:]) for tr in ws.transfers])[tid]
    lo, hi = (warmup + 1) * cell_s, (warmup + slots + 1) * cell_s
    keep = (t > lo * (1 + 1e-9)) & (t <= hi * (1 + 1e-9))
    counts = np.zeros((n, n))
    np.add.at(counts, (src[keep], dst[keep]), 1)
    throughput = counts.sum() / (n * slots)
    published, source = d.published(n)
    per_input_share = counts / counts.sum(axis=1, keepdims=True)
    return {
        "design": d.label, "ports": n, "throughput": float(throughput), "published": published,
        "source": source, "jain": jain_index(counts.ravel()),
        "min_voq_share": float(per_input_share.min() * n), "max_voq_share": float(per_input_share.max() * n),
        "slots": slots, "seed": seed,
    }


def load_point(d: Design, n: int, load: float, slots: int = 2000, warmup: int = 200, seed: int = 0) -> dict:
    """Mean and 99th-percentile queueing delay (cell times) at Bernoulli ``load`` per input."""
    if not 0 < load <= 1:
        raise InputError(f"load is a fraction of the line rate in (0, 1], got {load:g}", field="load")
    rng = np.random.default_rng((seed, int(load * 1e6)))
    cell_s = CELL_BYTES / RATE_BPS
    fabric = synthetic.crossbar(n, RATE_BPS, input_credit=synthetic.default_credit(
        buffer_bytes=1 << 30, credit_bytes=CELL_BYTES))
    total = warmup + slots
    arrive = rng.random((total, n)) < load
    k_idx, i_idx = np.nonzero(arrive)
    j_idx = rng.integers(n, size=len(k_idx))
    ws = _cell_workload(n, np.stack([i_idx, j_idx], axis=1), k_idx, fabric)
    log = CellLog()
    run_packet(fabric, ws, d.config(n, seed), log)
    born = np.array([tr.delay_s for tr in ws.transfers])[np.asarray(log.tid)]
    delay = np.asarray(log.wait) / cell_s
    keep = born >= warmup * cell_s * (1 - 1e-9)
    delay = delay[keep]
    return {"design": d.label, "ports": n, "load": load, "mean_delay": float(delay.mean()),
            "p99_delay": float(np.percentile(delay, 99)), "cells": int(keep.sum())}


def switch_lab(n: int = 8, designs: Sequence[Design] = DESIGNS, slots: int = 2000, load: float = 0.6,
               seed: int = 0) -> list[dict]:
    """One row per design: saturation throughput, VOQ fairness, delay at ``load`` (cell times)."""
    if not 0 < load <= 1:
        raise InputError(f"load is a fraction of the line rate in (0, 1], got {load:g}", field="load")
    rows = []
    for d in designs:
        row = saturation(d, n, slots=slots, seed=seed)
        if load >= row["throughput"] * 0.98:
            row.update(load=load, mean_delay=None, p99_delay=None)  # unstable: the queue grows without bound
        else:
            pt = load_point(d, n, load, slots=slots, seed=seed)
            row.update(load=load, mean_delay=pt["mean_delay"], p99_delay=pt["p99_delay"])
        rows.append(row)
    return rows


def delay_curves(n: int = 8, loads: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75,
                                                        0.8, 0.85, 0.9, 0.95, 0.99),
                 labels: Sequence[str] = CURVE_DESIGNS, slots: int = 2000, seed: int = 0,
                 max_mean_delay: float = 200.0) -> list[dict]:
    """Mean queueing delay vs offered load per design (stops a curve once the mean passes
    ``max_mean_delay`` cell times: beyond saturation the delay only grows with the run length)."""
    out = []
    for label in labels:
        d = design(label)
        for load in loads:
            pt = load_point(d, n, load, slots=slots, seed=seed)
            out.append(pt)
            if pt["mean_delay"] > max_mean_delay:
                break
    return out


def explain_switch(rows: Sequence[dict]) -> str:
    """Sentences computed from the rows."""
    by = {r["design"]: r for r in rows}
    out = []
    n = rows[0]["ports"]
    if "FIFO" in by:
        r = by["FIFO"]
        paper = (f"{r['published']:.4f} for N={n}" if n in KAROL_1987
                 else f"{r['published']:.4f} as N -> infinity, a little above it at N={n}")
        out.append(f"FIFO inputs saturate at {r['throughput']:.3f} of the line rate (Karol 1987: "
                   f"{paper}): a head blocked at a busy output holds the cells behind it.")
    if "VOQ + PIM k=1" in by and "VOQ + iSLIP k=1" in by:
        p, s = by["VOQ + PIM k=1"], by["VOQ + iSLIP k=1"]
        out.append(f"VOQs remove that blocking, but one random PIM round matches only {p['throughput']:.3f} "
                   f"(1-(1-1/N)^N = {p['published']:.3f}); one iSLIP round reaches {s['throughput']:.3f}, "
                   f"because its grant pointers move only on accepted grants and fall out of step.")
    if "VOQ + RRM k=1" in by:
        r = by["VOQ + RRM k=1"]
        out.append(f"Round-robin pointers that move on every grant (RRM) stay in step: {r['throughput']:.3f}.")
    oq = next((r for r in rows if r["design"].startswith("Output queued")), None)
    if oq:
        out.append(f"With speedup N the crossbar never blocks and the switch behaves output-queued: "
                   f"{oq['throughput']:.3f}.")
    return " ".join(out)
