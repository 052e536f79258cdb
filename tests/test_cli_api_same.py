"""One way through (issue 26): the CLI and the Python API build the same request and get the same
outcome, so ``fabricsim X --json -`` and ``simulator.X(...).to_dict()`` agree field by field, for
every shipped scenario and a grid of bench requests (dtype rounding, faults, placement, switch
flags: what ``api.bench`` used to skip)."""

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli.app import _register, app
from simulator.topology.fabric import SwitchScheduling
from simulator.topology.placement import Placement

ROOT = Path(__file__).resolve().parent.parent
_register()

SWEEP_FILES = {"sweep_credit_buffer", "sweep_rack_scale"}
"""Shipped sweep files: ``fabricsim sweep``, not ``run``."""
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")
                   if p.stem not in SWEEP_FILES and not p.stem.startswith("serving_"))
SERVING = sorted(p.stem for p in (ROOT / "scenarios").glob("serving_*.yaml"))
"""Shipped serving scenarios: ``fabricsim serve``."""


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _same(cli, api, path="") -> None:
    """Field by field; the API's values pass through JSON as the CLI's did (tuples as lists)."""
    api = json.loads(json.dumps(api, sort_keys=True, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
    _equal(cli, api, path)


def _equal(a, b, path) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), f"{path}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            _equal(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {len(a)} vs {len(b) if isinstance(b, list) else b}"
        for i, (x, y) in enumerate(zip(a, b)):
            _equal(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), path
    else:
        assert a == b, f"{path}: CLI {a!r} vs API {b!r}"


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_shipped_scenario_gives_the_same_outcome_through_cli_and_api(name):
    _same(_cli_json("run", name), simulator.run_scenario(name).to_dict())


@pytest.mark.parametrize("name", SERVING)
def test_every_shipped_serving_scenario_gives_the_same_outcome_through_cli_and_api(name):
    """A short run of each (one rate, a few seconds of arrivals, its first deployment)."""
    from simulator.workloads.serving.scenario import load_serving

    first = load_serving(ROOT / "scenarios" / f"{name}.yaml")[0].deployments[0].name
    cli = _cli_json("serve", name, "--rate", "20", "--duration", "3", "--deployment", first)
    api = simulator.serve(name, rates=[20], duration_s=3, deployments=[first]).to_dict()
    _same(cli, api)
    assert cli["headline"] and cli["rows"]


BENCH = [
    (["hgx_h100", "--sizes", "1K,1M,16M", "--engine", "flow"], dict(sizes="1K,1M,16M", engine="flow")),
    # dtype rounds sizes down to whole elements of every rank for all_gather: 2 B x 8 ranks
    (["hgx_h100", "--op", "all_gather", "--sizes", "1001,3M", "--dtype", "half", "--engine", "flow"],
     dict(op="all_gather", sizes="1001,3M", dtype="half", engine="flow")),
    (["hgx_h100", "--sizes", "4M", "--engine", "flow", "--fault", "link_down:from=hgx.gpu0,to=hgx.nvsw0"],
     dict(sizes="4M", engine="flow", faults=["link_down:from=hgx.gpu0,to=hgx.nvsw0"])),
    (["gb200_nvl72_x8_ib", "--gpus", "16", "--per-rack", "8", "--sizes", "64M", "--engine", "flow"],
     dict(gpus=16, placement=Placement(per_rack=8), sizes="64M", engine="flow")),
    (["teaching", "--sizes", "256K", "--engine", "packet", "--arbiter", "oldest_first", "--queueing", "fifo"],
     dict(sizes="256K", engine="packet", switch=SwitchScheduling(arbiter="oldest_first", queueing="fifo"))),
    (["hopper_ib_rack", "--op", "broadcast", "--root", "3", "--sizes", "8M", "--timing", "single"],
     dict(op="broadcast", root=3, sizes="8M", timing="single")),
    (["pcie_server", "--op", "h2d", "--sizes", "64M", "-f", "4"], dict(op="h2d", sizes="64M", step_factor=4)),
]


@pytest.mark.parametrize("args, kwargs", BENCH, ids=[" ".join(a) for a, _ in BENCH])
def test_bench_gives_the_same_outcome_through_cli_and_api(args, kwargs):
    cli = _cli_json("bench", *args)
    api = simulator.bench(args[0], **kwargs).to_dict()
    _same(cli, api)


def test_dtype_rounding_reaches_the_api():
    # before issue 26 api.bench ignored the dtype: its rows had 1001 B where the CLI's had 1000 B
    rows = simulator.bench("hgx_h100", op="all_gather", sizes="1001,3M", dtype="half", engine="flow").rows
    assert [r["bytes"] for r in rows] == [1001 - 1001 % (2 * 8), 3 << 20]


def test_faults_reach_the_api_with_the_healthy_rows_beside():
    out = simulator.bench("hgx_h100", sizes="64M", engine="flow", faults=["link_down:from=hgx.gpu0,to=hgx.nvsw0"])
    assert out.faults == ["link_down from=hgx.gpu0 to=hgx.nvsw0"]
    (row,) = out.compared
    healthy = simulator.bench("hgx_h100", sizes="64M", engine="flow").rows[0]
    assert row["degraded_busbw_GBps"] == out.rows[0]["busbw_GBps"] < row["healthy_busbw_GBps"]
    assert row["healthy_busbw_GBps"] == healthy["busbw_GBps"]  # the same sweep, without the fault


def test_compare_through_cli_and_api():
    cli = _cli_json("compare", "hgx_h100", "dgx_a100", "--op", "all_reduce", "--sizes", "1M,256M", "--engine", "flow")
    api = simulator.compare(["hgx_h100", "dgx_a100"], op="all_reduce", sizes="1M,256M", engine="flow")
    _same(cli, api.to_dict())
    assert api.summary.startswith("all_reduce: HGX H100 is faster than DGX A100 by")


def test_validate_a_log_through_cli_and_api():
    log = str(ROOT / "validation" / "nccl-tests" / "hgx_h100_all_reduce_8gpu.log")
    result = CliRunner().invoke(app, ["validate", "--nccl-tests", log, "--topology", "hgx_h100", "--engine", "flow",
                                      "--json"])
    assert result.exit_code in (0, 1), result.output
    api = simulator.validate(nccl_tests=[log], topology="hgx_h100", engine="flow")
    _same(json.loads(result.stdout), api.to_dict())
    assert result.exit_code == (1 if api.failed else 0)


@pytest.mark.parametrize("args, request_", [
    (["credits", "--buffers", "4K,32K", "--cables", "1,30"], "CreditsLab(buffers='4K,32K', cables='1,30')"),
    (["arbitration", "--inputs", "3"], "ArbitrationLab(inputs=3)"),
    (["retry", "--bers", "1e-9,1e-6", "--buffers", "4K", "--packets", "2000"],
     "RetryLab(bers='1e-9,1e-6', buffers='4K', packets=2000)"),
])
def test_labs_through_cli_and_api(args, request_):
    from simulator.runner import labs

    result = CliRunner().invoke(app, ["lab", *args, "--json"])
    assert result.exit_code == 0, result.output
    _same(json.loads(result.stdout), simulator.lab(eval(request_, vars(labs))).to_dict())  # noqa: S307
