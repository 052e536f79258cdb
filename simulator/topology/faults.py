"""Apply faults (``hardware.faults``) to a built fabric: the surviving fabric every engine and
collective then plans over.

What fabricsim assumes (as NCCL does when it re-detects the topology at init): routes, rings and
NVLS groups are planned on what is left, with no memory of the healthy fabric. A link that is
down or behind a failed retimer loses both directions; a failed switch loses every link it has;
a link at reduced width keeps its latency and credits and moves ``lanes / full lanes`` of its
rate; a link with a bit error rate moves its payload rate times the go-back-N retry efficiency
(``hardware.retry``), or, at a BER where a packet fails every transmission the link layer allows
more often than not, is down (a warning at the fault's FILE:LINE or ``--fault`` flag says so, and
the fault's line says how many links). Faults are applied in file order, bit error rates last (so they see the
width a link trained at). A fault that matches nothing is an input error. A failed device's
static power is still counted (assumption: a failed chip stays powered until serviced).

A fault with ``at`` is not applied here but by ``timed_faults``: for each time at which faults
strike, the fabric that survives every fault up to then (a ``FabricChange``), with its channels
mapped back to the run's channel ids; the flow engine switches to it at that time.
"""

from __future__ import annotations

import dataclasses
from fnmatch import fnmatchcase
from typing import Callable, Sequence

import networkx as nx
import numpy as np

from simulator.errors import InputError, Origin
from simulator.hardware.faults import FaultSpec
from simulator.hardware.retry import link_down, retry_parts, retry_point, unusable_ber
from simulator.topology.fabric import DEVICE_POWER_KEY, Channel, Fabric
from simulator.units import format_seconds

ErrorAt = Callable[[int, str | None, str], InputError]
"""(fault index, key or None, message) -> the error to raise: ``origins[i].error(message, key)``,
the one placement rule (``errors.Origin``), inside this module."""

def flag_origin(fault: FaultSpec, flag: str = "--fault") -> Origin:
    """Where a fault given on the command line was written: the flag, the fault in its own words."""
    return Origin(flag=flag, label=fault.describe())


SWITCH_KINDS = ("switch", "pcie_switch", "nic")
"""Node kinds ``switch_down`` may take down."""


def _matches(name: str, globs: Sequence[str]) -> bool:
    return any(fnmatchcase(name, g) for g in globs)


