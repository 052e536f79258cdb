"""PCIe retimers: each one re-times the signal, restarting the channel loss budget.

A retimer adds latency (the base spec caps it near 64 ns at 8 GT/s and above) and draws power
whether or not traffic flows; the base spec allows at most two on a link.
"""

from __future__ import annotations

from pydantic import Field

from simulator.hardware.errors import HardwareError
from simulator.hardware.part import Part, PicojoulesPerBit, Seconds, Watts

MAX_RETIMERS_PER_LINK = 2
"""PCIe base spec 4.3: at most two retimers between an upstream and a downstream port."""


def check_retimers(n: int) -> None:
    """Raise HardwareError if a link carries more retimers than the PCIe base spec allows."""
    if n < 0:
        raise HardwareError(f"retimer count must be >= 0, got {n}")
    if n > MAX_RETIMERS_PER_LINK:
        raise HardwareError(f"a PCIe link takes at most {MAX_RETIMERS_PER_LINK} retimers "
                            f"(PCIe base spec 4.3), got {n}")


class RetimerPart(Part):
    """One retimer chip on one link (all lanes of the link)."""

    name: str = ""
    generation: str
    """PCIe generation it runs at (catalog link name, e.g. ``pcie6``)."""
    lanes: int = Field(gt=0)
    latency_s: Seconds = Field(ge=0)
    """Added one-way latency (s)."""
    power_W: Watts = Field(ge=0)
    """Power drawn while the link is up, traffic or not (W): counted as static power."""
    pJ_per_bit: PicojoulesPerBit = Field(ge=0)
    """Dynamic energy per bit on top of ``power_W`` (pJ/bit)."""
    loss_budget_dB: float = Field(gt=0)
    """Insertion loss one retimed segment may have (dB)."""
    reach_factor: float = Field(ge=1)
    """How many times the un-retimed reach one retimer allows (segments add up)."""

    def full_load_pJ_per_bit(self, lane_rate_bps: float) -> float:
        """Energy per bit at full load in both directions (pJ/bit): power / bits moved, for reports."""
        return self.power_W / (2 * self.lanes * lane_rate_bps) * 1e12 + self.pJ_per_bit

