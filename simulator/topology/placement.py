"""Placement: which GPUs of a fabric a job runs on, as an ordered GPU list (rank i of the job is entry i).

A request (:class:`Placement`) is one of:

- nothing: the first ``gpus`` GPUs in rank order (nccl-tests on one node, the first N ranks);
- a count per unit: ``per_rack``, ``per_tray`` or ``per_node`` GPUs from each rack, tray or node,
  units in rank order, the first GPUs of each (so ``--gpus 128 --per-rack 64`` on two NVL72 racks is
  16 whole trays of each rack); with ``gpus`` as many units as it takes, the last one holding the
  remainder (an uneven job is allowed), without it every unit;
- ``ranks``: an explicit rank list, ``0-63,72-135`` (ranges inclusive, in the order written);
- ``hosts``: a Slurm-style host list, ``rack[0-1]-tray[0-15]``, ``hgx[0-3]``, ``rack0,rack2``:
  the hosts' GPUs in the order written (each host's in rank order); with a ``per_*`` count, that
  many from each unit among them.

The units, read off the built fabric (``Layout``):

- **rack**: an NVLink domain: GPUs joined without the scale-out network (every channel but
  ``network`` ones); racks are numbered by their lowest rank, ``rack0``, ``rack1``, ... A GB200
  NVL72 rack is one; on HGX systems (8 GPUs on NVLink, servers on InfiniBand) a rack is one server.
- **node**: an enclosure instance (``Node.group``: ``rack3`` in the multi-rack NVL72 files,
  ``hgx2``, ``compute5``): what the collectives treat as one node. GPUs outside any enclosure make
  one node named after the fabric.
- **tray**: a compute tray, numbered inside its rack: ``rack<R>-tray<T>``. Where a rack holds
  several enclosures, each is a tray (``gb200_nvl72``: ``compute0`` ... ``compute17``); where one
  enclosure holds the whole rack, consecutive blocks of ``TRAY_GPUS`` GPUs of its architecture in
  rank order (4 on Blackwell: an NVL72 rack enclosure's ``gpu0``-``gpu3`` are tray 0).

Host names are, in this order of precedence: the topology's enclosure names (``Node.group``), the
canonical ``rack<R>`` and ``rack<R>-tray<T>``, and GPU names (``rack0.gpu5``). Errors are one
:class:`~simulator.errors.InputError` naming the flag or field (``names``), what is wrong and what
would be right. Results are cached on the fabric (``route_cache``): placing 9,216 GPUs costs one
pass over the channels once per fabric, then a dictionary look-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Mapping

from simulator.errors import InputError, did_you_mean
from simulator.topology.fabric import Fabric

TRAY_GPUS = {"blackwell": 4, "hopper": 8, "ampere": 8}
"""GPUs of one compute tray by GPU architecture, where the topology does not split a rack into trays:
GB200 NVL72: 18 compute trays x 4 GPUs (NVIDIA GB200 NVL72 product page; topologies/gb200_nvl72.yaml);
HGX H100/A100: the 8-GPU baseboard is the tray (NVIDIA HGX platform page). Other GPUs: the enclosure."""

LEVELS = ("rack", "tray", "node")
"""The units a ``per_*`` count can name."""

FLAGS = {"gpus": "--gpus", "per_rack": "--per-rack", "per_tray": "--per-tray", "per_node": "--per-node",
         "ranks": "--ranks", "hosts": "--hosts"}
"""How each request field is named in errors by default: the bench/compare/validate flags."""

HOSTS_HELP = "rack[0-1]-tray[0-15], hgx[0-3] or rack0,rack2"


@dataclass(frozen=True, slots=True)
class Placement:
    """Which GPUs a job runs on (module docstring); every field None: the first N in rank order."""

    per_rack: int | None = None
    """GPUs from each rack (NVLink domain)."""
    per_tray: int | None = None
    """GPUs from each compute tray."""
    per_node: int | None = None
    """GPUs from each node (``Node.group``)."""
    ranks: str | tuple[int, ...] | None = None
    """Explicit ranks: ``"0-63,72-135"`` or a tuple of ints."""
    hosts: str | None = None
    """Slurm-style host list."""

    @property
    def is_default(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    @property
    def flag(self) -> str | None:
        """The flag (``FLAGS``) of the first field given, for errors about the placement as a
        whole; None when no field is."""
        return next((FLAGS[f.name] for f in fields(self) if getattr(self, f.name) is not None), None)

    def per(self) -> tuple[str, int] | None:
        """(level, count) of the ``per_*`` count given, or None."""
        for level in LEVELS:
            value = getattr(self, f"per_{level}")
            if value is not None:
                return level, value
        return None

    def describe(self) -> str:
        """A short phrase for titles and JSON: ``64 per rack``, ``ranks 0-63,72-135``, ``hosts rack[0-1]``."""
        parts = []
        per = self.per()
        if per:
            parts.append(f"{per[1]} per {per[0]}")
        if self.ranks is not None:
            parts.append(f"ranks {self.ranks if isinstance(self.ranks, str) else _ranges(self.ranks)}")
        if self.hosts is not None:
            parts.append(f"hosts {self.hosts}")
        return ", ".join(parts) or "first GPUs in rank order"


@dataclass(frozen=True)
class Layout:
    """The racks, trays and nodes of a fabric's GPUs, each a tuple of GPU names in rank order."""

    racks: tuple[tuple[str, ...], ...]
    trays: tuple[tuple[tuple[str, ...], ...], ...]
    """Per rack, its trays."""
    nodes: dict[str, tuple[str, ...]]
    """Node (``Node.group``, or the fabric's name for GPUs outside enclosures) -> its GPUs."""
    unit_of: dict[str, dict[str, str]]
    """Level -> GPU -> the name of its unit there (``rack1``, ``rack1-tray3``, ``hgx2``)."""
    local: dict[str, int]
    """GPU -> its index among its node's GPUs (``rack1.gpu5`` -> 5)."""

    def units(self, level: str) -> dict[str, tuple[str, ...]]:
        """Unit name -> GPUs, in rank order of units, for ``rack``, ``tray`` or ``node``."""
        if level == "rack":
            return {f"rack{r}": gpus for r, gpus in enumerate(self.racks)}
        if level == "tray":
            return {f"rack{r}-tray{t}": tray for r, trays in enumerate(self.trays) for t, tray in enumerate(trays)}
        return dict(self.nodes)


