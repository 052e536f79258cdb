"""``run`` and ``compare`` as one request -> plan -> outcome path: ``fabricsim run`` / ``compare``
parse their flags into a :class:`ScenarioRequest`, ``simulator.api.run_scenario`` / ``compare``
build the same request, and both get the same :class:`ScenarioOutcome` from :func:`run_request`
(the CLI renders it and writes ``outcome.to_dict()`` as ``--json``).

A request names a scenario file (or a shipped scenario), or, for ``compare --op``, one operation
at some sizes; ``topologies`` replaces the scenario's own (``compare A B --scenario S``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from simulator.engine.packet import EngineObserver
from simulator.errors import InputError, Origin, unknown_choice
from simulator.hardware.faults import FaultSpec
from simulator.hardware.kernels import LAUNCH_MODES
from simulator.runner.estimate import SweepPlan
from simulator.runner.scenario_run import SystemResult, run_scenario
from simulator.runner.tables import rows_frame
from simulator.shipped import find, not_found
from simulator.topology.builder import topology_files
from simulator.topology.fault_file import fault_inputs, read_faults
from simulator.topology.placement import FLAGS, Placement
from simulator.workloads.scenario import ScenarioModel, load_scenario, op_scenario, scenario_files

@dataclass(frozen=True, slots=True)
class ScenarioRequest:
    """What ``run`` or ``compare`` is asked. Every field has the meaning of the flag of that name."""

    scenario: str | None = None
    """A scenario file or a shipped scenario's name; None with ``op`` (``compare --op``)."""
    topologies: tuple[str, ...] = ()
    """Topology files or shipped names replacing the scenario's (``compare``); empty: the scenario's."""
    op: str | None = None
    """``compare --op``: one collective or copy at ``sizes`` on every topology."""
    sizes: str = "1M,64M,1G"
    gpus: int | None = None
    placement: Placement | None = None
    engine: str | None = None
    """Overrides the scenario's ``engine:`` (``compare --engine``); None: the scenario's."""
    faults: tuple[str, ...] = ()
    """``--fault`` values: every topology then runs healthy and degraded, side by side."""
    parts: tuple[str, ...] = ()
    """``--parts`` files applied to every topology after its own."""
    launch: str | None = None
    """``--launch``: graph or eager kernel launches, over the scenario's ``launch:``."""
    allow_oversubscribe: bool = False
    command: str = "run"
    """The command asking (``run`` or ``compare``): errors name its flags."""


@dataclass(frozen=True)
class ScenarioPlan:
    """A scenario request made concrete before anything runs."""

    request: ScenarioRequest
    model: ScenarioModel
    topologies: tuple[Path, ...]
    faults: tuple[FaultSpec, ...]
    origins: tuple[Origin, ...]
    """Where each of ``faults`` was written (its errors are placed there)."""
    inputs: tuple[Path, ...]
    """Every file the run reads (outputs may not overwrite them)."""


