"""Shipped data by name: topologies, scenarios and validation figures usable from any directory.

``fabricsim describe gb200_nvl72`` finds ``topologies/gb200_nvl72.yaml`` wherever the command runs.
A name is looked up, in order: as a path (relative to the working directory), then in the data
folders that ship with the package (``simulator/data/<kind>/`` of an installed wheel, when present),
then in the source checkout the package was imported from (``<checkout>/<kind>/``).
"""

from __future__ import annotations

from pathlib import Path

from simulator.errors import InputError, did_you_mean

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
    return beside(name, ".", kind)  # a path relative to the working directory, else a shipped name


def _shipped(path: Path, kind: str) -> list[Path]:
    """Where a shipped ``kind`` file named ``path`` may be, in lookup order."""
    return [c for root in roots(kind)
            for c in (root / path, root / f"{path}.yaml", root / path.name, root / f"{path.name}.yaml")]


def beside(name: str | Path, folder: str | Path, kind: str) -> Path:
    """A file a YAML file names (a scenario's ``topologies:``, a sweep's ``base``): ``name``
    relative to the naming file's ``folder`` (or absolute) if that file exists, else the shipped
    ``kind`` file of that name (``hgx_h200``), else the relative path (the caller reports it missing).
    The one rule by which shipped names work in scenario and sweep files as on the command line."""
    path = Path(name) if Path(name).is_absolute() else Path(folder) / name
    if path.is_file() or Path(name).is_absolute():
        return path
    return next((c for c in _shipped(Path(name), kind) if c.is_file()), path)


def not_found(name: str | Path, kind: str, what: str) -> InputError:
    """The error for a ``kind`` file that is neither a path nor a shipped name: "no such scenario
    file (nor a shipped scenario of that name: see fabricsim list); did you mean 'tp_decode'?"."""
    names = [p.stem for p in listing(kind)]
    return InputError(f"no such {what} file (nor a shipped {what} of that name: see fabricsim list)"
                      f"{did_you_mean(Path(name).stem, names)}", file=str(name))


def listing(kind: str) -> list[Path]:
    """Every shipped ``kind`` YAML file (the first root that has one of a name wins), by name."""
    seen: dict[str, Path] = {}
    for root in roots(kind):
        for path in sorted(root.glob("*.yaml")):
            seen.setdefault(path.name, path)
    return [seen[name] for name in sorted(seen)]
