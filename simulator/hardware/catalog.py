"""The parts catalog: every built-in part plus a topology's own parts files, by name.

Parts files are YAML mappings of sections to ``name: part`` mappings::

    serdes:   {pam4_200g: {...}}         # SerDesLane
    links:    {nvlink5: {lane: pam4_200g, ...}}   # LinkGeneration (lane by name)
    pcie:     {pcie5: {lane: pcie_gen5, ...}}     # PcieGeneration -> links at any width
    devices:  {gb200: {...}}             # DevicePart
    cables:   {optical: {...}}           # CablePart
    retimers: {pcie6_retimer: {...}}     # RetimerPart

A later file may add parts; redefining a name already defined is an error naming both files.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Sequence

from pydantic import ValidationError

from simulator.hardware.cables import CablePart
from simulator.hardware.devices import DevicePart
from simulator.errors import did_you_mean
from simulator.hardware.errors import HardwareError
from simulator.hardware.links import LinkGeneration
from simulator.hardware.part import Part
from simulator.hardware.pcie import PcieGeneration
from simulator.hardware.retimers import MAX_RETIMERS_PER_LINK, RetimerPart, check_retimers
from simulator.hardware.serdes import SerDesLane
from simulator.hardware.yamlfile import YamlFile

__all__ = ["Catalog", "HardwareError", "load_catalog", "MAX_RETIMERS_PER_LINK", "check_retimers",
           "LinkGeneration", "DevicePart", "CablePart", "RetimerPart", "SerDesLane", "PARTS_DIR"]

PARTS_DIR = Path(__file__).parent / "parts"
BUILTIN_FILES = ("serdes.yaml", "links.yaml", "pcie.yaml", "devices.yaml", "cables.yaml",
                 "retimers.yaml")
"""Built-in parts files, loaded in this order (other files in ``parts/`` belong to other layers)."""

SECTIONS: dict[str, type[Part]] = {"serdes": SerDesLane, "links": LinkGeneration, "pcie": PcieGeneration,
                                   "devices": DevicePart, "cables": CablePart, "retimers": RetimerPart}
"""Section name -> part model; the load order resolves references (links name lanes)."""
_LANE_REFS = ("links", "pcie")
OTHER_SECTIONS = ("kernels", "calibration")
"""Sections of a parts file read by ``hardware.kernels`` (kernel constants, calibration record)."""


def _choices(names: Mapping[str, Any], given: str = "") -> str:
    """``a, b, c`` (sorted), and the closest to ``given`` ("; did you mean 'nvlink5'?")."""
    return (", ".join(sorted(names)) or "none") + did_you_mean(given, list(names))


class Catalog:
    """Immutable name -> part maps. ``links`` holds PCIe generations at their default width and MPS."""

    __slots__ = ("lanes", "links", "pcie", "devices", "cables", "retimers", "origin")

    def __init__(self, parts: Mapping[str, Mapping[str, Part]], origin: Mapping[tuple[str, str], str]) -> None:
        self.lanes: Mapping[str, SerDesLane] = MappingProxyType(dict(parts["serdes"]))  # type: ignore[arg-type]
        self.pcie: Mapping[str, PcieGeneration] = MappingProxyType(dict(parts["pcie"]))  # type: ignore[arg-type]
        links = dict(parts["links"])
        links.update({name: gen.link() for name, gen in self.pcie.items()})
        self.links: Mapping[str, LinkGeneration] = MappingProxyType(links)  # type: ignore[arg-type]
        self.devices: Mapping[str, DevicePart] = MappingProxyType(dict(parts["devices"]))  # type: ignore[arg-type]
        self.cables: Mapping[str, CablePart] = MappingProxyType(dict(parts["cables"]))  # type: ignore[arg-type]
        self.retimers: Mapping[str, RetimerPart] = MappingProxyType(dict(parts["retimers"]))  # type: ignore[arg-type]
        self.origin: Mapping[tuple[str, str], str] = MappingProxyType(dict(origin))
        """(section, name) -> file that defined the part."""

    def link(self, name: str, *, width: int | None = None, max_payload_B: int | None = None) -> LinkGeneration:
        """A link generation by name; PCIe generations accept a width (x1-x16) and max payload size."""
        if name in self.pcie:
            return self.pcie[name].link(width, max_payload_B)
        if name not in self.links:
            raise HardwareError(f"unknown link generation {name!r}; known: {_choices(self.links, name)}")
        if width is not None or max_payload_B is not None:
            raise HardwareError(f"link generation {name!r} has a fixed width; width and max payload "
                                "size apply to PCIe generations only")
        return self.links[name]

    def device(self, name: str) -> DevicePart:
        return self._get(self.devices, name, "device")

    def cable(self, name: str) -> CablePart:
        return self._get(self.cables, name, "cable")

    def retimer(self, name: str) -> RetimerPart:
        return self._get(self.retimers, name, "retimer")

    def lane(self, name: str) -> SerDesLane:
        return self._get(self.lanes, name, "SerDes lane")

    @staticmethod
    def _get(table: Mapping[str, Any], name: str, what: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise HardwareError(f"unknown {what} {name!r}; known: {_choices(table, name)}") from None

    def parts(self) -> Iterator[tuple[str, str, Part]]:
        """Every defined part as (section, name, part); PCIe as generations, not derived links."""
        for section, table in (("serdes", self.lanes), ("links", self.links), ("pcie", self.pcie),
                               ("devices", self.devices), ("cables", self.cables),
                               ("retimers", self.retimers)):
            for name, part in table.items():
                if section == "links" and name in self.pcie:
                    continue
                yield section, name, part


class _Loader:
    """Collects raw sections from files, then validates them in dependency order."""

    def __init__(self) -> None:
        self.raw: dict[str, dict[str, tuple[YamlFile, Any]]] = {s: {} for s in SECTIONS}

    def add(self, path: Path, strict: bool) -> None:
        doc = YamlFile(path)
        if doc.data is None:
            return
        if not isinstance(doc.data, dict):
            raise doc.error([], "a parts file is a mapping of sections "
                            f"({', '.join(SECTIONS)}) to named parts")
        for section, entries in doc.data.items():
            if section in OTHER_SECTIONS:
                continue
            if section not in SECTIONS:
                if strict:
                    raise doc.error([section], "unknown section; expected one of "
                                    f"{', '.join((*SECTIONS, *OTHER_SECTIONS))}")
                continue
            if not isinstance(entries, dict):
                raise doc.error([section], "expected a mapping of part names to parts")
            for name, body in entries.items():
                name = str(name)
                namespace = ("links", "pcie") if section in ("links", "pcie") else (section,)
                for sec in namespace:
                    if name in self.raw[sec]:
                        first = self.raw[sec][name][0].path
                        raise doc.error([section, name], f"part {name!r} is already defined in {first}")
                self.raw[section][name] = (doc, body)

    def build(self) -> tuple[dict[str, dict[str, Part]], dict[tuple[str, str], str]]:
        parts: dict[str, dict[str, Part]] = {s: {} for s in SECTIONS}
        origin = {}
        for section, model in SECTIONS.items():
            for name, (doc, body) in self.raw[section].items():
                parts[section][name] = self._validate(doc, section, name, body, model, parts["serdes"])
                origin[(section, name)] = str(doc.path)
        self._check_references(parts)
        return parts, origin

    def _validate(self, doc: YamlFile, section: str, name: str, body: Any, model: type[Part],
                  lanes: Mapping[str, Part]) -> Part:
        if not isinstance(body, dict):
            raise doc.error([section, name], "expected a mapping of fields")
        if "name" in body:
            raise doc.error([section, name, "name"], "the name is the key above; remove this field")
        data = dict(body, name=name)
        if section in _LANE_REFS:
            lane = data.get("lane")
            if not isinstance(lane, str) or lane not in lanes:
                raise doc.error([section, name, "lane"],
                                f"unknown SerDes lane {lane!r}; known: {_choices(lanes, lane)}")
            data["lane"] = lanes[lane]
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = [k for k in err["loc"] if k not in ("function-after", "function-before")]
            msg = err["msg"].removeprefix("Value error, ")
            raise doc.error([section, name, *loc], msg) from None

    def _check_references(self, parts: dict[str, dict[str, Part]]) -> None:
        link_names = set(parts["links"]) | set(parts["pcie"])
        for name, dev in parts["devices"].items():  # a gpu's own section must agree (DevicePart)
            for fabric, gen in dev.generations.items():  # type: ignore[attr-defined]
                if gen not in link_names:
                    raise self.raw["devices"][name][0].error(
                        ["devices", name, "generations", fabric],
                        f"unknown link generation {gen!r}; known: {_choices(link_names, gen)}")
        for name, ret in parts["retimers"].items():
            if ret.generation not in parts["pcie"]:  # type: ignore[attr-defined]
                doc = self.raw["retimers"][name][0]
                raise doc.error(["retimers", name, "generation"],
                                f"unknown PCIe generation {ret.generation!r}; known: {_choices(parts['pcie'])}")  # type: ignore[attr-defined]


def _load(extra: tuple[Path, ...]) -> Catalog:
    loader = _Loader()
    for fname in BUILTIN_FILES:
        loader.add(PARTS_DIR / fname, strict=True)
    for path in extra:
        loader.add(path, strict=True)
    return Catalog(*loader.build())


def load_catalog(extra_files: Sequence[Path | str] = ()) -> Catalog:
    """Built-in parts plus a topology's own parts files (later files add parts, never redefine).

    Raises :class:`simulator.errors.InputError` (``FILE:LINE: field: what``) for a bad parts file.
    """
    extra = tuple(Path(p) for p in extra_files)
    return _load(extra) if extra else _builtin_catalog()


@functools.cache
def _builtin_catalog() -> Catalog:
    """The built-in catalog, parsed once per process (parts are immutable)."""
    return _load(())
