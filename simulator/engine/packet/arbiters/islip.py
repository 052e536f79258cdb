"""iSLIP (McKeown 1999) as it maps onto asynchronous, per-output arbitration.

Each output keeps a grant pointer and moves it one past the granted input only when the grant is
accepted; each input keeps an accept pointer over outputs. Here an output arbitrates the moment it
becomes free, among inputs whose crossbar is free (the engine filters busy inputs first), so a grant
to a listed input is always accepted and one iteration suffices; ``iterations`` is kept for
configurations written for slotted iSLIP and bounds how many requesters are offered a grant.
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
        ptr = self.grant
        order = [r for r in requesters if r.rank > ptr] + [r for r in requesters if r.rank <= ptr]
        for r in order[: max(1, self.iterations)]:
            # accept: the input's crossbar is free (guaranteed by the caller); update pointer
            self.grant = r.rank
            return r
        raise AssertionError("unreachable: requesters is non-empty")
