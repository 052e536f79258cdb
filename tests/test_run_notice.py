"""Long runs announce themselves: engine choice and why, packet-hops and wall-time estimate, progress."""

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.cli.progress import SweepProgress
from simulator.engine.dispatch import AUTO_PACKET_HOP_BUDGET
from simulator.engine.packet import PacketConfig
from simulator.reports.run_notice import duration, plan_line
from simulator.runner.estimate import PACKET_HOPS_PER_S, SweepPlan, plan_sweep
from simulator.topology.synthetic import star
from simulator.workloads.collectives import build_collective

ROOT = Path(__file__).resolve().parent.parent
_register()
runner = CliRunner()


def test_packet_hops_of_a_ring_all_reduce_on_a_star_are_the_closed_form():
    # every byte of a ring all_reduce crosses 2 links (GPU -> switch -> GPU); each GPU sends
    # 2(n-1)/n S, so n GPUs send 2(n-1) S: 2 x 2(n-1) S / P packet-hops
    n, S, P = 4, 1 << 22, 4096
    f = star(n, latency_s=0.0)
    w = build_collective(f, f.gpus, "all_reduce", S, "ring", "ideal", channels=2)
    plan = plan_sweep(f, "packet", {S: w}, lambda _: PacketConfig(packet_bytes=P))
    assert plan.total_hops == 2 * 2 * (n - 1) * S // P
    assert plan.wall_s == pytest.approx(plan.total_hops / PACKET_HOPS_PER_S)


def test_auto_picks_by_the_largest_size_against_the_budget():
    f = star(4, latency_s=0.0)
    small, large = 1 << 16, 1 << 30
    works = {s: build_collective(f, f.gpus, "all_reduce", s, "ring", "ideal") for s in (small, large)}
    packet = lambda _: PacketConfig(packet_bytes=4096)  # noqa: E731
    assert plan_sweep(f, "auto", {small: works[small]}, packet).engine == "packet"
    plan = plan_sweep(f, "auto", works, packet)
    assert plan.engine == "flow" and plan.weighed_hops > AUTO_PACKET_HOP_BUDGET
    assert plan.wall_s is None and not plan.slow
    line = plan_line(plan)
    assert line.startswith("auto: flow engine") and f"{plan.weighed_hops:,} packet-hops" in line
    assert f"over the {AUTO_PACKET_HOP_BUDGET:,} budget" in line
    assert plan_line(SweepPlan("flow", "flow", (4096,), (small,), (10,))) is None  # nothing to say


def test_durations_read_as_people_say_them():
    assert [duration(s) for s in (0.2, 7, 300, 4 * 3600)] == ["<1 s", "~7 s", "~5 min", "~4.0 h"]


def test_bench_prints_one_line_on_stderr_before_packet_runs():
    teaching = str(ROOT / "topologies" / "teaching.yaml")
    result = runner.invoke(app, ["bench", teaching, "--sizes", "1M", "--engine", "packet", "--text"])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if "packet-hops" in x]
    assert line.startswith("packet engine: ") and "packet-hops/s" in line
    result = runner.invoke(app, ["bench", teaching, "--sizes", "1M", "--engine", "flow", "--text"])
    assert result.exit_code == 0 and "packet-hops" not in result.stderr
    result = runner.invoke(app, ["bench", "hgx_h100", "--sizes", "1G", "--text"])
    assert result.exit_code == 0 and "auto: flow engine (largest size" in result.stderr
    assert "flow" in result.stdout.splitlines()[-2]  # the row says which engine ran it


def test_progress_bar_on_a_terminal_advances_by_estimated_work():
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    plan = SweepPlan("packet", "packet", (2048, 2048), (1, 2), (10 * int(PACKET_HOPS_PER_S), 30 * int(PACKET_HOPS_PER_S)))
    assert plan.slow
    with SweepProgress(console, "all_reduce on 8 GPUs") as progress:
        progress.plan(plan)
        (task,) = progress.progress.tasks
        assert task.total == plan.total_hops
        progress.row({"bytes": 1})
        assert task.completed == plan.packet_hops[0] and task.fields["done"] == 1
    quiet = SweepProgress(Console(file=io.StringIO(), force_terminal=True), "x")
    quiet.plan(SweepPlan("packet", "packet", (2048,), (1,), (10,)))  # well under 2 s: no bar
    assert quiet.progress is None


