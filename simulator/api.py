"""A small Python API for notebooks and scripts: the CLI's commands as functions returning results.

    from simulator import load_topology, bench, run_scenario, compare

    fabric = load_topology("gb200_nvl72")                 # a shipped name or a path
    result = bench("hgx_h100", op="all_reduce", sizes="1M:1G", engine="flow")
    result.rows[0]["busbw_GBps"]; result.to_dict(); result.to_pandas()   # pandas optional
    cmp = compare(["gb200_nvl72", "hopper_ib_rack"], op="all_reduce", sizes="1G", engine="flow")
    cmp.summary                                           # the comparison paragraph

Bad input raises :class:`simulator.errors.InputError` (as the CLI, which prints it and exits 2).
Each run owns its seeded generator: the same call gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from simulator.errors import InputError
from simulator.shipped import find
from simulator.topology.fabric import Fabric


def _table(rows: list[dict]) -> Any:
    try:
        import pandas as pd
    except ImportError as err:  # pandas is optional
        raise ImportError("to_pandas() needs pandas: pip install pandas (to_dict() needs nothing)") from err
    from simulator.reports.export import flatten

    return pd.DataFrame([flatten(r) for r in rows])


@dataclass(frozen=True)
class BenchResult:
    """One nccl-tests-style sweep: ``rows`` as the CLI's ``--json`` (bytes, time_us, algbw_GBps,
    busbw_GBps, algo, protocol, channels, engine, energy_J, ...)."""

    topology: str
    system: str
    op: str
    gpus: int
    rows: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"topology": self.topology, "system": self.system, "op": self.op, "gpus": self.gpus,
                "rows": [dict(r) for r in self.rows]}

    def to_pandas(self) -> Any:
        """One DataFrame row per size (nested values as ``key.subkey`` columns); needs pandas."""
        return _table(self.rows)


@dataclass(frozen=True)
class ScenarioResult:
    """A scenario or a comparison: per-system rows, static power, and the summary paragraph."""

    name: str
    systems: list = field(default_factory=list)
    """One :class:`simulator.runner.scenario_run.SystemResult` per topology."""
    summary: str = ""
    """Who is faster, by how much, and the busiest links (empty for one system)."""

    def to_dict(self) -> dict:
        return {"scenario": self.name, "systems": [s.as_dict() for s in self.systems], "summary": self.summary}

    def to_pandas(self) -> Any:
        """Every row of every system, with a ``system`` column; needs pandas."""
        return _table([{"system": s.name, **r} for s in self.systems for r in s.rows])


def load_topology(topology: str | Path) -> Fabric:
    """Build a topology file, or a shipped topology by name (``"gb200_nvl72"``), into a fabric."""
    from simulator.topology.builder import build_fabric

    path = find(topology, "topologies")
    if not path.is_file():
        raise InputError("no such topology file (nor a shipped topology of that name)", file=str(topology))
    return build_fabric(path)


def bench(topology: str | Path, op: str = "all_reduce", sizes: str = "1M:1G", gpus: int | None = None,
          algo: str = "auto", protocol: str = "auto", channels: int | None = None, engine: str = "auto",
          step_factor: int = 2, root: int = 0, seed: int = 0, timing: str = "nccl-tests",
          placement=None) -> BenchResult:  # noqa: ANN001 - topology.placement.Placement
    """``fabricsim bench``: sweep the message sizes of one collective or copy (``timing``: see
    ``SweepSpec.timing``; ``placement``: a ``simulator.topology.placement.Placement``, as the
    --per-rack/--per-tray/--per-node/--ranks/--hosts flags)."""
    from simulator.runner.sweeps import SweepSpec, select_gpus, size_list, sweep

    fabric = load_topology(topology)
    n = len(select_gpus(fabric, gpus or (None if placement else len(fabric.gpus)), placement))
    spec = SweepSpec(op=op, gpus=n, sizes=tuple(size_list(sizes, step_factor)), algo=algo, protocol=protocol,
                     channels=channels, engine=engine, seed=seed, root=root, timing=timing, placement=placement)
    return BenchResult(topology=str(topology), system=fabric.name, op=op, gpus=n, rows=sweep(fabric, spec))


def _run(model, topologies: Sequence[Path]) -> ScenarioResult:  # noqa: ANN001
    from simulator.runner.scenario_run import run_scenario as run
    from simulator.reports.scenario_text import comparison_summary

    systems = run(model, list(topologies))
    return ScenarioResult(name=model.name, systems=systems, summary=comparison_summary(systems))


def run_scenario(scenario: str | Path) -> ScenarioResult:
    """``fabricsim run``: every workload of a scenario file (a path or a shipped name) on its topologies."""
    from simulator.workloads.scenario import load_scenario

    model, topologies = load_scenario(find(scenario, "scenarios"))
    return _run(model, topologies)


def compare(topologies: Sequence[str | Path], op: str = "all_reduce", sizes: str = "1M,64M,1G",
            gpus: int | None = None, engine: str = "auto", placement=None) -> ScenarioResult:  # noqa: ANN001
    """``fabricsim compare --op``: the same operation on several systems, with the summary
    (``placement``: as for :func:`bench`, on every system)."""
    from simulator.workloads.scenario import op_scenario

    paths = [find(t, "topologies") for t in topologies]
    for given, path in zip(topologies, paths):
        if not path.is_file():
            raise InputError("no such topology file (nor a shipped topology of that name)", file=str(given))
    model = op_scenario([str(p) for p in paths], op, sizes, gpus, engine, placement)
    return _run(model, paths)


__all__ = ["BenchResult", "ScenarioResult", "bench", "compare", "load_topology", "run_scenario"]
