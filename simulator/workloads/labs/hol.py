"""The head-of-line lab: VOQs against HOL blocking, and static against shared credit pools.

Part 1, HOL blocking. One switch; ``n_incast`` GPUs saturate a hot GPU (gpu0). A victim input
(gpu2) streams bulk data to an idle GPU (gpu1, the free output) and now and then, at random
(Poisson) times, sends a packet to the hot GPU, at ``hot_load`` of its fair share of the hot output,
so its hot traffic alone would never congest anything. With one FIFO per input, each hot packet at
the head waits for its turn at the congested output and the free packets behind it wait too; with
virtual output queues the free packets overtake it. The crossbar has speedup ``SPEEDUP``.

Part 2, credit distribution. ``n_senders`` GPUs incast into one GPU behind a long cable, with two
virtual channels. On the long link only the second VC carries traffic (VC = hop index). A static
partition leaves the idle VC's half of the buffer unused; a shared pool above a per-VC minimum
lends it to the busy VC. When the half-buffer is below the link's bandwidth-delay product, static
runs at (buffer / 2) / RTT and shared at min(rate, (buffer - minimum) / RTT).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from simulator.engine.packet import PacketConfig, credit_loop_rtt_s, run_packet
from simulator.engine.packet.credits import credits_for
from simulator.engine.transfer import Transfer, Workload
from simulator.errors import InputError
from simulator.hardware.catalog import Catalog, load_catalog
from simulator.topology import synthetic
from simulator.workloads.labs.catalog_link import CatalogLink, catalog_link, switch_latency_s
from simulator.workloads.labs.measure import DeliveryLog, rate_in_window_Bps, steady_rate_Bps

SHORT_CABLE_M = 1.0
"""GPU-to-switch cable of the lab fabrics (assumption: a short in-rack copper run)."""
FAR_CABLE_M = 30.0
"""Cable to the incast target in part 2 (assumption: a GPU in another rack, over optics)."""
SPEEDUP = 2.0
"""Crossbar speedup of the HOL part. Source: Chuang, Goel, McKeown, Prabhakar, "Matching output
queueing with a combined input/output-queued switch" (IEEE JSAC 1999): speedup 2 - 1/N lets VOQs
emulate an output-queued switch. At speedup 1 the per-output crossbar lets the free VOQ hold the
input's crossbar port back to back, so the hot VOQ backs up (try ``speedup=1``, and
``crossbar="matching", arbiter="islip"`` for a crossbar whose accept pointer rotates)."""
HOT = "gpu0"
FREE = "gpu1"
VICTIM = "gpu2"


# -- part 1: head-of-line blocking ------------------------------------------------------------------
def hol_workload(n_incast: int, hot_load: float, free_packets: int, packet_bytes: int, rate_Bps: float,
                 rng: np.random.Generator) -> tuple[Workload, float]:
    """Transfer 0: victim -> free output (bulk). 1..n_incast: incast senders -> hot GPU, sized to stay
    busy three times the bulk transfer's line-rate duration. Then the victim's single-packet hot
    transfers at Poisson times over that span. Returns the workload and the hot offered rate (B/s)."""
    span_s = 3 * free_packets * packet_bytes / rate_Bps
    hot_rate = hot_load * rate_Bps / (n_incast + 1)
    incast_packets = int(span_s * rate_Bps / n_incast) // packet_bytes + 1
    ts = [Transfer(0, VICTIM, FREE, free_packets * packet_bytes, tag="free")]
    ts += [Transfer(i, f"gpu{2 + i}", HOT, incast_packets * packet_bytes, tag="incast")
           for i in range(1, n_incast + 1)]
    gap_s = packet_bytes / hot_rate
    t = float(rng.exponential(gap_s))
    while t < span_s:
        ts.append(Transfer(len(ts), VICTIM, HOT, packet_bytes, delay_s=t, tag="hot"))
        t += float(rng.exponential(gap_s))
    return Workload("hol-lab", tuple(ts)), hot_rate


def hol_blocking(n_incast: int = 7, hot_load: float = 2 / 3, generation: str = "nvlink5",
                 free_packets: int = 8000, speedup: float = SPEEDUP, seed: int = 0,
                 catalog: Catalog | None = None, arbiter: str = "round_robin", crossbar: str = "auto",
                 iterations: int = 1) -> list[dict]:
    """Two rows, FIFO inputs then VOQs: rate of the free flow, the victim's hot packets and the
    incast, over the free flow's lifetime (GB = 1e9 B, per direction)."""
    if n_incast < 1:
        raise InputError(f"need at least 1 incast sender, got {n_incast}", field="incast")
    if not 0 < hot_load < 1:
        raise InputError(f"hot load is a fraction of the fair share, in (0, 1), got {hot_load:g}",
                         field="hot_load")
    catalog = catalog or load_catalog()
    link = catalog_link(generation, SHORT_CABLE_M, catalog=catalog)
    fabric = synthetic.star_links([link.latency_s] * (n_incast + 3), rate_Bps=link.rate_Bps,
                                  switch_latency_s=switch_latency_s(generation, catalog), credit=link.credit,
                                  generation=link.generation)
    workload, hot_rate = hol_workload(n_incast, hot_load, free_packets, link.packet_bytes, link.rate_Bps,
                                      np.random.default_rng(seed))
    tags = np.array([t.tag for t in workload.transfers])
    rows = []
    for queueing in ("fifo", "voq"):  # head-of-line blocking, then its cure
        voq = queueing == "voq"
        log = DeliveryLog()
        config = PacketConfig(packet_bytes=link.packet_bytes, queueing=queueing, speedup=speedup, seed=seed,
                              arbiter=arbiter, crossbar=crossbar, iterations=iterations)
        run_packet(fabric, workload, config, log)
        t_s, tid, nbytes = log.arrays()
        tag = tags[tid]
        free_t, free_b = t_s[tag == "free"], nbytes[tag == "free"]
        start, end = float(free_t[0]), float(free_t[-1])
        free = steady_rate_Bps(free_t, free_b)
        hot = rate_in_window_Bps(t_s[tag == "hot"], nbytes[tag == "hot"], start, end)
        available = link.rate_Bps - hot  # what the victim's link has left after its hot packets
        rows.append({
            "voq": voq, "free_GBps": free / 1e9,
            "free_pct_of_available": 100.0 * free / available,
            "hot_GBps": hot / 1e9,
            "hot_offered_GBps": hot_rate / 1e9,
            "incast_GBps": rate_in_window_Bps(t_s[tag == "incast"], nbytes[tag == "incast"], start, end) / 1e9,
            "line_GBps": link.rate_Bps / 1e9, "available_GBps": available / 1e9, "n_incast": n_incast,
            "speedup": speedup, "arbiter": arbiter, "crossbar": crossbar, "iterations": iterations,
        })
    return rows