def _shown(names: Sequence[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def apply_faults(fabric: Fabric, faults: Sequence[FaultSpec], origins: Sequence[Origin]) -> Fabric:
    """A new fabric with ``faults`` applied (``fabric`` is left as it was); no faults: ``fabric``.
    ``origins[i]``: where ``faults[i]`` was written (its errors are placed there)."""
    if not any(f.at is None for f in faults):
        return fabric
    error_at: ErrorAt = lambda i, key, message: origins[i].error(message, key)  # noqa: E731
    alive: dict[int, Channel] = {c.id: c for c in fabric.channels}
    removed: set[str] = set()
    for i, fault in enumerate(faults):
        if fault.at is not None:
            continue  # strikes during the run: timed_faults
        if fault.kind == "switch_down":
            removed |= _switches(fabric, fault, i, error_at, removed)
            alive = {k: c for k, c in alive.items() if c.src not in removed and c.dst not in removed}
        elif fault.kind != "ber":
            _link_fault(fault, i, _links(alive, fault, i, error_at, fabric), alive, error_at)
    notes: dict[int, str] = {}
    """Fault index -> what its bit error rate did beyond slowing links (links taken down)."""
    ber_warnings: list[str] = []
    for i, fault in enumerate(faults):
        if fault.kind == "ber" and fault.at is None:
            down, slowest = _apply_ber(alive, _links(alive, fault, i, error_at, fabric), fault.ber or 0.0)
            if down:
                n = sum(down.values())
                notes[i] = f"{n} link{'s' if n > 1 else ''} down"
                ber_warnings.append(str(error_at(i, "ber", _down_message(down))))
            if slowest is not None and slowest < SLOW_WARNING:
                ber_warnings.append(str(error_at(i, "ber", "retries at this bit error rate leave the links it hits "
                                                           f"{slowest:.2%} of their payload rate or less")))
    nodes = [n for n in fabric.nodes.values() if n.name not in removed]
    kept = sorted(alive.values(), key=lambda c: c.id)
    channels = [dataclasses.replace(c, id=k) for k, c in enumerate(kept)]
    out = Fabric.from_parts(fabric.name, nodes, channels, _power_without(fabric, removed))
    out.gpu_specs, out.kernel_files = fabric.gpu_specs, fabric.kernel_files
    out.warnings.extend(fabric.warnings)
    out.faults.extend(fabric.faults)
    out.faults.extend(f.describe() + (f" ({notes[i]})" if i in notes else "")
                      for i, f in enumerate(faults) if f.at is None)
    out.warnings.extend(ber_warnings)
    out.warnings.extend(_split_warning(out))
    return out


def _power_without(fabric: Fabric, removed: set[str]) -> dict[str, float]:
    """Static power once the ``removed`` switches are down: a downed switch (a tray taken out) draws
    nothing (assumption: a switch_down fault is a powered-off or pulled device; the cables and
    modules of its links stay as counted, plugged into the other end)."""
    power = dict(fabric.static_power_W)
    for name in removed:
        node = fabric.nodes[name]
        key = DEVICE_POWER_KEY.get(node.kind)
        if key in power and node.static_power_W:
            power[key] = max(0.0, power[key] - node.static_power_W)
    return power


@dataclasses.dataclass(frozen=True, slots=True)
class FabricChange:
    """Faults striking at one time of a run and the fabric that survives them."""

    at_s: float
    """Simulated time the faults strike (s)."""
    faults: tuple[str, ...]
    """The faults striking now, one line each."""
    fabric: Fabric
    """What survives every fault up to now (routes of later transfers are planned on it)."""
    original_id: np.ndarray
    """Channel id in ``fabric`` -> id of the same channel in the fabric the run started on."""


def timed_faults(fabric: Fabric, faults: Sequence[FaultSpec], origins: Sequence[Origin]) -> Fabric:
    """``fabric`` (left as it was) with ``changes`` for the faults that have an ``at`` (``origins[i]``:
    where ``faults[i]`` was written), checked now so that a bad one fails before any run."""
    timed = sorted((f.at, k) for k, f in enumerate(faults) if f.at is not None)
    if not timed:
        return fabric
    out = dataclasses.replace(fabric, faults=list(fabric.faults), warnings=list(fabric.warnings), changes=[])
    key = {(c.src, c.dst, c.link): c.id for c in fabric.channels}
    for at_s in sorted({at for at, _ in timed}):
        upto = [k for at, k in timed if at <= at_s]
        specs = [faults[k].model_copy(update={"at": None}) for k in upto]
        after = apply_faults(fabric, specs, [origins[k] for k in upto])
        original = np.array([key[(c.src, c.dst, c.link)] for c in after.channels], dtype=np.int64)
        now = tuple(faults[k].describe() for at, k in timed if at == at_s)
        out.changes.append(FabricChange(at_s, now, after, original))
        out.faults.extend(now)
        out.warnings.extend(f"from {format_seconds(at_s)} on: {w}" for w in after.warnings if w not in fabric.warnings)
    return out


def _switches(fabric: Fabric, fault: FaultSpec, i: int, error_at: ErrorAt, removed: set[str]) -> set[str]:
    if fault.device is not None:
        hit = [n for n in fabric.nodes if _matches(n, fault.device)]
        key = "device"
    else:
        hit = [n.name for n in fabric.nodes.values() if n.group and _matches(n.group, fault.enclosure or [])]
        key = "enclosure"
    if not hit:
        pool = sorted({n.group for n in fabric.nodes.values() if n.group}) if key == "enclosure" else \
            [n.name for n in fabric.nodes.values() if n.kind in SWITCH_KINDS]
        raise error_at(i, key, f"no {'enclosure' if key == 'enclosure' else 'switch'} matches "
                               f"{', '.join(getattr(fault, key))} (e.g. {_shown(pool) or 'none'})")
    wrong = [n for n in hit if fabric.nodes[n].kind not in SWITCH_KINDS]
    if wrong:
        node = fabric.nodes[wrong[0]]
        raise error_at(i, key, f"{node.name} is a {node.kind}; switch_down takes switches (NVSwitch chips, "
                               f"PCIe switches, IB switches, NICs); use link_down for the links of a {node.kind}")
    return set(hit) - removed


def _links(alive: dict[int, Channel], fault: FaultSpec, i: int, error_at: ErrorAt,
           fabric: Fabric) -> dict[int, list[Channel]]:
    """Physical link index -> its surviving channels, for the links the fault names."""
    a, b = fault.from_ or [], fault.to or []
    for key, globs in (("from", a), ("to", b)):
        if not any(_matches(n, globs) for n in fabric.nodes):
            raise error_at(i, key, f"no device matches {', '.join(globs)} (devices: {_shown(list(fabric.nodes))})")
    chosen: dict[int, list[Channel]] = {}
    for c in alive.values():
        if (_matches(c.src, a) and _matches(c.dst, b)) or (_matches(c.src, b) and _matches(c.dst, a)):
            chosen.setdefault(c.link, []).append(c)
    if not chosen:
        raise error_at(i, "to", f"no surviving link joins {', '.join(a)} and {', '.join(b)}")
    links = sorted(chosen)[: fault.links] if fault.links else sorted(chosen)
    return {k: chosen[k] for k in links}


def _link_fault(fault: FaultSpec, i: int, links: dict[int, list[Channel]], alive: dict[int, Channel],
                error_at: ErrorAt) -> None:
    for chans in links.values():
        for c in chans:
            if fault.kind == "retimer_down" and not c.retimers:
                raise error_at(i, "from", f"the link {c.src} - {c.dst} has no retimers; use link_down")
            if fault.kind in ("link_down", "retimer_down"):
                del alive[c.id]
            elif fault.kind == "degraded_width":
                lanes = fault.lanes or c.lanes
                if lanes >= c.lanes:
                    raise error_at(i, "lanes", f"the link {c.src} - {c.dst} has {c.lanes} lane(s) per direction; "
                                               f"a degraded width must be fewer, got {lanes}")
                scale = lanes / c.lanes
                alive[c.id] = dataclasses.replace(c, lanes=lanes, line_rate_Bps=c.line_rate_Bps * scale,
                                                  rate_Bps=c.rate_Bps * scale)


SLOW_WARNING = 0.1
"""A ``ber`` fault that leaves a link less than this fraction of its payload rate is reported as a
warning (it still runs, slowly)."""


def _apply_ber(alive: dict[int, Channel], links: dict[int, list[Channel]],
               ber: float) -> tuple[dict[str, int], float | None]:
    """Set ``ber`` on ``links``: a link is slowed by the retry efficiency, or removed where the BER
    takes it down (``hardware.retry.link_down``). Returns the links taken down per interconnect
    kind, and the lowest efficiency of those left (None: none left)."""
    down: dict[str, int] = {}
    slowest = None
    for chans in links.values():
        if link_down(ber, retry_parts()[chans[0].fabric]):
            down[chans[0].fabric] = down.get(chans[0].fabric, 0) + 1
            for c in chans:
                del alive[c.id]
            continue
        for c in chans:
            slowed = _with_ber(c, ber)
            alive[c.id] = slowed
            slowest = min(slowest if slowest is not None else 1.0, slowed.rate_Bps / c.rate_Bps)
    return down, slowest


def _down_message(down: dict[str, int]) -> str:
    """Why a ``ber`` fault took links down: per interconnect kind, the BER at which its packets fail
    every transmission the link layer allows more often than not."""
    why = []
    for kind, count in down.items():
        part = retry_parts()[kind]
        why.append(f"{count} {kind} link{'s' if count > 1 else ''}: at or above ber={unusable_ber(part.packet_B, part.replay_limit):.2g} "
                   f"a {part.packet_B:.0f} B packet fails all {part.replay_limit} transmissions more often than not")
    return (f"this bit error rate takes links down ({'; '.join(why)}), so the link layer retrains instead of "
            "delivering (hardware/retry.py); they are left out as with link_down")


def _with_ber(c: Channel, ber: float) -> Channel:
    """The channel at bit error rate ``ber``: payload rate times the retry efficiency."""
    part = retry_parts()[c.fabric]
    point = retry_point(ber, packet_B=part.packet_B, replay_buffer_B=part.replay_buffer_B,
                        round_trip_s=2 * c.latency_s + part.ack_delay_s, rate_Bps=c.rate_Bps)
    return dataclasses.replace(c, ber=ber, rate_Bps=c.rate_Bps * point.efficiency)


def _split_warning(fabric: Fabric) -> list[str]:
    """A warning when the faults leave GPUs that cannot reach each other (GPUs do not forward)."""
    transit = nx.Graph()
    transit.add_nodes_from(n for n, node in fabric.nodes.items() if node.kind != "gpu")
    transit.add_edges_from((c.src, c.dst) for c in fabric.channels
                           if fabric.nodes[c.src].kind != "gpu" and fabric.nodes[c.dst].kind != "gpu")
    comp = {n: k for k, part in enumerate(nx.connected_components(transit)) for n in part}
    groups = nx.utils.UnionFind(fabric.gpus)
    for c in fabric.channels:
        if fabric.nodes[c.src].kind == "gpu" and fabric.nodes[c.dst].kind == "gpu":
            groups.union(c.src, c.dst)
    by_comp: dict[int, str] = {}
    isolated = []
    for g in fabric.gpus:
        peers = {comp[c.dst] for c in fabric.out_channels(g) if c.dst in comp}
        if not peers and not any(fabric.nodes[c.dst].kind == "gpu" for c in fabric.out_channels(g)):
            isolated.append(g)
        for k in peers:
            if k in by_comp:
                groups.union(g, by_comp[k])
            else:
                by_comp[k] = g
    sets = list(groups.to_sets())
    out = []
    if isolated:
        out.append(f"faults leave {len(isolated)} GPU(s) with no links: {_shown(isolated, 4)}")
    if len(sets) > 1:
        out.append(f"faults split the GPUs into {len(sets)} groups that cannot reach each other; "
                   f"a collective across groups cannot run")
    return out
