"""One SerDes lane: one differential pair carrying one direction.

``rate_bps`` is the signalling (line) rate on the wire; PAM4 carries two bits per symbol, so its
baud rate is half the bit rate. ``encoding_efficiency`` is what line coding and FEC leave for the
link layer (128b/130b for PCIe Gen3-5; RS FEC with transcoding for 100G/200G PAM4; the FEC and
CRC bytes of a PCIe Gen6 flit), so ``data_rate_bps = rate_bps * encoding_efficiency``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.hardware.part import BitsPerSecond, Part, PicojoulesPerBit

Modulation = Literal["NRZ", "PAM4"]

BITS_PER_SYMBOL: dict[str, int] = {"NRZ": 1, "PAM4": 2}
"""NRZ: two levels, one bit per symbol; PAM4: four levels, two bits per symbol."""


class SerDesLane(Part):
    """A lane class (e.g. 200G PAM4) shared by every link generation built on it."""

    name: str = ""
    rate_bps: BitsPerSecond = Field(gt=0)
    """Line rate of the pair, one direction (bit/s), including coding/FEC overhead."""
    modulation: Modulation
    encoding_efficiency: float = Field(gt=0, le=1)
    """Fraction of the line rate left after line coding and FEC."""
    pJ_per_bit: PicojoulesPerBit = Field(ge=0)
    """Dynamic energy per data bit at ONE end of the lane (transmitter or receiver side), pJ/bit."""

    @property
    def bits_per_symbol(self) -> int:
        return BITS_PER_SYMBOL[self.modulation]

    @property
    def baud(self) -> float:
        """Symbols per second on the pair (Bd)."""
        return self.rate_bps / self.bits_per_symbol

    @property
    def data_rate_bps(self) -> float:
        """Bits per second left for the link layer, one direction (bit/s)."""
        return self.rate_bps * self.encoding_efficiency
