"""Base class of every part: a frozen, strict pydantic model whose every number names its source.

A part's ``sources`` maps each numeric field to a citation (whitepaper section, NCCL file, spec
clause) or to text starting with ``assumption:`` (unpublished, with the reasoning) or ``derived:``
(arithmetic on sourced numbers). A part with an unsourced number does not load.
"""

from __future__ import annotations

from typing import Annotated, Any, Iterator, Mapping

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator

from simulator.units import BITS_PER_BYTE, UnitError, parse_quantity


def _quantity(dimension: str, scale: float = 1.0):
    def parse(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return parse_quantity(value, dimension) * scale  # type: ignore[arg-type]
            except UnitError as exc:
                raise ValueError(str(exc)) from None
        return value
    return BeforeValidator(parse)


Seconds = Annotated[float, _quantity("time")]
"""Time (s); YAML may write '64 ns'."""
Meters = Annotated[float, _quantity("length")]
"""Length (m); YAML may write '1.5 m'."""
Watts = Annotated[float, _quantity("power")]
"""Power (W); YAML may write '11 W'."""
BytesPerSecond = Annotated[float, _quantity("rate")]
"""Data rate (B/s, one direction); YAML may write '8 TB/s'."""
BitsPerSecond = Annotated[float, _quantity("rate", BITS_PER_BYTE)]
"""Bit rate (bit/s); YAML may write '200 Gbps'; a bare number is bit/s."""
Bytes = Annotated[float, _quantity("data")]
"""Data size (B); YAML may write '80 GB'."""
PicojoulesPerBit = Annotated[float, _quantity("energy_per_bit", 1e12)]
"""Energy per bit (pJ/bit); YAML may write '5 pJ/bit'; a bare number is pJ/bit."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Part(BaseModel):
    """A sourced, immutable description of a physical part (or of one facet of it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: dict[str, str] = {}
    """Field name -> citation, ``assumption: ...`` or ``derived: ...``."""

    @model_validator(mode="after")
    def _every_number_sourced(self) -> "Part":
        missing = [f for f in self.numeric_fields() if not self.sources.get(f, "").strip()]
        if missing:
            raise ValueError(f"no source for {', '.join(missing)} (add sources.{missing[0]}: "
                             f"'<citation>' or 'assumption: <reasoning>')")
        stray = sorted(set(self.sources) - set(type(self).model_fields))
        if stray:
            raise ValueError(f"sources names unknown field(s) {', '.join(stray)}")
        return self

    def numeric_fields(self) -> list[str]:
        """Fields holding a number (or a mapping of numbers) that must carry a source.

        Every number written in a parts file counts, and every non-zero default.
        """
        out = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name == "sources" or (name not in self.model_fields_set and not value):
                continue  # a zero left at its default means "does not apply" (a GPU forwards nothing)
            if _is_number(value) or (isinstance(value, Mapping) and value
                                     and all(_is_number(v) for v in value.values())):
                out.append(name)
        return out

    def walk(self, path: str = "") -> Iterator[tuple[str, "Part"]]:
        """This part and every nested part, with a dotted path (for audits and tests)."""
        yield path, self
        for name in type(self).model_fields:
            value = getattr(self, name)
            items = value if isinstance(value, (tuple, list)) else (value,)
            for i, item in enumerate(items):
                if isinstance(item, Part):
                    sub = f"{path}.{name}" if not isinstance(value, (tuple, list)) else f"{path}.{name}[{i}]"
                    yield from item.walk(sub.lstrip("."))
