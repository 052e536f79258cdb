"""Every plot is reachable from the command that produces its data and writes a real PNG."""

import json
from pathlib import Path

from typer.testing import CliRunner

from simulator.cli.app import _register, app

ROOT = Path(__file__).resolve().parent.parent
H100 = str(ROOT / "topologies" / "hgx_h100.yaml")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_register()
runner = CliRunner()


def _is_png(path: Path) -> bool:
    return path.stat().st_size > 10_000 and path.read_bytes()[:8] == PNG_MAGIC


def test_bench_writes_busbw_heatmap_credit_plots_and_trace(tmp_path):
    out = {name: tmp_path / f"{name}.png" for name in ("busbw", "heat", "credit")}
    trace = tmp_path / "trace.json"
    result = runner.invoke(app, ["bench", H100, "--gpus", "4", "--sizes", "256K,1M", "--engine", "packet",
                                 "--plot", str(out["busbw"]), "--heatmap", str(out["heat"]),
                                 "--credit-plot", str(out["credit"]), "--trace", str(trace), "--text"])
    assert result.exit_code == 0, result.output
    assert all(_is_png(p) for p in out.values())
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert slices and all(e["dur"] > 0 for e in slices)
    # the two sizes are laid end to end: the second run starts after the first ends
    assert max(e["ts"] for e in slices) > 2 * min(e["ts"] + e["dur"] for e in slices)


def test_credit_plot_refuses_flow_engine(tmp_path):
    result = runner.invoke(app, ["bench", H100, "--sizes", "1M", "--engine", "flow",
                                 "--credit-plot", str(tmp_path / "c.png")])
    assert result.exit_code == 2
    assert "packet" in result.stderr


def test_describe_draws_topology(tmp_path):
    path = tmp_path / "topo.png"
    assert runner.invoke(app, ["describe", H100, "--plot", str(path)]).exit_code == 0
    assert _is_png(path)


def test_compare_power_plot(tmp_path):
    path = tmp_path / "power.png"
    result = runner.invoke(app, ["compare", H100, str(ROOT / "topologies" / "dgx_a100.yaml"), "--op",
                                 "all_reduce", "--sizes", "16M", "--engine", "flow", "--power-plot", str(path)])
    assert result.exit_code == 0, result.output
    assert _is_png(path)
