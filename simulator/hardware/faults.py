"""Faults: what is broken or degraded in a fabric, as written under ``faults:`` or given by ``--fault``.

A fault names the links or devices it hits with glob patterns over device names (as link specs
do, but always with full names such as ``compute0.gpu1``):

- ``link_down``: the links between a ``from`` and a ``to`` device go down (both directions);
  ``links: N`` takes only the first N of the matching parallel links (lowest index first).
- ``degraded_width``: the links train at ``lanes`` differential pairs per direction instead of
  their full width (an NVLink 5 link on one of its two pairs, a PCIe x16 link at x8); rates scale
  with the surviving lanes.
- ``switch_down``: ``device`` switches (NVSwitch chips, PCIe switches, IB switches) or every
  device of an ``enclosure`` (a whole NVSwitch tray) disappear with all their links.
- ``retimer_down``: a retimer on the links fails, so the links through it go down (the links
  must have retimers).
- ``ber``: the links run at bit error rate ``ber``; link-level retry (``hardware.retry``) turns it
  into an effective payload rate.

Without ``at`` a fault holds for the whole run. With ``at: 150us`` it strikes at that simulated
time of every run (flow engine only; what happens to traffic in flight is in docs/faults.md).
This module only describes faults; ``topology.faults`` applies them to a built fabric.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from simulator.hardware.part import Seconds
from simulator.units import format_seconds

FaultKind = Literal["link_down", "degraded_width", "switch_down", "retimer_down", "ber"]
FAULT_KINDS: tuple[str, ...] = FaultKind.__args__  # type: ignore[attr-defined]

_LINK_KINDS = ("link_down", "degraded_width", "retimer_down", "ber")
_NEEDS: dict[str, tuple[str, ...]] = {"degraded_width": ("lanes",), "ber": ("ber",)}
_ONLY: dict[str, tuple[str, ...]] = {"lanes": ("degraded_width",), "ber": ("ber",),
                                     "device": ("switch_down",), "enclosure": ("switch_down",),
                                     "from": _LINK_KINDS, "to": _LINK_KINDS, "links": _LINK_KINDS}


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Globs = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_as_list), Field(min_length=1)]
"""One glob pattern or a list of them over full device names."""


class FaultSpec(BaseModel):
    """One fault; which keys apply depends on ``kind`` (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    kind: FaultKind
    """Which fault: ``link_down``, ``degraded_width``, ``switch_down``, ``retimer_down`` or ``ber``."""
    from_: Globs | None = Field(default=None, alias="from")
    """Link faults: devices at one end of the links."""
    to: Globs | None = None
    """Link faults: devices at the other end."""
    links: int | None = Field(default=None, ge=1)
    """Link faults: only the first N matching physical links (default: all of them)."""
    lanes: int | None = Field(default=None, ge=1)
    """degraded_width: surviving differential pairs per direction (PCIe: the trained width, x8 -> 8)."""
    ber: float | None = Field(default=None, gt=0, lt=1, allow_inf_nan=False)
    """ber: bit error rate on the wire after any FEC (errors per bit, e.g. 1e-12)."""
    device: Globs | None = None
    """switch_down: switch devices that fail."""
    enclosure: Globs | None = None
    """switch_down: enclosures (trays) whose every device fails."""
    at: Seconds | None = Field(default=None, ge=0)
    """Simulated time at which the fault strikes during each run (s; YAML may write '150us');
    omitted: the fault holds for the whole run."""

    @field_validator("at")
    @classmethod
    def _finite_at(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"must be a finite time such as 150us (omit 'at' for a fault that holds for the "
                             f"whole run), got {value}")
        return value

    @model_validator(mode="after")
    def _keys_fit_kind(self) -> "FaultSpec":
        given = {"lanes": self.lanes, "ber": self.ber, "device": self.device, "enclosure": self.enclosure,
                 "from": self.from_, "to": self.to, "links": self.links}
        for key, value in given.items():
            if value is not None and self.kind not in _ONLY[key]:
                raise ValueError(f"{key!r} does not apply to {self.kind} (it applies to {', '.join(_ONLY[key])})")
        for key in _NEEDS.get(self.kind, ()):
            if given[key] is None:
                raise ValueError(f"{self.kind} needs {key!r}")
        if self.kind in _LINK_KINDS and (self.from_ is None or self.to is None):
            raise ValueError(f"{self.kind} needs 'from' and 'to' (device name patterns at the two ends)")
        if self.kind == "switch_down" and (self.device is None) == (self.enclosure is None):
            raise ValueError("switch_down needs exactly one of 'device' (switch names) or 'enclosure' (a tray)")
        return self

    def describe(self) -> str:
        """One line for reports, e.g. ``switch_down enclosure=switch_tray0``."""
        parts = [self.kind]
        for key, value in (("from", self.from_), ("to", self.to), ("device", self.device),
                           ("enclosure", self.enclosure), ("links", self.links), ("lanes", self.lanes),
                           ("ber", self.ber), ("at", self.at)):
            if value is not None:
                shown = "|".join(value) if isinstance(value, list) else format_seconds(value) if key == "at" else \
                    f"{value:g}" if isinstance(value, float) else value
                parts.append(f"{key}={shown}")
        return " ".join(str(p) for p in parts)


def parse_fault_flag(text: str) -> dict[str, Any]:
    """``--fault KIND:key=value,key=value`` -> the mapping a YAML fault would be (values stay
    strings except numbers); e.g. ``switch_down:enclosure=switch_tray0`` or
    ``degraded_width:from=server.gpu0,to=server.psw0,lanes=8``. Raises ValueError on bad syntax
    (a key given twice, ``at=1us,at=2us``, included: it was the last one silently)."""
    kind, sep, rest = text.partition(":")
    if not kind.strip():
        raise ValueError("expected KIND:key=value,... e.g. switch_down:enclosure=switch_tray0")
    out: dict[str, Any] = {"kind": kind.strip()}
    for item in filter(None, (x.strip() for x in rest.split(","))) if sep else ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        key, value = key.strip(), value.strip()
        if key in out or (key == "kind"):
            raise ValueError(f"{key!r} given twice ({key}={out.get(key, out['kind'])!r} and {key}={value!r}); "
                             f"give it once" if key != "kind" else "the kind goes before ':', not as kind=")
        if key in ("links", "lanes"):
            try:
                out[key] = int(value)
            except ValueError:
                raise ValueError(f"{key} must be a whole number, got {value!r}") from None
        elif key == "ber":
            try:
                out[key] = float(value)
            except ValueError:
                raise ValueError(f"ber must be a number such as 1e-8, got {value!r}") from None
        else:
            out[key] = value.split("|") if "|" in value else value
    return out
