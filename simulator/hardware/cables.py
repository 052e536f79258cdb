"""Cables between enclosures: board trace, passive copper, active copper, optical.

Reach, per-end power and DSP latency depend on the lane rate a cable runs at, so a cable part
holds one :class:`LaneClass` per nominal lane rate (50G NRZ, 100G PAM4, 200G PAM4). A lane is
served by the slowest class whose nominal rate covers its data rate; a raw line rate up to
``RAW_RATE_ALLOWANCE`` above the class (106.25 Gb/s for the 100G class) still belongs to it.

Power is per module end: an 800G OSFP module carries 8 lanes, so one NVLink 5 link end (2 lanes)
takes a quarter of a 1.6T module. Module and active-cable power is drawn whether or not traffic
flows, so it is static power; ``pJ_per_bit`` is only what traffic adds on top.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from simulator.hardware.errors import HardwareError
from simulator.hardware.links import LinkGeneration
from simulator.hardware.part import BitsPerSecond, Meters, Part, PicojoulesPerBit, Seconds, Watts

CableKind = Literal["trace", "copper_passive", "copper_active", "optical"]

KIND_LABEL: dict[str, str] = {"trace": "board trace", "copper_passive": "passive copper",
                              "copper_active": "active copper", "optical": "optical cable"}

RAW_RATE_ALLOWANCE = 106.25 / 100
"""Raw/nominal ratio of Ethernet-style PAM4 lanes (106.25 Gb/s carries 100G after FEC)."""


def _fmt_rate(bps: float) -> str:
    return f"{bps / 1e9:g} Gb/s"


class LaneClass(Part):
    """How a cable kind behaves at one nominal lane rate."""

    lane_rate_bps: BitsPerSecond = Field(gt=0)
    """Nominal data rate per lane of this class (bit/s), e.g. 200 Gb/s."""
    reach_m: Meters | None = Field(None, gt=0)
    """Longest run that meets the channel budget (m); None = not limited at rack/row scale."""
    module_lanes: int = Field(gt=0)
    """Lanes per direction one module / cable end carries (8 for an OSFP 800G or 1.6T)."""
    module_power_W: Watts = Field(ge=0)
    """Power of one module / active cable end (W), drawn while the link is up."""
    dsp_latency_s: Seconds = Field(0.0, ge=0)
    """Latency one end's DSP/retimer adds (s)."""


class CablePart(Part):
    """A cable kind; lengths come from the topology."""

    name: str = ""
    kind: CableKind
    ns_per_m: float = Field(gt=0)
    """Propagation delay (ns per metre)."""
    pJ_per_bit: PicojoulesPerBit = Field(0.0, ge=0)
    """Dynamic energy per bit the cable adds on top of its static module power (pJ/bit)."""
    classes: tuple[LaneClass, ...]
    """One entry per nominal lane rate, any order; empty = no reach rule (board traces)."""

    @field_validator("classes")
    @classmethod
    def _sorted(cls, classes: tuple[LaneClass, ...]) -> tuple[LaneClass, ...]:
        return tuple(sorted(classes, key=lambda c: c.lane_rate_bps))

    @property
    def label(self) -> str:
        return KIND_LABEL[self.kind]

    def lane_class(self, lane_rate_bps: float) -> LaneClass:
        """The slowest class that carries ``lane_rate_bps`` (data or raw line rate per lane)."""
        for cls in self.classes:
            if lane_rate_bps <= cls.lane_rate_bps * RAW_RATE_ALLOWANCE * (1 + 1e-9):
                return cls
        rated = ", ".join(_fmt_rate(c.lane_rate_bps) for c in self.classes) or "nothing"
        raise HardwareError(f"{self.label} is not rated for {_fmt_rate(lane_rate_bps)} per lane "
                            f"(rated: {rated})")

    def reach_m(self, lane_rate_bps: float, retimers: int = 0, reach_factor: float = 1.0) -> float | None:
        """Longest allowed run at this lane rate (m); ``retimers`` each multiply it by ``reach_factor``."""
        if not self.classes:
            return None
        reach = self.lane_class(lane_rate_bps).reach_m
        if reach is None:
            return None
        return reach * (reach_factor ** retimers if retimers else 1.0)

    def check_reach(self, lane_rate_bps: float, length_m: float, *, retimers: int = 0,
                    reach_factor: float = 1.0) -> None:
        """Raise HardwareError naming the reach if ``length_m`` exceeds it at this lane rate."""
        if length_m < 0:
            raise HardwareError(f"cable length must be >= 0 m, got {length_m:g} m")
        reach = self.reach_m(lane_rate_bps, retimers, reach_factor)
        if reach is not None and length_m > reach * (1 + 1e-9):
            nominal = self.lane_class(lane_rate_bps).lane_rate_bps
            via = f" with {retimers} retimer(s)" if retimers else ""
            raise HardwareError(f"{self.label} at {_fmt_rate(nominal)} per lane reaches "
                                f"{reach:g} m{via}, got {length_m:g} m")

    def check_link_reach(self, link: LinkGeneration, length_m: float) -> None:
        """:meth:`check_reach` at the lane data rate of ``link``."""
        self.check_reach(link.lane.data_rate_bps, length_m)

    def latency_s(self, length_m: float, link: LinkGeneration | None = None) -> float:
        """One-way latency of a run (s): propagation plus, with ``link``, both ends' DSP."""
        dsp = 0.0
        if link is not None and self.classes:
            dsp = 2 * self.lane_class(link.lane.data_rate_bps).dsp_latency_s
        return length_m * self.ns_per_m * 1e-9 + dsp

    def modules_per_end(self, link: LinkGeneration) -> float:
        """Modules (or active cable ends) one end of ``link`` occupies: lanes / lanes per module.

        Fractional when modules are shared (an NVLink 5 link's 2 lanes take 1/4 of an 8-lane
        1.6T module); zero for cables without modules (traces).
        """
        if not self.classes:
            return 0.0
        return link.pairs_per_direction / self.lane_class(link.lane.data_rate_bps).module_lanes

    def power_W_per_end(self, link: LinkGeneration) -> float:
        """Static power of one end of ``link`` (W): modules_per_end x module power."""
        if not self.classes:
            return 0.0
        return self.modules_per_end(link) * self.lane_class(link.lane.data_rate_bps).module_power_W

    def full_load_pJ_per_bit(self, link: LinkGeneration) -> float:
        """Static power per bit moved with both directions at line rate (pJ/bit), for reports.

        Both ends draw ``power_W_per_end`` and together move 2 x line rate, so this is one end's
        power over one direction's bit rate: an 800G module at 16 W gives 20 pJ/bit.
        """
        return self.power_W_per_end(link) / (link.line_rate_Bps * 8) * 1e12 + self.pJ_per_bit
