"""``fabricsim compare A.yaml B.yaml ...``: the same workload on several systems, side by side."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from simulator.cli.common import (JSON_HELP, EngineOpt, FaultOpt, HostsOpt, LaunchOpt, OversubscribeOpt, PartsOpt,
                                  PerNodeOpt, PerRackOpt, PerTrayOpt, RanksOpt, placement_flags)


def register(app: typer.Typer) -> None:
    @app.command()
    def compare(
        topologies: Annotated[list[str], typer.Argument(help="Two or more topology YAML files or shipped names (hgx_h100).")],
        op: Annotated[Optional[str], typer.Option(
            help="Collective or copy to compare at --sizes (default all_reduce, unless --scenario).")] = None,
        gpus: Annotated[Optional[int], typer.Option(min=1, help="N GPUs of each system: the first N, or where the "
                                                          "placement flags put them (default: all).")] = None,
        per_rack: PerRackOpt = None,
        per_tray: PerTrayOpt = None,
        per_node: PerNodeOpt = None,
        ranks: RanksOpt = None,
        hosts: HostsOpt = None,
        sizes: Annotated[str, typer.Option(help="1K:8G (doubling), a list 1M,64M, or one size.")] = "1M,64M,1G",
        scenario: Annotated[Optional[str], typer.Option(help="Run this scenario's workloads instead of --op.")] = None,
        engine: EngineOpt = "auto",
        json_path: Annotated[Optional[str], typer.Option("--json", help="Write the comparison as JSON here" + JSON_HELP)] = None,
        plot: Annotated[Optional[str], typer.Option(help="Write busbw vs size (.png, or .svg/.pdf for vector) here.")] = None,
        power_plot: Annotated[Optional[str], typer.Option(help="Write the power breakdown (.png, or .svg/.pdf for vector) here.")] = None,
        fault: FaultOpt = None,
        parts: PartsOpt = None,
        launch: LaunchOpt = None,
        allow_oversubscribe: OversubscribeOpt = False,
    ) -> None:
        """Compare systems: time, busbw, p99 packet latency (packet engine), energy per op, static power, with
        a ratio column.
        With --fault every system runs healthy and degraded, side by side."""
        from simulator.cli.run import render
        from simulator.runner.scenarios import ScenarioRequest

        render(ScenarioRequest(scenario=scenario, topologies=tuple(topologies), op=op, sizes=sizes, gpus=gpus,
                               placement=placement_flags(per_rack, per_tray, per_node, ranks, hosts), engine=engine,
                               faults=tuple(fault or ()), parts=tuple(parts or ()), launch=launch,
                               allow_oversubscribe=allow_oversubscribe, command="compare"),
               json_path=json_path, plot=plot, power_plot=power_plot)
