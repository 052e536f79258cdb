"""Quantity parsing: decimal vs binary prefixes, bits vs bytes, dimension checks."""

import pytest

from simulator.units import GiB, UnitError, parse_quantity, parse_size


@pytest.mark.parametrize("text,dim,expected", [
    ("25 GB/s", "rate", 25e9),
    ("200 Gbps", "rate", 25e9),
    ("200 Gb/s", "rate", 25e9),
    ("1.5 m", "length", 1.5),
    ("64 ns", "time", 64e-9),
    ("11 W", "power", 11.0),
    ("5 pJ/bit", "energy_per_bit", 5e-12),
    ("32 GT/s", "frequency", 32e9),
    ("1 GiB", "data", GiB),
    (3.0, "length", 3.0),
])
def test_parse_quantity(text, dim, expected):
    assert parse_quantity(text, dim) == pytest.approx(expected)


@pytest.mark.parametrize("text,dim", [("3 ns", "length"), ("fast", "rate"), ("2 furlongs", "length"),
                                      (True, "time")])
def test_parse_quantity_rejects(text, dim):
    with pytest.raises(UnitError):
        parse_quantity(text, dim)


def test_parse_size_is_binary():
    assert parse_size("1K") == 1024
    assert parse_size("8G") == 8 * GiB
    assert parse_size("1 MiB") == 2**20
