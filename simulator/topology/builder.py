"""``build_fabric``: a validated topology model + the parts catalog -> :class:`Fabric`.

Steps: load the catalog (built-in parts plus the topology's own parts files), expand enclosures
and devices into named nodes (GPU ranks in declaration order), expand each link spec through its
pattern into physical links (checking generation, ports, retimers and cable reach), then emit two
:class:`Channel` records per link and add up always-on power by component kind. Every error is an
:class:`~simulator.errors.InputError` located at the YAML value that caused it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Sequence

from simulator.errors import InputError, Origin
from simulator.hardware.faults import FaultSpec

from simulator.hardware.kernels import has_kernel_section, load_kernel_table
from simulator.hardware.yamlfile import YamlFile
from simulator.hardware.catalog import (CablePart, Catalog, DevicePart, HardwareError, LinkGeneration,
                                        RetimerPart, check_retimers, load_catalog)
from simulator.topology.fabric import DEVICE_POWER_KEY, Channel, CreditSpec, Fabric, Node, SwitchScheduling
from simulator.topology.faults import apply_faults, flag_origin, timed_faults
from simulator.topology.loader import Path_, SourceMap, load_yaml
from simulator.topology.patterns import pairs, select
from simulator.topology.schema import DeviceSpec, LinkSpec, TopologyModel
from simulator.topology.validate import load_topology

COMPONENT_KINDS = ("gpu_serdes", "host_serdes", "switch_serdes", "nic", "switch_chip", "pcie_switch",
                   "retimer", "optics", "active_copper", "passive_copper")
"""The one vocabulary of component kinds: keys of both ``Channel.energy_pJ_per_bit`` (dynamic) and
``Fabric.static_power_W`` (static), so a report adds static and dynamic energy per component."""
SERDES_KEY = {"gpu": "gpu_serdes", "switch": "switch_serdes", "pcie_switch": "switch_serdes",
              "nic": "nic", "host": "host_serdes"}
"""Node kind -> energy component kind of the SerDes at that end of a channel."""
CABLE_POWER_KEY = {"optical": "optics", "copper_active": "active_copper", "copper_passive": "passive_copper"}
"""Cable kind -> component kind, static and dynamic (board traces draw nothing of their own)."""


@dataclass(frozen=True, slots=True)
class _Device:
    name: str
    part: DevicePart
    group: str
    path: Path_
    """Where the device spec was written (for errors)."""
    scheduling: SwitchScheduling | None = None


@dataclass(frozen=True, slots=True)
class _Links:
    """The physical links one link spec makes in one place (an enclosure instance, or the top
    level): they share every fact but their ends."""

    ends: tuple[tuple[str, str], ...]
    """``(a, b)`` of each physical link, in order (a pair joined by n parallel links n times)."""
    gen: LinkGeneration
    spec: LinkSpec
    cable: CablePart
    retimer: RetimerPart | None
    path: Path_
    """Where the link spec was written (for errors)."""


def build_fabric(model_or_path: TopologyModel | str | Path, faults: Sequence[FaultSpec] = (), *,
                 healthy: bool = False, origins: Sequence[Origin] | None = None,
                 parts: Sequence[str | Path] = ()) -> Fabric:
    """Build the fabric of a topology model or file; raises ``InputError`` on bad input.

    The file's ``faults:`` and then ``faults`` (from ``--fault``) are applied to the built fabric
    (``topology.faults``); ``healthy=True`` ignores both (the baseline a report compares with).
    ``origins[i]``: where ``faults[i]`` was written (``errors.Origin``; default: the ``--fault`` flag).
    ``parts`` (``--parts``) are parts or calibration files applied after the topology's own."""
    model = model_or_path if isinstance(model_or_path, TopologyModel) else load_topology(model_or_path)
    sources = model.sources or SourceMap(file=f"<topology {model.name}>")
    files = _parts_files(model, sources) + [Path(p) for p in parts]
    catalog = _catalog(files, sources)
    devices = _expand_devices(model, catalog, sources)
    links = _expand_links(model, devices, catalog, sources)
    warnings = _check_ports(devices, links, sources)
    fabric = _assemble(model.name, devices, links)
    fabric.gpu_specs = {d.part.name: d.part.gpu for d in devices.values() if d.part.gpu is not None}
    fabric.kernel_files = tuple(str(f) for f in files if has_kernel_section(YamlFile(f).data))
    load_kernel_table(fabric.kernel_files)  # a bad calibration file fails here, at its FILE:LINE
    fabric.warnings.extend(warnings)
    if healthy:
        return fabric
    own = [Origin(sources, ("faults", i)) for i in range(len(model.faults))]
    given = list(origins) if origins is not None else [flag_origin(f) for f in faults]
    fabric = apply_faults(fabric, model.faults, own)
    fabric = apply_faults(fabric, list(faults), given)
    return timed_faults(fabric, [*model.faults, *faults], own + given)


