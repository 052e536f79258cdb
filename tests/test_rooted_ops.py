"""reduce, gather and scatter: nccl-tests' size convention and busbw factors, closed forms, --root."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.engine.flow import run_flow
from simulator.topology.synthetic import star
from simulator.workloads.collectives import build_collective, busbw_factor

ROOT = Path(__file__).resolve().parent.parent
HGX = str(ROOT / "topologies" / "hgx_h100.yaml")
_register()
runner = CliRunner()

S, N, B = 1 << 26, 8, 100e9
"""Message size (B), ranks, link rate per direction (B/s) of the star below."""


def _up(g: int) -> int:
    """Channel id of GPU g -> switch on ``star`` (GPU g's links are channels 2g and 2g+1)."""
    return 2 * g


def _down(g: int) -> int:
    return 2 * g + 1


def test_busbw_factors_follow_nccl_tests():
    # reduce_perf: busbw = algbw; gather/scatter_perf: like all_gather, (n-1)/n of algbw
    assert busbw_factor("reduce", 8) == 1.0
    assert busbw_factor("gather", 8) == busbw_factor("scatter", 8) == pytest.approx(7 / 8)


@pytest.mark.parametrize("root", [0, 5])
def test_reduce_is_a_chain_into_the_root_at_link_rate(root):
    f = star(N, rate_Bps=B, latency_s=0.0)
    w = build_collective(f, f.gpus, "reduce", S, "ring", "ideal", root=root)
    r = run_flow(f, w)
    # every rank but the root sends S once; every rank but the chain head (root + 1) receives S
    for g in range(N):
        assert r.channel_bytes[_up(g)] == pytest.approx(0 if g == root else S)
        assert r.channel_bytes[_down(g)] == pytest.approx(0 if g == (root + 1) % N else S)
    assert r.makespan_s == pytest.approx(S / B, rel=1e-6)  # pipelined: S over one link's rate
    assert w.meta["busbw_factor"] == 1.0


@pytest.mark.parametrize("op,root", [("gather", 0), ("gather", 3), ("scatter", 0), ("scatter", 6)])
def test_gather_and_scatter_load_the_root_link_with_s_times_n_minus_1_over_n(op, root):
    f = star(N, rate_Bps=B, latency_s=0.0)
    w = build_collective(f, f.gpus, op, S, "auto", "ideal", root=root)
    assert w.meta["algo"] == "direct"  # nccl-tests runs them as grouped send/recv
    r = run_flow(f, w)
    root_link = _down(root) if op == "gather" else _up(root)
    assert r.channel_bytes[root_link] == pytest.approx(S * (N - 1) / N)
    for g in range(N):
        if g != root:  # each other rank moves its S/n share, the other direction idle
            peer_link, idle = (_up(g), _down(g)) if op == "gather" else (_down(g), _up(g))
            assert r.channel_bytes[peer_link] == pytest.approx(S / N)
            assert r.channel_bytes[idle] == 0
    t = S * (N - 1) / N / B  # the root's link is the bottleneck
    assert r.makespan_s == pytest.approx(t, rel=1e-6)
    busbw = S / r.makespan_s * w.meta["busbw_factor"]
    assert busbw == pytest.approx(B, rel=1e-6)  # busbw = the root link's rate, as for all_gather


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("op,redop", [("reduce", "sum"), ("gather", "none"), ("scatter", "none")])
def test_bench_rooted_ops_print_root_redop_and_counts(op, redop):
    result = runner.invoke(app, ["bench", HGX, "--op", op, "--root", "2", "--sizes", "8m,64m", "--engine", "flow",
                                 "--text"])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    assert [int(r[0]) for r in rows] == [8 << 20, 64 << 20]
    for r in rows:
        size, count, red, root = int(r[0]), int(r[1]), r[3], r[4]
        assert (red, root) == (redop, "2")
        assert count == (size // 4 if op == "reduce" else size // 4 // 8)  # per-rank count for gather/scatter
        algbw, busbw = float(r[6]), float(r[7])
        assert busbw == pytest.approx(algbw * busbw_factor(op, 8), abs=0.011)
        assert r[9].startswith("ring/" if op == "reduce" else "direct/")


def test_root_beyond_the_ranks_is_refused_for_every_rooted_op():
    for op in ("reduce", "gather", "scatter"):
        result = runner.invoke(app, ["bench", HGX, "--op", op, "--gpus", "4", "--root", "4", "--sizes", "1M"])
        assert result.exit_code == 2 and "--root: root rank 4 does not exist" in result.output


def test_validate_takes_a_reduce_perf_log_and_its_root(tmp_path):
    from tests.test_nccl_tests_log import G_RUN

    log = tmp_path / "reduce.log"
    text = G_RUN.replace("all_reduce_perf", "reduce_perf").replace("sum      -1", "sum       1")
    for all_reduce, reduce in (("78.64", "52.43"), ("82.78", "55.19"), ("104.86", " 69.91"), ("108.47", " 72.32"),
                               ("125.83", " 83.89"), ("131.07", " 87.38"), ("105.275", "70.1867")):
        text = text.replace(all_reduce, reduce)  # reduce's bus factor is 1: busbw = algbw
    log.write_text(text)
    result = runner.invoke(app, ["validate", "--nccl-tests", str(log), "--topology", HGX, "--engine", "flow",
                                 "--json", "--threshold", "1000"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["logs"]
    rows = entry["rows"]
    assert entry["op"] == "reduce" and [r["bytes"] for r in rows] == [1 << 20, 2 << 20, 4 << 20]
    for r in rows:  # reduce's busbw is its algbw: S / t
        assert r["predicted_busbw_GBps"] == pytest.approx(r["bytes"] / r["predicted_time_us"] / 1e3, rel=1e-6)
