"""Placement (issue 24, item 2): which GPUs a job runs on, by rack, tray or node count, a rank list or
a Slurm-style host list (simulator/topology/placement.py), and collectives over the uneven nodes it
may give."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.topology.builder import build_fabric
from simulator.topology.placement import Placement, expand_hosts, layout, parse_ranks, place

ROOT = Path(__file__).resolve().parent.parent
TOPO = ROOT / "topologies"


@pytest.fixture(scope="module")
def x8():
    return build_fabric(TOPO / "gb200_nvl72_x8_ib.yaml")


@pytest.fixture(scope="module")
def nvl72():
    return build_fabric(TOPO / "gb200_nvl72.yaml")


@pytest.fixture(scope="module")
def hopper():
    return build_fabric(TOPO / "hopper_ib_rack.yaml")


def _per_group(fabric, gpus) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in gpus:
        out[fabric.nodes[g].group] = out.get(fabric.nodes[g].group, 0) + 1
    return out


# --- the units ------------------------------------------------------------------------------------

def test_units_of_the_shipped_systems(x8, nvl72, hopper):
    lay = layout(x8)  # eight racks, one enclosure each: trays are blocks of 4 Blackwell GPUs
    assert [len(r) for r in lay.racks] == [72] * 8
    assert [len(t) for t in lay.trays] == [18] * 8 and lay.trays[1][2] == tuple(f"rack1.gpu{i}" for i in range(8, 12))
    assert list(lay.nodes) == [f"rack{i}" for i in range(8)]
    lay = layout(nvl72)  # one rack whose enclosures are its compute trays
    assert len(lay.racks) == 1 and len(lay.trays[0]) == 18
    assert lay.trays[0][5] == tuple(f"compute5.gpu{i}" for i in range(4))
    lay = layout(hopper)  # an HGX server is an NVLink domain: a rack of 8, one tray, one node
    assert [len(r) for r in lay.racks] == [8] * 9 and list(lay.nodes)[:2] == ["hgx0", "hgx1"]
    assert lay.trays[3] == (lay.racks[3],)


def test_default_is_the_first_gpus_in_rank_order(x8):
    assert place(x8, 128) == tuple(x8.gpus[:128])
    assert _per_group(x8, place(x8, 128)) == {"rack0": 72, "rack1": 56}
    assert place(x8) == tuple(x8.gpus)


def test_128_over_two_racks_per_rack_64_is_64_plus_64_trays_whole(x8):
    gpus = place(x8, 128, Placement(per_rack=64))
    assert gpus == tuple(f"rack{r}.gpu{i}" for r in (0, 1) for i in range(64))
    assert _per_group(x8, gpus) == {"rack0": 64, "rack1": 64}
    unit = layout(x8).unit_of["tray"]
    trays = {unit[g] for g in gpus}
    assert len(trays) == 32  # 16 whole trays of each rack, none cut
    assert all(sum(unit[g] == t for g in gpus) == 4 for t in trays)
    # the same GPUs named three other ways
    assert place(x8, None, Placement(hosts="rack[0-1]-tray[0-15]")) == gpus
    assert place(x8, 128, Placement(ranks="0-63,72-135")) == gpus
    assert place(x8, None, Placement(per_rack=64, hosts="rack[0-1]")) == gpus
    assert place(x8, None, Placement(ranks=tuple(range(64)) + tuple(range(72, 136)))) == gpus


def test_per_unit_counts(x8, nvl72, hopper):
    assert len(place(x8, None, Placement(per_rack=64))) == 512  # every rack
    assert _per_group(hopper, place(hopper, None, Placement(per_node=4))) == {f"hgx{i}": 4 for i in range(9)}
    # a count that is no multiple: the last node holds the remainder (an uneven job, allowed)
    assert _per_group(hopper, place(hopper, 10, Placement(per_node=4))) == {"hgx0": 4, "hgx1": 4, "hgx2": 2}
    two = place(nvl72, None, Placement(per_tray=2))
    assert len(two) == 36 and two[:4] == ("compute0.gpu0", "compute0.gpu1", "compute1.gpu0", "compute1.gpu1")
    assert place(x8, 8, Placement(per_tray=1)) == tuple(f"rack0.gpu{4 * t}" for t in range(8))


def test_host_lists_in_the_order_written(x8, nvl72, hopper):
    assert place(x8, None, Placement(hosts="rack3,rack1")) == tuple(
        [f"rack3.gpu{i}" for i in range(72)] + [f"rack1.gpu{i}" for i in range(72)])
    assert place(nvl72, None, Placement(hosts="compute[2,0]")) == tuple(
        [f"compute2.gpu{i}" for i in range(4)] + [f"compute0.gpu{i}" for i in range(4)])
    assert place(hopper, None, Placement(hosts="hgx[0-1]")) == tuple(hopper.gpus[:16])
    assert place(x8, None, Placement(hosts="rack0.gpu[5-6],rack2-tray0")) == (
        "rack0.gpu5", "rack0.gpu6", "rack2.gpu0", "rack2.gpu1", "rack2.gpu2", "rack2.gpu3")
    assert place(nvl72, None, Placement(hosts="rack0-tray17")) == tuple(f"compute17.gpu{i}" for i in range(4))


def test_host_list_syntax():
    assert expand_hosts("rack[0-1]-tray[0-2]") == ["rack0-tray0", "rack0-tray1", "rack0-tray2",
                                                   "rack1-tray0", "rack1-tray1", "rack1-tray2"]
    assert expand_hosts("node[08-10],x") == ["node08", "node09", "node10", "x"]
    assert expand_hosts("a[1,3-4]b") == ["a1b", "a3b", "a4b"]
    assert parse_ranks("0-2, 7 ,4-5") == (0, 1, 2, 7, 4, 5)


def test_placement_is_cached_and_fast(tmp_path, x8):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale_out import synthetic_topology

    fabric = build_fabric(synthetic_topology(9216, tmp_path))
    start = time.perf_counter()
    gpus = place(fabric, 9000, Placement(per_rack=71))
    first = time.perf_counter() - start
    assert len(gpus) == 9000 and _per_group(fabric, gpus)["rack126"] == 9000 - 126 * 71
    start = time.perf_counter()
    assert place(fabric, 9000, Placement(per_rack=71)) is gpus
    assert time.perf_counter() - start < 0.01
    assert first < 2.0, first
    start = time.perf_counter()
    assert len(place(fabric, None, Placement(hosts="rack[0-127]-tray[0-17]"))) == 9216
    assert time.perf_counter() - start < 2.0


# --- every error ------------------------------------------------------------------------------------

X8 = "GB200 NVL72 x8 over InfiniBand"
KINDS = (f"{X8} has racks rack0..rack7, trays rack<R>-tray<T> (tray0..tray17), nodes rack0..rack7 and GPU "
         "names such as rack0.gpu0")
HELP = "write a host list like rack[0-1]-tray[0-15], hgx[0-3] or rack0,rack2"

ERRORS = [
    (700, Placement(), f"--gpus: 700 GPUs asked, but {X8} has 576; give at most 576"),
    (0, Placement(per_rack=4), "--gpus: must be at least 1, not 0"),
    (None, Placement(per_rack=0), "--per-rack: must be at least 1, not 0"),
    (None, Placement(per_rack=80), f"--per-rack: 80 GPUs per rack, but the largest rack of {X8} has 72; "
                                   "give at most 72"),
    (None, Placement(per_node=100, hosts="rack0-tray[0-1]"),
     "--per-node: 100 GPUs per node, but the largest node of --hosts 'rack0-tray[0-1]' has 8; give at most 8"),
    (520, Placement(per_rack=64), f"--gpus: 520 GPUs at 64 per rack need 9 racks, but there are 8 of {X8}; "
                                  "give at most 512 GPUs, or more per rack"),
    (None, Placement(per_tray=4, hosts="rack0-tray0,rack0.gpu[4-5]"),
     "--per-tray: 4 GPUs per tray, but rack0-tray1 of --hosts 'rack0-tray0,rack0.gpu[4-5]' has 2; give at most "
     "2 per tray, or pick trays with 4"),
    (None, Placement(per_rack=4, per_node=2), "--per-node: --per-rack and --per-node are exclusive; give one count "
                                              "per rack, tray or node"),
    (None, Placement(ranks="1", hosts="rack0"), "--hosts: cannot be combined with --ranks, which lists the GPUs "
                                                "itself; give one"),
    (None, Placement(ranks="1", per_tray=2), "--per-tray: cannot be combined with --ranks, which lists the GPUs "
                                             "itself; give one"),
    (None, Placement(ranks="0-63,72-"), "--ranks: '0-63,72-' is not a rank list ('72-'); write ranks and ranges "
                                        "like 0-63,72-135"),
    (None, Placement(ranks="9-3"), "--ranks: range '9-3' runs backwards; write it low-high (3-9)"),
    (None, Placement(ranks="600"), f"--ranks: rank 600 does not exist: {X8} has ranks 0..575"),
    (None, Placement(ranks="0-3,2"), "--ranks: rank 2 is listed twice; list each rank once"),
    (None, Placement(ranks=()), "--ranks: lists no rank; write ranks and ranges like 0-63,72-135"),
    (100, Placement(ranks="0-63"), "--gpus: 100 contradicts --ranks, which lists 64 GPUs; give 64 or leave it out"),
    (64, Placement(hosts="rack[0-1]"), "--gpus: 64 contradicts --hosts 'rack[0-1]', which gives 144 GPUs; give "
                                       "144, other hosts, or a count per rack, tray or node"),
    (None, Placement(hosts="rakc0"), f"--hosts: unknown host 'rakc0'; {KINDS}; did you mean 'rack0'?"),
    (None, Placement(hosts="rack0.gpux"), f"--hosts: unknown host 'rack0.gpux'; {KINDS}; did you mean 'rack0.gpu9'?"),
    (None, Placement(hosts="network"), f"--hosts: network holds no GPU; {KINDS}"),
    (None, Placement(hosts="rack[0-1"), f"--hosts: 'rack[0-1' has an unclosed '['; {HELP}"),
    (None, Placement(hosts="rack0-1]"), f"--hosts: 'rack0-1]' has a ']' without its '['; {HELP}"),
    (None, Placement(hosts="rack[[0]]"), f"--hosts: 'rack[[0]]' nests '[' inside '['; {HELP}"),
    (None, Placement(hosts="rack0,,rack1"), f"--hosts: 'rack0,,rack1' has an empty host name; {HELP}"),
    (None, Placement(hosts="rack[a-b]"), "--hosts: bad range 'a-b' in 'rack[a-b]'; write numbers and ranges like "
                                         "[0-7] or [0,2,4-5]"),
    (None, Placement(hosts="rack[5-3]"), "--hosts: range '5-3' in 'rack[5-3]' runs backwards; write it low-high "
                                         "(3-5)"),
    (None, Placement(hosts="r[0-999]x[0-9999]"), "--hosts: 'r[0-999]x[0-9999]' names more than 1,000,000 hosts; "
                                                 "name fewer"),
    (None, Placement(hosts="rack0,rack0-tray1"), "--hosts: rack0-tray1 is given twice (also in rack0); name each "
                                                 "GPU's host once"),
    (None, Placement(hosts="rack1,rack1"), "--hosts: rack1 is given twice; name each GPU's host once"),
]


@pytest.mark.parametrize("count, request_, message", ERRORS, ids=[e[2].split(":")[0] + str(i)
                                                                 for i, e in enumerate(ERRORS)])
def test_every_error_is_one_line_naming_the_flag(x8, count, request_, message):
    with pytest.raises(InputError) as err:
        place(x8, count, request_)
    assert str(err.value) == message
    assert "\n" not in str(err.value)


def test_errors_name_scenario_fields(x8):
    with pytest.raises(InputError) as err:
        place(x8, 8, Placement(per_rack=80), names={"gpus": "tp", "per_rack": "placement.per_rack"})
    assert str(err.value).startswith("placement.per_rack: 80 GPUs per rack")


# --- collectives over uneven nodes and non-prefix GPU lists -------------------------------------------

def _run(fabric, gpus, algo="ring", nbytes=1 << 30, engine="flow"):
    from simulator.runner.sweeps import SweepSpec, build_workload, measure

    spec = SweepSpec(op="all_reduce", gpus=len(gpus), sizes=(nbytes,), algo=algo, protocol="Simple", engine=engine,
                     placement=Placement(ranks=tuple(fabric.nodes[g].rank for g in gpus)))
    workload = build_workload(fabric, spec, nbytes)
    return workload, measure(fabric, workload, spec)


def test_uneven_nodes_get_rail_aware_rings_and_trees(x8):
    from simulator.workloads.collectives.rails import rail_channels, ring_orders, tree_parents

    gpus = tuple(x8.gpus[:128])  # 72 + 56
    rings = ring_orders(x8, gpus, rail_channels(x8, gpus, 32))
    assert len(rings) == 64  # NCCL's 32 distinct channels (MAXCHANNELS / 2), each run twice
    exits = set()
    for ring in rings:
        assert sorted(ring) == sorted(gpus)  # every channel's ring visits every GPU once
        cross = [(a, b) for a, b in zip(ring, ring[1:] + ring[:1]) if x8.nodes[a].group != x8.nodes[b].group]
        assert len(cross) == 2  # leaves each node once
        exits.update(a for a, _ in cross)
    assert len(exits) == 2 * 32  # 32 distinct exits (NICs) per node, not one rail
    for channel in (0, 1, 60):
        for parent in tree_parents(x8, gpus, channel):
            assert len(parent) == 127 and set(parent) | set(parent.values()) == set(gpus)


@pytest.mark.parametrize("algo", ["ring", "tree"])
def test_uneven_nodes_run(x8, hopper, algo):
    _, row = _run(x8, x8.gpus[:128], algo)
    assert row["time_us"] > 0 and row["busbw_GBps"] > 300  # rail-aware: several times the one-rail flat ring
    uneven = place(hopper, 10, Placement(per_node=4))  # 4 + 4 + 2 GPUs
    workload, row = _run(hopper, uneven, algo, nbytes=1 << 20, engine="packet")
    assert row["engine"] == "packet" and row["time_us"] > 0
    assert {t.src for t in workload.transfers} | {t.dst for t in workload.transfers} >= set(uneven)


def test_hierarchical_says_why_not_on_uneven_nodes(x8):
    from simulator.workloads.collectives import ALGORITHMS

    assert ALGORITHMS["hierarchical"].applicable(x8, tuple(x8.gpus[:128])) == \
        "nodes hold different numbers of the chosen GPUs"
    _, row = _run(x8, x8.gpus[:128], "auto")
    assert row["algo"] in ("ring", "tree")


def test_tuner_samples_a_node_only_where_nodes_are_alike(x8):
    from simulator.workloads.collectives.tuner import sample_node

    assert sample_node(x8, place(x8, 128, Placement(per_rack=64))) == "rack0"
    assert sample_node(x8, tuple(x8.gpus[:128])) is None  # 72 + 56
    other = place(x8, None, Placement(ranks="0-63,80-143"))  # rack 1's GPUs 8..71: not rack 0's local GPUs
    assert sample_node(x8, other) is None


def test_non_prefix_gpus_run_every_algorithm(nvl72):
    from simulator.workloads.collectives import build_collective

    gpus = place(nvl72, None, Placement(hosts="compute[3,7,11]"))
    for algo in ("ring", "tree", "direct", "nvls"):
        w = build_collective(nvl72, gpus, "all_reduce", 1 << 24, algo=algo, protocol="Simple")
        assert {t.src for t in w.transfers if nvl72.nodes[t.src].kind == "gpu"} == set(gpus)


def test_per_rack_64_is_not_slower_than_72_plus_56(x8):
    """128 GPUs on two NVL72 racks, ring all_reduce of 1 GiB, Simple, flow engine: the time of the call
    (``time_us``) with --per-rack 64 (64 + 64, the nodes alike) is at most that of the first 128 GPUs
    (72 + 56). Both are rail-aware; before uneven nodes were handled the 72 + 56 ring fell back to rank
    order over one rail and took 22.7 ms against 4.3 ms."""
    _, even = _run(x8, place(x8, 128, Placement(per_rack=64)))
    _, uneven = _run(x8, place(x8, 128))
    assert even["time_us"] <= uneven["time_us"]
    assert uneven["time_us"] < 1.5 * even["time_us"]


# --- commands, scenarios, sweeps --------------------------------------------------------------------

_register()
runner = CliRunner()


def test_bench_flags(tmp_path):
    out = tmp_path / "b.json"
    result = runner.invoke(app, ["bench", str(TOPO / "gb200_nvl72_x8_ib.yaml"), "--gpus", "128", "--per-rack", "64",
                                 "--sizes", "64M", "--engine", "flow", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["gpus"] == 128 and data["nodes"] == {"rack0": 64, "rack1": 64}
    assert data["placement"] == "64 per rack"
    result = runner.invoke(app, ["bench", str(TOPO / "gb200_nvl72_x8_ib.yaml"), "--hosts", "rack[0-1]-tray[0-1]",
                                 "--sizes", "1M", "--engine", "flow", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["nodes"] == {"rack0": 8, "rack1": 8}


@pytest.mark.parametrize("args, message", [
    (["--per-rack", "80"], f"--per-rack: 80 GPUs per rack, but the largest rack of {X8} has 72; give at most 72"),
    (["--ranks", "0-9", "--per-node", "2"], "--per-node: cannot be combined with --ranks, which lists the GPUs "
                                            "itself; give one"),
    (["--hosts", "rakc1"], f"--hosts: unknown host 'rakc1'; {KINDS}; did you mean 'rack1'?"),
])
def test_bench_placement_errors_exit_2(args, message):
    result = runner.invoke(app, ["bench", str(TOPO / "gb200_nvl72_x8_ib.yaml"), *args, "--sizes", "1M"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == f"fabricsim: {message}"


def test_compare_and_api_take_a_placement():
    from simulator import bench, compare

    result = bench(TOPO / "gb200_nvl72_x8_ib.yaml", sizes="64M", gpus=128, engine="flow",
                   placement=Placement(per_rack=64))
    assert result.gpus == 128
    cmp = compare([TOPO / "gb200_nvl72_x8_ib.yaml", TOPO / "gb200_nvl72_x8_ib_2to1.yaml"], sizes="64M", gpus=128,
                  engine="flow", placement=Placement(per_rack=64))
    assert all(row["gpus"] == 128 for system in cmp.systems for row in system.rows)
    result = runner.invoke(app, ["compare", str(TOPO / "gb200_nvl72_x8_ib.yaml"), str(TOPO / "hopper_ib_rack.yaml"),
                                 "--op", "all_reduce", "--sizes", "1M", "--per-rack", "64"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "fabricsim: --per-rack: 64 GPUs per rack, but the largest rack of Hopper IB rack (9 x HGX H100) has 8; "
        "give at most 8")


def test_validate_nccl_tests_placement():
    log = str(ROOT / "tests" / "data" / "nccl_tests" / "rank_list_cut.log")  # 16 ranks
    topo = str(TOPO / "gb200_nvl72_x8_ib.yaml")
    result = runner.invoke(app, ["validate", "--nccl-tests", log, "--topology", topo, "--per-rack", "8",
                                 "--engine", "flow", "--json"])
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    assert data["gpu_placement"] == "8 per rack" and data["logs"][0]["rows"][0]["ranks"] == 16
    result = runner.invoke(app, ["validate", "--nccl-tests", log, "--topology", topo, "--ranks", "0-9"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "fabricsim: --ranks: the log ran on 16 ranks (busbw / algbw of the rows (16 ranks, line 21)), but it lists "
        "10 GPUs; place 16")
    result = runner.invoke(app, ["validate", "--per-node", "2"])
    assert result.exit_code == 2 and "--per-node: only with --nccl-tests LOG" in result.output


SCENARIO = """name: placed
topologies: [{topo}]
engine: flow
workloads:
  - kind: collective
    name: ar
    op: all_reduce
    gpus: 128
    sizes: 64M
    placement: {placement}
  - kind: decode
    name: decode
    model: llama-3-8b
    context: 1024
    tp: 8
    placement: {{per_node: 1}}