def layout(fabric: Fabric) -> Layout:
    """The fabric's :class:`Layout`, computed once (cached on the fabric)."""
    key = ("placement.layout",)
    found = fabric.route_cache.get(key)
    if found is None:
        found = fabric.route_cache[key] = _layout(fabric)
    return found


def _layout(fabric: Fabric) -> Layout:
    nodes = fabric.nodes
    label = {name: node.group or name for name, node in nodes.items()}
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    seen: set[int] = set()
    for ch in fabric.channels:
        if ch.fabric == "network" or ch.link in seen:
            continue
        seen.add(ch.link)
        a, b = find(label[ch.src]), find(label[ch.dst])
        if a != b:
            parent[b] = a
    racks: dict[str, list[str]] = {}
    groups: dict[str, list[str]] = {}
    for g in fabric.gpus:
        racks.setdefault(find(label[g]), []).append(g)
        groups.setdefault(nodes[g].group or fabric.name, []).append(g)
    rack_list = tuple(tuple(gpus) for gpus in racks.values())  # by lowest rank: gpus are in rank order
    trays = []
    for gpus in rack_list:
        inside: dict[str, list[str]] = {}
        for g in gpus:
            inside.setdefault(nodes[g].group or fabric.name, []).append(g)
        if len(inside) > 1:
            trays.append(tuple(tuple(t) for t in inside.values()))
            continue
        size = TRAY_GPUS.get(nodes[gpus[0]].architecture, len(gpus))
        trays.append(tuple(tuple(gpus[i:i + size]) for i in range(0, len(gpus), size)))
    unit_of: dict[str, dict[str, str]] = {"rack": {}, "tray": {}, "node": {}}
    for r, gpus in enumerate(rack_list):
        for g in gpus:
            unit_of["rack"][g] = f"rack{r}"
        for t, tray in enumerate(trays[r]):
            for g in tray:
                unit_of["tray"][g] = f"rack{r}-tray{t}"
    local: dict[str, int] = {}
    for name, gpus in groups.items():
        for i, g in enumerate(gpus):
            unit_of["node"][g] = name
            local[g] = i
    return Layout(rack_list, tuple(trays), {k: tuple(v) for k, v in groups.items()}, unit_of, local)


