"""iSLIP (McKeown 1999): round-robin grant and accept pointers that move only when a grant is
accepted, and only in the first iteration. The rule desynchronizes the output pointers under load,
so with every VOQ backlogged one iteration reaches 100 % throughput and no VOQ starves.

A separable allocator over ``arbiters.RoundRobin`` on both sides; the pointers are the arbiters'
states (``grant_ptr``/``accept_ptr`` show them as the paper draws them, modulo N)."""

from __future__ import annotations

from simulator.engine.packet.allocators.separable import Separable
from simulator.engine.packet.arbiters import RoundRobin


class ISlip(Separable):
    name = "islip"
    grant_arbiter = RoundRobin
    accept_arbiter = RoundRobin
    moves_on = "accept"

    @property
    def grant_ptr(self) -> list[int]:
        """Per output: the input with the highest grant priority."""
        return [p % self.n_in for p in self.grant_state]

    @grant_ptr.setter
    def grant_ptr(self, pointers) -> None:
        self.grant_state = list(pointers)

    @property
    def accept_ptr(self) -> list[int]:
        """Per input: the output with the highest accept priority."""
        return [p % self.n_out for p in self.accept_state]

    @accept_ptr.setter
    def accept_ptr(self, pointers) -> None:
        self.accept_state = list(pointers)
