"""iSLIP (McKeown 1999) as it maps onto asynchronous, per-output arbitration.

In slotted iSLIP each output keeps a grant pointer and moves it one past the granted input only when the grant is
accepted; each input keeps an accept pointer over outputs. Here an output arbitrates the moment it
becomes free, among inputs whose crossbar is free (the engine filters busy inputs first), so a grant
to a listed input is always accepted and one iteration suffices; ``iterations`` is kept for
configurations written for slotted iSLIP. Under saturation the shares equal round-robin's, as
with slotted iSLIP on an uncontended input.
"""

from __future__ import annotations

from simulator.engine.packet.arbiters.base import Arbiter


class ISlip(Arbiter):
    __slots__ = ("grant", "iterations")
    name = "islip"

    def __init__(self, iterations: int = 1, **_: object) -> None:
        self.grant = -(1 << 62)
        """Grant pointer: rank of the input accepted last."""
        self.iterations = iterations

    def pick(self, requesters):
        # Grant: first requester after the pointer (wrapping). Accept: immediate, because every
        # listed input has a free crossbar; so the pointer moves one past the granted input.
        ptr = self.grant
        for r in requesters:
            if r.rank > ptr:
                self.grant = r.rank
                return r
        r = requesters[0]
        self.grant = r.rank
        return r
