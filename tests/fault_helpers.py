"""Shared builder for the fault tests: a fault spec from keywords (``from_`` for YAML's ``from``)."""

from __future__ import annotations

from simulator.hardware.faults import FaultSpec


def fault(**kw) -> FaultSpec:
    """``FaultSpec`` from keyword arguments, ``from_`` standing for the ``from`` key."""
    return FaultSpec.model_validate({("from" if k == "from_" else k): v for k, v in kw.items()})
