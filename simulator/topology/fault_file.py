"""A fault file, as ``--fault FILE`` reads it: a mapping with a ``faults:`` list (and a ``name``
and ``description`` if it likes), or a topology whose ``faults:`` are taken (the shipped
``topologies/faults/*.yaml`` extend a topology and add faults). Errors at FILE:LINE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from pydantic import BaseModel, ConfigDict

from simulator.errors import InputError, Origin
from simulator.hardware.faults import FAULT_KINDS, FaultSpec, parse_fault_flag
from simulator.topology.faults import flag_origin
from simulator.topology.loader import SourceMap, load_yaml
from simulator.topology.validate import validate_model, validate_topology

FAULT_FILE_KEYS = ("faults", "name", "description")
"""What a plain fault file holds; a file with other keys (or ``extends:``) is read as a topology."""


class FaultFile(BaseModel):
    """A plain fault file."""

    model_config = ConfigDict(extra="forbid")
    faults: list[FaultSpec]
    """The faults, each as under a topology's ``faults:`` (``hardware.faults``)."""
    name: str | None = None
    description: str | None = None


def looks_like_file(value: str) -> bool:
    """Whether a ``--fault`` value that is no file was meant as one (``missing.yaml``, ``dir/f``),
    rather than ``KIND:key=value,...``."""
    kind = value.partition(":")[0].strip()
    return kind not in FAULT_KINDS and (value.endswith((".yaml", ".yml")) or "/" in value or "\\" in value)


def read_fault_file(path: str | Path) -> tuple[list[FaultSpec], SourceMap]:
    """The faults of ``path`` and the file's source map (fault j was written at ``("faults", j)``)."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder; --fault takes a YAML file with a faults: list", file=str(path))
    if not path.is_file():
        raise InputError("no such fault file (--fault takes a YAML file with a faults: list, or "
                         f"KIND:key=value,... with KIND one of {', '.join(FAULT_KINDS)})", file=str(path))
    data, sources = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError("a fault file is a mapping with a faults: list", file=str(path), line=1)
    if len(sources.files) > 1 or set(data) - set(FAULT_FILE_KEYS):
        faults = list(validate_topology(data, sources).faults)  # a topology with faults
    else:
        faults = validate_model(FaultFile, data, sources).faults
    if not faults:
        raise sources.error(("faults",) if "faults" in data else (),
                            "names no faults: --fault takes a file whose faults: list has at least one")
    return faults, sources


def read_faults(values: Sequence[str]) -> tuple[list[FaultSpec], list[Origin]]:
    """``--fault`` values -> the faults and where each was written (``errors.Origin``). A value
    naming a file reads its ``faults:`` list (errors at FILE:LINE; a missing ``x.yaml`` is "no such
    fault file"), anything else is ``KIND:key=value,...`` (errors name ``--fault``)."""
    specs: list[FaultSpec] = []
    origins: list[Origin] = []
    for value in values:
        if Path(value).exists() or looks_like_file(value):  # a fault file, or a topology with faults:
            found, sources = read_fault_file(value)
            specs += found
            origins += [Origin(sources, ("faults", j)) for j in range(len(found))]
            continue
        try:
            spec = FaultSpec.model_validate(parse_fault_flag(value))
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            first = err.errors(include_url=False)[0] if hasattr(err, "errors") else None
            msg = first["msg"].removeprefix("Value error, ") if first else str(err)
            at = ".".join(str(x) for x in first["loc"]) if first and first["loc"] else ""
            raise InputError(f"{value!r}: {at + ': ' if at else ''}{msg}", field="--fault") from None
        specs.append(spec)
        origins.append(flag_origin(spec))
    return specs, origins


def fault_inputs(values: Sequence[str]) -> list[Path]:
    """The files among ``--fault`` values, with each file they ``extends:`` (inputs of the run)."""
    out: list[Path] = []
    for value in values:
        if Path(value).is_file():
            out += [Path(f) for f in load_yaml(value)[1].files]
    return out
