"""The teaching labs as one request -> outcome path: ``fabricsim lab NAME`` parses its flags into
the lab's request (:class:`CreditsLab`, :class:`ArbitrationLab`, :class:`HolLab`,
:class:`SwitchLab`, :class:`RetryLab`: fields as the flags, lists as the flags write them, e.g.
``buffers="1K:64K"``), ``simulator.api.lab`` takes the same request, and both get the same
:class:`LabOutcome` from :func:`run_lab`: the rows (``to_dict()`` is ``--json``) and the lab's
explanation computed from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from simulator.errors import InputError
from simulator.workloads.sizes import size_list


@dataclass(frozen=True, slots=True)
class CreditsLab:
    """One saturated link: simulated throughput beside min(line rate, buffer / credit RTT)."""

    generation: tuple[str, ...] = ()
    """Link generations from the catalog; empty: the lab's defaults."""
    buffers: str = "1K:64K"
    cables: str = "0.5,1,2,5,10,30,100"
    """Cable lengths in metres, comma-separated."""


@dataclass(frozen=True, slots=True)
class ArbitrationLab:
    """N inputs saturate one output: each input's share, Jain index, starvation, per arbiter."""

    inputs: int = 4
    generation: str = "nvlink5"


@dataclass(frozen=True, slots=True)
class HolLab:
    """Head-of-line blocking with and without VOQs; static vs shared credit pools under incast."""

    incast: int = 7
    hot_load: float = 2 / 3
    speedup: float = 2.0
    generation: str = "nvlink5"
    seed: int = 0
    arbiter: str | None = None
    crossbar: str | None = None
    iterations: int | None = None


@dataclass(frozen=True, slots=True)
class SwitchLab:
    """N x N switch, uniform i.i.d. traffic: saturation throughput, fairness and delay per design."""

    ports: int = 8
    load: float = 0.6
    slots: int = 2000
    design: tuple[str, ...] = ()
    """Only these designs; empty: all."""
    seed: int = 0
    curves: bool = False
    """Also the delay-vs-load curves (the lab's figure)."""


@dataclass(frozen=True, slots=True)
class RetryLab:
    """Link-level retry: goodput vs bit error rate and replay-buffer size (go-back-N)."""

    generation: str = "nvlink5"
    bers: str = "1e-12,1e-9,1e-7,1e-6,3e-6,1e-5"
    buffers: str = "2K,4K,16K,64K"
    packets: int = 40_000
    seed: int = 0


LabRequest = CreditsLab | ArbitrationLab | HolLab | SwitchLab | RetryLab


@dataclass(frozen=True)
class LabOutcome:
    """A lab's rows (a list, or for ``hol`` its two parts by name), its explanation, and what
    its figure needs beyond the rows (``curves`` of the switch lab)."""

    lab: str
    result: Any
    explanation: str = ""
    curves: Any = None
    request: Any = field(default=None, compare=False)

    def to_dict(self) -> Any:
        """The ``--json`` output of ``fabricsim lab NAME``: the rows as the lab gives them."""
        return self.result


def buffers(text: str) -> list[int]:
    """``--buffers``: sizes as ``1K:64K`` (doubling) or a list; errors name the flag."""
    try:
        return size_list(text)
    except InputError as err:
        raise InputError(err.message, field="buffers") from None


def lengths(text: str) -> list[float]:
    """``--cables``: lengths in metres, comma-separated, each > 0."""
    try:
        out = [float(part) for part in text.split(",")]
    except ValueError:
        raise InputError(f"cable lengths are metres separated by commas, got {text!r}", field="cables") from None
    if any(m <= 0 for m in out):
        raise InputError("cable lengths must be > 0 m", field="cables")
    return out


def bers(text: str) -> list[float]:
    """``--bers``: bit error rates in [0, 1), comma-separated."""
    try:
        out = [float(part) for part in text.split(",")]
    except ValueError:
        raise InputError(f"bit error rates are numbers separated by commas (1e-12,1e-8), got {text!r}",
                         field="bers") from None
    if any(not 0 <= b < 1 for b in out):
        raise InputError("bit error rates must be in [0, 1)", field="bers")
    return out


def _credits(r: CreditsLab, status: Callable[[str], None]) -> LabOutcome:
    from simulator.workloads.labs.credits import DEFAULT_GENERATIONS, credit_sweep, explain_credits

    rows = credit_sweep(tuple(r.generation or DEFAULT_GENERATIONS), buffers(r.buffers), lengths(r.cables))
    return LabOutcome("credits", rows, explain_credits(rows))


def _arbitration(r: ArbitrationLab, status: Callable[[str], None]) -> LabOutcome:
    from simulator.workloads.labs.arbitration import arbitration_lab, explain_arbitration

    rows = arbitration_lab(n_inputs=r.inputs, generation=r.generation)
    return LabOutcome("arbitration", rows, explain_arbitration(rows))


def _hol(r: HolLab, status: Callable[[str], None]) -> LabOutcome:
    from simulator.workloads.labs.hol import explain_hol, hol_lab

    result = hol_lab(n_incast=r.incast, hot_load=r.hot_load, generation=r.generation, speedup=r.speedup,
                     seed=r.seed, arbiter=r.arbiter or "round_robin", crossbar=r.crossbar or "auto",
                     iterations=r.iterations or 1)
    return LabOutcome("hol", result, explain_hol(result))


def _switch(r: SwitchLab, status: Callable[[str], None]) -> LabOutcome:
    from simulator.workloads.labs.switch import CURVE_DESIGNS, DESIGNS, delay_curves, explain_switch, switch_lab
    from simulator.workloads.labs.switch import design as find_design

    if r.ports < 2:
        raise InputError(f"need at least 2 ports, got {r.ports}", field="ports")
    if r.slots < 100:
        raise InputError(f"need at least 100 cell times to measure, got {r.slots}", field="slots")
    designs = [find_design(d) for d in r.design] if r.design else list(DESIGNS)
    status(f"simulating {len(designs)} designs on a {r.ports}x{r.ports} switch ...")
    rows = switch_lab(r.ports, designs, slots=r.slots, load=r.load, seed=r.seed)
    curves = None
    if r.curves:
        status("delay-vs-load curves for the figure ...")
        labels = [d.label for d in designs]
        curves = delay_curves(r.ports, labels=[x for x in labels if x in CURVE_DESIGNS], slots=min(r.slots, 2000),
                              seed=r.seed)
    return LabOutcome("switch", rows, explain_switch(rows), curves)


def _retry(r: RetryLab, status: Callable[[str], None]) -> LabOutcome:
    from simulator.workloads.labs.retry import explain_retry, retry_sweep

    rows = retry_sweep(r.generation, bers(r.bers), buffers(r.buffers), packets=r.packets, seed=r.seed)
    return LabOutcome("retry", rows, explain_retry(rows))


LABS: dict[type, Callable[[Any, Callable[[str], None]], LabOutcome]] = {
    CreditsLab: _credits, ArbitrationLab: _arbitration, HolLab: _hol, SwitchLab: _switch, RetryLab: _retry}
"""Request type -> the lab that answers it."""


def run_lab(request: LabRequest, status: Callable[[str], None] | None = None) -> LabOutcome:
    """Run a lab; ``status(text)`` hears what a long lab is doing (a status line)."""
    outcome = LABS[type(request)](request, status or (lambda _text: None))
    return LabOutcome(outcome.lab, outcome.result, outcome.explanation, outcome.curves, request)
