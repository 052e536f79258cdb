"""Link generations built from lanes: NVLink 3/4/5, InfiniBand NDR, and PCIe (see ``pcie.py``).

Every rate here is named by direction. A link has ``pairs_per_direction`` differential pairs
carrying data one way and as many carrying it the other way, so it has ``2 * pairs_per_direction``
lane pairs in all.

Why "200 Gbps x 4 / 8 = 100 GB/s" is a BIDIRECTIONAL figure for NVLink 5: one NVLink 5 link has
2 pairs per direction at 200 Gb/s. One direction carries 2 x 200 / 8 = 50 GB/s. The "x 4" counts the
4 pairs of the link -- 2 going each way -- so 4 x 200 / 8 = 100 GB/s adds what flows in both
directions at once. A GPU with 18 links therefore moves 900 GB/s out while 900 GB/s comes in: the
"1.8 TB/s" of the technical brief is the bidirectional sum. ``LinkGeneration`` exposes both
``line_rate_Bps`` (one direction) and ``bidir_line_rate_Bps`` (both), never an unnamed "bandwidth".

Rate layers, one direction:
    raw line rate      pairs x lane.rate_bps / 8            (before coding/FEC)
    line_rate_Bps      pairs x lane.data_rate_bps / 8       (after coding/FEC)
    payload_rate_Bps   line_rate_Bps x protocol_efficiency  (after packet headers/CRC/flow control)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.hardware.part import Part, Seconds
from simulator.hardware.serdes import SerDesLane
from simulator.units import BITS_PER_BYTE

FabricKind = Literal["nvlink", "pcie", "network", "c2c"]
"""``c2c``: NVLink-C2C, the coherent chip-to-chip link between a Grace CPU and its GPUs."""


class PcieCredits(Part):
    """PCIe link-layer flow-control credits a receiver advertises, per credit type.

    Header credits count TLPs; data credits count 16-byte units. A memory write (posted) costs
    1 PH + ceil(len/16) PD; a read request 1 NPH; its completion 1 CplH + ceil(len/16) CplD.
    """

    unit_B: int = Field(16, gt=0)
    """Bytes per data credit."""
    ph: int = Field(gt=0)
    """Posted-request header credits (memory writes)."""
    pd: int = Field(gt=0)
    """Posted-request data credits (16 B each)."""
    nph: int = Field(gt=0)
    """Non-posted header credits (reads, config, atomics)."""
    npd: int = Field(gt=0)
    """Non-posted data credits."""
    cplh: int = Field(gt=0)
    """Completion header credits."""
    cpld: int = Field(gt=0)
    """Completion data credits."""

    def data_credits(self, length_B: int) -> int:
        """Data credits one TLP of ``length_B`` payload bytes consumes."""
        return -(-int(length_B) // self.unit_B)

    def write_cost(self, length_B: int) -> tuple[int, int]:
        """(PH, PD) credits a memory write of ``length_B`` bytes consumes."""
        return 1, self.data_credits(length_B)

    def completion_cost(self, length_B: int) -> tuple[int, int]:
        """(CplH, CplD) credits a read completion of ``length_B`` bytes consumes."""
        return 1, self.data_credits(length_B)

    @property
    def posted_buffer_B(self) -> int:
        """Bytes of posted write data the receiver can hold: PD credits x 16 B."""
        return self.pd * self.unit_B


class LinkGeneration(Part):
    """One link generation at one width: lanes, protocol efficiency, latency, credits, energy."""

    name: str = ""
    fabric: FabricKind
    lane: SerDesLane
    pairs_per_direction: int = Field(gt=0)
    """Differential pairs carrying each direction (the width, for PCIe)."""
    protocol_efficiency: float = Field(gt=0, le=1)
    reverse_overhead: float = Field(0.0, ge=0, le=1)
    """Bytes the opposite direction carries per payload byte of this one (write responses,
    acknowledgements, flow-control credits): why a link loaded both ways moves less each way."""
    """Payload share of the post-FEC rate (headers, CRC, flow-control traffic): a calibration
    constant, the same for every topology of the generation."""
    phy_latency_s: Seconds = Field(ge=0)
    """SerDes + FEC latency of one hop, transmitter and receiver together (s)."""
    credit_buffer_B: int = Field(gt=0)
    """Receive buffer the sender may fill before waiting for credits (B, per direction)."""
    credit_unit_B: int = Field(gt=0)
    """Bytes one credit stands for (B): flit/block size; 16 for PCIe data credits."""
    credit_return_delay_s: Seconds = Field(ge=0)
    """Receiver processing before a credit update is sent back (s), on top of propagation."""
    credit_batch: int = Field(1, gt=0)
    """Credits returned together in one update."""
    max_payload_B: int | None = None
    """PCIe only: max payload size the protocol efficiency was computed for (B)."""
    pcie_credits: PcieCredits | None = None
    """PCIe only: the six credit types the receiver advertises."""

    @property
    def raw_rate_Bps(self) -> float:
        """Signalling rate of one direction before coding/FEC (B/s)."""
        return self.pairs_per_direction * self.lane.rate_bps / BITS_PER_BYTE

    @property
    def line_rate_Bps(self) -> float:
        """Rate of one direction after line coding/FEC (B/s)."""
        return self.pairs_per_direction * self.lane.data_rate_bps / BITS_PER_BYTE

    @property
    def bidir_line_rate_Bps(self) -> float:
        """Both directions together after coding/FEC (B/s): twice ``line_rate_Bps``."""
        return 2 * self.line_rate_Bps

    @property
    def payload_rate_Bps(self) -> float:
        """Payload rate of one direction after protocol overhead (B/s)."""
        return self.line_rate_Bps * self.protocol_efficiency

    @property
    def bidir_payload_rate_Bps(self) -> float:
        """Payload rate of both directions together (B/s)."""
        return 2 * self.payload_rate_Bps

    @property
    def lane_pairs(self) -> int:
        """Differential pairs of the link over both directions."""
        return 2 * self.pairs_per_direction

    @property
    def serdes_pJ_per_bit(self) -> float:
        """Dynamic SerDes energy per data bit at ONE end of the link (pJ/bit); a link has two ends."""
        return self.lane.pJ_per_bit
