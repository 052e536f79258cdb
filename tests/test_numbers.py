"""How numbers read in report tables (issue 27, item 3)."""

import math

import pytest

from simulator.reports.numbers import number


@pytest.mark.parametrize("value,text", [
    (2684354560, "2,684,354,560"), (15436.2, "15,436"), (1.127e4, "11,270"), (7750.0, "7,750"),
    (64.783, "64.78"), (0.4324, "0.4324"), (0.008984, "0.008984"), (4.163e-11, "0"), (-1.7e-12, "0"),
    (3.2e-5, "3.20e-05"), (None, "-"), (math.nan, "-"), (True, "yes"), (["network", "pcie"], "network, pcie"),
    ("ring", "ring")])
def test_a_number_reads_without_residue_or_mixed_notation(value, text):
    assert number(value) == text


def test_a_step_scenarios_figure_shows_where_the_step_goes(tmp_path):
    # issue 27, item 8: `run tp_decode --plot` was a single static-power bar
    from simulator.reports.plots.step import build_step_breakdown

    row = {"attention_per_layer_us": 20.0, "gemm_per_layer_us": 40.0, "other_per_layer_us": 60.0,
           "compute_us": 12_000.0, "time_us": 15_000.0, "bottleneck": "compute (HBM)"}
    fig = build_step_breakdown([("A: decode", row), ("B: decode", dict(row, time_us=12_000.0))])
    ax = fig.axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths[:4] == pytest.approx([2.0, 4.0, 6.0, 3.0])  # ms: compute split 1:2:3, then 3 ms exposed
    assert sum(widths[4:]) == pytest.approx(12.0)
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"GEMMs", "exposed communication"}
