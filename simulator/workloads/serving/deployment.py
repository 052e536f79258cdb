"""A deployment serving a stream of requests: instances of a pool, each a continuous-batching
scheduler, or a prefill pool and a decode pool with the KV cache moved between them.

**Units.** A pool's scheduling units are its attention groups: one per instance, or ``ep / tp`` per
expert-parallel instance; each runs its own :class:`ContinuousBatchingScheduler` over its own KV
cache, with the pool's :class:`IterationModel`. Requests are dealt to units round-robin in arrival
order (a load balancer without feedback: the symmetric case, where every unit sees the same rate).

**Aggregated.** Each unit serves its requests, prefill and decode in the same batches.

**Disaggregated** (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al. ISCA 2024; vLLM's
disaggregated prefill with a KV connector). A request is first served by a prefill unit as a
request of one output token (the prefill and its sample). Its KV cache (``kv_bytes(prompt)``, all
layers) then moves to a decode unit, chosen round-robin in the order prefills finish, layer by
layer as the prefill proceeds: the transfer starts when the prefill does (or when both ends are
free of earlier transfers: each prefill unit sends, and each decode unit receives, one KV cache at
a time, first come first served) and lasts ``kv_time_s(src, dst, bytes)``, but cannot end before
the prefill's last layer has been computed and sent (``prefill end + kv_time / layers``). The
request then joins the decode unit with ``prompt - 1`` tokens of remote KV: that unit computes the
last prompt token, samples the first output token (the one the user sees first, as vLLM's proxy
streams the decode instance's output) and decodes the rest. KV blocks on the prefill side are freed
when its prefill ends (assumption: the sender's blocks are held until sent in vLLM; prefill pools
hold few requests at a time, so their KV cache is not what limits them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from simulator.errors import SimulationError
from simulator.hardware.kernels import POWER_STATES
from simulator.workloads.serving.capacity import KvCapacity
from simulator.workloads.serving.iteration import IterationModel
from simulator.workloads.serving.kv_blocks import KVBlockAllocator
from simulator.workloads.serving.metrics import RequestOutcome
from simulator.workloads.serving.requests import Request
from simulator.workloads.serving.scheduler import ContinuousBatchingScheduler, IterationRecord, SchedulerConfig


@dataclass(frozen=True)
class Pool:
    """The units of one pool and what each runs."""

    role: str
    """``serve`` (aggregated), ``prefill`` or ``decode``."""
    units: int
    gpus_per_unit: int
    model: IterationModel
    config: SchedulerConfig
    capacity: KvCapacity
    swap_out_s: Callable[[int], float] | None = None
    """Swap preemption: seconds to copy the KV of N tokens from the unit's GPUs to host memory."""
    swap_in_s: Callable[[int], float] | None = None
    """And back."""


@dataclass(slots=True)
class UnitLoad:
    """What one unit did over a run."""

    requests: int = 0
    iterations: int = 0
    preemptions: int = 0
    busy_s: float = 0.0
    communication_s: float = 0.0
    state_s: dict = field(default_factory=lambda: dict.fromkeys(POWER_STATES, 0.0))
    transport_J: float = 0.0
    peak_blocks: int = 0
    tokens: int = 0
    """Tokens computed (prefill and decode)."""
    window_end_s: float = math.inf
    """The arrival window's end: the ``window_`` figures count the iterations that start before it."""
    window_busy_s: float = 0.0
    window_state_s: dict = field(default_factory=lambda: dict.fromkeys(POWER_STATES, 0.0))
    window_transport_J: float = 0.0
    window_messages: dict = field(default_factory=dict)
    """(collective, message bytes) -> times it ran in the window's iterations (for link loads)."""


@dataclass(frozen=True)
class PoolRun:
    pool: Pool
    units: list[UnitLoad]

    @property
    def busy_s(self) -> float:
        return sum(u.busy_s for u in self.units)


@dataclass(frozen=True)
class KvMove:
    """One request's KV cache between the pools."""

    request_id: int
    src_unit: int
    dst_unit: int
    bytes: int
    prefill_end_s: float
    start_s: float
    done_s: float

    @property
    def exposed_s(self) -> float:
        """How long the request waited on the transfer after its prefill ended."""
        return max(0.0, self.done_s - self.prefill_end_s)


@dataclass(frozen=True)
class DeploymentRun:
    """Every request's outcome (by request_id), each pool's load, each KV move (disaggregated)."""

    outcomes: tuple[RequestOutcome, ...]
    pools: list[PoolRun]
    kv_moves: tuple[KvMove, ...] = ()


def _serve_unit(pool: Pool, requests: Sequence[Request], load: UnitLoad) -> list[RequestOutcome]:
    """One unit serving ``requests`` (arrival order; their own ids), its load recorded."""
    kv = KVBlockAllocator(pool.capacity.blocks, pool.capacity.block_tokens)
    cost = pool.model.cost

    def watch(record: IterationRecord) -> None:
        c = cost(record.shape)
        load.communication_s += c.communication_s
        load.transport_J += c.transport_J
        for state, s in c.state_s.items():
            load.state_s[state] += s
        if record.start_s < load.window_end_s:
            load.window_busy_s += record.duration_s
            load.window_transport_J += c.transport_J
            messages = load.window_messages
            for coll, nbytes, times in c.messages:
                key = (coll, nbytes)
                messages[key] = messages.get(key, 0) + times
            for state, s in c.state_s.items():
                load.window_state_s[state] += s
        load.tokens += record.shape.tokens
        if record.used_blocks > load.peak_blocks:
            load.peak_blocks = record.used_blocks

    local = [Request(i, r.arrival_s, r.prompt_tokens, r.output_tokens, r.remote_kv_tokens)
             for i, r in enumerate(requests)]
    run = ContinuousBatchingScheduler(pool.config, kv, pool.model.iteration_s, watch, swap_s=pool.swap_out_s,
                                      swap_in_s=pool.swap_in_s).run(local)
    load.requests += len(requests)
    load.iterations += run.iterations
    load.preemptions += run.preemptions
    load.busy_s += run.busy_s
    return list(run.outcomes)


