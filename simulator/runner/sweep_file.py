"""Sweep files: a base case and axes, validated with FILE:LINE errors and expanded into points.

    name: Credit buffer x cable length
    base:
      credit_lab: {generation: nvlink5}      # or bench: {topology: ..., op: ..., bytes: ...}
    axes:                                     #    or scenario: FILE
      buffer: [4K, 16K, 64K]
      cable_m: [0.5, 2, 10]

The points are the product of the axes in file order (the last axis varies fastest). An axis is a
field of the base (``bench``: topology, op, gpus, the placement fields per_rack, per_tray,
per_node, ranks and hosts, bytes, algo, protocol, engine, packet_bytes, seed; ``credit_lab``: generation, buffer, cable_m; ``scenario``: topology, engine, seed) or a
dotted path into the base's topology (``topology.links.rails.cable.length``,
``topology.enclosures.rack.links.nvlink_spine.credit_buffer``) or scenario
(``scenario.workloads.<name>.sizes``). Each point carries a self-contained payload (the topology or
scenario data after the axis values are set, with the source map for error messages) so a worker
on another machine needs no file but topology-local parts files.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from simulator.engine.choices import EngineName
from simulator.version import __version__
from simulator.errors import InputError
from simulator.runner.cache import code_fingerprint
from simulator.shipped import beside, not_found
from simulator.runner.overrides import check_path, with_values
from simulator.topology.loader import SourceMap, load_yaml
from simulator.topology.validate import validate_model
from simulator.units import UnitError, parse_size

BASE_KINDS = ("bench", "credit_lab", "scenario")
MAX_POINTS = 10_000
"""A larger product is almost certainly a mistake in the file."""


MAX_BYTES = 1 << 50
"""Largest message size a bench point takes (1 PiB)."""
MAX_BUFFER = 16 << 20
"""Largest credit-lab buffer (16 MiB): the lab sends 100 buffer-fulls of packets, about 40 s of
packet engine at this size (and hours past it)."""


def _size(value: Any, most: int = MAX_BYTES, what: str = "sizes") -> int:
    if isinstance(value, bool):
        raise ValueError("expected a size such as 64M or 1G")
    try:
        nbytes = parse_size(str(value))
    except (UnitError, OverflowError, ValueError) as err:
        raise ValueError(str(err)) from None
    if nbytes <= 0:
        raise ValueError(f"{what} must be positive")
    if nbytes > most:
        raise ValueError(f"{what} must be at most {most} B ({most >> 20} MiB), got {value}" if most < 1 << 40
                         else f"{what} must be at most {most} B (1 PiB), got {value}")
    return nbytes


_ONE = {"topologies": "topology", "scenarios": "scenario"}
"""A shipped kind's folder -> one file of it, in words."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BenchBase(_Model):
    """One collective or copy on ``gpus`` GPUs of a topology, at one size: the first in rank order,
    or where the placement fields put them (as ``fabricsim bench``'s flags of those names; each may
    be an axis: ``per_rack: [36, 64, 72]``)."""

    topology: str
    """Topology file, relative to the sweep file, or a shipped topology's name."""
    op: str = "all_reduce"
    gpus: int | None = Field(None, ge=1)
    """GPUs of the job (default: all, or what the placement gives)."""
    per_rack: int | None = Field(None, ge=1)
    """GPUs from each rack (NVLink domain), racks in rank order, trays whole (``--per-rack``)."""
    per_tray: int | None = Field(None, ge=1)
    """GPUs from each compute tray (``--per-tray``)."""
    per_node: int | None = Field(None, ge=1)
    """GPUs from each node, the topology's enclosures (``--per-node``)."""
    ranks: str | None = None
    """Explicit ranks in job order, ``0-63,72-135`` (``--ranks``)."""
    hosts: str | None = None
    """Slurm-style host list, ``rack[0-1]-tray[0-15]`` (``--hosts``)."""
    bytes: int = 1 << 30
    """Message size: 64M, 1G or bytes (nccl-tests convention)."""
    algo: str = "auto"
    protocol: str = "auto"
    engine: EngineName = "auto"
    packet_bytes: int | None = Field(None, ge=64)
    seed: int = 0

    @field_validator("bytes", mode="before")
    @classmethod
    def _bytes(cls, value: Any) -> int:
        return _size(value)


