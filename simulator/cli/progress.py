"""Progress of a sweep on stderr: the plan's announcement line, then a bar while the runs last.

The bar appears when the sweep has several sizes or is estimated to run longer than
``runner.estimate.SLOW_RUN_S``, and only on a terminal. It advances by each size's share of the
estimated work (packet-hops on the packet engine, one step per size on the flow engine); during a
packet-engine run it follows the packet-hops the engine reports, so one long run moves it too.
"""

from __future__ import annotations

from rich.console import Console

from simulator.reports.run_notice import duration, plan_line
from simulator.runner.estimate import SweepPlan
from simulator.units import format_bytes

MANY_SIZES = 4
"""A sweep of at least this many sizes gets a bar whatever its estimate."""


class SweepProgress:
    """``on_plan`` and ``on_row`` callbacks of ``runner.sweeps.sweep`` that report on ``console``."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.progress = None
        self.task = None
        self.weights: dict[int, int] = {}
        self.finished = 0
        """Estimated work of the sizes already done."""

    def __enter__(self) -> "SweepProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def plan(self, plan: SweepPlan) -> None:
        """Announce ``plan``; start the bar if the sweep is long enough to need one."""
        line = plan_line(plan)
        if line:
            self.console.print(line, highlight=False)
        if not self.console.is_terminal or not (plan.slow or len(plan.sizes) >= MANY_SIZES):
            return
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        packet = plan.engine == "packet"
        self.weights = dict(zip(plan.sizes, plan.packet_hops if packet else [1] * len(plan.sizes)))
        estimate = f"of {duration(plan.wall_s)}" if packet and plan.wall_s else ""
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.fields[done]}/{task.fields[sizes]} sizes"), TimeElapsedColumn(),
                                 TextColumn(estimate), console=self.console, transient=True)
        self.progress.__enter__()
        self.task = self.progress.add_task(f"{self.title} ({plan.engine} engine)", total=sum(self.weights.values()),
                                           done=0, sizes=len(plan.sizes))

    def hops(self, size: int, packet_hops: int) -> None:
        """Packet-hops so far of the run of ``size``: the bar moves within that size's share."""
        if self.progress is not None:
            share = self.weights.get(size, 1)
            self.progress.update(self.task, completed=self.finished + min(packet_hops, share))

    def row(self, row: dict) -> None:
        """One size finished."""
        if self.progress is not None:
            self.finished += self.weights.get(row["bytes"], 1)
            done = self.progress.tasks[0].fields["done"] + 1
            self.progress.update(self.task, completed=self.finished, done=done)


class ScenarioStatus:
    """``on_plan``, ``on_hops`` and ``on_row`` of ``runner.scenario_run.run_scenario`` on a rich
    status line: each sweep's announcement, then which system and workload runs and, during a
    packet-engine run, how far it is through its estimated packet-hops."""

    def __init__(self, console: Console, status) -> None:
        self.console = console
        self.status = status
        self.estimates: dict[tuple[str, str, int], int] = {}

    def plan(self, system: str, item: str, plan: SweepPlan) -> None:
        """The plan's line, prefixed with the system and workload it is about; its estimates kept."""
        line = plan_line(plan)
        if line:
            self.console.print(f"{system}, {item}: {line}", highlight=False)
        for size, hops in zip(plan.sizes, plan.packet_hops):
            self.estimates[(system, item, size)] = hops

    def hops(self, system: str, item: str, size: int, packet_hops: int) -> None:
        total = self.estimates.get((system, item, size))
        share = f" {min(99, round(100 * packet_hops / total))}% of ~{total:,} packet-hops" if total else ""
        self.status.update(f"{system}: {item}, {format_bytes(size)}{share}")

    def row(self, system: str, row: dict) -> None:
        self.status.update(f"{system}: {row['workload']}")