def _deal(requests: Sequence[Request], units: int) -> list[list[Request]]:
    return [list(requests[u::units]) for u in range(units)]


def window_end(requests: Sequence[Request]) -> float:
    """The arrival window's end: the last arrival (a run's steady state is measured before it)."""
    return requests[-1].arrival_s if requests else 0.0


def serve_aggregated(requests: Sequence[Request], pool: Pool,
                     on_unit: Callable[[int, int], None] | None = None) -> DeploymentRun:
    """Requests dealt round-robin to the pool's units, each served prefill and decode together."""
    loads = [UnitLoad(window_end_s=window_end(requests)) for _ in range(pool.units)]
    outcomes: list[RequestOutcome | None] = [None] * len(requests)
    for u, share in enumerate(_deal(requests, pool.units)):
        for r, o in zip(share, _serve_unit(pool, share, loads[u])):
            outcomes[r.request_id] = _renamed(o, r.request_id)
        if on_unit:
            on_unit(u + 1, pool.units)
    return DeploymentRun(_all(outcomes), [PoolRun(pool, loads)])


def serve_disaggregated(requests: Sequence[Request], prefill: Pool, decode: Pool,
                        kv_bytes: Callable[[int], int], kv_time_s: Callable[[int, int, int], float],
                        layers: int, on_unit: Callable[[int, int], None] | None = None) -> DeploymentRun:
    """Prefill on one pool, decode on the other, the KV cache moved between them (module docstring).
    ``kv_time_s(prefill_unit, decode_unit, bytes)`` is one KV cache's transfer time alone."""
    p_loads = [UnitLoad(window_end_s=window_end(requests)) for _ in range(prefill.units)]
    d_loads = [UnitLoad(window_end_s=window_end(requests)) for _ in range(decode.units)]
    total = prefill.units + decode.units
    prefilled: list[tuple[float, int, int, RequestOutcome]] = []
    for u, share in enumerate(_deal(requests, prefill.units)):
        only = [Request(r.request_id, r.arrival_s, r.prompt_tokens, 1) for r in share]
        for r, o in zip(share, _serve_unit(prefill, only, p_loads[u])):
            prefilled.append((o.finish_s, r.request_id, u, o))
        if on_unit:
            on_unit(u + 1, total)
    prefilled.sort(key=lambda x: (x[0], x[1]))
    src_free = [0.0] * prefill.units
    dst_free = [0.0] * decode.units
    moves: list[KvMove] = []
    decode_in: list[list[tuple[Request, int]]] = [[] for _ in range(decode.units)]
    for k, (end_s, rid, src, p) in enumerate(prefilled):
        dst = k % decode.units
        original = requests[rid]
        nbytes = kv_bytes(original.prompt_tokens)
        alone = _check(kv_time_s(src, dst, nbytes))
        start = max(p.admitted_s, src_free[src], dst_free[dst])
        done = max(start + alone, end_s + alone / layers)
        src_free[src] = dst_free[dst] = done
        moves.append(KvMove(rid, src, dst, nbytes, end_s, start, done))
        decode_in[dst].append((Request(rid, done, original.prompt_tokens, original.output_tokens,
                                       original.prompt_tokens - 1), src))
    first = {rid: o for _, rid, _, o in prefilled}
    outcomes: list[RequestOutcome | None] = [None] * len(requests)
    for u, arrivals in enumerate(decode_in):
        arrivals.sort(key=lambda x: (x[0].arrival_s, x[0].request_id))
        share = [r for r, _ in arrivals]
        for r, o in zip(share, _serve_unit(decode, share, d_loads[u])):
            p = first[r.request_id]
            original = requests[r.request_id]
            outcomes[r.request_id] = RequestOutcome(
                r.request_id, original.arrival_s, o.first_token_s, o.finish_s, original.prompt_tokens,
                original.output_tokens, p.preemptions + o.preemptions, p.cached_prompt_tokens, p.admitted_s)
        if on_unit:
            on_unit(prefill.units + u + 1, total)
    moves.sort(key=lambda m: m.request_id)
    return DeploymentRun(_all(outcomes), [PoolRun(prefill, p_loads), PoolRun(decode, d_loads)], tuple(moves))


def _renamed(o: RequestOutcome, request_id: int) -> RequestOutcome:
    return RequestOutcome(request_id, o.arrival_s, o.first_token_s, o.finish_s, o.prompt_tokens, o.output_tokens,
                          o.preemptions, o.cached_prompt_tokens, o.admitted_s)


def _all(outcomes: list[RequestOutcome | None]) -> tuple[RequestOutcome, ...]:
    missing = [i for i, o in enumerate(outcomes) if o is None]
    if missing:
        raise SimulationError(f"{len(missing)} requests were never served (first: {missing[0]})")
    return tuple(outcomes)  # type: ignore[arg-type]


def units_for(instances: int, tp: int, ep: int) -> int:
    """Scheduling units of ``instances`` instances: their attention groups."""
    return instances * (ep // tp if ep > 1 else 1)


def gpus_for(instances: int, tp: int, ep: int) -> int:
    return instances * max(tp, ep)


def _check(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise SimulationError(f"a KV transfer took {value!r} s")
    return value