"""


def test_scenario_placement_runs(tmp_path):
    from simulator.runner.scenario_run import run_scenario
    from simulator.workloads.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(topo=TOPO / "gb200_nvl72_x8_ib.yaml", placement="{per_rack: 64}"))
    model, topologies = load_scenario(path)
    systems = run_scenario(model, topologies)
    rows = systems[0].rows
    assert rows[0]["gpus"] == 128 and rows[0]["time_us"] > 0
    assert rows[1]["time_us"] > 0  # tp 8 over one GPU of each of 8 racks: its all-reduces cross the network


@pytest.mark.parametrize("placement, line, message", [
    ("{per_rack: 80}", 10, "placement.per_rack: 80 GPUs per rack, but the largest rack of GB200 NVL72 x8 over "
                           "InfiniBand has 72; give at most 72"),
    ("{ranks: 0-9}", 8, "gpus: 128 contradicts placement.ranks, which lists 10 GPUs; give 10 or leave it out"),
    ("{hosts: 'rack[0-1'}", 10, "placement.hosts: 'rack[0-1' has an unclosed '['; write a host list like "
                                "rack[0-1]-tray[0-15], hgx[0-3] or rack0,rack2"),
])
def test_scenario_placement_errors_at_file_line(tmp_path, placement, line, message):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(topo=TOPO / "gb200_nvl72_x8_ib.yaml", placement=placement))
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last == f"fabricsim: {path}:{line}: workloads[0].{message}", last


def test_scenario_schema_rejects_a_bad_placement_key(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(topo=TOPO / "gb200_nvl72_x8_ib.yaml", placement="{per_rak: 64}"))
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2 and "per_rak" in result.output


def test_sweep_axis_over_placements(tmp_path):
    from simulator.runner.sweep_file import load_sweep
    from simulator.runner.sweep_points import execute

    (tmp_path / "s.yaml").write_text(
        f"name: s\ntopologies: [{TOPO / 'gb200_nvl72_x8_ib.yaml'}]\nengine: flow\nworkloads:\n"
        "  - {kind: collective, name: ar, op: all_reduce, gpus: 128, sizes: 1G, algo: ring, protocol: Simple}\n")
    (tmp_path / "sweep.yaml").write_text(
        "name: placement\nbase:\n  scenario: s.yaml\naxes:\n"
        "  scenario.workloads.ar.placement: [null, {per_rack: 64}, {hosts: 'rack[0-1]-tray[0-15]'}]\n")
    sweep = load_sweep(tmp_path / "sweep.yaml")
    times = [execute(point.payload)["rows"][0]["time_us"] for point in sweep.points]
    assert times[1] == times[2] <= times[0]
