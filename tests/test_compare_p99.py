"""compare's p99 column: packet latency where packets ran, no column of dashes for flow runs."""

from pathlib import Path

from typer.testing import CliRunner

from simulator.cli.app import _register, app

ROOT = Path(__file__).resolve().parent.parent
TOPOS = [str(ROOT / "topologies" / "teaching.yaml"), str(ROOT / "topologies" / "hgx_h100.yaml")]
_register()
runner = CliRunner()


def _header(engine: str) -> str:
    result = runner.invoke(app, ["compare", *TOPOS, "--op", "all_reduce", "--gpus", "2", "--sizes", "256K",
                                 "--engine", engine], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if "busbw (GB/s)" in line)


def test_p99_column_only_with_packet_runs():
    assert "p99 pkt (us)" in _header("packet")
    assert "p99" not in _header("flow")
