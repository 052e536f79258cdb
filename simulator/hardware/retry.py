"""Link-level retry: the closed form of throughput vs bit error rate and replay-buffer size.

A link protects each packet with a CRC. A bad packet is NAKed (or its ACK never comes and the
sender's replay timer fires) and the sender replays it from its replay buffer together with every
packet sent after it: go-back-N (NVLink and PCIe both retry at the link layer this way).

With ``p`` the probability that a packet of ``b`` bits is hit, ``p = 1 - (1 - BER)^b`` (``b`` =
8 x packet bytes), ``R`` the round trip in packet times (from starting a packet to its ACK or NAK
arriving: the packet, the wire both ways, the receiver's turnaround) and ``W`` the packets the
replay buffer holds, the sender keeps ``w = min(W, R)`` packets unacknowledged. Count from a moment
the window is empty (the start, or a NAK's arrival). If the first error hits the j-th packet
(j <= w), j - 1 packets are delivered and the NAK arrives R + j - 1 slots later; if none of the w
packets is hit, w are delivered in R slots and the pipeline goes on as if it had restarted. So by
renewal-reward, with ``q = 1 - p`` and ``S = sum_{i<w} i q^i``,

    efficiency = (w q^w + p S) / (R + p S)

which is ``(1 - p) / (1 + (R - 1) p)`` when the buffer covers the round trip (w = R: each error
costs one round trip of packets), ``w / R`` without errors (a buffer shorter than the round trip
stalls the link), and ``1 - p`` for R = 1. The flow engine uses it as an effective channel
capacity (``topology.faults`` scales the channel's payload rate); ``fabricsim lab retry`` puts it
next to a seeded go-back-N simulation.

A packet is not replayed for ever: after ``replay_limit`` failed transmissions the link layer gives
up on it and retrains the link (PCIe: the REPLAY_NUM rollover), or, end to end, the queue pair
fails (InfiniBand's retry count). A packet fails all of them with probability ``p^L``; once that is
``DOWN_PROBABILITY`` or more, most packets end in a retrain rather than a delivery, the link never
gets a packet across reliably, and it is declared down (``link_down``): above ``unusable_ber``
(8.4e-4 for a 272 B NVLink packet and 4 transmissions) a ``ber`` fault takes the link down instead
of slowing it to a rate that would round to zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from pydantic import Field

from simulator.hardware.part import Bytes, Part, Seconds
from simulator.hardware.yamlfile import YamlFile
from simulator.units import BITS_PER_BYTE

_PARTS = Path(__file__).with_name("parts") / "retry.yaml"


class RetryPart(Part):
    """Replay parameters of one interconnect kind (``parts/retry.yaml``)."""

    packet_B: Bytes
    """Bytes on the wire per packet the CRC covers (payload + header + CRC)."""
    replay_buffer_B: Bytes
    """Sender's replay buffer: bytes it may send before the oldest is acknowledged."""
    ack_delay_s: Seconds
    """Receiver's CRC check and ACK/NAK turnaround (s), on top of propagation both ways."""
    replay_limit: int = Field(ge=1)
    """Transmissions of one packet after which the link layer stops replaying it (retrains the link)."""


DOWN_PROBABILITY = 0.5
"""A link is declared down when a packet fails all its ``replay_limit`` transmissions at least this
often (assumption: a link that retrains for most of its packets delivers none reliably; PCIe takes
a link down when retraining fails, NVLink reports it as a fatal link error). The threshold BER moves
little with it: p^L = 0.1 instead would lower 8.4e-4 to 3.8e-4 on NVLink."""


@dataclass(frozen=True, slots=True)
class RetryPoint:
    """The closed form at one operating point."""

    packet_error: float
    """p: probability that one packet is hit by at least one bit error."""
    round_trip_packets: int
    """R: packet times from sending a packet to learning whether it arrived."""
    window_packets: int
    """W: packets the replay buffer holds."""
    efficiency: float
    """Goodput / payload rate (0..1]."""


def packet_error(ber: float, packet_B: float) -> float:
    """Probability that a packet of ``packet_B`` bytes has at least one bit error."""
    if ber <= 0:
        return 0.0
    return -math.expm1(BITS_PER_BYTE * packet_B * math.log1p(-ber))


def unusable_ber(packet_B: float, replay_limit: int) -> float:
    """The lowest bit error rate at which a ``packet_B``-byte packet fails all ``replay_limit``
    transmissions with probability ``DOWN_PROBABILITY`` (the link is then down, module docstring)."""
    p = DOWN_PROBABILITY ** (1.0 / replay_limit)
    return -math.expm1(math.log1p(-p) / (BITS_PER_BYTE * packet_B))


def link_down(ber: float, part: RetryPart) -> bool:
    """Whether a link of ``part``'s kind at bit error rate ``ber`` is declared down."""
    return ber >= unusable_ber(part.packet_B, part.replay_limit)


def retry_point(ber: float, *, packet_B: float, replay_buffer_B: float, round_trip_s: float,
                rate_Bps: float) -> RetryPoint:
    """Go-back-N efficiency of a link (module docstring); ``round_trip_s`` counts propagation both
    ways plus the ACK turnaround, ``rate_Bps`` is the payload rate of one direction."""
    p = packet_error(ber, packet_B)
    packet_s = packet_B / rate_Bps
    rtt = 1 + math.ceil(round_trip_s / packet_s - 1e-9)
    window = max(1, int(replay_buffer_B // packet_B))
    w = min(window, rtt)
    i = np.arange(w, dtype=float)
    p_s = p * float(np.sum(i * np.exp(i * math.log1p(-p)))) if p < 1 else 0.0
    eff = (w * (1 - p) ** w + p_s) / (rtt + p_s)
    return RetryPoint(packet_error=p, round_trip_packets=rtt, window_packets=window, efficiency=eff)


@lru_cache(maxsize=1)
def retry_parts() -> dict[str, RetryPart]:
    """Interconnect kind (``nvlink``, ``pcie``, ``network``, ``c2c``) -> replay parameters."""
    data = YamlFile(_PARTS).data
    return {kind: RetryPart.model_validate(values) for kind, values in data["retry"].items()}
