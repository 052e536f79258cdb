"""Knobs of the packet engine: transfer unit, switching mode, arbitration, VCs, credit policy.

Validated once here (an unknown arbiter name or a non-positive size fails before the run starts);
inside the engine the values are read as typed attributes, never by string key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from simulator.errors import InputError


@dataclass(frozen=True)
class PacketConfig:
    """How the packet engine cuts, moves and arbitrates traffic (sizes in bytes, times in s)."""

    packet_bytes: int = 4096
    """Payload bytes per packet: the speed/fidelity knob (256 B for link-level fidelity, 1 MiB for
    multi-GiB collectives in seconds). Assumption: 4 KiB default, a typical RDMA MTU."""
    header_bytes: int = 0
    """0: serialize payload at ``Channel.rate_Bps`` (protocol efficiency folded in); >0: serialize
    payload+header at ``Channel.line_rate_Bps`` and count payload+header against credits."""
    switching: Literal["cut_through", "store_and_forward"] = "cut_through"
    arbiter: str = "round_robin"
    """Output arbiter of every switch port (see ``arbiters.ARBITERS``)."""
    arbiters: Mapping[str, str] = field(default_factory=dict)
    """Per-switch override: switch node name -> arbiter name."""
    arbiter_weights: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Switch node name -> {upstream node name -> weight}: weights of ``weighted_rr``, priorities of
    ``fixed_priority`` (higher wins). Inputs not named weigh 1."""
    islip_iterations: int = 1
    voq: bool = True
    """Virtual output queues at switch inputs; False: one FIFO per input and VC (HOL blocking)."""
    speedup: float = 1.0
    """Crossbar speedup: an input moves a packet through the crossbar in (output serialization /
    speedup), so with speedup 1 an input feeds one output at a time."""
    vcs: int = 1
    """Virtual channels per link; a packet uses VC min(hop, vcs-1) (distance classes: with vcs >= the
    longest route, credit dependencies cannot form a cycle)."""
    credit_policy: Literal["static", "shared"] = "static"
    """Receive buffer across VCs: static equal partition, or a shared pool above a per-VC minimum."""
    vc_min_bytes: int = 0
    """Shared policy: bytes reserved per VC (0: one packet's worth)."""
    seed: int = 0
    watchdog_interval_s: float | None = None
    """No-progress time that declares a deadlock while packets are in flight. None: automatic."""

    def __post_init__(self) -> None:
        from simulator.engine.packet.arbiters import ARBITERS

        def bad(field_name: str, msg: str) -> InputError:
            return InputError(msg, field=f"packet.{field_name}")

        if self.packet_bytes <= 0:
            raise bad("packet_bytes", f"must be > 0, got {self.packet_bytes}")
        if self.header_bytes < 0:
            raise bad("header_bytes", f"must be >= 0, got {self.header_bytes}")
        if self.switching not in ("cut_through", "store_and_forward"):
            raise bad("switching", f"unknown {self.switching!r}; choose cut_through or store_and_forward")
        for where, name in [("arbiter", self.arbiter)] + [(f"arbiters.{k}", v) for k, v in self.arbiters.items()]:
            if name not in ARBITERS:
                raise bad(where, f"unknown arbiter {name!r}; known: {', '.join(sorted(ARBITERS))}")
        if self.speedup <= 0:
            raise bad("speedup", f"must be > 0, got {self.speedup}")
        if self.vcs < 1:
            raise bad("vcs", f"must be >= 1, got {self.vcs}")
        if self.credit_policy not in ("static", "shared"):
            raise bad("credit_policy", f"unknown {self.credit_policy!r}; choose static or shared")
        if self.islip_iterations < 1:
            raise bad("islip_iterations", f"must be >= 1, got {self.islip_iterations}")
        if self.watchdog_interval_s is not None and self.watchdog_interval_s <= 0:
            raise bad("watchdog_interval_s", f"must be > 0, got {self.watchdog_interval_s}")

    def arbiter_for(self, switch: str) -> str:
        """Arbiter name used by ``switch``."""
        return self.arbiters.get(switch, self.arbiter)

    @property
    def wire_bytes(self) -> int:
        """Bytes a full packet occupies on the wire and in buffers."""
        return self.packet_bytes + self.header_bytes