@dataclass(frozen=True)
class ScenarioOutcome:
    """A scenario or a comparison: per-system rows (``systems``, one
    :class:`simulator.runner.scenario_run.SystemResult` per topology, or two with faults: healthy
    and degraded), the scenario's warnings, and the comparison paragraph (``summary``: written by
    ``reports.outcomes.summarized``, empty for one system)."""

    name: str
    systems: list[SystemResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: str = ""
    plans: list[tuple[str, str, SweepPlan]] = field(default_factory=list)
    """(system, item, plan) of every size sweep: its engine, why, and what it cost."""

    def to_dict(self) -> dict:
        """The ``--json`` document of ``fabricsim run`` and ``compare``."""
        return {"scenario": self.name, "systems": [s.as_dict() for s in self.systems], "summary": self.summary,
                "warnings": list(self.warnings)}

    @property
    def rows(self) -> list[dict]:
        """Every row of every system, with a ``system`` key (``--csv``'s rows)."""
        return [{"system": s.name, **r} for s in self.systems for r in s.rows]

    def to_pandas(self) -> Any:
        """Every row of every system, with a ``system`` column; needs pandas."""
        return rows_frame(self.rows)


def plan_scenario(request: ScenarioRequest) -> ScenarioPlan:
    """The request checked and made concrete: the scenario loaded (or made from ``op``), its
    topologies found (files or shipped names), faults read with their origins, inputs listed."""
    if request.launch is not None and request.launch not in LAUNCH_MODES:
        raise unknown_choice("launch mode", request.launch, LAUNCH_MODES, field="--launch")
    for value in request.parts:
        if not Path(value).is_file():
            raise InputError(f"no such parts or calibration file: {value}", field="--parts")
    if request.command == "compare":
        _check_compare(request)
    given = [find(t, "topologies") for t in request.topologies]
    for name, path in zip(request.topologies, given):
        if not path.is_file():
            raise not_found(name, "topologies", "topology")
    read: list[Path] = [f for t in given for f in topology_files(t)]
    if request.scenario is not None:
        path = find(request.scenario, "scenarios")
        if not path.is_file():
            raise not_found(request.scenario, "scenarios", "scenario")
        model, own = load_scenario(path)
        topologies = given or own
        read = [*scenario_files(path, topologies=[] if given else None), *read]
        if given or request.engine is not None:
            update: dict[str, Any] = {"topologies": [str(t) for t in given]} if given else {}
            model = model.model_copy(update={**update, **({"engine": request.engine} if request.engine else {})})
    elif request.op is not None or request.command == "compare":
        model = op_scenario([str(t) for t in given], request.op or "all_reduce", request.sizes, request.gpus,
                            request.engine or "auto", request.placement)
        topologies = given
    else:
        raise InputError("give either --op (with --sizes) or --scenario", field="op")
    if request.allow_oversubscribe:
        model = model.model_copy(update={"allow_oversubscribe": True})
    faults, origins = read_faults(list(request.faults))
    inputs = (*read, *(Path(p) for p in request.parts), *fault_inputs(request.faults))
    return ScenarioPlan(request=request, model=model, topologies=tuple(Path(t) for t in topologies),
                        faults=tuple(faults), origins=tuple(origins), inputs=tuple(inputs))


def _check_compare(request: ScenarioRequest) -> None:
    """What ``compare`` needs beyond a scenario: two systems, and --op or --scenario (not both);
    GPU counts and placement only with --op (a scenario's items say their own)."""
    if len(request.topologies) < 2:
        raise InputError("compare needs two or more topology files", field="topologies")
    if request.op is not None and request.scenario is not None:
        raise InputError("give either --op (with --sizes) or --scenario, not both", field="op")
    if request.scenario is not None and (request.placement or request.gpus):
        flag = FLAGS["gpus"] if request.gpus else request.placement.flag
        raise InputError("only with --op: a scenario's items say their GPUs (gpus:, tp:, placement:)", field=flag)


def run_request(planned: ScenarioPlan | ScenarioRequest, observer: EngineObserver | None = None,
                on_row: Callable[[str, dict], None] | None = None,
                on_plan: Callable[[str, str, SweepPlan], None] | None = None,
                on_hops: Callable[[str, str, int, int], None] | None = None) -> ScenarioOutcome:
    """Run a planned (or a plain) request: every item on every topology (``runner.scenario_run``);
    the callbacks watch, they never change what runs. The outcome's ``summary`` is left to
    ``reports.outcomes.summarized``."""
    planned = planned if isinstance(planned, ScenarioPlan) else plan_scenario(planned)
    plans: list[tuple[str, str, SweepPlan]] = []

    def heard(system: str, item: str, plan: SweepPlan) -> None:
        plans.append((system, item, plan))
        if on_plan:
            on_plan(system, item, plan)

    model = planned.model
    systems = run_scenario(model, list(planned.topologies), on_row=on_row, observer=observer,
                           faults=planned.faults, origins=planned.origins, on_plan=heard, on_hops=on_hops,
                           parts=planned.request.parts, launch=planned.request.launch)
    return ScenarioOutcome(name=model.name, systems=systems, warnings=list(model._warnings), plans=plans)
