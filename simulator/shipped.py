"""Shipped data by name: topologies, scenarios and validation figures usable from any directory.

``fabricsim describe gb200_nvl72`` finds ``topologies/gb200_nvl72.yaml`` wherever the command runs.
A name is looked up, in order: as a path (relative to the working directory), then in the data
folders that ship with the package (``simulator/data/<kind>/`` of an installed wheel, when present),
then in the source checkout the package was imported from (``<checkout>/<kind>/``).
"""

from __future__ import annotations

from pathlib import Path

KINDS = ("topologies", "scenarios", "validation")
"""The folders of shipped data."""


def roots(kind: str) -> list[Path]:
    """Folders that may hold shipped ``kind`` files, most specific first (existing ones only)."""
    package = Path(__file__).resolve().parent
    candidates = [package / "data" / kind, package.parent / kind]
    return [c for c in candidates if c.is_dir()]


def find(name: str | Path, kind: str) -> Path:
    """``name`` as given if that file exists, else the shipped ``kind`` file of that name (with or
    without ``.yaml``); else ``name`` unchanged (the caller reports it missing)."""
    path = Path(name)
    if path.is_file() or path.is_absolute():
        return path
    for root in roots(kind):
        for candidate in (root / path, root / f"{path}.yaml", root / path.name, root / f"{path.name}.yaml"):
            if candidate.is_file():
                return candidate
    return path


def listing(kind: str) -> list[Path]:
    """Every shipped ``kind`` YAML file (the first root that has one of a name wins), by name."""
    seen: dict[str, Path] = {}
    for root in roots(kind):
        for path in sorted(root.glob("*.yaml")):
            seen.setdefault(path.name, path)
    return [seen[name] for name in sorted(seen)]
