"""Check a sweep point's inputs without simulating it: what a worker would refuse, found when the
sweep file loads (``sweep_file.load_sweep``), so a bad axis value is one line at the sweep file's
FILE:LINE before any point runs (issue 28, item 7).

``PointCheck.check(payload)`` raises the :class:`InputError` the worker would raise for the names
(op, algo, protocol), the topology (built once per distinct topology document: a dotted axis value
a cable cannot reach, a credit buffer below one packet...), ``gpus`` beyond the topology, the credit
lab's generation, cable and buffer, and a scenario checked against its topologies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simulator.errors import InputError, InputErrors, unknown_choice
from simulator.topology.fabric import Fabric


def one_line(err: InputError, axis: str | None = None) -> str:
    """``err`` as one line without its own FILE:LINE (the sweep file's line replaces it) nor its
    field when that is the ``axis`` itself; the first of several problems, with how many more."""
    if isinstance(err, InputErrors) and err.errors:
        first = err.errors[0]
        more = len(err.errors) - 1
        return one_line(first, axis) + (f" (and {more} more)" if more else "")
    message = " ".join(err.message.split())
    return f"{err.field}: {message}" if err.field and err.field != axis else message


class PointCheck:
    """Checks the payloads of one sweep; remembers what it built (one fabric per topology document)."""

    def __init__(self) -> None:
        self._fabrics: dict[str, Fabric | InputError] = {}

    def check(self, payload: dict[str, Any]) -> None:
        getattr(self, f"_{payload['kind']}")(payload)

    def _fabric(self, key: str, build) -> Fabric:  # noqa: ANN001 - () -> Fabric
        if key not in self._fabrics:
            try:
                self._fabrics[key] = build()
            except InputError as err:
                self._fabrics[key] = err
        got = self._fabrics[key]
        if isinstance(got, InputError):
            raise got
        return got

    def _bench(self, payload: dict[str, Any]) -> None:
        from simulator.runner.sweeps import select_gpus
        from simulator.topology.builder import build_fabric
        from simulator.topology.validate import validate_topology
        from simulator.workloads.collectives import OPS, check_algo, check_protocol
        from simulator.workloads.copies import COPIES

        spec = payload["spec"]
        if spec["op"] not in OPS and spec["op"] not in COPIES:
            raise unknown_choice("op", spec["op"], [*OPS, *COPIES], field="op")
        check_algo(spec["algo"])
        check_protocol(spec["protocol"])
        key = json.dumps(payload["topology"], sort_keys=True, default=str)
        fabric = self._fabric(key, lambda: build_fabric(validate_topology(payload["topology"], payload["sources"])))
        gpus = tuple(select_gpus(fabric, spec["gpus"] if spec["gpus"] is not None else len(fabric.gpus)))
        if spec["op"] in OPS:
            self._runnable(fabric, gpus, spec["op"], spec["algo"], check_protocol(spec["protocol"]))

    def _runnable(self, fabric: Fabric, gpus: tuple[str, ...], op: str, algo: str, protocol: str) -> None:
        """Some algorithm and protocol (or the ones asked for) can run ``op`` on ``gpus``, as the
        tuner would find (``collectives.why_not``); the tuner's wording when none can."""
        from simulator.hardware.protocols import PROTOCOL_NAMES, load_protocols
        from simulator.workloads.collectives import choices, why_not

        if protocol not in PROTOCOL_NAMES and protocol != "auto":
            return  # the ideal protocol: no table to ask
        table = load_protocols()
        listed = choices(algo)
        reasons = [why_not(fabric, gpus, op, a, p, table) for a in (listed if listed is not None else [algo])
                   for p in (list(PROTOCOL_NAMES) if protocol == "auto" else [protocol])]
        if all(reasons):
            if listed is None:
                raise InputError(f"{algo} cannot run {op} here: {reasons[0]}", field="algo")
            raise InputError(f"no algorithm/protocol can run {op} on these {len(gpus)} GPUs ({reasons[0]})",
                             field="algo")

    def _credit_lab(self, payload: dict[str, Any]) -> None:
        from simulator.workloads.labs.catalog_link import catalog_link

        spec = payload["spec"]
        catalog_link(spec["generation"], spec["cable_m"], spec["buffer"])

    def _scenario(self, payload: dict[str, Any]) -> None:
        from simulator.topology.builder import build_fabric
        from simulator.topology.validate import validate_model
        from simulator.errors import raise_all
        from simulator.workloads.scenario import ScenarioModel, _resolve_traces, check_on_fabrics, value_problems

        sources = payload["sources"]
        scenario = validate_model(ScenarioModel, payload["scenario"], sources)
        raise_all(value_problems(scenario, sources))
        scenario = _resolve_traces(scenario, Path(payload["file"]), sources)  # Chakra items: their traces
        base = Path(payload["file"]).parent
        topologies = [Path(t) if Path(t).is_absolute() else base / t for t in scenario.topologies]
        for topo in topologies:
            if not topo.is_file():
                raise InputError(f"no such topology file {str(topo)!r}", field="topologies")
        fabrics = [self._fabric(str(t.resolve()), lambda t=t: build_fabric(t)) for t in topologies]
        check_on_fabrics(scenario, fabrics, topologies)
