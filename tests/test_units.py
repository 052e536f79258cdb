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


def test_parse_size_lowercase_is_binary_like_nccl_tests_and_MB_is_decimal():
    assert parse_size("1m") == parse_size("1M") == 2**20
    assert parse_size("256k") == 256 * 1024 and parse_size("2g") == 2 * GiB
    assert parse_size("1MB") == 10**6 and parse_size("1 GB") == 10**9  # decimal prefixes are decimal
    assert parse_size("1 MiB") == 2**20 and parse_size("512B") == 512
    with pytest.raises(UnitError, match="1MiB"):
        parse_size("1Mi")
