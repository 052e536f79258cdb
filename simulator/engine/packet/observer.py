"""The observer protocol: hooks the engine calls while it runs; the base class does nothing.

Traces and live monitors subclass ``EngineObserver`` and override what they need. The engine calls
hooks only when an observer is given, so an unobserved run pays one ``is None`` test per hop.
Times are simulated seconds.
"""

from __future__ import annotations


class EngineObserver:
    """Do-nothing observer; override any subset."""

    def run_started(self, network) -> None:
        """Before the first event; ``network`` exposes ``fabric``, ``ports`` and ``inbufs``."""

    def link_busy(self, cid: int, start_s: float, end_s: float, packet) -> None:
        """Channel ``cid`` serializes ``packet`` from ``start_s`` to ``end_s``."""

    def credits(self, cid: int, t_s: float, available: int) -> None:
        """The sender of ``cid`` holds ``available`` credits from ``t_s`` on."""

    def queue(self, cid: int, t_s: float, depth: int) -> None:
        """The receive buffer of ``cid`` holds ``depth`` packets waiting to be forwarded from ``t_s``."""

    def delivered(self, packet, t_s: float) -> None:
        """``packet``'s tail reached its destination at ``t_s``."""

    def transfer(self, tid: int, start_s: float, finish_s: float) -> None:
        """Transfer ``tid`` finished."""

    def run_finished(self, result) -> None:
        """After the last event, with the ``RunResult``."""