# -- part 2: static vs shared credit pools ----------------------------------------------------------
def pool_window_bytes(link: CatalogLink, policy: str, vcs: int, packet_bytes: int) -> int:
    """Buffer one VC may fill on ``link`` (bytes): its static share, or the pool above the other VCs'
    minimum (one packet each, the engine's default ``vc_min``)."""
    unit = link.credit.credit_bytes
    total = link.credit.buffer_bytes // unit
    if policy == "static":
        return total // vcs * unit
    return (total - (vcs - 1) * credits_for(packet_bytes, unit)) * unit


def credit_pools(n_senders: int = 4, generation: str = "nvlink5", far_cable_m: float = FAR_CABLE_M,
                 packets_per_sender: int = 2000, vcs: int = 2, catalog: Catalog | None = None) -> list[dict]:
    """Two rows, static then shared: incast throughput into the far GPU beside its closed form."""
    if n_senders < 1:
        raise InputError(f"need at least 1 sender, got {n_senders}", field="senders")
    catalog = catalog or load_catalog()
    near = catalog_link(generation, SHORT_CABLE_M, catalog=catalog)
    far = catalog_link(generation, far_cable_m, catalog=catalog)
    packet = near.packet_bytes
    fabric = synthetic.star_links([far.latency_s] + [near.latency_s] * n_senders, rate_Bps=near.rate_Bps,
                                  switch_latency_s=switch_latency_s(generation, catalog), credit=near.credit,
                                  generation=near.generation)
    per_sender = packets_per_sender * packet
    workload = Workload("pool-lab", tuple(Transfer(i - 1, f"gpu{i}", "gpu0", per_sender, tag="incast")
                                          for i in range(1, n_senders + 1)))
    sink = next(c for c in fabric.channels if c.src == "sw0" and c.dst == "gpu0")
    rtt = credit_loop_rtt_s(sink, packet)
    rows = []
    for policy in ("static", "shared"):
        log = DeliveryLog()
        run_packet(fabric, workload, PacketConfig(packet_bytes=packet, vcs=vcs, credit_policy=policy), log)
        t_s, _, nbytes = log.arrays()
        simulated = steady_rate_Bps(t_s, nbytes)
        window = pool_window_bytes(far, policy, vcs, packet)
        closed = min(far.rate_Bps, window / rtt)
        rows.append({
            "policy": policy, "sink_GBps": simulated / 1e9, "closed_form_GBps": closed / 1e9,
            "error_pct": 100.0 * (simulated - closed) / closed, "window_bytes": window,
            "buffer_bytes": far.credit.buffer_bytes, "rtt_ns": rtt * 1e9, "bdp_bytes": far.rate_Bps * rtt,
            "cable_m": far_cable_m, "cable": far.cable, "vcs": vcs, "n_senders": n_senders,
            "line_GBps": far.rate_Bps / 1e9,
        })
    return rows


