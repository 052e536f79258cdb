"""NCCL-like protocol constants (LL / LL128 / Simple): wire efficiency and latencies.

Loaded from ``parts/protocols.yaml``; every number there carries a source or an "assumption"
label. The constants depend on the algorithm, the protocol and the kind of link a step crosses
(``nvlink``, ``pcie``, ``network``), never on a particular topology. The ``ideal`` protocol has
efficiency 1 and zero latency: it exists for closed-form tests and labs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from simulator.errors import InputError
from simulator.hardware.yamlfile import load_file

PROTOCOL_NAMES = ("LL", "LL128", "Simple")
"""Order of the three NCCL protocols in the ``values`` lists of the parts file."""
IDEAL = "ideal"
_PARTS = Path(__file__).with_name("parts") / "protocols.yaml"
_US = 1e-6


@dataclass(frozen=True, slots=True)
class Protocol:
    """One protocol: the fraction of wire bytes that carry data."""

    name: str
    efficiency: float
    """Data bytes / wire bytes (0..1]: LL 0.5, LL128 0.9375, Simple ~1."""
    source: str

    def wire_bytes(self, data_bytes: float) -> int:
        """Bytes that cross the wire to move ``data_bytes`` of user data with this protocol."""
        return int(round(data_bytes / self.efficiency))


@dataclass(frozen=True, slots=True)
class ProtocolTable:
    """All protocol constants: efficiencies, base and per-hop latencies (s), NVLS efficiency."""

    protocols: Mapping[str, Protocol]
    base_latency_s: Mapping[str, tuple[float, float, float]]
    """Algorithm -> launch/sync latency per protocol [LL, LL128, Simple] (s)."""
    hop_latency_s: Mapping[str, Mapping[str, tuple[float, float, float]]]
    """Link kind (nvlink/pcie/network) -> algorithm -> per-step latency per protocol (s)."""
    supported: Mapping[str, tuple[str, ...]]
    per_rank_latency_s: Mapping[str, tuple[float, float, float]]
    """Algorithm -> latency per rank of the call per protocol [LL, LL128, Simple] (s); none: 0."""
    nvls_efficiency: Mapping[str, float]
    """GPU architecture -> in-switch reduction efficiency (data rate / link payload rate)."""
    architecture_of_link: Mapping[str, str]
    sources: Mapping[str, str]

    def protocol(self, name: str) -> Protocol:
        try:
            return self.protocols[name]
        except KeyError:
            raise InputError(f"unknown protocol {name!r}; choose one of {', '.join(self.protocols)}",
                             field="protocol") from None

    def _index(self, protocol: str) -> int:
        self.protocol(protocol)
        return PROTOCOL_NAMES.index(protocol)

    def base_s(self, algo: str, protocol: str) -> float:
        """Fixed cost of one collective call (s)."""
        if protocol == IDEAL:
            return 0.0
        return self.base_latency_s[algo][self._index(protocol)]

    def hop_s(self, algo: str, protocol: str, link_kind: str) -> float:
        """Latency one pipeline step adds when it crosses a link of ``link_kind`` (s)."""
        if protocol == IDEAL:
            return 0.0
        by_algo = self.hop_latency_s.get(link_kind) or self.hop_latency_s["nvlink"]
        return by_algo[algo][self._index(protocol)]

    def per_rank_s(self, algo: str, protocol: str) -> float:
        """Latency one call adds per rank (s): NCCL's linear terms (PAT); 0 for most algorithms."""
        if protocol == IDEAL or algo not in self.per_rank_latency_s:
            return 0.0
        return self.per_rank_latency_s[algo][self._index(protocol)]

    def supports(self, algo: str, protocol: str) -> bool:
        return protocol in self.supported.get(algo, ())

    def nvls_efficiency_for(self, link_generation: str) -> float:
        """NVLS efficiency for GPUs whose NVLink is ``link_generation``; 1.0 for unknown (synthetic)
        generations, which model an ideal switch."""
        arch = self.architecture_of_link.get(link_generation)
        return self.nvls_efficiency.get(arch, 1.0) if arch else 1.0


def _triple(entry: dict, where: str) -> tuple[float, float, float]:
    values = entry.get("values") if isinstance(entry, dict) else None
    if not isinstance(values, list) or len(values) != 3:
        raise InputError("expected {values: [LL, LL128, Simple], source: ...}", file=str(_PARTS), field=where)
    if not entry.get("source"):
        raise InputError("every constant needs a source or an 'assumption' label", file=str(_PARTS), field=where)
    return tuple(float(v) * _US for v in values)  # type: ignore[return-value]


def parse_table(raw: dict) -> ProtocolTable:
    """Build the table from the parsed YAML mapping (validated; one-line errors)."""
    protos = {}
    for name, spec in raw["protocols"].items():
        eff = float(spec["efficiency"])
        if not 0 < eff <= 1:
            raise InputError("efficiency must be in (0, 1]", file=str(_PARTS), field=f"protocols.{name}")
        protos[name] = Protocol(name, eff, str(spec.get("source", "")))
    base = {a: _triple(e, f"base_latency_us.{a}") for a, e in raw["base_latency_us"].items()}
    hop = {k: MappingProxyType({a: _triple(e, f"hop_latency_us.{k}.{a}") for a, e in algos.items()})
           for k, algos in raw["hop_latency_us"].items()}
    sources = {f"base.{a}": e["source"] for a, e in raw["base_latency_us"].items()}
    per_rank = {a: _triple(e, f"per_rank_latency_us.{a}") for a, e in raw.get("per_rank_latency_us", {}).items()}
    sources.update({f"per_rank.{a}": e["source"] for a, e in raw.get("per_rank_latency_us", {}).items()})
    nvls = {arch: float(e["value"]) for arch, e in raw["nvls_efficiency"].items()}
    sources.update({f"nvls.{arch}": e["source"] for arch, e in raw["nvls_efficiency"].items()})
    return ProtocolTable(
        protocols=MappingProxyType(protos), base_latency_s=MappingProxyType(base),
        hop_latency_s=MappingProxyType(hop),
        supported=MappingProxyType({a: tuple(p) for a, p in raw["supported"].items()}),
        per_rank_latency_s=MappingProxyType(per_rank),
        nvls_efficiency=MappingProxyType(nvls),
        architecture_of_link=MappingProxyType(dict(raw["architecture_of_link"])),
        sources=MappingProxyType(sources))


@lru_cache(maxsize=None)
def load_protocols(path: str | None = None) -> ProtocolTable:
    """The protocol table from ``path`` (default: the built-in parts file). Cached; immutable."""
    file = Path(path) if path else _PARTS
    return parse_table(load_file(file))
