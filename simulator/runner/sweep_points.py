"""Simulate one sweep point (the function Dask workers run) and shape sweep results for people.

``execute(payload)`` never raises: a bad value or a stopped simulation becomes ``{"error": msg}``
so the sweep reports it beside the finished points. Payloads come from
:mod:`simulator.runner.sweep_file`.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from simulator.errors import InputError, SimulationError

BENCH_KEYS = ("time_us", "algbw_GBps", "busbw_GBps", "algo", "protocol", "engine", "energy_J")
LAB_KEYS = ("line_GBps", "simulated_GBps", "closed_form_GBps", "rtt_ns", "bdp_bytes", "limited_by",
            "credit_stall_pct")
DEFAULT_METRIC = {"bench": "busbw_GBps", "credit_lab": "simulated_GBps", "scenario": "time_us"}
"""The column a sweep plots unless told otherwise."""


def execute(payload: dict[str, Any]) -> dict[str, Any]:
    """``{"rows": [...]}`` for one point, or ``{"error": "..."}``."""
    try:
        return {"rows": _RUN[payload["kind"]](payload)}
    except (InputError, SimulationError) as err:
        return {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - one bad point must not end the sweep
        return {"error": f"{type(err).__name__}: {err}"}


def _bench(payload: dict[str, Any]) -> list[dict]:
    """One size through ``runner.sweeps.sweep``: planned as ``fabricsim bench`` plans it (one
    engine choice, one packet unit), on the GPUs the placement fields give."""
    from simulator.runner.sweeps import SweepSpec, select_gpus, sweep
    from simulator.topology.builder import build_fabric
    from simulator.topology.placement import Placement
    from simulator.topology.validate import validate_topology

    spec = payload["spec"]
    fabric = build_fabric(validate_topology(payload["topology"], payload["sources"]))
    where = {f.name: spec.get(f.name) for f in fields(Placement)}
    placement = Placement(**where) if any(v is not None for v in where.values()) else None
    n = len(select_gpus(fabric, spec["gpus"] or (None if placement else len(fabric.gpus)), placement))
    one = SweepSpec(op=spec["op"], gpus=n, sizes=(spec["bytes"],), algo=spec["algo"], protocol=spec["protocol"],
                    engine=spec["engine"], packet_bytes=spec["packet_bytes"], seed=spec["seed"], placement=placement)
    (row,) = sweep(fabric, one)
    return [{"gpus": n, "bytes": spec["bytes"], **{k: row.get(k) for k in BENCH_KEYS}}]


def _credit_lab(payload: dict[str, Any]) -> list[dict]:
    from simulator.workloads.labs.catalog_link import catalog_link
    from simulator.workloads.labs.credits import credit_point

    spec = payload["spec"]
    row = credit_point(catalog_link(spec["generation"], spec["cable_m"], spec["buffer"]))
    return [{k: row[k] for k in LAB_KEYS}]


def _scenario(payload: dict[str, Any]) -> list[dict]:
    from simulator.runner.scenario_run import run_scenario
    from simulator.topology.validate import validate_model
    from simulator.workloads.scenario import ScenarioModel, _resolve_traces

    scenario = validate_model(ScenarioModel, payload["scenario"], payload["sources"])
    scenario = _resolve_traces(scenario, Path(payload["file"]), payload["sources"])  # relative to the scenario
    base = Path(payload["file"]).parent
    topologies = [Path(t) if Path(t).is_absolute() else base / t for t in scenario.topologies]
    rows = []
    for system in run_scenario(scenario, topologies):
        for row in system.rows:
            rows.append({"system": system.name, **{k: v for k, v in row.items() if not _nested(v)}})
    return rows


def _nested(value: Any) -> bool:
    """A mapping or a list of mappings (a Chakra row's ``per_rank``): not a cell of a sweep row."""
    return isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value))


_RUN = {"bench": _bench, "credit_lab": _credit_lab, "scenario": _scenario}


def result_rows(outcomes) -> list[dict]:  # noqa: ANN001 - runner.distributed.Outcome
    """One row per result (one per point for bench and lab), axis values first; failed points as
    a row with their axis values and ``error``."""
    rows = []
    for outcome in outcomes:
        if outcome.error is not None:
            rows.append({**outcome.point.axes, "error": outcome.error})
            continue
        for row in outcome.rows:
            rows.append({**outcome.point.axes, **{k: v for k, v in row.items() if k not in outcome.point.axes}})
    return rows
