"""A fabric as a command asks for it: a topology file or a shipped topology's name, with the
file's faults and the ``--fault`` values applied (``topology.fault_file.read_faults``: each fault
with where it was written). ``fabricsim bench``, ``describe`` and ``simulator.api.load_topology``
build fabrics here."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from simulator.shipped import find, not_found
from simulator.topology.builder import build_fabric
from simulator.topology.fabric import Fabric
from simulator.topology.fault_file import read_faults

def load_fabric(topology: str | Path, faults: Sequence[str] = (), *, healthy: bool = False) -> Fabric:
    """A topology file (or a shipped topology's name) built, with the file's faults and the
    ``--fault`` values ``faults`` applied (``healthy``: neither)."""
    path = find(topology, "topologies")
    if not path.is_file():
        raise not_found(topology, "topologies", "topology")
    specs, origins = read_faults(list(faults))
    return build_fabric(path, specs, healthy=healthy, origins=origins)
