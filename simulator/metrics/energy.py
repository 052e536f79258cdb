"""Energy and power of a run: static interconnect power over the run plus pJ/bit x bits actually moved.

Static power (switch chips, always-on optics, retimers, NICs, SerDes idle) comes from
``Fabric.static_power_W``; dynamic energy from each channel's ``energy_pJ_per_bit`` (by component
kind) times the payload bits the engine counted on that channel. Component kinds are kept apart so
reports can show where the energy goes; the total is by construction the sum of the parts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from simulator.engine.result import RunResult
from simulator.topology.fabric import Fabric
from simulator.units import BITS_PER_BYTE

PJ = 1e-12


@dataclass(frozen=True, slots=True)
class EnergyReport:
    """Energy of one run, by component kind. Joules, watts, seconds."""

    duration_s: float
    static_W: dict[str, float]
    """Always-on power by component kind."""
    dynamic_J: dict[str, float]
    """Traffic-proportional energy by component kind."""
    bytes_delivered: int

    @property
    def static_J(self) -> dict[str, float]:
        return {k: w * self.duration_s for k, w in self.static_W.items()}

    @property
    def total_static_J(self) -> float:
        return sum(self.static_J.values())

    @property
    def total_dynamic_J(self) -> float:
        return sum(self.dynamic_J.values())

    @property
    def total_J(self) -> float:
        return self.total_static_J + self.total_dynamic_J

    @property
    def average_power_W(self) -> float:
        """Mean interconnect power during the run (static + dynamic)."""
        return self.total_J / self.duration_s if self.duration_s > 0 else sum(self.static_W.values())

    @property
    def pJ_per_byte(self) -> float:
        """Transport energy per payload byte delivered end to end (pJ/B): the dynamic, per-byte
        energy only (SerDes, cables, switch ports moving bits); static power is reported apart
        (``static_J``), as it is drawn whether or not these bytes move. inf when nothing moved."""
        return self.total_dynamic_J / self.bytes_delivered / PJ if self.bytes_delivered else float("inf")

    def as_dict(self) -> dict:
        return {
            "duration_s": self.duration_s,
            "static_W": dict(self.static_W),
            "static_J": self.static_J,
            "dynamic_J": dict(self.dynamic_J),
            "total_J": self.total_J,
            "average_power_W": self.average_power_W,
            "transport_pJ_per_byte": self.pJ_per_byte if self.bytes_delivered else None,
        }


def _pj_per_bit_matrix(fabric: Fabric) -> tuple[list[str], np.ndarray]:
    """Component kinds and a (kinds x channels) matrix of pJ/bit."""
    kinds = sorted({k for ch in fabric.channels for k in ch.energy_pJ_per_bit})
    matrix = np.zeros((len(kinds), len(fabric.channels)))
    index = {k: i for i, k in enumerate(kinds)}
    for ch in fabric.channels:
        for kind, pj in ch.energy_pJ_per_bit.items():
            matrix[index[kind], ch.id] = pj
    return kinds, matrix


def energy_report(fabric: Fabric, result: RunResult) -> EnergyReport:
    """Static power over the run's makespan plus dynamic energy of the bytes each channel carried."""
    kinds, matrix = _pj_per_bit_matrix(fabric)
    bits = np.asarray(result.channel_bytes, dtype=float) * BITS_PER_BYTE
    per_kind = matrix @ bits * PJ if kinds else np.zeros(0)
    dynamic: dict[str, float] = defaultdict(float)
    for kind, joules in zip(kinds, per_kind):
        dynamic[kind] += float(joules)
    return EnergyReport(duration_s=result.makespan_s, static_W=dict(fabric.static_power_W),
                        dynamic_J=dict(dynamic), bytes_delivered=result.bytes_delivered)
