"""Where a device sits in a drawing: tiers from GPUs up to the network, and a stable order within one.

Tier 0 GPUs; tier 1 NICs, PCIe switches and hosts; tier 2 switch chips on NVLink; tiers 3.. the
scale-out network, leaf switches (those touching a NIC or GPU) first and each further switch hop
one tier higher. Within a tier devices are ordered by group, then rank, then name (numbers compared
as numbers, so ``gpu10`` follows ``gpu9``).
"""

from __future__ import annotations

import re
from collections import deque

from simulator.topology.fabric import Fabric, Node

_BASE_TIER = {"gpu": 0, "nic": 1, "pcie_switch": 1, "host": 1}
NVLINK_SWITCH_TIER = 2
NETWORK_LEAF_TIER = 3


def natural_key(text: str) -> tuple:
    """Sort key comparing digit runs as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def order_key(node: Node) -> tuple:
    """Group, then rank, then name: keeps a tray's devices together and GPUs in rank order."""
    return (natural_key(node.group), node.rank, natural_key(node.name))


def tiers(fabric: Fabric) -> dict[str, int]:
    """Tier of every node (see module docstring)."""
    tier: dict[str, int] = {}
    network_switches: list[str] = []
    for name, node in fabric.nodes.items():
        if node.kind in _BASE_TIER:
            tier[name] = _BASE_TIER[node.kind]
        elif any(ch.fabric == "nvlink" for ch in fabric.out_channels(name)):
            tier[name] = NVLINK_SWITCH_TIER
        else:
            network_switches.append(name)
    frontier = deque(s for s in network_switches
                     if any(n in tier for n in fabric.graph.successors(s)))
    for s in frontier:
        tier[s] = NETWORK_LEAF_TIER
    while frontier:
        current = frontier.popleft()
        for nxt in fabric.graph.successors(current):
            if nxt not in tier:
                tier[nxt] = tier[current] + 1
                frontier.append(nxt)
    for s in network_switches:  # switches joined to nothing below them
        tier.setdefault(s, NETWORK_LEAF_TIER)
    return tier


def sort_key(fabric: Fabric, tier: dict[str, int]):
    """Key ordering node names by tier, then :func:`order_key`."""
    return lambda name: (tier[name], order_key(fabric.nodes[name]))
