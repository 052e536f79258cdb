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
