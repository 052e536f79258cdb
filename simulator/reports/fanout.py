"""Several engine observers on one run (a trace and a credit recorder, say)."""

from __future__ import annotations

from simulator.engine.packet.observer import EngineObserver

_HOOKS = ("run_started", "link_busy", "credits", "queue", "delivered", "transfer", "run_finished")


class Fanout(EngineObserver):
    """Forwards every observer hook to each of ``observers`` in order."""

    def __init__(self, *observers: EngineObserver) -> None:
        self.observers = observers
        for hook in _HOOKS:
            bound = [getattr(o, hook) for o in observers]
            setattr(self, hook, self._forward(bound))
        flow = [o.flow_run for o in observers if hasattr(o, "flow_run")]  # optional (engine.dispatch)
        if flow:
            self.flow_run = self._forward(flow)

    @staticmethod
    def _forward(bound):  # noqa: ANN001, ANN205
        def call(*args):  # noqa: ANN002, ANN202
            for method in bound:
                method(*args)
        return call


def combine(*observers: EngineObserver | None) -> EngineObserver | None:
    """None, the single observer given, or a :class:`Fanout` of several."""
    present = [o for o in observers if o is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else Fanout(*present)
