"""Weighted round-robin: iSLIP whose grant pointer stays on an input for ``weight`` accepted
first-iteration grants before moving past it (shares proportional to weights under saturation):
``arbiters.WeightedRoundRobin`` grants, ``arbiters.RoundRobin`` accepts."""

from __future__ import annotations

from simulator.engine.packet.allocators.separable import Separable
from simulator.engine.packet.arbiters import RoundRobin, WeightedRoundRobin as WeightedArbiter


class WeightedRoundRobin(Separable):
    name = "weighted_rr"
    grant_arbiter = WeightedArbiter
    accept_arbiter = RoundRobin
    moves_on = "accept"