class CreditLabBase(_Model):
    """The credit lab's one saturated link (``fabricsim lab credits``) at one point."""

    generation: str = "nvlink5"
    buffer: int = 16 << 10
    """Receive buffer per direction: 4K, 64 KiB or bytes (at most ``MAX_BUFFER``)."""
    cable_m: float = Field(1.0, gt=0, allow_inf_nan=False)
    """Cable length (m): a finite length that one of the generation's cables reaches."""

    @field_validator("buffer", mode="before")
    @classmethod
    def _buffer(cls, value: Any) -> int:
        return _size(value, MAX_BUFFER, "buffers")


class ScenarioBase(_Model):
    """A scenario file run on one topology (its own, or the ``topology`` axis value)."""

    scenario: str
    """Scenario file, relative to the sweep file."""
    topology: str | None = None
    engine: EngineName | None = None
    seed: int | None = None


class BaseSpec(_Model):
    bench: BenchBase | None = None
    credit_lab: CreditLabBase | None = None
    scenario: str | None = None
    """Scenario file (relative to the sweep file)."""

    @model_validator(mode="after")
    def _one(self) -> "BaseSpec":
        given = [k for k in BASE_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(BASE_KINDS)} (got {', '.join(given) or 'none'})")
        return self


class SweepModel(_Model):
    """A whole sweep file."""

    name: str
    description: str = ""
    base: BaseSpec
    axes: dict[str, list[Any]] = Field(min_length=1)
    """Axis name -> values (at least one value each)."""

    @field_validator("axes")
    @classmethod
    def _values(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for name, values in axes.items():
            if not values:
                raise ValueError(f"axis {name!r} has no values")
        return axes


@dataclass(frozen=True)
class Point:
    """One combination of axis values and what a worker needs to simulate it."""

    index: int
    axes: dict[str, Any]
    """Axis name -> value as written in the sweep file (strings like "16K" stay strings)."""
    payload: dict[str, Any] = field(repr=False)
    """``kind`` plus the kind's inputs (see :func:`expand`); picklable, never mutated."""
    digest: str = ""
    """Content hash of the inputs, the fabricsim version and its code (the cache key)."""


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep file: its model, kind, points and where it came from."""

    path: Path
    model: SweepModel
    kind: str
    points: list[Point]
    inputs: tuple[Path, ...] = ()
    """Every file the sweep reads: the sweep file (and what it extends), its topologies or scenario
    and their own files (what they extend, parts files, Chakra traces)."""


def load_sweep(path: str | Path) -> Sweep:
    """Validate a sweep file and expand it; raises :class:`InputError` at FILE:LINE."""
    path = Path(path)
    if not path.is_file():
        raise not_found(path, "scenarios", "sweep")
    data, sources = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("a sweep file is a mapping with name, base and axes", file=str(path), line=1)
    if "base" not in data and ("workloads" in data or "jobs" in data):
        raise InputError(f"is a scenario file (workloads:), not a sweep: run it with fabricsim run {path}",
                         file=str(path), line=1)
    model = validate_model(SweepModel, data, sources)
    kind = next(k for k in BASE_KINDS if getattr(model.base, k) is not None)
    expander = _Expander(path, model, kind, sources)
    points = expander.points()
    return Sweep(path=path, model=model, kind=kind, points=points, inputs=tuple(expander.inputs()))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


class _Expander:
    """Checks every axis against the base and turns the product of the axes into points."""

    def __init__(self, path: Path, model: SweepModel, kind: str, sources: SourceMap) -> None:
        self.path, self.model, self.kind, self.sources = path, model, kind, sources
        self.files: dict[Path, tuple[Any, SourceMap]] = {}
        if kind == "bench":
            self.base = model.base.bench.model_dump()
            self.fields, self.prefix, self.schema = set(BenchBase.model_fields), "topology.", BenchBase
        elif kind == "credit_lab":
            self.base = model.base.credit_lab.model_dump()
            self.fields, self.prefix, self.schema = set(CreditLabBase.model_fields), None, CreditLabBase
        else:
            self.base = {"scenario": model.base.scenario}
            self.fields, self.prefix, self.schema = {"topology", "engine", "seed"}, "scenario.", ScenarioBase

    def _file(self, name: str, where: tuple, kind: str = "topologies") -> Path:
        """A file the sweep names: beside the sweep file, else a shipped ``kind`` file of that name."""
        file = beside(name, self.path.parent, kind)
        if not file.is_file():
            raise self.sources.error(where, f"no such file {str(file)!r} (nor a shipped {_ONE[kind]} "
                                            "of that name: see fabricsim list)")
        return file.resolve()

    def _loaded(self, file: Path) -> tuple[Any, SourceMap]:
        if file not in self.files:
            self.files[file] = load_yaml(file)
        return self.files[file]

    def _check_axes(self) -> None:
        for name, values in self.model.axes.items():
            at = ("axes", name)
            if name in self.fields:
                for i, value in enumerate(values):
                    try:
                        self.schema.model_validate({**self.base, name: value})
                    except ValidationError as err:
                        msg = err.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
                        raise self.sources.error(at + (i,), f"{name} = {value!r}: {msg}") from None
                    if name == "topology":
                        self._file(str(value), at + (i,))
            elif self.prefix and name.startswith(self.prefix):
                for doc in self._documents_for_paths():
                    try:
                        check_path(doc, name.removeprefix(self.prefix))
                    except KeyError as err:
                        raise self.sources.error(at, f"axis {name!r}: {err.args[0]}") from None
            else:
                allowed = sorted(self.fields) + ([f"{self.prefix}<path>"] if self.prefix else [])
                raise self.sources.error(at, f"unknown axis {name!r} for a {self.kind} base; "
                                             f"use one of {', '.join(allowed)}")

    def _documents_for_paths(self) -> list[Any]:
        """The topology (bench) or scenario documents the dotted axes will be applied to."""
        if self.kind == "scenario":
            return [self._loaded(self._file(self.base["scenario"], ("base", "scenario"), "scenarios"))[0]]
        names = self.model.axes.get("topology", [self.base["topology"]])
        where = ("axes", "topology") if "topology" in self.model.axes else ("base", "bench", "topology")
        return [self._loaded(self._file(str(n), where))[0] for n in names]

    def inputs(self) -> list[Path]:
        """The files the points read (``Sweep.inputs``)."""
        from simulator.topology.builder import topology_files
        from simulator.workloads.scenario import scenario_files

        files = [Path(f) for f in self.sources.files]
        topologies = [self._file(str(n), ("axes", "topology")) for n in self.model.axes.get("topology", [])]
        if self.kind == "bench" and not topologies:
            topologies = [self._file(self.base["topology"], ("base", "bench", "topology"))]
        if self.kind == "scenario":
            files += scenario_files(self._file(self.base["scenario"], ("base", "scenario"), "scenarios"))
        for topo in topologies:
            files += topology_files(topo)
        return files

    def points(self) -> list[Point]:
        self._check_axes()
        points = self._expand()
        self._check_points(points)
        return points

    def _check_points(self, points: list[Point]) -> None:
        """What each point's worker would refuse, at the sweep file's line (``sweep_check``): the
        first point that fails is blamed on an axis value that fails on its own (at that value's
        line), else on the base if the base alone fails so, else on the combination (at ``axes``)."""
        from simulator.runner.sweep_check import PointCheck, one_line

        checker = PointCheck()

        def problem(payload: dict[str, Any]) -> InputError | None:
            try:
                checker.check(payload)
            except InputError as err:
                return err
            return None

        for point in points:
            err = problem(point.payload)
            if err is None:
                continue
            base = problem(self._payload({}))
            for name, value in point.axes.items():
                alone = problem(self._payload({name: value}))
                if alone is not None and (base is None or str(alone) != str(base)):
                    index = self.model.axes[name].index(value)
                    raise self.sources.error(("axes", name, index),
                                             f"{name} = {value!r}: {one_line(alone, name)}") from None
            if base is not None and str(base) == str(err):
                raise self.sources.error(("base",), f"the base case: {one_line(base)}") from None
            combo = ", ".join(f"{k}={v}" for k, v in point.axes.items())
            raise self.sources.error(("axes",), f"point {point.index} ({combo}): {one_line(err)}") from None

    def _expand(self) -> list[Point]:
        names = list(self.model.axes)
        total = 1
        for values in self.model.axes.values():
            total *= len(values)
        if total > MAX_POINTS:
            raise self.sources.error(("axes",), f"{total} points is more than {MAX_POINTS}; split the sweep")
        out = []
        for i, combo in enumerate(itertools.product(*self.model.axes.values())):
            axes = dict(zip(names, combo))
            payload = self._payload(axes)
            digest = hashlib.sha256(_canonical({"version": __version__, "code": code_fingerprint(),
                                                "inputs": payload["hashed"]}).encode()).hexdigest()
            out.append(Point(index=i, axes=axes, payload=payload, digest=digest))
        return out

    def _payload(self, axes: dict[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in axes.items() if k in self.fields}
        paths = {k.removeprefix(self.prefix): v for k, v in axes.items() if self.prefix and k.startswith(self.prefix)}
        if self.kind == "credit_lab":
            spec = CreditLabBase.model_validate({**self.base, **fields}).model_dump()
            return {"kind": self.kind, "spec": spec, "hashed": {"kind": self.kind, "spec": spec}}
        if self.kind == "bench":
            spec = BenchBase.model_validate({**self.base, **fields}).model_dump()
            where = ("axes", "topology") if "topology" in fields else ("base", "bench", "topology")
            file = self._file(spec["topology"], where)
            data, sources = self._loaded(file)
            data = with_values(data, paths)
            spec["topology"] = str(file)
            parts = self._parts_texts(data, sources)
            return {"kind": self.kind, "spec": spec, "topology": data, "sources": sources,
                    "hashed": {"kind": self.kind, "spec": {**spec, "topology": None}, "topology": data,
                               "parts": parts}}
        file = self._file(self.base["scenario"], ("base", "scenario"), "scenarios")
        data, sources = self._loaded(file)
        data = with_values(data, paths)
        if "topology" in fields:
            data = {**data, "topologies": [str(self._file(str(fields["topology"]), ("axes", "topology")))]}
        for key in ("engine", "seed"):
            if key in fields:
                data = {**data, key: fields[key]}
        topo_data = {}
        for name in data.get("topologies", []):
            topo = Path(name) if Path(name).is_absolute() else file.parent / name
            if topo.is_file():
                topo_data[str(name)] = self._loaded(topo.resolve())[0]
        return {"kind": self.kind, "scenario": data, "sources": sources, "file": str(file),
                "hashed": {"kind": self.kind, "scenario": data, "topologies": topo_data}}

    @staticmethod
    def _parts_texts(data: Any, sources: SourceMap) -> dict[str, str]:
        """Text of the topology's own parts files (they change results as much as the topology)."""
        out = {}
        for i, name in enumerate(data.get("parts", []) if isinstance(data, dict) else []):
            file, _ = sources.where(("parts", i))
            path = Path(file).parent / str(name)
            out[str(name)] = path.read_text() if path.is_file() else ""
        return out
