"""iSLIP (McKeown 1999) as it maps onto asynchronous, per-output arbitration.

In slotted iSLIP each output keeps a grant pointer and moves it one past the granted input only when the grant is
accepted; each input keeps an accept pointer over outputs. Here an output arbitrates the moment it
becomes free, among inputs whose crossbar is free (the engine filters busy inputs first), so a grant
to a listed input is always accepted and one iteration suffices; ``iterations`` is kept for
configurations written for slotted iSLIP. Under saturation the shares equal round-robin's, as
with slotted iSLIP on an uncontended input.
"""

from __future__ import annotations

from simulator.engine.packet.arbiters.round_robin import RoundRobin


class ISlip(RoundRobin):
    """Grant pointer moves one past the accepted input; accept is immediate (see module docstring),
    so the grant step is round-robin's and only the configuration differs."""

    __slots__ = ("iterations",)
    name = "islip"

    def __init__(self, iterations: int = 1, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.iterations = iterations
