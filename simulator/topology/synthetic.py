"""Small hand-made fabrics for labs and tests: a single link, a chain, a star (uniform or with
per-port latencies), a ring.

They bypass YAML on purpose: the labs sweep one parameter at a time, and engine tests need
fabrics whose every number is chosen by the test.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from simulator.topology.fabric import Channel, CreditSpec, Fabric, Node


def _link_pair(next_id: int, link: int, a: str, b: str, rate_Bps: float, latency_s: float,
               credit: CreditSpec, generation: str) -> list[Channel]:
    return [Channel(id=next_id + i, link=link, src=s, dst=d, fabric="nvlink", generation=generation,
                    lanes=2, line_rate_Bps=rate_Bps, rate_Bps=rate_Bps, latency_s=latency_s,
                    credit=credit)
            for i, (s, d) in enumerate(((a, b), (b, a)))]


def _assemble(name: str, nodes: list[Node], edges: list[tuple[str, str]], rate_Bps: float,
              latency_s: float, credit: CreditSpec, generation: str) -> Fabric:
    channels: list[Channel] = []
    for link, (a, b) in enumerate(edges):
        channels += _link_pair(len(channels), link, a, b, rate_Bps, latency_s, credit, generation)
    return Fabric.from_parts(name, nodes, channels)


def default_credit(buffer_bytes: int = 1 << 20, credit_bytes: int = 256,
                   return_delay_s: float = 0.0, batch: int = 1) -> CreditSpec:
    """A deep buffer that never limits unless a test says so."""
    return CreditSpec(buffer_bytes=buffer_bytes, credit_bytes=credit_bytes,
                      return_delay_s=return_delay_s, batch=batch)


def single_link(rate_Bps: float = 50e9, latency_s: float = 10e-9, credit: CreditSpec | None = None,
                generation: str = "synthetic") -> Fabric:
    """Two GPUs joined by one link: the credit lab's bench."""
    nodes = [Node("gpu0", "gpu", "synthetic", rank=0), Node("gpu1", "gpu", "synthetic", rank=1)]
    return _assemble("single-link", nodes, [("gpu0", "gpu1")], rate_Bps, latency_s,
                     credit or default_credit(), generation)


def chain(hops: int, rate_Bps: float = 50e9, latency_s: float = 10e-9,
          switch_latency_s: float = 0.0, credit: CreditSpec | None = None) -> Fabric:
    """gpu0 - sw1 - ... - sw{hops-1} - gpu1: ``hops`` links in a line (the speed benchmark's shape)."""
    names = ["gpu0"] + [f"sw{i}" for i in range(1, hops)] + ["gpu1"]
    nodes = [Node("gpu0", "gpu", "synthetic", rank=0), Node("gpu1", "gpu", "synthetic", rank=1)]
    nodes += [Node(n, "switch", "synthetic", latency_s=switch_latency_s) for n in names[1:-1]]
    return _assemble(f"chain-{hops}", nodes, list(zip(names, names[1:])), rate_Bps, latency_s,
                     credit or default_credit(), "synthetic")


def star(n_gpus: int, rate_Bps: float = 50e9, latency_s: float = 10e-9,
         switch_latency_s: float = 0.0, credit: CreditSpec | None = None,
         reduction: bool = False) -> Fabric:
    """``n_gpus`` GPUs on one switch: incast, arbitration and ideal-network collective tests."""
    nodes = [Node(f"gpu{i}", "gpu", "synthetic", rank=i) for i in range(n_gpus)]
    nodes.append(Node("sw0", "switch", "synthetic", latency_s=switch_latency_s, reduction=reduction))
    return _assemble(f"star-{n_gpus}", nodes, [(f"gpu{i}", "sw0") for i in range(n_gpus)],
                     rate_Bps, latency_s, credit or default_credit(), "synthetic")


def ring(n: int, rate_Bps: float = 50e9, latency_s: float = 10e-9,
         credit: CreditSpec | None = None) -> Fabric:
    """``n`` switches in a ring, one GPU on each: the deadlock test's shape (no VCs)."""
    nodes = [Node(f"gpu{i}", "gpu", "synthetic", rank=i) for i in range(n)]
    nodes += [Node(f"sw{i}", "switch", "synthetic") for i in range(n)]
    edges = [(f"gpu{i}", f"sw{i}") for i in range(n)] + [(f"sw{i}", f"sw{(i + 1) % n}") for i in range(n)]
    return _assemble(f"ring-{n}", nodes, edges, rate_Bps, latency_s, credit or default_credit(),
                     "synthetic")


def star_links(latencies_s: Sequence[float], rate_Bps: float = 50e9, switch_latency_s: float = 0.0,
               credit: CreditSpec | None = None, generation: str = "synthetic") -> Fabric:
    """GPUs ``gpu0..gpu{n-1}`` on one switch ``sw0``, GPU i's link with one-way latency
    ``latencies_s[i]`` (s): a star whose ports differ in cable length, e.g. one GPU behind optics.
    Every link has the same rate (B/s, per direction) and credit spec."""
    n = len(latencies_s)
    nodes = [Node(f"gpu{i}", "gpu", "synthetic", rank=i) for i in range(n)]
    nodes.append(Node("sw0", "switch", "synthetic", latency_s=switch_latency_s))
    channels: list[Channel] = []
    for link, latency_s in enumerate(latencies_s):
        channels += _link_pair(len(channels), link, f"gpu{link}", "sw0", rate_Bps, latency_s,
                               credit or default_credit(), generation)
    return Fabric.from_parts(f"star-links-{n}", nodes, channels)


def crossbar(n_ports: int, rate_Bps: float = 50e9, input_rate_Bps: float | None = None,
             latency_s: float = 0.0, input_credit: CreditSpec | None = None,
             output_credit: CreditSpec | None = None) -> Fabric:
    """An N x N switch as in the switch-design literature: sources ``in0..in{N-1}`` each feed one
    input of ``sw0``, whose outputs each feed one sink ``out0..out{N-1}`` (an input and an output
    are separate ports, so input i may send to output i). Input links run at ``input_rate_Bps``
    (default ``rate_Bps``; faster keeps the input buffers full: saturation), output links at
    ``rate_Bps`` (B/s, per direction)."""
    nodes = [Node(f"in{i}", "gpu", "synthetic", rank=i) for i in range(n_ports)]
    nodes += [Node(f"out{i}", "gpu", "synthetic", rank=n_ports + i) for i in range(n_ports)]
    nodes.append(Node("sw0", "switch", "synthetic"))
    channels: list[Channel] = []
    for i in range(n_ports):
        fwd, back = _link_pair(len(channels), i, f"in{i}", "sw0", input_rate_Bps or rate_Bps, latency_s,
                               input_credit or default_credit(), "synthetic")
        # the unused direction back to the source runs at the output rate, so that every output
        # port of the switch (and so its cell time) has the same rate
        channels += [fwd, replace(back, line_rate_Bps=rate_Bps, rate_Bps=rate_Bps)]
    for j in range(n_ports):
        channels += _link_pair(len(channels), n_ports + j, "sw0", f"out{j}", rate_Bps, latency_s,
                               output_credit or default_credit(), "synthetic")
    return Fabric.from_parts(f"crossbar-{n_ports}", nodes, channels)