def place(fabric: Fabric, gpus: int | None = None, placement: Placement | None = None, *,
          names: Mapping[str, str] = FLAGS) -> tuple[str, ...]:
    """The GPUs of a job, in rank order of the job (module docstring); ``gpus`` is the job's GPU
    count (None: what the placement gives, or all GPUs). ``names``: how each field is named in
    errors (``gpus``, ``per_rack``, ``per_tray``, ``per_node``, ``ranks``, ``hosts``)."""
    placement = placement or Placement()
    key = ("placement", gpus, placement, tuple(sorted(names.items())) if names is not FLAGS else None)
    found = fabric.route_cache.get(key)
    if found is None:
        found = fabric.route_cache[key] = _place(fabric, gpus, placement, {**FLAGS, **names})
    return found


def _place(fabric: Fabric, count: int | None, p: Placement, names: dict[str, str]) -> tuple[str, ...]:
    total = len(fabric.gpus)
    given = [k for k in ("per_rack", "per_tray", "per_node", "ranks", "hosts") if getattr(p, k) is not None]
    per = [k for k in given if k.startswith("per_")]
    if len(per) > 1:
        raise InputError(f"{_list(names[k] for k in per)} are exclusive; give one count per rack, tray or node",
                         field=names[per[1]])
    if p.ranks is not None and len(given) > 1:
        other = next(k for k in given if k != "ranks")
        raise InputError(f"cannot be combined with {names['ranks']}, which lists the GPUs itself; give one",
                         field=names[other])
    if count is not None and count < 1:
        raise InputError(f"must be at least 1, not {count}", field=names["gpus"])
    for k in per:
        if getattr(p, k) < 1:
            raise InputError(f"must be at least 1, not {getattr(p, k)}", field=names[k])
    if count is not None and count > total:
        raise InputError(f"{count} GPUs asked, but {fabric.name} has {total}; give at most {total}",
                         field=names["gpus"])
    if p.ranks is not None:
        chosen = _ranks(fabric, p.ranks, names["ranks"])
        if count is not None and count != len(chosen):
            raise InputError(f"{count} contradicts {names['ranks']}, which lists {len(chosen)} GPUs; "
                             f"give {len(chosen)} or leave it out", field=names["gpus"])
        return chosen
    pool = _hosts(fabric, p.hosts, names["hosts"]) if p.hosts is not None else tuple(fabric.gpus)
    if not per:
        if p.hosts is None:
            return pool[:count or total]
        if count is not None and count != len(pool):
            raise InputError(f"{count} contradicts {names['hosts']} {p.hosts!r}, which gives {len(pool)} GPUs; "
                             f"give {len(pool)}, other hosts, or a count per rack, tray or node",
                             field=names["gpus"])
        return pool
    level, k = p.per()  # type: ignore[misc]
    return _per_unit(fabric, pool, level, k, count, names, p.hosts)