def test_run_announces_each_size_sweep_with_system_and_workload(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: t\ntopologies: [{ROOT / 'topologies' / 'teaching.yaml'}]\nengine: auto\n"
                        "workloads:\n  - {kind: collective, name: ar, op: all_reduce, sizes: 1M}\n")
    result = runner.invoke(app, ["run", str(scenario)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if "packet-hops" in x]
    assert line.startswith("teaching, ar: auto: packet engine (largest size ")


def test_announcements_wrap_at_words_in_80_columns(tmp_path):
    """The notice is wrapped by words to the terminal, never cut."""
    result = runner.invoke(app, ["bench", str(ROOT / "topologies" / "hgx_h200.yaml"), "--gpus", "2",
                                 "--sizes", "1G", "--engine", "auto"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    text = " ".join(x.strip() for x in lines)
    assert "packet-hops, over the 300,000 budget" in text
    assert max(len(x) for x in lines) <= 80


def test_packet_runs_report_their_hops_without_changing_the_run():
    """``progress`` sees a packet-engine run now and then (a bar for one long run) and leaves it
    exactly as it was: same times, same event count."""
    from simulator.engine.dispatch import simulate
    from simulator.runner.sweeps import SweepSpec, build_workload, _packet_choice
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(ROOT / "topologies" / "hgx_h100.yaml")
    spec = SweepSpec(op="all_reduce", gpus=8, sizes=(4 << 20,), engine="packet")
    workload = build_workload(fabric, spec, 4 << 20)
    packet = _packet_choice(fabric, spec, workload)[0]
    seen: list[int] = []
    plain = simulate(fabric, workload, engine="packet", packet=packet)
    watched = simulate(fabric, workload, engine="packet", packet=packet, progress=seen.append)
    assert watched.makespan_s == plain.makespan_s and watched.events == plain.events
    assert list(watched.finish_s) == list(plain.finish_s)
    assert len(seen) >= 5 and seen == sorted(seen) and seen[0] < seen[-1]


def test_scenario_status_follows_a_packet_run_in_percent(tmp_path):
    """run/compare: the status line names system, workload and size, and how far a packet-engine
    run is through its estimated packet-hops."""
    from simulator.cli.progress import ScenarioStatus
    from simulator.runner.scenario_run import run_scenario
    from simulator.workloads.scenario import load_scenario

    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: t\ntopologies: [{ROOT / 'topologies' / 'hgx_h100.yaml'}]\nengine: packet\n"
                        "workloads:\n  - {kind: collective, name: ar, op: all_reduce, gpus: 8, sizes: 4M}\n")

    class Status:
        def __init__(self):
            self.lines = []

        def update(self, text):
            self.lines.append(text)

    status = Status()
    shown = ScenarioStatus(Console(file=io.StringIO()), status)
    model, topologies = load_scenario(scenario)
    run_scenario(model, topologies, on_plan=shown.plan, on_hops=shown.hops, on_row=shown.row)
    progress = [x for x in status.lines if "% of ~" in x]
    assert progress and all(x.startswith("HGX H100: ar, 4 MiB") for x in progress)
    percents = [int(x.split("% of")[0].rsplit(" ", 1)[1]) for x in progress]
    assert percents == sorted(percents) and percents[-1] > 50


def test_auto_weighs_the_largest_size_in_fine_packets_though_it_would_run_in_trains():
    """HGX H100 NVLS all_reduce: trains hold every size from 16 MiB up near 43k packet-hops, so the
    largest size would no longer bound the others; auto counts its fine packets (2.8 M at 1 GiB,
    8 KiB) and picks the flow engine, as before trains. Asked for, the packet engine runs trains."""
    from simulator.runner.sweeps import SweepSpec, build_workload, _packet_choice
    from simulator.topology.builder import build_fabric

    fabric = build_fabric(ROOT / "topologies" / "hgx_h100.yaml")
    sizes = (4 << 20, 1 << 30)
    spec = SweepSpec(op="all_reduce", gpus=8, sizes=sizes)
    works = {s: build_workload(fabric, spec, s) for s in sizes}
    plan = plan_sweep(fabric, "auto", works, lambda w: _packet_choice(fabric, spec, w)[0])
    trains, small = plan.packet_hops[1], plan.packet_hops[0]
    assert trains < small < AUTO_PACKET_HOP_BUDGET < plan.weighed_hops
    assert plan.engine == "flow" and plan.units[1] > 8192
