"""Message-size lists as nccl-tests writes them: ``1K:8G`` (doubling), ``1M,64M,1G``, or one size.

One definition for the CLI flags (``--sizes``) and the scenario files' ``sizes:`` (checked when
the file loads, so a bad size is reported at its line).
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.units import UnitError, parse_size

MAX_SIZES = 64


def size_list(text: str, factor: int = 2) -> list[int]:
    """``1K:8G`` (doubling, as nccl-tests -f 2), ``1M,64M,1G`` (a list) or one size, in bytes."""
    try:
        if ":" in text:
            lo_text, hi_text = text.split(":", 1)
            lo, hi = parse_size(lo_text), parse_size(hi_text)
            if lo <= 0 or hi < lo:
                raise InputError(f"size range {text!r} must go from a positive size up", field="sizes")
            sizes = [lo]
            while sizes[-1] * factor <= hi:
                sizes.append(sizes[-1] * factor)
        else:
            sizes = [parse_size(part) for part in text.split(",")]
    except UnitError as err:
        raise InputError(str(err), field="sizes") from None
    if len(sizes) > MAX_SIZES:
        raise InputError(f"{len(sizes)} sizes is more than {MAX_SIZES}; use a larger step", field="sizes")
    if any(s <= 0 for s in sizes):
        raise InputError("sizes must be positive", field="sizes")
    return sizes
