"""bench speaks nccl-tests: redop, root, #wrong columns, the average busbw line, -d, -f and -r."""

import re
from pathlib import Path

from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.metrics.collective_stats import round_to_elements
from simulator.reports.nccl_table import avg_busbw

ROOT = Path(__file__).resolve().parent.parent
HGX = str(ROOT / "topologies" / "hgx_h100.yaml")
_register()
runner = CliRunner()


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line and not line.startswith("#")]


def test_text_columns_follow_nccl_tests_with_dtype_and_step_factor():
    result = runner.invoke(app, ["bench", HGX, "--sizes", "1M:64M", "-f", "4", "-d", "half", "--engine", "flow",
                                 "--text"])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    assert [int(r[0]) for r in rows] == [1 << 20, 4 << 20, 16 << 20, 64 << 20]  # x4 steps
    for r in rows:
        size, count, dtype, redop, root, wrong = int(r[0]), int(r[1]), r[2], r[3], r[4], r[8]
        assert count == size // 2 and dtype == "half"  # half is 2 B per element
        assert (redop, root, wrong) == ("sum", "-1", "0")
    avg = re.search(r"^# Avg bus bandwidth\s+: ([\d.]+)$", result.output, re.M)
    assert avg and abs(float(avg.group(1)) - sum(float(r[7]) for r in rows) / len(rows)) < 0.01
    assert "#wrong is always 0" in result.output


def test_broadcast_root_and_sizes_rounded_to_whole_elements():
    result = runner.invoke(app, ["bench", HGX, "--op", "broadcast", "--root", "3", "--sizes", "1000001",
                                 "-d", "int32", "--engine", "flow", "--text"])
    assert result.exit_code == 0, result.output
    (row,) = _rows(result.output)
    assert row[0] == "1000000" and row[1] == "250000" and row[3] == "none" and row[4] == "3"
    assert round_to_elements("all_gather", 10**6, 72, "float") == 10**6 - 10**6 % 288


def test_bad_dtype_and_root_name_the_flag():
    result = runner.invoke(app, ["bench", HGX, "-d", "bf16", "--sizes", "1M"])
    assert result.exit_code == 2 and "--dtype: unknown dtype 'bf16'" in result.output
    assert "did you mean 'bfloat16'?" in result.output or "bfloat16" in result.output
    result = runner.invoke(app, ["bench", HGX, "--op", "broadcast", "--root", "8", "--sizes", "1M"])
    assert result.exit_code == 2 and "--root: root rank 8 does not exist" in result.output


def test_avg_busbw_is_the_mean():
    assert avg_busbw([{"busbw_GBps": 1.0}, {"busbw_GBps": 3.0}]) == 2.0
