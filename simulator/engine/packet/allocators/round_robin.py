"""Round-robin matching (RRM, McKeown 1999 section II): like iSLIP, but an output's grant pointer
moves one past the granted input whether or not the grant is accepted. The output pointers then
move in lock-step under load and several outputs grant the same input: about 63 % throughput with
every VOQ backlogged. The contrast with iSLIP is the point of the lab."""

from __future__ import annotations

from simulator.engine.packet.allocators.islip import ISlip


class RoundRobinMatching(ISlip):
    name = "round_robin"
    moves_on = "grant"
