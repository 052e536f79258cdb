"""Units: parse quantities written by users and name the conventions used everywhere.

Base units inside the simulator (plain floats, never strings):
time s, length m, data B (bytes), data rate B/s (bytes per second, ONE direction unless a name says
``bidir``), power W, energy J, energy per bit J/bit, frequency Hz.

Decimal prefixes are decimal: GB = 10^9 B, Gb = 10^9 bit. Binary prefixes are binary: GiB = 2^30 B.
Users may write quantities as strings with units ("25 GB/s", "200 Gbps", "1.5 m", "64 ns",
"11 W", "5 pJ/bit") or as bare numbers in the base unit of that dimension.
"""

from __future__ import annotations

import re
from typing import Literal

Dimension = Literal["time", "length", "data", "rate", "power", "energy", "energy_per_bit", "frequency"]

GB = 1e9
"""One gigabyte, 10^9 bytes (decimal, as in GB/s figures of datasheets and nccl-tests)."""
GiB = 2**30
"""One gibibyte, 2^30 bytes (binary, as in message sizes such as 8 GiB)."""
MiB = 2**20
KiB = 2**10
BITS_PER_BYTE = 8

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
       "m": 1e-3, "u": 1e-6, "µ": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

# unit symbol (without prefix) -> (dimension, factor to base unit)
_UNITS: dict[str, tuple[Dimension, float]] = {
    "s": ("time", 1.0),
    "m": ("length", 1.0),
    "B": ("data", 1.0),
    "bit": ("data", 1 / BITS_PER_BYTE),
    "b": ("data", 1 / BITS_PER_BYTE),
    "B/s": ("rate", 1.0),
    "Bps": ("rate", 1.0),
    "b/s": ("rate", 1 / BITS_PER_BYTE),
    "bps": ("rate", 1 / BITS_PER_BYTE),
    "bit/s": ("rate", 1 / BITS_PER_BYTE),
    "W": ("power", 1.0),
    "J": ("energy", 1.0),
    "J/bit": ("energy_per_bit", 1.0),
    "J/b": ("energy_per_bit", 1.0),
    "Hz": ("frequency", 1.0),
    "T/s": ("frequency", 1.0),  # transfers per second (GT/s for PCIe)
}
_WORDS = {"min": ("time", 60.0), "h": ("time", 3600.0), "cm": ("length", 1e-2), "mm": ("length", 1e-3)}

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PATTERN = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµ/]*)\s*$")


class UnitError(ValueError):
    """A quantity string that cannot be read, or whose unit has the wrong dimension."""


def _split_unit(unit: str) -> tuple[Dimension, float]:
    if unit in _WORDS:
        return _WORDS[unit]  # type: ignore[return-value]
    if unit in _UNITS:
        return _UNITS[unit]
    for prefix, factor in _BIN.items():
        if unit.startswith(prefix) and unit[len(prefix):] in _UNITS:
            dim, base = _UNITS[unit[len(prefix):]]
            return dim, factor * base
    if unit and unit[0] in _SI and unit[1:] in _UNITS:
        dim, base = _UNITS[unit[1:]]
        return dim, _SI[unit[0]] * base
    raise UnitError(f"unknown unit {unit!r}")


def parse_quantity(value: str | int | float, dimension: Dimension) -> float:
    """Return ``value`` in the base unit of ``dimension``.

    Numbers are taken as already in the base unit; strings must carry a unit of that dimension
    ("1.5 m", "200 Gbps", "64 ns"). Raises UnitError with a short reason otherwise.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a {dimension} quantity, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise UnitError(f"expected a {dimension} quantity such as {EXAMPLES[dimension]!r}")
    match = _PATTERN.match(value)
    if not match:
        raise UnitError(f"cannot read {value!r} as a {dimension} quantity such as {EXAMPLES[dimension]!r}")
    number, unit = float(match.group(1)), match.group(2)
    if not unit:
        return number
    dim, factor = _split_unit(unit)
    if dim != dimension:
        raise UnitError(f"{value!r} is a {dim}, expected a {dimension} such as {EXAMPLES[dimension]!r}")
    return number * factor


EXAMPLES: dict[str, str] = {
    "time": "64 ns",
    "length": "1.5 m",
    "data": "256 B",
    "rate": "25 GB/s",
    "power": "11 W",
    "energy": "1 J",
    "energy_per_bit": "5 pJ/bit",
    "frequency": "32 GT/s",
}


def parse_size(text: str) -> int:
    """Message sizes as nccl-tests writes them, one letter binary in either case: 1K = 1k = 1024 B,
    8G = 8g = 8 GiB; binary units '1 MiB'; and, by this module's one rule that decimal prefixes are
    decimal, '1 MB' = 10^6 B and '1 GB' = 10^9 B; '512' is bytes."""
    match = re.match(r"^\s*(\d+)\s*([KMGTkmgt]?)(i?B?)\s*$", text.strip())
    if not match:
        raise UnitError(f"cannot read {text!r} as a message size such as '1K', '64M', '8G', '1 MiB' or '1 MB'")
    number, prefix, unit = int(match.group(1)), match.group(2).upper(), match.group(3)
    if unit == "B" and prefix:  # MB, GB: decimal (10^6, 10^9), as in GB/s
        return number * int(_SI[prefix])
    if unit == "i":
        raise UnitError(f"cannot read {text!r} as a message size: write '{number}{prefix}iB' or '{number}{prefix}'")
    if unit == "iB" and not prefix:
        raise UnitError(f"cannot read {text!r} as a message size such as '1 MiB'")
    mult = {"": 1, "K": KiB, "M": MiB, "G": GiB, "T": 2**40}[prefix]
    return number * mult


def format_seconds(seconds: float) -> str:
    """Seconds as written in inputs, in the largest unit that keeps the number at least 1:
    ``1.5e-4`` -> ``150us`` (no space, so the text reads back with ``parse_quantity``)."""
    if seconds == 0:
        return "0s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:g}{unit}"
    return f"{seconds / 1e-9:g}ns"


def format_bytes(n: float) -> str:
    """Human size with binary prefixes (message sizes are powers of two)."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"
