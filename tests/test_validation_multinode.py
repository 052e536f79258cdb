"""Multi-node validation (issue 24, item 4): published runs beyond one NVLink domain.

Runs whose placement a ``validation/published.yaml`` entry can say (the first N ranks: whole HGX
servers) are entries there; runs placed otherwise (64 + 64 GPUs of two NVL72 racks, one or two trays
in each of three racks) or run with settings an entry cannot give (CollNetChain with SHARP on 12 HGX
H100 servers) are logs in ``validation/nccl-tests/multinode/``, checked here with the placement and
settings their sources state. Nothing is fitted to them: the asserts hold the logs to
their sources and to what the issue asks of real multi-node logs (they load, no row is dropped, the
median busbw error at >= 256 MiB within 15%), and hold the runs fabricsim already models (rings
across racks, NVLSTree at large sizes) within 10-11%. Where fabricsim is known to miss (NCCL's tree
between NVLink domains; the NVL72 NVLS fill below 8 GiB) the log's header and the report say by how
much and why.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.runner.validation import load_published
from simulator.topology.builder import build_fabric
from simulator.workloads.collectives.ops import busbw_factor
from simulator.workloads.traces.nccl_tests_log import parse_log

ROOT = Path(__file__).resolve().parent.parent
MULTINODE = ROOT / "validation" / "nccl-tests" / "multinode"
LOGS = sorted(MULTINODE.glob("*.log"))
TWO_RACKS = MULTINODE / "gb200_nvl72_x2_all_reduce_128gpu.log"
_register()
runner = CliRunner()


def _validate(log: Path, *flags: str, topology: str = "gb200_nvl72_x8_ib") -> dict:
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology", topology,
                                 "--engine", "flow", "--json", "--threshold", "1000", "--strict", *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_multinode_log_names_its_source_and_obeys_nccl_tests_definitions():
    assert {p.name for p in LOGS} == {"gb200_nvl72_x2_all_reduce_128gpu.log",
                                      "gb200_nvl72_3racks_all_reduce_12gpu.log",
                                      "gb200_nvl72_3racks_all_reduce_24gpu.log",
                                      "hgx_h100_x12_collnetchain_all_reduce_96gpu.log"}
    for path in LOGS:
        head = path.read_text().split("\n$ ")[0].split("\n#   ")[0]
        # a copy of published rows, or rows written from published figures: the first line says which
        assert head.startswith(("# Published rows of a real run, copied: ",
                                "# written by fabricsim developers from published figures (")), path.name
        assert "# Check: fabricsim validate --nccl-tests THIS --topology " in head, path.name
        for run in parse_log(path, op="all_reduce", gpus=int(path.stem.split("_")[-1].removesuffix("gpu")),
                             strict=True):
            factor = busbw_factor(run.op, run.ranks)
            for row in run.rows:
                for timing in (row.out_of_place, row.in_place):
                    # nccl-tests prints busbw = algbw x factor from unrounded values; time has 5 digits
                    assert timing.busbw_GBps == pytest.approx(timing.algbw_GBps * factor, rel=1e-4, abs=0.006)
                    assert timing.algbw_GBps == pytest.approx(row.bytes / timing.time_us / 1e3, rel=1e-4, abs=0.02)


def test_two_racks_128_gpus_64_per_rack():
    """coreweave/nccl-tests README, 2 racks (NCCL 2.26.2): 128 ranks, 16 trays of each rack. NCCL's
    NVLSTree, as fabricsim's tuner picks it: within 11% at 8-16 GiB; below, the known gap of the
    NVL72 NVLS fill (the log's header), an overestimate that shrinks with every doubling."""
    data = _validate(TWO_RACKS, "--op", "all_reduce", "--gpus", "128", "--per-rack", "64",
                     "--env", "NCCL_MNNVL_ENABLE=1")
    (log,) = data["logs"]
    assert log["row_counts"]["used"] == 6 and log["row_counts"]["skipped"] == 0
    assert [r["measured_busbw_GBps"] for r in log["rows"]] == [493.94, 596.10, 680.30, 743.09, 793.06, 810.41]
    assert [r["bytes"] for r in log["rows"]] == [512 << 20 << i for i in range(6)]
    assert {r["algo"].split("/")[0] for r in log["rows"]} == {"nvls_tree"}
    errors = [r["busbw_error_pct"] for r in log["rows"]]
    assert all(0 < e <= 11.0 for e in errors[-2:]), errors
    assert all(a > b > 0 for a, b in zip(errors, errors[1:])), errors


def test_the_two_rack_placement_is_the_runs():
    """--per-rack 64 takes 16 whole trays of racks 0 and 1, not the first 128 ranks (72 + 56)."""
    from simulator.runner.sweeps import select_gpus
    from simulator.topology.placement import Placement

    fabric = build_fabric(ROOT / "topologies" / "gb200_nvl72_x8_ib.yaml")
    gpus = select_gpus(fabric, 128, Placement(per_rack=64))
    racks = [g.split(".")[0] for g in gpus]
    assert {r: racks.count(r) for r in set(racks)} == {"rack0": 64, "rack1": 64}


@pytest.mark.parametrize("gpus,per_rack,ring_busbw", [(12, 4, 196.72), (24, 8, 393.66)])
def test_three_racks_ring_as_nccl_chose_it(gpus, per_rack, ring_busbw):
    """NVIDIA/nccl issue 1801 (NCCL 2.27.3, NVLS off): NCCL's ring over one or two trays in each of
    three racks is bound by one 400G NIC per GPU; fabricsim's ring is within 10% of it. Run 2 (tree,
    forced) loads and is simulated as a tree; its known gap is in the log's header and the report."""
    log = MULTINODE / f"gb200_nvl72_3racks_all_reduce_{gpus}gpu.log"
    data = _validate(log, "--gpus", str(gpus), "--per-rack", str(per_rack))
    ring, tree = data["logs"]
    assert (ring["rows"][0]["measured_busbw_GBps"], ring["rows"][0]["algo"]) == (ring_busbw, "ring")
    assert abs(ring["rows"][0]["busbw_error_pct"]) <= 10.0
    assert tree["rows"][0]["algo"] == "tree" and tree["row_counts"]["skipped"] == 0


def test_published_multinode_entry_runs_on_whole_servers():
    """The 16-GPU entries' first 16 ranks are two whole servers (HGX H100 of hopper_ib_rack, DGX A100
    of dgx_a100_hdr_su), as the runs' two 8-GPU workers were."""
    from simulator.runner.sweeps import select_gpus

    entries = [e for e in load_published(ROOT / "validation" / "published.yaml")
               if e.kind == "collective" and e.gpus == 16]
    assert sorted((Path(e.topology).stem, e.op) for e in entries) == [
        ("dgx_a100_hdr_su", "all_reduce"), ("hopper_ib_rack", "all_reduce"), ("hopper_ib_rack", "sendrecv")]
    for entry in entries:
        gpus = select_gpus(build_fabric(ROOT / entry.topology), entry.gpus)
        servers = ["dgx0", "dgx1"] if "a100" in entry.topology else ["hgx0", "hgx1"]
        assert sorted({g.split(".")[0] for g in gpus}) == servers


def test_twelve_hgx_h100_nodes_collnet_chain_with_sharp():
    """coreweave/nccl-tests README (fb4787c, NCCL 2.18.1, NCCL_ALGO=COLLNETCHAIN with SHARP): 96 ranks
    by the rows' bus factor, 12 HGX H100 servers. fabricsim's CollNetChain is bound by the chains'
    NVLink (2S each way per GPU) as the run is: within 10% at every size, the issue's median within 5%."""
    log = MULTINODE / "hgx_h100_x12_collnetchain_all_reduce_96gpu.log"
    data = _validate(log, "--env", "NCCL_ALGO=CollNetChain", "--env", "NCCL_COLLNET_ENABLE=1",
                     topology="hopper_ib_su")
    (run,) = data["logs"]
    assert run["ranks_in_log"] == 96 and run["row_counts"] == {"used": 5, "skipped": 0, "zero_bytes": 0,
                                                                "unusable": 0}
    assert {r["algo"].split("/")[0] for r in run["rows"]} == {"collnet_chain"}
    errors = [r["busbw_error_pct"] for r in run["rows"]]
    assert all(abs(e) <= 10.0 for e in errors) and statistics.median(abs(e) for e in errors) <= 5.0, errors
    assert any(note.startswith("NCCL_COLLNET_ENABLE=1") and "CollNetChain" in note for note in run["settings_from_log"])


def _log_with_ranks(tmp_path, hosts: list[tuple[str, int]], busbw: float = 40.0) -> Path:
    """An all_reduce log (written here, not a real run) whose '#  Rank' lines put rank r on
    ``hosts[r]`` = (host, device)."""
    lines = ["# written by fabricsim's tests: rank lines of a multi-node run, not a measurement",
             "# Collective test starting: all_reduce_perf", "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
             "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {host:>10} device {dev:2d} [0x{dev:02x}] NVIDIA H100 80GB HBM3"
              for r, (host, dev) in enumerate(hosts)]
    n = len(hosts)
    algbw = busbw / (2 * (n - 1) / n)
    lines += ["#", "#                                                              out-of-place                       "
              "in-place", "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
              "time   algbw   busbw #wrong", "#        (B)    (elements)                               (us)  (GB/s)  "
              "(GB/s)            (us)  (GB/s)  (GB/s)",
              f"  1073741824     268435456     float     sum      -1  {1073741824 / algbw / 1e3:7.1f}  {algbw:6.2f}  "
              f"{busbw:6.2f}      0  {1073741824 / algbw / 1e3:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0",
              "# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {busbw}"]
    path = tmp_path / "ranks.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("hosts,per_server,mapped", [
    ([("nodeA", d) for d in range(4)] + [("nodeB", d) for d in range(4)], 4, "4 GPUs on each of 2 hosts"),
    ([("nodeA", 0), ("nodeB", 0)], 1, "1 GPU on each of 2 hosts"),
    ([(h, d) for d in range(2) for h in ("nodeA", "nodeB")], 2, "2 GPUs on each of 2 hosts"),  # --map-by node
])
def test_a_log_without_placement_flags_is_placed_by_its_rank_lines(tmp_path, hosts, per_server, mapped):
    """Two hosts of 4 GPUs are 4 GPUs of each of two HGX servers (over InfiniBand), not one server's
    8 over NVLink; one GPU per host is one per server; ranks dealt round-robin over hosts keep their
    hosts. The note says so."""
    data = _validate(_log_with_ranks(tmp_path, hosts), topology="hopper_ib_rack")
    (run,) = data["logs"]
    assert any(n.startswith("placement from the log's '#  Rank' lines") and mapped in n
               for n in run["settings_from_log"]), run["settings_from_log"]
    fabric = build_fabric(ROOT / "topologies" / "hopper_ib_rack.yaml")
    from simulator.runner.nccl_tests_validation import log_placement
    from simulator.workloads.traces.nccl_tests_log import parse_log as parse
    (parsed,) = parse(_log_with_ranks(tmp_path, hosts), op="all_reduce")
    placement, _ = log_placement(fabric, parsed, len(hosts))
    gpus = [fabric.gpus[r] for r in placement.ranks]
    assert [g.split(".")[0] for g in gpus] == [{"nodeA": "hgx0", "nodeB": "hgx1"}[h] for h, _ in hosts]
    assert all(g.endswith(f"gpu{d}") for g, (_, d) in zip(gpus, hosts))
    assert {g.split(".")[0] for g in gpus} == {"hgx0", "hgx1"} and len(gpus) == 2 * per_server
    # the first ranks, as every rank line says, need no placement
    one = _log_with_ranks(tmp_path, [("nodeA", d) for d in range(8)])
    (single,) = parse(one, op="all_reduce")
    assert log_placement(fabric, single, 8) is None