# --- catalog -------------------------------------------------------------------------------------

def _parts_files(model: TopologyModel, sources: SourceMap) -> list[Path]:
    files = []
    for i, name in enumerate(model.parts):
        file, _ = sources.where(("parts", i))
        path = Path(file).parent / name
        if not path.is_file():
            raise sources.error(("parts", i), f"{path}: no such parts file")
        files.append(path)
    return files


def topology_files(path: str | Path) -> list[Path]:
    """Every file that building the topology file ``path`` reads: the file, each file it
    ``extends:``, and its ``parts:`` files (the output guard refuses to write over any of them)."""
    data, sources = load_yaml(path)
    files = [Path(f) for f in sources.files]
    names = data.get("parts") if isinstance(data, dict) else None
    for i, name in enumerate(names if isinstance(names, list) else []):
        file, _ = sources.where(("parts", i))
        files.append(Path(file).parent / str(name))
    return files


def _catalog(files: list[Path], sources: SourceMap) -> Catalog:
    try:
        return load_catalog(files)
    except HardwareError as err:
        raise sources.error(("parts",), str(err)) from None


def _hw(sources: SourceMap, path: Path_, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a catalog call; a HardwareError becomes an InputError at ``path``."""
    try:
        return call(*args, **kwargs)
    except HardwareError as err:
        raise sources.error(path, str(err)) from None


# --- devices -------------------------------------------------------------------------------------

def _names(spec_name: str, count: int | None) -> list[str]:
    return [spec_name] if count is None else [f"{spec_name}{i}" for i in range(count)]


def _scheduling(spec: DeviceSpec, part: DevicePart, sources: SourceMap, path: Path_) -> SwitchScheduling | None:
    if spec.scheduling is None:
        return None
    if part.kind != "switch":
        raise sources.error(path + ("scheduling",), f"{spec.name} is a {part.kind} ({part.name}); "
                            f"only switches have crossbar scheduling")
    return SwitchScheduling(**spec.scheduling.model_dump())


def _expand_devices(model: TopologyModel, catalog: Catalog, sources: SourceMap) -> dict[str, _Device]:
    devices: dict[str, _Device] = {}

    def add(spec: DeviceSpec, prefix: str, group: str, path: Path_) -> None:
        part = _hw(sources, path + ("part",), catalog.device, spec.part)
        for name in _names(spec.name, spec.count):
            full = f"{prefix}{name}"
            if full in devices:
                raise sources.error(path + ("name",), f"device name {full!r} is used twice")
            devices[full] = _Device(full, part, group or (spec.group or ""), path, _scheduling(spec, part, sources, path))

    for e, enc in enumerate(model.enclosures):
        for instance in _names(enc.name, enc.count):
            for d, spec in enumerate(enc.devices):
                add(spec, f"{instance}.", instance, ("enclosures", e, "devices", d))
    for d, spec in enumerate(model.devices):
        add(spec, "", "", ("devices", d))
    return devices


# --- links ---------------------------------------------------------------------------------------

def _expand_links(model: TopologyModel, devices: dict[str, _Device], catalog: Catalog,
                  sources: SourceMap) -> list[_Links]:
    """Every link spec's links, enclosure instances first: the order of link (and channel) ids."""
    links: list[_Links] = []
    members: dict[str, list[str]] = {}
    for dev in devices.values():
        if dev.group and dev.name.startswith(f"{dev.group}."):
            members.setdefault(dev.group, []).append(dev.name.removeprefix(f"{dev.group}."))
    for e, enc in enumerate(model.enclosures):
        for instance in _names(enc.name, enc.count):
            local = members.get(instance, [])
            for k, spec in enumerate(enc.links):
                links.append(_links_of(spec, ("enclosures", e, "links", k), local, f"{instance}.",
                                       devices, catalog, sources))
    for k, spec in enumerate(model.links):
        links.append(_links_of(spec, ("links", k), list(devices), "", devices, catalog, sources))
    return links


def _links_of(spec: LinkSpec, path: Path_, names: list[str], prefix: str, devices: dict[str, _Device],
              catalog: Catalog, sources: SourceMap) -> _Links:
    ends = []
    for key, globs in (("from", spec.from_), ("to", spec.to)):
        chosen = select(names, globs)
        if not chosen:
            shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
            raise sources.error(path + (key,), f"no device matches {', '.join(globs)} (devices: {shown})")
        ends.append([prefix + n for n in chosen])
    try:
        joined = pairs(spec.pattern, ends[0], ends[1], spec.links_per_pair)
    except ValueError as err:
        raise sources.error(path + ("pattern",), str(err)) from None
    gen = _hw(sources, path + ("generation",), catalog.link, spec.generation, width=spec.width,
              max_payload_B=int(spec.max_payload) if spec.max_payload else None)
    retimer = None
    if spec.retimers:
        _hw(sources, path + ("retimers",), check_retimers, spec.retimers)
        retimer = _hw(sources, path + ("retimer",), catalog.retimer, spec.retimer or f"{gen.name}_retimer")
        if retimer.generation != gen.name:
            raise sources.error(path + ("retimer",), f"{retimer.name} runs {retimer.generation}, "
                                f"the link is {gen.name}")
    cable = _hw(sources, path + ("cable", "kind"), catalog.cable, spec.cable.kind)
    _hw(sources, path + ("cable", "length"), cable.check_reach, gen.lane.data_rate_bps, spec.cable.length,
        retimers=spec.retimers, reach_factor=retimer.reach_factor if retimer else 1.0)
    checked: set[str] = set()  # the check depends only on the part: the first failing device is named
    for a, b, _ in joined:
        for device in (devices[a], devices[b]):
            if device.part.name not in checked:
                _check_generation(device, gen, sources, path)
                checked.add(device.part.name)
    return _Links(tuple([(a, b) for a, b, n in joined for _ in range(n)]), gen, spec, cable, retimer, path)


def _check_generation(device: _Device, gen: LinkGeneration, sources: SourceMap, path: Path_) -> None:
    """The device has ports of the link's fabric, running this generation (PCIe: this one or newer)."""
    part = device.part
    if not part.ports.get(gen.fabric):
        have = ", ".join(f"{k} {v}" for k, v in part.ports.items()) or "none"
        raise sources.error(path + ("generation",),
                            f"{device.name} ({part.name}) has no {gen.fabric} ports (ports: {have})")
    native = part.generations.get(gen.fabric)
    if native is None or native == gen.name:
        return
    if gen.fabric == "pcie" and _pcie_gen(gen.name) <= _pcie_gen(native):
        return  # PCIe trains down to an older generation
    raise sources.error(path + ("generation",),
                        f"{device.name} ({part.name}) runs {native}, not {gen.name}")


def _pcie_gen(name: str) -> int:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else 0


def _check_ports(devices: dict[str, _Device], links: list[_Links], sources: SourceMap) -> list[str]:
    """Error when a device gets more links (or lanes) of a fabric than it has; warn on idle ports."""
    used: dict[str, Counter[str]] = {}  # fabric -> device -> links
    lanes: dict[str, Counter[str]] = {}  # fabric -> device -> lane pairs per direction
    for group in links:
        fabric, width = group.gen.fabric, group.gen.pairs_per_direction
        here = Counter(chain.from_iterable(group.ends))
        used.setdefault(fabric, Counter()).update(here)
        into = lanes.setdefault(fabric, Counter())
        for end, n in here.items():
            into[end] += n * width
    if any(_overflow(devices[end].part, fabric, n, lanes[fabric][end])
           for fabric, ends in used.items() for end, n in ends.items()):
        raise _port_error(devices, links, sources)
    warnings = []
    connected = set().union(*used.values())
    idle = [d for d in devices if d not in connected]
    if idle:
        warnings.append(f"{len(idle)} device(s) have no links: {', '.join(idle[:4])}"
                        + (", ..." if len(idle) > 4 else ""))
    nvlink = used.get("nvlink", Counter())
    short = [d.name for d in devices.values() if d.part.kind == "gpu" and d.name in connected
             and 0 < nvlink[d.name] < d.part.ports.get("nvlink", 0)]
    if short:
        d = devices[short[0]]
        warnings.append(f"{len(short)} GPU(s) use fewer NVLink ports than they have, e.g. {d.name}: "
                        f"{nvlink[d.name]} of {d.part.ports['nvlink']}")
    return warnings


def _overflow(part: DevicePart, fabric: str, links: int, lanes: int) -> str:
    """The link spec key to blame when a device of ``part`` with this many links and lanes of
    ``fabric`` has too few ports (``links_per_pair``) or lanes (``width``); "" when they fit."""
    if links > part.ports.get(fabric, 0):
        return "links_per_pair"
    if fabric in part.lanes and lanes > part.lanes[fabric]:
        return "width"
    return ""


def _port_error(devices: dict[str, _Device], links: list[_Links], sources: SourceMap) -> InputError:
    """The error at the first link, in order, that gives one of its ends too many links or lanes."""
    used: Counter[tuple[str, str]] = Counter()
    lanes: Counter[tuple[str, str]] = Counter()
    for group in links:
        fabric, width = group.gen.fabric, group.gen.pairs_per_direction
        for pair in group.ends:
            for end in pair:
                part = devices[end].part
                used[end, fabric] += 1
                lanes[end, fabric] += width
                blame = _overflow(part, fabric, used[end, fabric], lanes[end, fabric])
                if blame == "links_per_pair":
                    return sources.error(group.path + (blame,),
                                         f"{end} ({part.name}) has {part.ports.get(fabric, 0)} {fabric} ports "
                                         f"but the links give it {_total(links, end, fabric, False)}")
                if blame == "width":
                    return sources.error(group.path + (blame,),
                                         f"{end} ({part.name}) has {part.lanes[fabric]} {fabric} lanes "
                                         f"but the links use {_total(links, end, fabric, True)}")
    raise AssertionError("_port_error called without an overflow")


def _total(links: list[_Links], end: str, fabric: str, lanes: bool) -> int:
    return sum((group.gen.pairs_per_direction if lanes else 1) * sum(end in pair for pair in group.ends)
               for group in links if group.gen.fabric == fabric)


# --- channels and power --------------------------------------------------------------------------

def _assemble(name: str, devices: dict[str, _Device], links: list[_Links]) -> Fabric:
    nodes, rank = [], 0
    for dev in devices.values():
        part = dev.part
        nodes.append(Node(dev.name, part.kind, part.name, group=dev.group,
                          rank=rank if part.kind == "gpu" else -1, latency_s=part.latency_s,
                          reduction=part.reduction, static_power_W=part.static_power_W,
                          architecture=part.gpu.architecture if part.gpu else "",
                          scheduling=dev.scheduling))
        rank += part.kind == "gpu"
    channels: list[Channel] = []
    kind = {name: dev.part.kind for name, dev in devices.items()}
    # links of one spec (in every enclosure instance) share every fact but their ends and their kinds
    alike: dict[tuple[int, ...], dict[tuple[str, str], tuple[tuple, tuple]]] = {}
    index = 0
    for group in links:
        by_kinds = alike.setdefault((id(group.gen), id(group.spec), id(group.cable), id(group.retimer)), {})
        for a, b in group.ends:
            kinds = (kind[a], kind[b])
            facts = by_kinds.get(kinds)
            if facts is None:
                forward, backward = _directions(group, kinds)
                facts = by_kinds[kinds] = (_in_order(forward), _in_order(backward))
            channels.append(Channel(2 * index, index, a, b, *facts[0]))
            channels.append(Channel(2 * index + 1, index, b, a, *facts[1]))
            index += 1
    return Fabric.from_parts(name, nodes, channels, _static_power(devices, links))


_PER_LINK = ("id", "link", "src", "dst")
"""The ``Channel`` fields that differ between the links of one spec: they come first."""
_SHARED = tuple(f.name for f in fields(Channel))[len(_PER_LINK):]
"""Every other ``Channel`` field, in declaration order."""
assert tuple(f.name for f in fields(Channel))[:len(_PER_LINK)] == _PER_LINK


def _in_order(shared: dict[str, Any]) -> tuple:
    """The shared fields as positional arguments after the per-link ones (a frozen record is built
    ~15% faster from positions than from keywords; a field missing here is a KeyError)."""
    return tuple(shared[name] for name in _SHARED)


def _directions(link: _Links, kinds: tuple[str, str]) -> tuple[dict, dict]:
    """The ``Channel`` fields of a link's two directions besides ids and ends (a -> b, b -> a)."""
    gen, spec, cable = link.gen, link.spec, link.cable
    latency = gen.phy_latency_s + cable.latency_s(spec.cable.length, gen)
    if link.retimer is not None:
        latency += spec.retimers * link.retimer.latency_s
    credit = CreditSpec(buffer_bytes=int(spec.credit_buffer or gen.credit_buffer_B),
                        credit_bytes=int(gen.credit_unit_B), return_delay_s=gen.credit_return_delay_s,
                        batch=int(gen.credit_batch))
    overhead = gen.line_rate_Bps / gen.payload_rate_Bps  # line bits spent per payload bit
    out = []
    for ends in (kinds, kinds[::-1]):
        energy: dict[str, float] = {}
        for kind in ends:
            key = SERDES_KEY[kind]
            energy[key] = energy.get(key, 0.0) + gen.serdes_pJ_per_bit * overhead
        if link.retimer is not None and link.retimer.pJ_per_bit:
            energy["retimer"] = spec.retimers * link.retimer.pJ_per_bit * overhead
        if cable.pJ_per_bit and cable.kind in CABLE_POWER_KEY:
            energy[CABLE_POWER_KEY[cable.kind]] = cable.pJ_per_bit * overhead
        out.append(dict(fabric=gen.fabric, generation=gen.name, lanes=gen.pairs_per_direction,
                        line_rate_Bps=gen.line_rate_Bps, rate_Bps=gen.payload_rate_Bps,
                        latency_s=latency, credit=credit, energy_pJ_per_bit=MappingProxyType(energy),
                        cable=cable.kind if cable.kind != "trace" else "", retimers=spec.retimers,
                        reverse_overhead=gen.reverse_overhead, ber=0.0))
    return out[0], out[1]


def _static_power(devices: dict[str, _Device], links: list[_Links]) -> dict[str, float]:
    """Always-on interconnect power by component kind (W); kinds present with 0 W are kept."""
    power: dict[str, float] = {}

    def add(key: str, watts: float, times: int = 1) -> None:
        """Add ``watts`` ``times`` times, one by one: the same float as adding it link by link."""
        total = power.get(key, 0.0)
        for _ in range(times):
            total += watts
        power[key] = total

    for dev in devices.values():
        if dev.part.kind not in ("gpu", "host") or dev.part.static_power_W:
            add(DEVICE_POWER_KEY[dev.part.kind], dev.part.static_power_W)
    for group in links:  # a spec's links share their figures
        if group.retimer is not None:
            add("retimer", group.spec.retimers * group.retimer.power_W, len(group.ends))
        key = CABLE_POWER_KEY.get(group.cable.kind)
        if key:
            add(key, 2 * group.cable.power_W_per_end(group.gen), len(group.ends))
    return power
