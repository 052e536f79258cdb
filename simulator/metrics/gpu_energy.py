"""GPU board energy of a step: the time in each power state times the board power of that state.

The kernel model gives a step's kernel time by power state (``StepCost.state_s``: HBM copy,
memory-bound compute, tensor-bound); the rest of the step, while a GPU waits on communication, is
counted at the idle state (assumption: NCCL's kernels keep a few SMs polling, far from any loaded
state; the idle figure was measured with the clocks down, so this is a lower bound). Interconnect
energy (``metrics.energy``) is added by the caller: transport (dynamic, per byte moved) and static
fabric power are reported apart from the GPUs'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

WAIT_STATE = "idle"
"""Power state of a GPU waiting on communication (see the module text)."""


@dataclass(frozen=True, slots=True)
class GpuEnergy:
    """Energy of the GPUs of one step (J) and what it is made of."""

    gpus: int
    by_state_J: dict[str, float]
    """All GPUs together, by power state."""

    @property
    def total_J(self) -> float:
        return sum(self.by_state_J.values())


def gpu_energy(state_s: Mapping[str, float], power_W: Callable[[str], float], gpus: int,
               makespan_s: float) -> GpuEnergy:
    """``gpus`` GPUs each spending ``state_s`` in kernels, idle for the rest of ``makespan_s``."""
    busy = sum(state_s.values())
    by = {state: gpus * power_W(state) * s for state, s in state_s.items() if s > 0}
    wait = max(0.0, makespan_s - busy)
    if wait > 0:
        by[WAIT_STATE] = by.get(WAIT_STATE, 0.0) + gpus * power_W(WAIT_STATE) * wait
    return GpuEnergy(gpus, by)