def test_nccl_nodes_line_parses_with_and_without_mnnvl():
    from simulator.workloads.traces.nccl_tests_lines import nccl_nodes
    line = "gb-0:1234:1300 [0] NCCL INFO comm 0x55d0b1c0 rank 0 nRanks 128 nNodes 2 localRanks 64 localRank 0 MNNVL 1"
    assert nccl_nodes(line) == (128, 2, 64, 1)
    assert nccl_nodes("h:1:2 [3] NCCL INFO comm 0x1 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3") == (16, 2, 8, None)
    assert nccl_nodes("nRanks 16 nNodes 2 localRanks 8") is None  # not an NCCL line


def test_nccls_init_line_places_two_racks_of_64_and_says_so(tmp_path):
    """The two-rack log with NCCL_DEBUG=INFO's 'nRanks 128 nNodes 2 localRanks 64 ... MNNVL 1' (the
    line as NCCL 2.21+ prints it, added here) needs no --per-rack: 64 GPUs of each of two NVLink
    domains, the same prediction as with the flag."""
    text = TWO_RACKS.read_text().replace(
        "#                                                              out-of-place",
        "gb-0:1234:1300 [0] NCCL INFO comm 0x55d0b1c0 rank 0 nRanks 128 nNodes 2 localRanks 64 localRank 0 MNNVL 1\n"
        "#                                                              out-of-place", 1)
    log = tmp_path / "two_racks_info.log"
    log.write_text(text)
    placed = _validate(log, "--op", "all_reduce", "--gpus", "128")
    flagged = _validate(TWO_RACKS, "--op", "all_reduce", "--gpus", "128", "--per-rack", "64")
    (run,) = placed["logs"]
    assert any(n.startswith("placement from NCCL's init line") and "--per-rack 64" in n for n in run["settings_from_log"])
    assert [r["predicted_busbw_GBps"] for r in run["rows"]] == [
        r["predicted_busbw_GBps"] for r in flagged["logs"][0]["rows"]]


def test_mnnvl_0_in_nccls_init_line_runs_trays_as_nodes(tmp_path):
    """'nNodes 2 localRanks 4 MNNVL 0' on GB200: NCCL's nodes are the two trays' hosts, joined over
    the network (as NCCL_MNNVL_ENABLE=0): 4 GPUs of each of two trays, bound by their NICs."""
    hosts = [("tray0", d) for d in range(4)] + [("tray1", d) for d in range(4)]
    log = _log_with_ranks(tmp_path, hosts)
    text = log.read_text().replace("# Using devices", "# Using devices\nt0:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 "
                                   "nNodes 2 localRanks 4 localRank 0 MNNVL 0", 1)
    log.write_text(text)
    data = _validate(log)
    (run,) = data["logs"]
    assert any(n.startswith("NCCL's init line") and "MNNVL 0" in n for n in run["settings_from_log"])
    nic = next(c for c in build_fabric(ROOT / "topologies" / "gb200_nvl72_x8_ib.yaml").channels
               if c.src == "rack0.nic0" and c.fabric == "network").rate_Bps / 1e9
    (row,) = run["rows"]
    assert row["predicted_busbw_GBps"] <= 2 * 4 * nic  # two nodes of 4 NICs each: NIC-bound, not NVLink's ~700
