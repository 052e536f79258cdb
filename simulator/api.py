"""A small Python API for notebooks and scripts: the CLI's commands as functions returning results.

    from simulator import load_topology, bench, run_scenario, compare, serve, validate, sweep, lab, calibrate

    fabric = load_topology("gb200_nvl72")                 # a shipped name or a path
    result = bench("hgx_h100", op="all_reduce", sizes="1M:1G", engine="flow")
    result.rows[0]["busbw_GBps"]; result.to_dict(); result.to_pandas()   # pandas optional
    cmp = compare(["gb200_nvl72", "hopper_ib_rack"], op="all_reduce", sizes="1G", engine="flow")
    cmp.summary                                           # the comparison paragraph
    served = serve("serving_nvl72_vs_hopper", rates=[50, 100])
    served.headline; served.rows[0]["ttft_p99_ms"]        # what fabricsim serve prints

Each function builds the request its command builds from flags (``simulator.runner.bench``,
``simulator.runner.scenarios``) and returns the same outcome the command renders: ``.rows``,
``.to_dict()`` (the command's ``--json``), ``.to_pandas()``.
Bad input raises :class:`simulator.errors.InputError` (as the CLI, which prints it and exits 2).
Each run owns its seeded generator: the same call gives the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from simulator.runner.bench import BenchOutcome, BenchRequest, run_bench
from simulator.runner.calibrate_run import CalibrateOutcome, CalibrateRequest, run_calibrate
from simulator.runner.fabrics import load_fabric
from simulator.runner.labs import LabOutcome, LabRequest, run_lab
from simulator.runner.scenarios import ScenarioOutcome, ScenarioRequest, run_request
from simulator.runner.serve import ServeOutcome, ServeRequest, run_serve
from simulator.runner.sweep_run import SweepOutcome, SweepRequest, run_sweep
from simulator.runner.validate import ValidateOutcome, ValidateRequest, run_validate
from simulator.topology.fabric import Fabric, SwitchScheduling
from simulator.topology.placement import Placement


def load_topology(topology: str | Path) -> Fabric:
    """Build a topology file, or a shipped topology by name (``"gb200_nvl72"``), into a fabric
    (with the file's own faults: as ``fabricsim describe``)."""
    return load_fabric(topology)


def bench(topology: str | Path, op: str = "all_reduce", sizes: str = "1M:1G", gpus: int | None = None,
          algo: str = "auto", protocol: str = "auto", channels: int | None = None, engine: str = "auto",
          step_factor: int = 2, root: int = 0, seed: int = 0, timing: str = "nccl-tests",
          placement: Placement | None = None, dtype: str = "float", packet_bytes: int | None = None,
          switch: SwitchScheduling | None = None, faults: Sequence[str] = (), mnnvl: bool = True) -> BenchOutcome:
    """``fabricsim bench``: sweep the message sizes of one collective or copy. Every argument has
    the meaning of the flag of that name (``placement``: a ``simulator.topology.placement.Placement``,
    as the --per-rack/--per-tray/--per-node/--ranks/--hosts flags; ``switch``: a
    ``simulator.topology.fabric.SwitchScheduling``, as --arbiter ... --queueing; ``faults``: --fault
    values). The outcome is the CLI's: ``.rows``, ``.to_dict()`` (its ``--json``), ``.to_pandas()``."""
    return run_bench(BenchRequest(topology=str(topology), op=op, sizes=sizes, step_factor=step_factor, dtype=dtype,
                                  gpus=gpus, placement=placement, root=root, algo=algo, protocol=protocol,
                                  channels=channels, timing=timing, engine=engine, packet_bytes=packet_bytes,
                                  seed=seed, switch=switch, faults=tuple(faults), mnnvl=mnnvl))


def run_scenario(scenario: str | Path, faults: Sequence[str] = (), parts: Sequence[str] = (),
                 launch: str | None = None, allow_oversubscribe: bool = False) -> ScenarioOutcome:
    """``fabricsim run``: every workload of a scenario file (a path or a shipped name) on its
    topologies; the outcome is the CLI's (``.systems``, ``.summary``, ``.to_dict()`` its ``--json``)."""
    return _scenario(ScenarioRequest(scenario=str(scenario), faults=tuple(faults), parts=tuple(parts),
                                     launch=launch, allow_oversubscribe=allow_oversubscribe))


def compare(topologies: Sequence[str | Path], op: str | None = "all_reduce", sizes: str = "1M,64M,1G",
            gpus: int | None = None, engine: str = "auto", placement: Placement | None = None,
            scenario: str | Path | None = None, faults: Sequence[str] = (), parts: Sequence[str] = (),
            launch: str | None = None) -> ScenarioOutcome:
    """``fabricsim compare``: the same operation (or a scenario's workloads: ``scenario``, with
    ``op=None``) on several systems, with the summary; arguments as the flags of that name."""
    return _scenario(ScenarioRequest(scenario=str(scenario) if scenario is not None else None,
                                     topologies=tuple(str(t) for t in topologies),
                                     op=op if scenario is None else None, sizes=sizes, gpus=gpus,
                                     placement=placement, engine=engine, faults=tuple(faults), parts=tuple(parts),
                                     launch=launch, command="compare"))


def validate(file: str | Path | None = None, threshold: float | None = None, nccl_tests: Sequence[str] = (),
             topology: str | Path | None = None, gpus: int | None = None, placement: Placement | None = None,
             op: str | None = None, env: Sequence[str] = (), strict: bool = False, run: int | None = None,
             algo: str = "auto", protocol: str = "auto", engine: str = "auto",
             in_place: bool = False) -> ValidateOutcome:
    """``fabricsim validate``: every published figure (``file``), or with ``nccl_tests`` logs every
    size of them on ``topology``; arguments as the flags of that name. ``.failed`` lists the rows
    over the threshold (the command then exits 1); ``.to_dict()`` is its ``--json``."""
    return run_validate(ValidateRequest(file=str(file) if file else None, threshold=threshold,
                                        logs=tuple(str(x) for x in nccl_tests),
                                        topology=str(topology) if topology else None, gpus=gpus, placement=placement,
                                        op=op, env=tuple(env), strict=strict, run=run, algo=algo, protocol=protocol,
                                        engine=engine, in_place=in_place))


def sweep(sweep_file: str | Path, workers: int | None = None, scheduler: str | None = None,
          cache: str | None = None, no_cache: bool = False) -> SweepOutcome:
    """``fabricsim sweep``: every point of a sweep file (on Dask, cached by content hash); ``.rows``
    one per point, ``.failed`` the points that failed, ``.to_dict()`` the command's ``--json``."""
    return run_sweep(SweepRequest(file=str(sweep_file), workers=workers, scheduler=scheduler, cache=cache,
                                  no_cache=no_cache))


def serve(scenario: str | Path, rates: Sequence[float] = (), topologies: Sequence[str | Path] = (),
          deployments: Sequence[str] = (), duration_s: float | None = None, seed: int | None = None,
          workers: int | None = None, scheduler: str | None = None) -> ServeOutcome:
    """``fabricsim serve``: a serving scenario (a path or a shipped name), every deployment at every
    rate on every topology; ``.rows``, ``.headline`` (the sentence the command prints), ``.to_dict()``
    (its ``--json``), ``.latencies`` (each row's TTFT, TPOT and latency of every request)."""
    from simulator.reports.serve_text import headlined

    return headlined(run_serve(ServeRequest(scenario=str(scenario), topologies=tuple(str(t) for t in topologies),
                                            rates=tuple(float(r) for r in rates), deployments=tuple(deployments),
                                            duration_s=duration_s, seed=seed, workers=workers,
                                            scheduler=scheduler)))


def lab(request: LabRequest) -> LabOutcome:
    """``fabricsim lab NAME``: a teaching lab, asked as ``simulator.runner.labs.CreditsLab(...)``,
    ``ArbitrationLab``, ``HolLab``, ``SwitchLab`` or ``RetryLab`` (fields as the flags); ``.result``
    its rows (the command's ``--json``), ``.explanation`` what they show."""
    return run_lab(request)


def calibrate(output: str | None = None, from_json: str | None = None, raw_out: str | None = None,
              force: bool = False) -> CalibrateOutcome:
    """``fabricsim calibrate``: measure this GPU (or fit a recorded run, ``from_json``) and write the
    parts override file; ``.calibration`` the fit, ``.file`` the file written."""
    return run_calibrate(CalibrateRequest(output=output, from_json=from_json, raw_out=raw_out, force=force))


def _scenario(request: ScenarioRequest) -> ScenarioOutcome:
    from simulator.reports.outcomes import summarized

    return summarized(run_request(request))


BenchResult = BenchOutcome
"""The name of a bench outcome in earlier versions of this API."""
ScenarioResult = ScenarioOutcome
"""The name of a scenario outcome in earlier versions of this API."""

__all__ = ["BenchOutcome", "BenchResult", "CalibrateOutcome", "LabOutcome", "ScenarioOutcome", "ScenarioResult",
           "ServeOutcome", "SweepOutcome", "ValidateOutcome", "bench", "calibrate", "compare", "lab", "load_topology",
           "run_scenario", "serve", "sweep", "validate"]
