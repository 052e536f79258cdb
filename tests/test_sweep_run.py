"""Sweeps on a real Dask cluster: results against the credit-loop closed form, the result cache
(one more point runs one point), failed points kept apart, and an existing scheduler address."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.runner.sweeps import SweepSpec, sweep
from simulator.topology.builder import build_fabric

distributed = pytest.importorskip("distributed")

from simulator.runner.sweep_points import execute, result_rows  # noqa: E402
from simulator.runner.cache import ResultCache  # noqa: E402
from simulator.runner.distributed import run_points  # noqa: E402
from simulator.runner.sweep_file import load_sweep  # noqa: E402
from simulator.workloads.labs.catalog_link import catalog_link  # noqa: E402
from simulator.workloads.labs.credits import closed_form_Bps  # noqa: E402
from simulator.engine.packet import credit_loop_rtt_s  # noqa: E402
from simulator.topology import synthetic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CREDIT = "name: credits\nbase:\n  credit_lab: {{generation: nvlink5}}\naxes:\n  buffer: [{buffers}]\n  cable_m: [1, 30]\n"


@pytest.fixture(scope="module")
def cluster():
    """A small in-process cluster (threads, no worker processes): fast to start."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as c:
        yield c


def _sweep(tmp_path: Path, buffers: str):
    path = tmp_path / "credits.yaml"
    path.write_text(CREDIT.format(buffers=buffers))
    return load_sweep(path)


def _closed_form_GBps(buffer: int, cable_m: float) -> float:
    link = catalog_link("nvlink5", cable_m, buffer)
    fabric = synthetic.single_link(rate_Bps=link.rate_Bps, latency_s=link.latency_s, credit=link.credit)
    return closed_form_Bps(link, credit_loop_rtt_s(fabric.channels[0], link.packet_bytes)) / 1e9


def test_points_match_the_credit_loop_closed_form_and_the_cache_runs_only_new_points(tmp_path, cluster):
    cache = ResultCache(tmp_path / "cache")
    first = run_points(_sweep(tmp_path, "2K, 8K").points, execute, scheduler=cluster.scheduler_address, cache=cache)
    assert [o.cached for o in first] == [False] * 4 and all(o.error is None for o in first)
    for row in result_rows(first):
        expected = _closed_form_GBps({"2K": 2048, "8K": 8192}[row["buffer"]], row["cable_m"])
        assert row["simulated_GBps"] == pytest.approx(expected, rel=0.01)
    again = run_points(_sweep(tmp_path, "2K, 8K, 4K").points, execute, scheduler=cluster.scheduler_address,
                       cache=cache)
    assert [o.cached for o in again] == [True, True, True, True, False, False]  # only the 4K column ran
    assert result_rows(again)[:4] == result_rows(first)


def test_a_failed_point_is_reported_and_the_others_are_kept(tmp_path, cluster):
    path = tmp_path / "bench.yaml"
    path.write_text(f"name: b\nbase:\n  bench: {{topology: {ROOT / 'topologies' / 'hgx_h100.yaml'}, engine: flow, "
                    "bytes: 64M, algo: ring, protocol: Simple}\naxes:\n  gpus: [2, 8]\n")
    cache = ResultCache(tmp_path / "cache")
    good, other = load_sweep(path).points  # gpus: [2, 99] is refused at load now: make the worker meet it
    bad_point = dataclasses.replace(other, axes={"gpus": 99}, digest="f" * 64,
                                    payload={**other.payload, "spec": {**other.payload["spec"], "gpus": 99}})
    outcomes = run_points([good, bad_point], execute, scheduler=cluster.scheduler_address, cache=cache)
    ok, bad = outcomes
    # the point that ran on the cluster gives what the same bench gives in this process
    local = sweep(build_fabric(ROOT / "topologies" / "hgx_h100.yaml"),
                  SweepSpec(op="all_reduce", gpus=2, sizes=(64 * 2**20,), algo="ring", protocol="Simple", engine="flow"))
    assert ok.error is None and ok.rows[0]["busbw_GBps"] == pytest.approx(local[0]["busbw_GBps"], rel=1e-9)
    assert bad.rows is None and "has 8 GPUs, asked for 99" in bad.error
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [f"{ok.point.digest}.json"]
    rows = result_rows(outcomes)
    assert rows[1] == {"gpus": 99, "error": bad.error}


def test_cli_on_a_local_cluster_of_worker_processes_writes_rows(tmp_path):
    path = tmp_path / "credits.yaml"
    path.write_text(CREDIT.format(buffers="4K"))
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "-m", "simulator", "sweep", str(path), "--workers", "1",
                           "--cache", str(tmp_path / "cache"), "--json", str(out), "--csv", str(tmp_path / "r.csv")],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["axes"] == ["buffer", "cable_m"] and [r["cable_m"] for r in data["rows"]] == [1, 30]
    assert (tmp_path / "r.csv").read_text().splitlines()[0].startswith("buffer,cable_m,")
    assert "2 of 2 points done (0 from cache)" in proc.stdout


def test_an_unreachable_scheduler_is_an_input_error(tmp_path):
    from simulator.errors import InputError

    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        run_points(_sweep(tmp_path, "4K").points, execute, scheduler="tcp://127.0.0.1:9", cache=ResultCache(None))


def test_a_bench_point_is_bench_itself_and_placement_is_an_axis(tmp_path):
    # issue 24: a sweep could not vary where a job's GPUs are; issue 26: a sweep point ran its own
    # path (measure) where bench plans (one engine choice, one packet unit per size)
    import simulator
    from simulator.topology.placement import Placement

    path = tmp_path / "p.yaml"
    path.write_text("name: placement\nbase:\n  bench: {topology: gb200_nvl72_x8_ib, op: all_reduce, bytes: 1G, "
                    "engine: flow, gpus: 128}\naxes:\n  per_rack: [64, 72]\n")
    rows = [execute(p.payload)["rows"][0] for p in load_sweep(path).points]
    for row, per_rack in zip(rows, (64, 72)):
        bench = simulator.bench("gb200_nvl72_x8_ib", sizes="1G", engine="flow", gpus=128,
                                placement=Placement(per_rack=per_rack)).rows[0]
        assert (row["gpus"], row["busbw_GBps"], row["algo"]) == (128, bench["busbw_GBps"], bench["algo"])
    assert rows[0]["busbw_GBps"] != rows[1]["busbw_GBps"]  # 64 + 64 GPUs is not 72 + 56