def hol_lab(n_incast: int = 7, hot_load: float = 2 / 3, generation: str = "nvlink5", speedup: float = SPEEDUP,
            seed: int = 0, catalog: Catalog | None = None, arbiter: str = "round_robin", crossbar: str = "auto",
            iterations: int = 1) -> dict:
    """Both parts: ``{"voq": hol_blocking rows, "pools": credit_pools rows}``."""
    catalog = catalog or load_catalog()
    return {"voq": hol_blocking(n_incast, hot_load, generation, speedup=speedup, seed=seed, catalog=catalog,
                                arbiter=arbiter, crossbar=crossbar, iterations=iterations),
            "pools": credit_pools(generation=generation, catalog=catalog)}


def explain_hol(result: dict) -> str:
    """Sentences computed from :func:`hol_lab`'s result."""
    out = []
    rows: Sequence[dict] = result.get("voq", ())
    if rows:
        fifo = next(r for r in rows if not r["voq"])
        voq = next(r for r in rows if r["voq"])
        out.append(
            f"The victim input sends {fifo['hot_offered_GBps']:.1f} GB/s to a hot GPU that "
            f"{fifo['n_incast']} others saturate, and the rest to an idle GPU: with one FIFO per input the "
            f"free flow gets {fifo['free_GBps']:.1f} GB/s ({fifo['free_pct_of_available']:.0f} % of the "
            f"{fifo['available_GBps']:.1f} GB/s its link has left), because every hot packet at the head waits "
            f"for its turn at the congested output and holds the free packets behind it; with VOQs (crossbar "
            f"speedup {voq['speedup']:g}) it gets {voq['free_GBps']:.1f} GB/s "
            f"({voq['free_pct_of_available']:.0f} %).")
    pools: Sequence[dict] = result.get("pools", ())
    if pools:
        static = next(r for r in pools if r["policy"] == "static")
        shared = next(r for r in pools if r["policy"] == "shared")
        out.append(
            f"Incast over {static['cable_m']:g} m ({static['rtt_ns']:.0f} ns credit loop, "
            f"{static['bdp_bytes'] / 1024:.1f} KiB needed for line rate): a static split gives the one busy VC "
            f"{static['window_bytes'] / 1024:.0f} of {static['buffer_bytes'] / 1024:.0f} KiB and "
            f"{static['sink_GBps']:.1f} GB/s; the shared pool lends it {shared['window_bytes'] / 1024:.2f} KiB "
            f"and reaches {shared['sink_GBps']:.1f} GB/s (closed forms {static['closed_form_GBps']:.1f} and "
            f"{shared['closed_form_GBps']:.1f} GB/s).")
    return " ".join(out)
