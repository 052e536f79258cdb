"""PCIe generations 3-6 at widths x1-x16: encoding, TLP overhead vs max payload size, credits.

Gen3-5 use 128b/130b line coding and wrap every TLP in framing (4 B STP token), a header
(12 or 16 B) and a 4 B LCRC, so the payload share of the post-coding rate is
``mps / (mps + tlp_overhead_B)`` times what SKP ordered sets leave. Gen6 runs in flit mode: 256 B
flits of 236 B TLP bytes + 6 B DLP + 8 B CRC + 6 B FEC; FEC and CRC count as "encoding" (242/256)
and the DLP bytes as link efficiency (236/242); TLPs inside a flit carry a header but no framing
token or LCRC.
"""

from __future__ import annotations

from pydantic import Field

from simulator.hardware.errors import HardwareError
from simulator.hardware.links import LinkGeneration, PcieCredits
from simulator.hardware.part import Part, Seconds
from simulator.hardware.serdes import SerDesLane

WIDTHS = (1, 2, 4, 8, 16)
"""Link widths (lanes per direction) a PCIe generation accepts."""
PAYLOAD_SIZES = (128, 256, 512, 1024, 2048, 4096)
"""Max payload sizes (B) the spec allows."""


def tlp_efficiency(max_payload_B: int, tlp_overhead_B: float) -> float:
    """Payload share of the bytes a full-size TLP occupies on the link: mps / (mps + overhead)."""
    return max_payload_B / (max_payload_B + tlp_overhead_B)


class PcieGeneration(Part):
    """One PCIe generation; ``link(width, mps)`` turns it into a :class:`LinkGeneration`."""

    name: str = ""
    lane: SerDesLane
    flit_mode: bool
    tlp_overhead_B: int = Field(gt=0)
    """Per-TLP bytes besides payload: framing + header + LCRC (Gen3-5), header only (flit mode)."""
    link_efficiency: float = Field(gt=0, le=1)
    """Share left after link-level traffic: SKP ordered sets (Gen3-5) or DLP bytes per flit (Gen6)."""
    loss_budget_dB: float = Field(gt=0)
    """Channel insertion-loss budget at Nyquist, end to end (dB)."""
    phy_latency_s: Seconds = Field(ge=0)
    """PHY transmit + receive latency of one hop (s)."""
    credits: PcieCredits
    credit_return_delay_s: Seconds = Field(ge=0)
    """Receiver delay before an UpdateFC DLLP returns credits (s)."""
    credit_batch: int = Field(gt=0)
    """Data credits returned per UpdateFC."""
    default_width: int = Field(16, gt=0)
    default_max_payload_B: int = Field(256, gt=0)

    def protocol_efficiency(self, max_payload_B: int) -> float:
        """Payload share of the post-coding rate for a stream of full-size writes."""
        return tlp_efficiency(max_payload_B, self.tlp_overhead_B) * self.link_efficiency

    def link(self, width: int | None = None, max_payload_B: int | None = None) -> LinkGeneration:
        """This generation as a link of ``width`` lanes per direction and the given max payload size."""
        width = self.default_width if width is None else width
        mps = self.default_max_payload_B if max_payload_B is None else max_payload_B
        if width not in WIDTHS:
            raise HardwareError(f"PCIe width x{width} does not exist; choose one of "
                                + ", ".join(f"x{w}" for w in WIDTHS))
        if mps not in PAYLOAD_SIZES:
            raise HardwareError(f"PCIe max payload size {mps} B does not exist; choose one of "
                                + ", ".join(str(p) for p in PAYLOAD_SIZES))
        eff = self.protocol_efficiency(mps)
        src = self.sources
        return LinkGeneration(
            name=self.name, fabric="pcie", lane=self.lane, pairs_per_direction=width,
            protocol_efficiency=eff, phy_latency_s=self.phy_latency_s,
            credit_buffer_B=self.credits.posted_buffer_B, credit_unit_B=self.credits.unit_B,
            credit_return_delay_s=self.credit_return_delay_s, credit_batch=self.credit_batch,
            max_payload_B=mps, pcie_credits=self.credits,
            sources={
                "pairs_per_direction": f"PCIe width x{width} (PCIe base spec link widths)",
                "protocol_efficiency": (f"derived: {mps}/({mps}+{self.tlp_overhead_B}) TLP x "
                                        f"{self.link_efficiency:.4f} link = {eff:.4f}; "
                                        f"tlp_overhead_B: {src['tlp_overhead_B']}"),
                "phy_latency_s": src["phy_latency_s"],
                "credit_buffer_B": f"derived: PD credits {self.credits.pd} x {self.credits.unit_B} B",
                "credit_unit_B": self.credits.sources["unit_B"],
                "credit_return_delay_s": src["credit_return_delay_s"],
                "credit_batch": src["credit_batch"],
                "max_payload_B": (src["default_max_payload_B"] if max_payload_B is None
                                  else "chosen by the topology"),
            })
