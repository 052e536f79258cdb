"""NVLink per compute tray: an NVL72 rack as NCCL sees it with MNNVL off.

With ``NCCL_MNNVL_ENABLE=0`` NCCL does not join the trays of an NVL72 rack over NVLink (src/init.cc
``MNNVLEnable``, src/mnnvl.cc ``ncclMnnvlCheck``: no NVLink clique across hosts, so the GPUs of
other trays are not P2P peers):
every compute tray (one OS, 4 GPUs on GB200) is its own NCCL node, its GPUs reach each other through
the NVSwitch trays, and the other trays only over the network, through the tray's NICs. The same
holds for a rack whose NVLink fabric manager partitions the domain per tray.

``per_tray(fabric)`` is that view of a built fabric: every NVSwitch port that faces a GPU is moved
to a copy of its switch chip for that GPU's tray (``nvsw3@rack0-tray5``: the chip's ports that tray
reaches), so NVLink routes stay inside the tray and every other pair's shortest route is the
network's; the tray's GPUs, host chips and NICs get the tray as their ``Node.group`` (the collectives'
node). Links, rates, latencies and channel ids are the same records (switch-to-switch NVLink
channels stay between the original chips, which no GPU reaches now), so faults that strike during
a run (``Fabric.changes``, each partitioned the same way) keep their channel maps. Power is the
physical rack's (``static_power_W`` unchanged). Cached on the fabric, so a validate run over many
sizes builds it once.
"""

from __future__ import annotations

import dataclasses

from simulator.topology.fabric import Fabric
from simulator.topology.nics import nearest_on_host
from simulator.topology.placement import layout

NVLINK = "nvlink"


def per_tray(fabric: Fabric) -> Fabric:
    """``fabric`` with NVLink confined to each compute tray (module docstring); ``fabric`` itself
    where every GPU of each NVLink domain sits in one tray already (an HGX server)."""
    key = ("partitions.per_tray",)
    found = fabric.route_cache.get(key)
    if found is None:
        found = fabric.route_cache[key] = _per_tray(fabric)
    return found


def _per_tray(fabric: Fabric) -> Fabric:
    tray_of = layout(fabric).unit_of["tray"]
    nodes = fabric.nodes
    if all(len({tray_of[g] for g in rack}) == 1 for rack in layout(fabric).racks):
        return fabric
    host_tray = {name: tray_of[near[0]] for name, node in nodes.items()  # Graces, PCIe switches, NICs
                 if node.kind != "gpu" and (near := nearest_on_host(fabric, name, "gpu"))}

    def end(name: str, gpu_tray: str) -> str:
        return f"{name}@{gpu_tray}" if nodes[name].kind == "switch" else name

    channels, copies = [], {}
    for ch in fabric.channels:
        if ch.fabric != NVLINK:
            channels.append(ch)
            continue
        gpu = ch.src if nodes[ch.src].kind == "gpu" else ch.dst if nodes[ch.dst].kind == "gpu" else None
        if gpu is None:  # switch to switch: kept between the original chips, which no GPU reaches now
            channels.append(ch)
            continue
        tray = tray_of[gpu]
        src, dst = end(ch.src, tray), end(ch.dst, tray)
        for name in (ch.src, ch.dst):
            if nodes[name].kind == "switch":
                copies[end(name, tray)] = dataclasses.replace(nodes[name], name=end(name, tray), group=tray)
        channels.append(dataclasses.replace(ch, src=src, dst=dst))
    used = {c.src for c in channels} | {c.dst for c in channels}
    kept = {}
    for name, node in nodes.items():
        if name in used:
            group = tray_of.get(name) or host_tray.get(name) or node.group
            kept[name] = dataclasses.replace(node, group=group)
    kept.update(copies)
    changes = [dataclasses.replace(change, fabric=per_tray(change.fabric)) for change in fabric.changes]
    return dataclasses.replace(fabric, name=f"{fabric.name}, NVLink per tray (MNNVL off)", nodes=kept,
                               channels=channels, route_cache={}, changes=changes)
