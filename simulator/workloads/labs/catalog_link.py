"""One link of a catalog generation over a cable of a given length: the numbers the labs put on
their synthetic fabrics (payload rate, one-way latency, credit spec, packet size).

The latency is computed the way the topology builder does it (PHY of both ends + cable propagation
+ the cable's DSP ends), so a lab link behaves like the same link in a YAML topology.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import InputError
from simulator.hardware.catalog import Catalog, HardwareError, load_catalog
from simulator.topology.fabric import CreditSpec

CABLE_PREFERENCE = ("copper_passive", "copper_active", "optical")
"""Cable kinds tried in order: the first whose reach covers the length is used (the cheapest
and lowest-latency medium that works, as a rack designer would choose)."""


@dataclass(frozen=True, slots=True)
class CatalogLink:
    """A lab link: one direction's payload rate, one-way latency and receive-buffer credits."""

    generation: str
    cable_m: float
    cable: str
    """Cable kind chosen for ``cable_m`` (see ``CABLE_PREFERENCE``)."""
    rate_Bps: float
    """Payload rate, one direction (B/s): line rate x protocol efficiency from the catalog."""
    latency_s: float
    """One-way latency (s): PHY of both ends + propagation + cable DSP."""
    credit: CreditSpec

    @property
    def packet_bytes(self) -> int:
        """Payload per packet used by the labs: one credit update's worth (credit unit x batch), so
        every packet returns exactly one batched credit update and batching withholds nothing."""
        return self.credit.credit_bytes * self.credit.batch


def catalog_link(generation: str, cable_m: float, buffer_bytes: int | None = None,
                 catalog: Catalog | None = None) -> CatalogLink:
    """The ``generation`` link over ``cable_m`` metres of the first cable kind that reaches.

    ``buffer_bytes`` overrides the catalog's receive buffer (bytes per direction). Raises
    ``InputError`` for an unknown generation, a length no cable reaches, or a buffer smaller than
    one packet.
    """
    catalog = catalog or load_catalog()
    try:
        gen = catalog.link(generation)
    except HardwareError as err:
        raise InputError(str(err), field="generation") from None
    if cable_m <= 0:
        raise InputError(f"cable length must be > 0 m, got {cable_m:g}", field="cables")
    errors = []
    for kind in CABLE_PREFERENCE:
        cable = catalog.cable(kind)
        try:
            cable.check_link_reach(gen, cable_m)
        except HardwareError as err:
            errors.append(str(err))
            continue
        credit = CreditSpec(buffer_bytes=int(buffer_bytes or gen.credit_buffer_B),
                            credit_bytes=int(gen.credit_unit_B),
                            return_delay_s=gen.credit_return_delay_s, batch=int(gen.credit_batch))
        link = CatalogLink(generation=gen.name, cable_m=cable_m, cable=kind, rate_Bps=gen.payload_rate_Bps,
                           latency_s=gen.phy_latency_s + cable.latency_s(cable_m, gen), credit=credit)
        if credit.buffer_bytes < link.packet_bytes:
            raise InputError(f"buffer {credit.buffer_bytes} B is smaller than one {gen.name} packet "
                             f"({link.packet_bytes} B)", field="buffers")
        return link
    raise InputError(f"no cable reaches {cable_m:g} m on {gen.name}: {errors[-1]}", field="cables")


def switch_latency_s(generation: str, catalog: Catalog | None = None) -> float:
    """Port-to-port latency (s) of the catalog switch chip whose ports run ``generation``; 0 if none."""
    catalog = catalog or load_catalog()
    for part in catalog.devices.values():
        if part.kind == "switch" and generation in part.generations.values():
            return part.latency_s
    return 0.0
