"""The topology file's schema: frozen pydantic models, unknown keys rejected.

A topology is a list of *enclosures* (servers, compute trays, switch trays), each replicated
``count`` times with its own devices and internal links, plus top-level devices and links that
join them. Devices and enclosures with a ``count`` are named ``<name><i>`` (i from 0); a device
inside an enclosure is ``<enclosure instance>.<device>``, e.g. ``tray3.gpu1``. Links select their
endpoints with glob patterns (inside an enclosure relative to it) and pair them with a pattern:

- ``all``: every ``from`` device with every ``to`` device (NVSwitch planes, leaf/spine);
- ``one_to_one``: i-th with i-th (GPU i and NIC i);
- ``blocks``: contiguous blocks of the longer list onto the shorter (2 GPUs per PCIe switch);
- ``round_robin``: i-th ``from`` with ``to[i mod len(to)]`` (rail-optimized NIC to leaf).

``links_per_pair`` is one number or a list with one entry per ``to`` device (HGX H100: 5, 4, 4, 5).
Quantities are strings with units ("1.5 m", "64 KiB") or numbers in base units (m, B).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, field_validator

from simulator.hardware.faults import FaultSpec
from simulator.topology.fabric import AllocatorName, CrossbarMode
from simulator.topology.switch_designs import Queueing
from simulator.units import parse_quantity

Pattern = Literal["all", "one_to_one", "blocks", "round_robin"]
PATTERNS: tuple[str, ...] = ("all", "one_to_one", "blocks", "round_robin")


def _quantity(dimension: str):  # noqa: ANN202
    def parse(value: Any) -> Any:
        if isinstance(value, (str, int, float)):
            return parse_quantity(value, dimension)  # type: ignore[arg-type]
        return value
    return BeforeValidator(parse)


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value


Length = Annotated[float, _quantity("length"), Field(ge=0)]
"""Metres."""
DataSize = Annotated[float, _quantity("data"), Field(gt=0)]
"""Bytes."""
Selector = Annotated[list[str], BeforeValidator(_as_list), Field(min_length=1)]
"""One glob pattern or a list of them, matched against device names."""
Name = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CableSpec(_Model):
    """What carries a link between its two ends."""

    kind: str = "trace"
    """Catalog cable name: ``trace`` (board/backplane), ``copper_passive``, ``copper_active``, ``optical``."""
    length: Length = 0.0
    """Cable length (m); sets propagation delay and is checked against the reach of passive copper."""


class LinkSpec(_Model):
    """A set of physical links made by one pattern between two device selections."""

    name: str | None = None
    """Optional label; a file that ``extends`` this one can override the link by this name."""
    from_: Selector = Field(alias="from")
    to: Selector
    pattern: Pattern = "all"
    generation: str
    """Catalog link generation: ``nvlink3/4/5``, ``pcie3..6``, ``ib_ndr`` ..."""
    width: int | None = Field(default=None, ge=1, le=16)
    """PCIe lanes (x1..x16); the generation's default when omitted."""
    max_payload: DataSize | None = None
    """PCIe max payload size (B), sets TLP efficiency; the generation's default when omitted."""
    links_per_pair: Annotated[list[Annotated[int, Field(ge=1)]], BeforeValidator(_as_list)] = [1]
    """Parallel links per connected pair; one number, or one per ``to`` device."""
    cable: CableSpec = CableSpec()
    retimers: int = Field(default=0, ge=0)
    """Retimers on each link (PCIe: at most two)."""
    retimer: str | None = None
    """Catalog retimer part; ``<generation>_retimer`` when omitted."""
    credit_buffer: DataSize | None = None
    """Override of the receive buffer per channel (B); the generation's default when omitted."""


class SchedulingSpec(_Model):
    """A switch's crossbar scheduling; omitted fields take the run's defaults (``bench``/``lab`` flags)."""

    arbiter: AllocatorName | None = None
    """The scheduling design: one record each in ``simulator/topology/switch_designs.py`` (what each
    does: ``fabricsim bench --help``, docs/model.md "Switch scheduler")."""
    crossbar: CrossbarMode | None = None
    """``output`` (each output arbitrates when it frees), ``matching`` (request-grant-accept every
    cell time) or ``auto`` (matching for the designs that exist only as matchers: their records say
    ``matching_only``)."""
    iterations: int | None = Field(default=None, ge=1)
    """Request-grant-accept rounds per cell time (matching crossbar)."""
    speedup: float | None = Field(default=None, gt=0)
    """Crossbar speedup: matchings per cell time (matching), or how much faster an input feeds the crossbar than the link (output)."""
    queueing: Queueing | None = None
    """Input buffers: virtual output queues, or one FIFO per VC (head-of-line blocking)."""
    output_queue_packets: int | None = Field(default=None, ge=1)
    """Matching crossbar: packets each output queue (per VC) holds after the crossbar."""
    shared_buffer: bool | None = None
    """Matching crossbar: output queues keep one slot each and share the rest, (output_queue_packets - 1) x outputs (a shared-memory switch)."""


class DeviceSpec(_Model):
    """``count`` devices of one catalog part (or one device when ``count`` is omitted)."""

    name: Name
    part: str
    count: int | None = Field(default=None, ge=1)
    group: str | None = None
    """Enclosure label of a top-level device (inside an enclosure the instance name is used)."""
    scheduling: SchedulingSpec | None = None
    """Switches only: crossbar scheduling of these devices."""


class EnclosureSpec(_Model):
    """A server or tray: devices and the links inside it, replicated ``count`` times."""

    name: Name
    count: int | None = Field(default=None, ge=1)
    devices: list[DeviceSpec] = Field(min_length=1)
    links: list[LinkSpec] = []


class TopologyModel(_Model):
    """A whole topology file after validation (``extends`` already merged)."""

    name: str
    description: str = ""
    parts: list[str] = []
    """Extra parts files (relative to the topology file) added to the built-in catalog."""
    enclosures: list[EnclosureSpec] = []
    devices: list[DeviceSpec] = []
    links: list[LinkSpec] = []
    faults: list[FaultSpec] = []
    """Faults applied after the fabric is built (``hardware.faults``); ``--fault`` adds more."""

    _sources: Any = PrivateAttr(default=None)
    """The :class:`~simulator.topology.loader.SourceMap` of the file it came from (set by the loader)."""

    @field_validator("enclosures", "devices")
    @classmethod
    def _unique_names(cls, items: list[Any]) -> list[Any]:
        names = [i.name for i in items]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError(f"names must be unique, repeated: {', '.join(dups)}")
        return items

    @property
    def sources(self) -> Any:
        """Where each value was written (None for a model built in code)."""
        return self._sources