def _per_unit(fabric: Fabric, pool: tuple[str, ...], level: str, k: int, count: int | None,
              names: dict[str, str], hosts: str | None) -> tuple[str, ...]:
    """The first ``k`` GPUs of each ``level`` unit of ``pool`` (units in order of first appearance),
    as many units as ``count`` needs (the last holding the remainder), else every unit."""
    flag = names[f"per_{level}"]
    unit_of = layout(fabric).unit_of[level]
    units: dict[str, list[str]] = {}
    for g in pool:
        units.setdefault(unit_of[g], []).append(g)
    among = f" of {names['hosts']} {hosts!r}" if hosts is not None else f" of {fabric.name}"
    largest = max(len(v) for v in units.values())
    if k > largest:
        raise InputError(f"{k} GPUs per {level}, but the largest {level}{among} has {largest}; "
                         f"give at most {largest}", field=flag)
    need = len(units) if count is None else -(-count // k)
    if need > len(units):
        raise InputError(f"{count} GPUs at {k} per {level} need {need} {level}s, but there are {len(units)}"
                         f"{among}; give at most {k * len(units)} GPUs, or more per {level}", field=names["gpus"])
    chosen: list[str] = []
    for i, (name, gpus) in enumerate(units.items()):
        if i == need:
            break
        want = k if count is None or i < need - 1 else count - k * (need - 1)
        if len(gpus) < want:
            raise InputError(f"{k} GPUs per {level}, but {name}{among if hosts is not None else ''} has "
                             f"{len(gpus)}; give at most {len(gpus)} per {level}, or pick "
                             f"{level}s with {k}", field=flag)
        chosen += gpus[:want]
    return tuple(chosen)


# --- rank lists ----------------------------------------------------------------------------------

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_ranks(text: str, field: str = "--ranks") -> tuple[int, ...]:
    """``"0-63,72-135"`` as ranks in the order written (ranges inclusive); an input error otherwise."""
    out: list[int] = []
    for part in str(text).split(","):
        m = _RANGE.match(part)
        if not m or len(m.group(1)) > 9 or (m.group(2) and len(m.group(2)) > 9):
            raise InputError(f"{text!r} is not a rank list ({part.strip()!r}); write ranks and ranges "
                             f"like 0-63,72-135", field=field)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise InputError(f"range {part.strip()!r} runs backwards; write it low-high ({hi}-{lo})", field=field)
        out.extend(range(lo, hi + 1))
    return tuple(out)


def _ranks(fabric: Fabric, ranks: str | tuple[int, ...], field: str) -> tuple[str, ...]:
    values = parse_ranks(ranks, field) if isinstance(ranks, str) else tuple(ranks)
    n = len(fabric.gpus)
    seen: set[int] = set()
    for r in values:
        if not 0 <= r < n:
            raise InputError(f"rank {r} does not exist: {fabric.name} has ranks 0..{n - 1}", field=field)
        if r in seen:
            raise InputError(f"rank {r} is listed twice; list each rank once", field=field)
        seen.add(r)
    if not values:
        raise InputError("lists no rank; write ranks and ranges like 0-63,72-135", field=field)
    return tuple(fabric.gpus[r] for r in values)


def _ranges(ranks: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5)`` -> ``0-2,5``."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(out)


# --- host lists ----------------------------------------------------------------------------------

MAX_HOSTS = 1_000_000
"""More host names than this in one list is a mistake (``rack[0-99999999]``), refused before expanding."""


def expand_hosts(text: str, field: str = "--hosts") -> list[str]:
    """A Slurm-style host list as names, in order: items separated by commas outside brackets, each
    ``prefix[ranges]suffix[ranges]...`` with ranges ``a-b`` or ``a`` separated by commas; a range
    written with leading zeros (``[00-07]``) keeps their width; the leftmost bracket varies slowest."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise InputError(f"{text!r} nests '[' inside '['; write a host list like {HOSTS_HELP}", field=field)
            depth = 1
        elif ch == "]":
            if not depth:
                raise InputError(f"{text!r} has a ']' without its '['; write a host list like {HOSTS_HELP}",
                                 field=field)
            depth = 0
        elif ch == "," and not depth:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise InputError(f"{text!r} has an unclosed '['; write a host list like {HOSTS_HELP}", field=field)
    items.append(text[start:])
    names: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            raise InputError(f"{text!r} has an empty host name; write a host list like {HOSTS_HELP}", field=field)
        names.extend(_expand_one(item, text, field, MAX_HOSTS - len(names)))
    return names


def _expand_one(item: str, text: str, field: str, room: int) -> list[str]:
    pieces = re.split(r"(\[[^\]]*\])", item)
    choices: list[list[str]] = []
    size = 1
    for piece in pieces:
        if piece.startswith("["):
            values = _bracket(piece, item, field)
            size *= len(values)
            choices.append(values)
        elif piece:
            choices.append([piece])
        if size > room:
            raise InputError(f"{item!r} names more than {MAX_HOSTS:,} hosts; name fewer", field=field)
    out = [""]
    for values in choices:
        out = [a + b for a in out for b in values]
    return out


def _bracket(piece: str, item: str, field: str) -> list[str]:
    body = piece[1:-1]
    out: list[str] = []
    for part in body.split(","):
        m = re.fullmatch(r"\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?", part)
        if not m:
            raise InputError(f"bad range {part.strip()!r} in {item!r}; write numbers and ranges like [0-7] or "
                             f"[0,2,4-5]", field=field)
        lo, hi = m.group(1), m.group(2) if m.group(2) is not None else m.group(1)
        if int(hi) < int(lo):
            raise InputError(f"range {part.strip()!r} in {item!r} runs backwards; write it low-high "
                             f"({hi}-{lo})", field=field)
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        if int(hi) - int(lo) >= MAX_HOSTS:
            raise InputError(f"{item!r} names more than {MAX_HOSTS:,} hosts; name fewer", field=field)
        out.extend(str(v).zfill(width) for v in range(int(lo), int(hi) + 1))
    return out


def host_names(fabric: Fabric) -> dict[str, tuple[str, ...]]:
    """Every host name a host list may use -> its GPUs in rank order (cached): the topology's
    enclosures, then ``rack<R>`` and ``rack<R>-tray<T>`` where no enclosure has that name, then GPUs."""
    key = ("placement.hosts",)
    found = fabric.route_cache.get(key)
    if found is None:
        lay = layout(fabric)
        found = dict(lay.nodes)
        for level in ("rack", "tray"):
            for name, gpus in lay.units(level).items():
                found.setdefault(name, gpus)
        for g in fabric.gpus:
            found.setdefault(g, (g,))
        fabric.route_cache[key] = found
    return found


def _hosts(fabric: Fabric, text: str, field: str) -> tuple[str, ...]:
    known = host_names(fabric)
    chosen: list[str] = []
    owner: dict[str, str] = {}
    for name in expand_hosts(text, field):
        gpus = known.get(name)
        if gpus is None and any(node.group == name for node in fabric.nodes.values()):
            raise InputError(f"{name} holds no GPU; {fabric.name} has {_host_kinds(fabric)}", field=field)
        if gpus is None:
            raise InputError(f"unknown host {name!r}; {fabric.name} has {_host_kinds(fabric)}"
                             f"{did_you_mean(name, _suggestions(fabric, name))}", field=field)
        for g in gpus:
            if g in owner:
                also = f" (also in {owner[g]})" if owner[g] != name else ""
                raise InputError(f"{name} is given twice{also}; name each GPU's host once", field=field)
            owner[g] = name
        chosen.extend(gpus)
    return tuple(chosen)


def _host_kinds(fabric: Fabric) -> str:
    """What hosts there are, in a few words: ``rack0..rack7, rack<R>-tray<T> (tray0..tray17), nodes
    rack0..rack7 and GPU names such as rack0.gpu0``."""
    lay = layout(fabric)
    trays = max(len(t) for t in lay.trays) if lay.trays else 0
    nodes = list(lay.nodes)
    shown = f"{nodes[0]}..{nodes[-1]}" if len(nodes) > 1 else nodes[0]
    return (f"racks {'rack0' if len(lay.racks) == 1 else f'rack0..rack{len(lay.racks) - 1}'}, trays "
            f"rack<R>-tray<T> (tray0..tray{trays - 1}), nodes {shown} and GPU names such as {fabric.gpus[0]}")


def _suggestions(fabric: Fabric, name: str) -> list[str]:
    """Names to suggest for a typo: enclosure, rack and tray names, and GPUs only for a dotted name
    (matching against 10^4 GPU names would be slow and rarely what was meant)."""
    known = host_names(fabric)
    return [n for n in known if "." in name or n not in fabric.nodes or fabric.nodes[n].kind != "gpu"][:5000]


def _list(items) -> str:  # noqa: ANN001
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
