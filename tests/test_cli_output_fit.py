"""Tables fit the terminal without cutting a number; comparisons say what they compare."""

import re
from pathlib import Path

import pytest
from rich.table import Table
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.reports.fit import fit, narrowest
from simulator.reports.scenario_text import comparison_summary
from simulator.runner.scenario_run import SystemResult

ROOT = Path(__file__).resolve().parent.parent
TOPO = ROOT / "topologies"
_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def nvl72_vs_hopper() -> dict[int, str]:
    """compare of GB200 NVL72 and the Hopper IB rack, all_reduce 1G, printed at 80 and 100 columns."""
    out = {}
    for width in (80, 100):
        result = runner.invoke(app, ["compare", str(TOPO / "gb200_nvl72.yaml"), str(TOPO / "hopper_ib_rack.yaml"),
                                     "--op", "all_reduce", "--sizes", "1G", "--engine", "flow"],
                               env={"COLUMNS": str(width)})
        assert result.exit_code == 0, result.output
        out[width] = result.output
    return out


@pytest.mark.parametrize("width", [80, 100])
def test_compare_tables_fit_and_keep_every_digit(nvl72_vs_hopper, width):
    text = nvl72_vs_hopper[width]
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    # the figures of each row appear whole on one line: time, x ref and busbw of both systems
    for figure in re.findall(r"\d+\.\d\d", text.split("Static")[0]):
        assert figure in text
    rows = [line for line in text.splitlines() if line.strip().startswith("1 GiB")]
    assert len(rows) == 2
    for row in rows:
        # GPUs, time, x ref, algbw and busbw at least, each whole (reports.numbers: 2,457 and 861.8)
        assert len(re.findall(r"(?<![\w.,])\d{1,3}(?:,\d{3})*(?:\.\d+)?(?![\w,]|\.\d)", row)) >= 5, row


def test_fit_drops_optional_columns_before_numbers():
    table = Table("name", "note", "value (GB/s)")
    table.columns[2].justify = "right"
    table.add_row("a system with a long name", "a long comment about it", "123456.78")
    fit(table, 24, optional=["note"])
    assert [str(c.header) for c in table.columns] == ["name", "value\n(GB/s)"]
    assert narrowest(table) <= 24
    table2 = Table("name", "value (GB/s)")
    table2.columns[1].justify = "right"
    table2.add_row("x", "123456.78")
    assert fit(table2, 120) is table2 and table2.columns[1].header == "value (GB/s)"  # wide: untouched


def test_compare_shows_gpu_counts_and_warns_when_they_differ():
    result = runner.invoke(app, ["compare", str(TOPO / "hgx_h100.yaml"), str(TOPO / "teaching.yaml"),
                                 "--op", "all_reduce", "--sizes", "1M", "--engine", "flow"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "GPUs" in result.output
    assert "different GPU counts" in result.output and "8 GPUs on" in result.output


def _system(name: str, time_us: float) -> SystemResult:
    return SystemResult(topology=name, name=name, rows=[{"workload": "w", "bytes": 1 << 20, "time_us": time_us,
                                                         "busbw_GBps": 1.0, "busiest_link": "x"}])


def test_summary_never_says_faster_by_1x():
    same = comparison_summary([_system("A", 100.0), _system("B", 103.0)])
    assert "about as fast" in same and "faster" not in same
    apart = comparison_summary([_system("A", 100.0), _system("B", 200.0)])
    assert "A is faster than B by 2x" in apart


def test_describe_fits_80_columns():
    result = runner.invoke(app, ["describe", "gb200_nvl72_x8_ib"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_summary_names_the_winner_per_size_range():
    # issue 27, item 2: "A is faster than B by 0.68x to 1.7x" contradicted a table where B won at 1 MiB
    from simulator.reports.scenario_text import _verdict

    text = _verdict("NVL72", "H100", [1 << 20, 64 << 20, 1 << 30], [1 / 1.47, 1.3, 1.7])
    assert text == ("H100 is faster than NVL72 at 1 MiB by 1.5x; NVL72 is faster than H100 from 64 MiB to "
                    "1 GiB by 1.3x to 1.7x")
    assert _verdict("A", "B", [8, 16], [1.01, 0.98]) == "A and B are about as fast (within 5%)"


@pytest.mark.parametrize("width", [80, 120])
def test_tokens_are_never_cut_and_system_names_do_not_stack(width):
    # issue 27, item 1: at 120 columns 'nvls/Simple/24ch/flow' broke into 'nvls/Simple/2' and '4ch/flow'
    from rich.console import Console
    from rich.table import Table

    from simulator.reports.fit import fit

    t = Table()
    for c in ["size", "system", "GPUs", "time (us)", "x ref", "algbw (GB/s)", "busbw (GB/s)", "algo/proto/ch/engine",
              "busiest link", "energy (J)", "avg W", "p99 pkt (us)"]:
        t.add_column(c, justify="left" if c in ("system", "algo/proto/ch/engine", "busiest link") else "right")
    for _ in range(3):
        t.add_row("1 MiB", "Hopper IB rack (9 x HGX H100)", "72", "128.23", "2.04", "8.18", "16.13",
                  "nvls/Simple/24ch/flow", "nvlink5 switch->gpu (3% busy)", "0.352", "5,600", "1.25")
    out = Console(width=width, record=True, color_system=None)
    from simulator.reports.scenario_text import DROP_WHEN_NARROW

    out.print(fit(t, width, optional=DROP_WHEN_NARROW))
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "nvls/Simple/24ch/flow" in text and "128.23" in text and "16.13" in text
    assert ("switch->gpu" in text) == (width >= 120)  # the busiest link is kept at 120, whole


def test_a_faulted_bench_says_so_in_its_first_table_title():
    # issue 27, item 5: with --fault the first table printed degraded numbers under the plain system name
    result = runner.invoke(app, ["bench", "hgx_h100", "--sizes", "64M", "--engine", "flow", "--fault",
                                 "link_down:from=hgx.gpu0,to=hgx.nvsw0"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    first = result.output.strip().splitlines()[0]
    assert first.startswith("HGX H100, degraded by link_down from=hgx.gpu0 to=hgx.nvsw0: all_reduce on 8 GPUs"), first
    healthy = runner.invoke(app, ["bench", "hgx_h100", "--sizes", "64M", "--engine", "flow"], env={"COLUMNS": "200"})
    assert healthy.output.strip().splitlines()[0].startswith("HGX H100: all_reduce on 8 GPUs")
