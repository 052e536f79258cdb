"""Serving core (issue 25): requests, trace readers, the paged KV allocator, continuous batching and its
metrics, held to closed forms with a synthetic cost (an iteration takes a + b x tokens seconds) and to
invariants checked after every iteration."""

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import InputError, SimulationError
from simulator.workloads.serving.kv_blocks import KVBlockAllocator, capacity_blocks, kv_bytes_per_token
from simulator.workloads.serving.metrics import mean_in_system, summarize
from simulator.workloads.serving.requests import (FixedLength, GammaArrivals, LognormalLength, PoissonArrivals,
                                                  Request, UniformLength, generate, read_azure_trace,
                                                  read_burstgpt_trace)
from simulator.workloads.serving.scheduler import BatchShape, ContinuousBatchingScheduler, SchedulerConfig

DATA = Path(__file__).parent / "data" / "serving"
A_S = 0.01
"""Synthetic cost: fixed seconds per iteration (a stand-in for launch and weight reads)."""
B_S = 1e-4
"""Synthetic cost: seconds per token computed in the iteration."""


def linear_cost(shape: BatchShape) -> float:
    return A_S + B_S * shape.tokens


def checked_run(requests, config, kv, cost=linear_cost, swap_s=None):
    """Run, checking the KV invariants and the batch limits after every iteration."""
    records = []

    def observe(record):
        kv.check()
        assert record.used_blocks <= kv.capacity_blocks
        assert record.shape.tokens <= config.max_num_batched_tokens
        assert record.shape.decode_seqs + record.shape.prefill_seqs <= config.max_num_seqs
        assert record.shape.decode_seqs == sum(c for _, c in record.shape.decode_contexts)
        records.append(record)

    run = ContinuousBatchingScheduler(config, kv, cost, observer=observe, swap_s=swap_s).run(requests)
    assert [o.request_id for o in run.outcomes] == list(range(len(requests)))
    assert kv.used_blocks == 0
    kv.check()
    return run, records


# ---------------------------------------------------------------- closed forms

def test_vanishing_load_ttft_is_one_prefill_and_tpot_one_decode():
    requests = [Request(i, 100.0 * i, 300, 20) for i in range(10)]
    run, _ = checked_run(requests, SchedulerConfig(8, 2048), KVBlockAllocator(1000))
    for o in run.outcomes:
        assert o.ttft_s == pytest.approx(A_S + B_S * 300, rel=1e-9)
        assert o.tpot_s == pytest.approx(A_S + B_S * 1, rel=1e-9)
        assert o.latency_s == pytest.approx(A_S + B_S * 300 + 19 * (A_S + B_S), rel=1e-9)
    summary = summarize(run)
    assert summary.ttft.p99_s == pytest.approx(A_S + B_S * 300, rel=1e-9)
    assert run.iterations == 10 * 20


def test_vanishing_load_chunked_prefill_takes_ceil_prompt_over_budget_iterations():
    requests = [Request(0, 0.0, 1000, 3)]
    run, records = checked_run(requests, SchedulerConfig(4, 256), KVBlockAllocator(100))
    # 1000 = 3 x 256 + 232: four prefill iterations
    assert [r.shape.prefill_tokens for r in records[:4]] == [256, 256, 256, 232]
    assert [r.shape.prefill_context_tokens for r in records[:4]] == [0, 256, 512, 768]
    assert run.outcomes[0].ttft_s == pytest.approx(3 * (A_S + B_S * 256) + A_S + B_S * 232, rel=1e-12)


def test_prefix_cache_hits_skip_whole_blocks_of_prefill_and_keep_their_blocks():
    requests = [Request(0, 0.0, 300, 2)]
    kv = KVBlockAllocator(100, block_tokens=16)
    seen = []
    run = ContinuousBatchingScheduler(SchedulerConfig(4, 2048, prefix_cache_hit_fraction=0.5), kv, linear_cost,
                                      observer=lambda r: seen.append(r.used_blocks)).run(requests)
    cached = (150 // 16) * 16  # 144: whole blocks of half the prompt
    assert run.outcomes[0].cached_prompt_tokens == cached
    assert run.outcomes[0].ttft_s == pytest.approx(A_S + B_S * (300 - cached), rel=1e-12)
    assert seen[0] == math.ceil(300 / 16)  # the cached tokens' blocks are held too


def test_a_fully_cached_prompt_still_computes_its_last_token():
    run, _ = checked_run([Request(0, 0.0, 64, 1)],
                         SchedulerConfig(4, 2048, prefix_cache_hit_fraction=0.999), KVBlockAllocator(10, 16))
    # vLLM caps a hit at num_tokens - 1 = 63, whole blocks: 48 cached, 16 computed
    assert run.outcomes[0].cached_prompt_tokens == 48
    assert run.outcomes[0].ttft_s == pytest.approx(A_S + B_S * 16, rel=1e-12)


def test_saturation_throughput_is_max_num_seqs_over_the_decode_iteration():
    max_seqs = 32
    requests = [Request(i, 0.0, 8, 500) for i in range(40 * max_seqs)]

    def cost(shape):  # prefill nearly free: the decode iteration alone sets the rate
        return A_S + B_S * shape.decode_seqs + 1e-7 * shape.prefill_tokens

    run = ContinuousBatchingScheduler(SchedulerConfig(max_seqs, 4096), KVBlockAllocator(10_000), cost).run(requests)
    expected = max_seqs / (A_S + B_S * max_seqs)
    assert summarize(run).output_tokens_per_s == pytest.approx(expected, rel=0.03)


def test_goodput_counts_the_requests_within_both_slos():
    # alternating prompts of 100 and 1000 tokens, alone on the engine: TTFT 0.02 s or 0.11 s, TPOT 0.0101 s
    requests = [Request(i, 10.0 * i, 100 if i % 2 == 0 else 1000, 5 if i < 8 else 1) for i in range(10)]
    run, _ = checked_run(requests, SchedulerConfig(4, 2048), KVBlockAllocator(1000))
    span = run.outcomes[-1].finish_s
    loose = summarize(run, ttft_slo_s=0.2, tpot_slo_s=0.02)
    assert loose.slo_attainment == 1.0 and loose.goodput_requests_per_s == pytest.approx(10 / span)
    tight = summarize(run, ttft_slo_s=0.05)
    assert tight.slo_attainment == 0.5 and tight.goodput_requests_per_s == pytest.approx(5 / span)
    assert summarize(run, tpot_slo_s=0.01).slo_attainment == 0.2  # only the two 1-token requests
    # the 1-token requests have no TPOT and are left out of its percentiles
    assert math.isnan(run.outcomes[9].tpot_s)
    assert summarize(run).tpot.p99_s == pytest.approx(A_S + B_S, rel=1e-9)
    with pytest.raises(InputError, match="ttft_slo_s -1 must be a time in seconds"):
        summarize(run, ttft_slo_s=-1)


def test_littles_law_holds_within_its_statistical_error():
    rate = 20.0
    requests = generate(PoissonArrivals(rate), UniformLength(50, 400), UniformLength(10, 200), 20_000, seed=7)
    run = ContinuousBatchingScheduler(SchedulerConfig(64, 2048), KVBlockAllocator(20_000),
                                      lru_cache(maxsize=None)(linear_cost)).run(requests)
    outs = run.outcomes
    # over the whole span the integral of N(t) is the sum of the latencies: an identity
    span = max(o.finish_s for o in outs) - outs[0].arrival_s
    assert mean_in_system(outs) == pytest.approx(len(outs) / span * np.mean([o.latency_s for o in outs]), rel=1e-9)
    # in steady state: windows past the warm-up, batch means for the error
    t_end = outs[-1].arrival_s
    edges = np.linspace(0.1 * t_end, 0.9 * t_end, 11)
    diffs, ls = [], []
    arrivals = np.array([o.arrival_s for o in outs])
    latencies = np.array([o.latency_s for o in outs])
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (arrivals >= lo) & (arrivals < hi)
        ls.append(mean_in_system(outs, lo, hi))
        diffs.append(ls[-1] - inside.sum() / (hi - lo) * latencies[inside].mean())
    stderr = np.std(diffs, ddof=1) / math.sqrt(len(diffs))
    assert abs(np.mean(diffs)) <= 3 * stderr + 1e-12
    # and against the offered rate, within 5 %
    window = (arrivals >= edges[0]) & (arrivals < edges[-1])
    assert np.mean(ls) == pytest.approx(rate * latencies[window].mean(), rel=0.05)


# ---------------------------------------------------------------- invariants

def test_small_cache_preempts_and_every_request_still_finishes_once():
    requests = generate(PoissonArrivals(50.0), UniformLength(20, 120), UniformLength(20, 150), 300, seed=3)
    kv = KVBlockAllocator(40, block_tokens=8)
    run, records = checked_run(requests, SchedulerConfig(16, 256), kv)
    assert run.preemptions > 0
    assert sum(o.preemptions for o in run.outcomes) == run.preemptions
    assert sum(r.preempted for r in records) == run.preemptions
    assert max(r.used_blocks for r in records) <= 40
    for o in run.outcomes:
        assert o.arrival_s < o.first_token_s <= o.finish_s
        # at least one iteration per output token after the first, each at least A_S + B_S
        assert o.finish_s - o.first_token_s >= (o.output_tokens - 1) * (A_S + B_S) - 1e-9


def test_preemption_takes_the_newest_running_request_and_resumes_it_first():
    # two requests fill a 4-block cache (4 tokens a block); the second (newest) must give way
    requests = [Request(0, 0.0, 4, 9), Request(1, 0.0, 4, 9)]
    run, records = checked_run(requests, SchedulerConfig(2, 64), KVBlockAllocator(4, block_tokens=4))
    first, second = run.outcomes
    assert first.preemptions == 0 and second.preemptions >= 1
    assert first.finish_s < second.finish_s


def test_same_seed_same_outcome_and_another_seed_another():
    def once(seed):
        reqs = generate(GammaArrivals(30.0, 2.0), LognormalLength(200, 0.7), LognormalLength(60, 0.7), 500, seed)
        return reqs, ContinuousBatchingScheduler(SchedulerConfig(16, 512), KVBlockAllocator(300, 16),
                                                 linear_cost).run(reqs)

    assert once(11) == once(11)
    assert once(11)[0] != once(12)[0]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 40), max_seqs=st.integers(1, 6), extra_tokens=st.integers(0, 64),
       block_tokens=st.sampled_from([1, 2, 4, 16]), spare_blocks=st.integers(0, 20), chunked=st.booleans(),
       hit=st.sampled_from([0.0, 0.3, 0.9]), rate=st.floats(0.5, 500.0))
def test_property_invariants_over_random_small_configurations(seed, n, max_seqs, extra_tokens, block_tokens,
                                                             spare_blocks, chunked, hit, rate):
    max_tokens = max_seqs + extra_tokens
    prompt_hi = max(1, max_tokens // 2) if not chunked else 60
    requests = generate(PoissonArrivals(rate), UniformLength(1, prompt_hi), UniformLength(1, 30), n, seed)
    longest = max(r.prompt_tokens + r.output_tokens - 1 for r in requests)
    if not chunked and longest > max_tokens:
        with pytest.raises(InputError, match="chunked prefill is off"):
            ContinuousBatchingScheduler(SchedulerConfig(max_seqs, max_tokens, chunked_prefill=False),
                                        KVBlockAllocator(10_000, block_tokens), linear_cost).run(requests)
        return
    kv = KVBlockAllocator(-(-longest // block_tokens) + spare_blocks, block_tokens)
    config = SchedulerConfig(max_seqs, max_tokens, chunked_prefill=chunked, prefix_cache_hit_fraction=hit,
                             context_bucket_tokens=16)
    run, records = checked_run(requests, config, kv)
    assert sum(r.duration_s for r in records) == pytest.approx(run.busy_s)
    for o, r in zip(run.outcomes, requests):
        assert (o.prompt_tokens, o.output_tokens) == (r.prompt_tokens, r.output_tokens)
        assert o.arrival_s + A_S < o.first_token_s <= o.finish_s
    starts = [r.start_s for r in records]
    assert all(b >= a + d - 1e-12 for a, b, d in zip(starts, starts[1:], [r.duration_s for r in records]))


def reference_run(requests, config, capacity, block_tokens, cost=linear_cost, swap_s=None):
    """vLLM V1's schedule() written out literally, every running request visited every iteration:
    the event-driven scheduler must give exactly its outcomes. With ``config.preemption == "swap"`` a
    victim keeps its computed tokens, copied out and back in at ``swap_s`` per iteration and direction."""
    from collections import deque
    W, max_tokens, B = config.context_bucket_tokens, config.max_num_batched_tokens, block_tokens
    swap = config.preemption == "swap"
    free = capacity
    state = {r.request_id: dict(r=r, computed=0, generated=0, held=0, decoding=False, first=None, pre=0, cached=-1)
             for r in requests}
    waiting, running, done = deque(), [], {}
    t, nxt = 0.0, 0
    while True:
        while nxt < len(requests) and requests[nxt].arrival_s <= t:
            waiting.append(state[nxt])
            nxt += 1
        if not running and not waiting:
            if nxt == len(requests):
                return done
            t = requests[nxt].arrival_s
            continue
        budget, scheduled, preempted, i = max_tokens, [], 0, 0
        swapped_out = swapped_in = 0
        while i < len(running) and budget > 0:
            s = running[i]
            new = min(s["r"].prompt_tokens + s["generated"] - s["computed"], budget)
            need = -(-(s["computed"] + new) // B) - s["held"]
            while need > free:
                victim = running.pop()
                free += victim["held"]
                if swap:
                    swapped_out += victim["computed"]
                else:
                    victim["computed"] = 0
                victim.update(held=0, pre=victim["pre"] + 1, decoding=False)
                waiting.appendleft(victim)
                preempted += 1
                if victim is s:
                    break
                need = -(-(s["computed"] + new) // B) - s["held"]
            else:
                free -= need
                s["held"] += need
                scheduled.append((s, new))
                budget -= new
                i += 1
                continue
            break
        if not preempted:
            while waiting and budget > 0 and len(running) < config.max_num_seqs:
                s = waiting[0]
                total = s["r"].prompt_tokens + s["generated"]
                hit = config.prefix_cache_hit_fraction
                cached = (min(int(hit * s["r"].prompt_tokens), total - 1) // B) * B if hit else 0
                resumed = s["computed"]  # swapped out: its KV comes back
                if resumed:
                    cached = resumed
                new = min(total - cached, budget)
                if not config.chunked_prefill and new < total - cached:
                    break
                need = -(-(cached + new) // B)
                if need > free:
                    break
                waiting.popleft()
                swapped_in += resumed
                free -= need
                s.update(held=need, computed=cached)
                if s["cached"] < 0:
                    s["cached"] = cached
                running.append(s)
                scheduled.append((s, new))
                budget -= new
        decodes = [s for s, _ in scheduled if s["decoding"]]
        buckets = {}
        for s in decodes:
            b = -(-(s["computed"] + 1) // W) * W
            buckets[b] = buckets.get(b, 0) + 1
        prefills = [(s, n) for s, n in scheduled if not s["decoding"]]
        shape = BatchShape(len(decodes), tuple(sorted(buckets.items())), len(prefills), sum(n for _, n in prefills),
                           -(-sum(s["computed"] for s, _ in prefills) // W) * W)
        t += cost(shape) + (swap_s(swapped_out) if swapped_out else 0.0) + (swap_s(swapped_in) if swapped_in else 0.0)
        for s, n in scheduled:
            s["computed"] += n
            if s["computed"] == s["r"].prompt_tokens + s["generated"]:
                s["generated"] += 1
                s["decoding"] = True
                if s["first"] is None:
                    s["first"] = t
                if s["generated"] == s["r"].output_tokens:
                    running.remove(s)
                    free += s["held"]
                    done[s["r"].request_id] = (s["first"], t, s["pre"], s["cached"])


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 30), max_seqs=st.integers(1, 6), extra_tokens=st.integers(0, 40),
       block_tokens=st.sampled_from([1, 2, 4, 8]), spare_blocks=st.integers(0, 12), hit=st.sampled_from([0.0, 0.5]),
       rate=st.floats(1.0, 300.0))
def test_event_driven_scheduler_equals_the_literal_vllm_loop(seed, n, max_seqs, extra_tokens, block_tokens,
                                                             spare_blocks, hit, rate):
    requests = generate(PoissonArrivals(rate), UniformLength(1, 50), UniformLength(1, 40), n, seed)
    longest = max(r.prompt_tokens + r.output_tokens - 1 for r in requests)
    capacity = -(-longest // block_tokens) + spare_blocks
    config = SchedulerConfig(max_seqs, max_seqs + extra_tokens, prefix_cache_hit_fraction=hit,
                             context_bucket_tokens=8)
    run = ContinuousBatchingScheduler(config, KVBlockAllocator(capacity, block_tokens), linear_cost).run(requests)
    expected = reference_run(requests, config, capacity, block_tokens)
    assert {o.request_id: (o.first_token_s, o.finish_s, o.preemptions, o.cached_prompt_tokens)
            for o in run.outcomes} == expected


def test_event_driven_scheduler_equals_the_literal_vllm_loop_under_heavy_preemption():
    requests = generate(PoissonArrivals(50.0), UniformLength(20, 120), UniformLength(20, 150), 300, seed=3)
    config = SchedulerConfig(16, 256, prefix_cache_hit_fraction=0.25, context_bucket_tokens=16)
    run = ContinuousBatchingScheduler(config, KVBlockAllocator(40, 8), linear_cost).run(requests)
    assert run.preemptions > 100
    assert {o.request_id: (o.first_token_s, o.finish_s, o.preemptions, o.cached_prompt_tokens)
            for o in run.outcomes} == reference_run(requests, config, 40, 8)


# ---------------------------------------------------------------- swap preemption (vLLM V0)

SWAP_FIXED_S = 2e-5
"""Synthetic copy cost: fixed seconds per swap (a stand-in for the PCIe copy's latency)."""
SWAP_TOKEN_S = 1e-6
"""Synthetic copy cost: seconds per token of KV copied one way."""


def linear_swap(tokens):
    return SWAP_FIXED_S + SWAP_TOKEN_S * tokens


def swap_config(*args, **kwargs):
    return SchedulerConfig(*args, preemption="swap", **kwargs)


def test_swap_preemption_closed_form_of_two_requests():
    """Two 4-token prompts of 9 output tokens in a 4-block cache of 4 tokens a block. Both prefill in
    iteration 1 and decode; at iteration 6 both need their third block (context 9), none is free,
    request 1 (the newest) is swapped out with its 4 + 5 - 1 = 8 tokens. Request 0 finishes at iteration
    9 (3 blocks: request 1's 9 tokens do not fit the 1 free block before); iteration 10 swaps request 1's
    8 tokens back and computes its one missing token; it samples its 6th token and decodes 3 more."""
    requests = [Request(0, 0.0, 4, 9), Request(1, 0.0, 4, 9)]
    run, records = checked_run(requests, swap_config(2, 64), KVBlockAllocator(4, block_tokens=4), swap_s=linear_swap)
    assert run.iterations == 13 and run.preemptions == 1
    assert [(r.index, r.swapped_out_tokens) for r in records if r.swapped_out_tokens] == [(6, 8)]
    assert [(r.index, r.swapped_in_tokens) for r in records if r.swapped_in_tokens] == [(10, 8)]
    resumed = records[9]
    assert (resumed.shape.decode_seqs, resumed.shape.prefill_seqs, resumed.shape.prefill_tokens) == (0, 1, 1)
    assert resumed.shape.prefill_context_tokens == 256  # the 8 swapped-in tokens, one bucket
    assert [r.shape.prefill_tokens for r in records] == [8] + [0] * 8 + [1] + [0] * 3  # no recompute
    swap = linear_swap(8)
    first, second = run.outcomes
    assert first.first_token_s == second.first_token_s == pytest.approx(A_S + 8 * B_S, rel=1e-12)
    assert first.finish_s == pytest.approx(9 * A_S + 20 * B_S + swap, rel=1e-12)
    assert second.finish_s == pytest.approx(13 * A_S + 24 * B_S + 2 * swap, rel=1e-12)
    assert (first.preemptions, second.preemptions) == (0, 1)
    # recompute: the same schedule, but iteration 10 recomputes all 9 tokens and copies nothing
    rerun, rerecords = checked_run(requests, SchedulerConfig(2, 64), KVBlockAllocator(4, block_tokens=4))
    assert rerecords[9].shape.prefill_tokens == 9
    assert rerun.outcomes[1].finish_s == pytest.approx(13 * A_S + 32 * B_S, rel=1e-12)
    assert all(r.swapped_out_tokens == r.swapped_in_tokens == 0 for r in rerecords)


def test_swap_mode_small_cache_every_request_finishes_once_and_the_kv_cache_stays_sound():
    requests = generate(PoissonArrivals(50.0), UniformLength(20, 120), UniformLength(20, 150), 300, seed=3)
    kv = KVBlockAllocator(40, block_tokens=8)
    run, records = checked_run(requests, swap_config(16, 256), kv, swap_s=linear_swap)  # kv.check() each iteration
    assert run.preemptions > 100
    assert sum(o.preemptions for o in run.outcomes) == sum(r.preempted for r in records) == run.preemptions
    # every swapped-out token comes back (every request finishes), never both ways in one iteration
    assert sum(r.swapped_out_tokens for r in records) == sum(r.swapped_in_tokens for r in records)
    assert not any(r.swapped_out_tokens and r.swapped_in_tokens for r in records)
    assert all(bool(r.swapped_out_tokens) == bool(r.preempted) for r in records)
    assert sum(r.duration_s for r in records) == pytest.approx(run.busy_s)
    for o in run.outcomes:
        assert o.arrival_s < o.first_token_s <= o.finish_s
        assert o.finish_s - o.first_token_s >= (o.output_tokens - 1) * (A_S + B_S) - 1e-9


def prefill_computed(records):
    return sum(r.shape.prefill_tokens for r in records)


def test_swap_computes_each_prompt_once_while_recompute_computes_more():
    requests = generate(PoissonArrivals(50.0), UniformLength(20, 120), UniformLength(20, 150), 300, seed=3)
    prompts = sum(r.prompt_tokens for r in requests)
    # a budget no admission can exhaust (16 x 120 + 16 < 2048): no prefill is ever chunked, so every
    # victim is decoding and each resumption computes exactly one token
    swapped, records = checked_run(requests, swap_config(16, 2048), KVBlockAllocator(40, 8), swap_s=linear_swap)
    assert swapped.preemptions > 100
    assert prefill_computed(records) == prompts + swapped.preemptions
    recomputed, rerecords = checked_run(requests, SchedulerConfig(16, 2048), KVBlockAllocator(40, 8))
    assert recomputed.preemptions > 0
    assert prefill_computed(rerecords) > prompts + recomputed.preemptions
    # the swap copies are what the iterations took beyond the cost of their shapes
    extra = sum(r.duration_s - linear_cost(r.shape) for r in records)
    copies = sum(linear_swap(r.swapped_out_tokens) for r in records if r.swapped_out_tokens) + \
        sum(linear_swap(r.swapped_in_tokens) for r in records if r.swapped_in_tokens)
    assert extra == pytest.approx(copies, rel=1e-9)
    for r in records:
        assert r.duration_s == linear_cost(r.shape) + (linear_swap(r.swapped_out_tokens) if r.swapped_out_tokens
                                                       else 0.0) + (linear_swap(r.swapped_in_tokens)
                                                                    if r.swapped_in_tokens else 0.0)
    # chunked prefills: a swapped partial prefill resumes where it stopped, so the prompts are computed
    # once and at most one extra token per preemption (those that were decoding)
    chunked, records = checked_run(requests, swap_config(16, 256), KVBlockAllocator(40, 8), swap_s=linear_swap)
    assert prompts <= prefill_computed(records) <= prompts + chunked.preemptions
    # free copies: every iteration costs just its shape
    free, records = checked_run(requests, swap_config(16, 2048), KVBlockAllocator(40, 8), swap_s=lambda n: 0.0)
    assert all(r.duration_s == linear_cost(r.shape) for r in records)
    assert prefill_computed(records) == prompts + free.preemptions


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 30), max_seqs=st.integers(1, 6), extra_tokens=st.integers(0, 40),
       block_tokens=st.sampled_from([1, 2, 4, 8]), spare_blocks=st.integers(0, 12), hit=st.sampled_from([0.0, 0.5]),
       chunked=st.booleans(), rate=st.floats(1.0, 300.0))
def test_swap_mode_event_driven_scheduler_equals_the_literal_loop(seed, n, max_seqs, extra_tokens, block_tokens,
                                                                  spare_blocks, hit, chunked, rate):
    max_tokens = max_seqs + extra_tokens
    prompt_hi = 50 if chunked else max(1, max_tokens // 2)
    requests = generate(PoissonArrivals(rate), UniformLength(1, prompt_hi), UniformLength(1, 40), n, seed)
    longest = max(r.prompt_tokens + r.output_tokens - 1 for r in requests)
    if not chunked and longest > max_tokens:
        return
    capacity = -(-longest // block_tokens) + spare_blocks
    config = swap_config(max_seqs, max_tokens, chunked_prefill=chunked, prefix_cache_hit_fraction=hit,
                         context_bucket_tokens=8)
    run, records = checked_run(requests, config, KVBlockAllocator(capacity, block_tokens), swap_s=linear_swap)
    expected = reference_run(requests, config, capacity, block_tokens, swap_s=linear_swap)
    assert {o.request_id: (o.first_token_s, o.finish_s, o.preemptions, o.cached_prompt_tokens)
            for o in run.outcomes} == expected
    computed = prefill_computed(records)
    once = sum(r.prompt_tokens - o.cached_prompt_tokens for r, o in zip(requests, run.outcomes))
    assert once <= computed <= once + run.preemptions


def test_swap_mode_equals_the_literal_loop_under_heavy_preemption():
    requests = generate(PoissonArrivals(50.0), UniformLength(20, 120), UniformLength(20, 150), 300, seed=3)
    config = swap_config(16, 256, prefix_cache_hit_fraction=0.25, context_bucket_tokens=16)
    run = ContinuousBatchingScheduler(config, KVBlockAllocator(40, 8), linear_cost, swap_s=linear_swap).run(requests)
    assert run.preemptions > 100
    assert {o.request_id: (o.first_token_s, o.finish_s, o.preemptions, o.cached_prompt_tokens)
            for o in run.outcomes} == reference_run(requests, config, 40, 8, swap_s=linear_swap)


def test_preemption_mode_errors_name_the_field():
    with pytest.raises(InputError, match='"recompute".*or "swap"') as error:
        SchedulerConfig(4, 64, preemption="drop")
    assert error.value.field == "preemption"
    with pytest.raises(InputError, match="needs swap_s") as error:
        ContinuousBatchingScheduler(swap_config(4, 64), KVBlockAllocator(20, 16), linear_cost)
    assert error.value.field == "swap_s"
    with pytest.raises(SimulationError, match="swap_s returned -1"):
        ContinuousBatchingScheduler(swap_config(2, 64), KVBlockAllocator(4, 4), linear_cost,
                                    swap_s=lambda n: -1.0).run([Request(0, 0.0, 4, 9), Request(1, 0.0, 4, 9)])


def test_iteration_shapes_repeat_so_a_cache_hits():
    cached = lru_cache(maxsize=None)(linear_cost)
    requests = generate(PoissonArrivals(100.0), FixedLength(128), FixedLength(64), 2000, seed=1)
    ContinuousBatchingScheduler(SchedulerConfig(32, 1024), KVBlockAllocator(5000), cached).run(requests)
    info = cached.cache_info()
    assert info.hits > 10 * info.misses
    assert hash(BatchShape(1, ((256, 1),), 0, 0, 0)) == hash(BatchShape(1, ((256, 1),), 0, 0, 0))


def test_decode_contexts_are_bucketed_by_context_length():
    records = []
    ContinuousBatchingScheduler(SchedulerConfig(4, 1024, context_bucket_tokens=16), KVBlockAllocator(100, 16),
                                linear_cost, observer=records.append).run([Request(0, 0.0, 15, 4)])
    # prefill 15 tokens; decodes attend to 16, 17, 18 tokens: buckets 16, 32, 32
    assert [r.shape.decode_contexts for r in records] == [(), ((16, 1),), ((32, 1),), ((32, 1),)]


def test_scheduler_refuses_what_could_never_run():
    with pytest.raises(InputError, match="max_num_batched_tokens 8 is below max_num_seqs 16"):
        SchedulerConfig(16, 8)
    with pytest.raises(InputError, match="needs 3 KV blocks"):
        ContinuousBatchingScheduler(SchedulerConfig(2, 64), KVBlockAllocator(2, 16), linear_cost).run(
            [Request(0, 0.0, 30, 4)])
    with pytest.raises(InputError, match="before request 0"):
        ContinuousBatchingScheduler(SchedulerConfig(2, 64), KVBlockAllocator(20, 16), linear_cost).run(
            [Request(0, 1.0, 3, 4), Request(1, 0.5, 3, 4)])
    with pytest.raises(SimulationError, match="finite time > 0"):
        ContinuousBatchingScheduler(SchedulerConfig(2, 64), KVBlockAllocator(20, 16), lambda s: 0.0).run(
            [Request(0, 0.0, 3, 4)])


# ---------------------------------------------------------------- KV allocator

def test_kv_capacity_from_a_byte_budget():
    # Llama-3-70B on one of 8 GPUs: 80 layers, 8 KV heads / TP 8 = 1, head_dim 128, bf16
    per_token = kv_bytes_per_token(80, 1, 128, 2)
    assert per_token == 2 * 80 * 1 * 128 * 2 == 40960
    assert capacity_blocks(40e9, per_token, 16) == int(40e9 // (40960 * 16)) == 61035
    assert KVBlockAllocator.from_budget(40e9, per_token).capacity_blocks == 61035


def test_kv_allocator_grows_frees_and_refuses_without_change():
    kv = KVBlockAllocator(5, block_tokens=4)
    assert kv.blocks_for(0) == 0 and kv.blocks_for(1) == 1 and kv.blocks_for(8) == 2 and kv.blocks_for(9) == 3
    assert kv.grow("a", 9) and kv.held("a") == 3
    assert not kv.grow("b", 9) and kv.held("b") == 0 and kv.free_blocks == 2
    assert kv.grow("b", 8) and kv.free_blocks == 0
    kv.check()
    assert kv.free("a") == 3 and kv.free_blocks == 3
    kv._owned["b"].append(kv._free[-1])  # corrupt: one block both free and owned
    with pytest.raises(SimulationError, match="held by both"):
        kv.check()


# ---------------------------------------------------------------- requests

def test_generators_draw_the_asked_distributions():
    reqs = generate(GammaArrivals(10.0, 3.0), LognormalLength(500, 0.5), UniformLength(5, 9), 200_000, seed=0)
    gaps = np.diff([r.arrival_s for r in reqs])
    assert reqs[0].arrival_s == 0.0
    assert gaps.mean() == pytest.approx(0.1, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.03)
    assert np.mean([r.prompt_tokens for r in reqs]) == pytest.approx(500, rel=0.01)
    assert {r.output_tokens for r in reqs} == {5, 6, 7, 8, 9}
    poisson = np.diff([r.arrival_s for r in generate(PoissonArrivals(4.0), FixedLength(1), FixedLength(1),
                                                    100_000, seed=1)])
    assert poisson.std() / poisson.mean() == pytest.approx(1.0, rel=0.02)
    with pytest.raises(InputError, match="high_tokens 3 is below low_tokens 5"):
        UniformLength(5, 3)


def test_shipped_traces_read():
    azure = read_azure_trace(DATA / "azure_llm_small.csv")
    burst = read_burstgpt_trace(DATA / "burstgpt_small.csv")
    for trace in (azure, burst):
        assert len(trace.requests) == 40 and trace.warnings == ()
        assert trace.requests[0].arrival_s == 0.0
        assert all(a.arrival_s <= b.arrival_s for a, b in zip(trace.requests, trace.requests[1:]))
    # 18:15:46.0116735 -> 18:15:46.0830315: 100 ns ticks kept
    assert azure.requests[1].arrival_s == pytest.approx(0.071358, abs=1e-7)
    assert (azure.requests[0].prompt_tokens, azure.requests[0].output_tokens) == (1752, 1)
    run, _ = checked_run(azure.requests, SchedulerConfig(8, 512), KVBlockAllocator(2000))
    assert len(run.outcomes) == 40


AZURE_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0116735,100,10\n"


@pytest.mark.parametrize("row, line, column, words", [
    ("2023-11-16 18:15:47.0,100\n", 3, "GeneratedTokens", "missing field"),
    ("2023-11-16 18:15:47.0,,10\n", 3, "ContextTokens", "empty field"),
    ("2023-11-16 18:15:47.0,-5,10\n", 3, "ContextTokens", "-5 is negative"),
    ("2023-11-16 18:15:47.0,100,12.5\n", 3, "GeneratedTokens", "'12.5' is not a whole number"),
    ("2023-11-16 18:15:45.0,100,10\n", 3, "TIMESTAMP", "before the row at line 2"),
    ("yesterday,100,10\n", 3, "TIMESTAMP", "'yesterday' is not a time; write a datetime"),
    ("2023-11-16 18:15:47.0,100,0\n", 3, "GeneratedTokens", "at least 1 token"),
])
def test_azure_trace_errors_name_file_line_and_column(tmp_path, row, line, column, words):
    path = tmp_path / "trace.csv"
    path.write_text(AZURE_HEAD + row)
    with pytest.raises(InputError) as error:
        read_azure_trace(path)
    assert (error.value.file, error.value.line, error.value.field) == (str(path), line, column)
    assert str(error.value).startswith(f"{path}:{line}: {column}: ")
    assert words in error.value.message


def test_lenient_reading_warns_once_per_row_left_out(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(AZURE_HEAD + "2023-11-16 18:15:47.5,-1,3\n2023-11-16 18:15:48+00:00,200,20\n"
                    "2023-11-16 18:15:47.9,5,5\n2023-11-16 18:15:49.25,300,30\n")
    read = read_azure_trace(path, strict=False)
    assert [r.prompt_tokens for r in read.requests] == [100, 200, 300]
    assert [r.arrival_s for r in read.requests] == pytest.approx([0.0, 1.9883265, 3.2383265])
    assert [(w.line, w.field) for w in read.warnings] == [(3, "ContextTokens"), (5, "TIMESTAMP")]
    assert all("(row left out)" in w.message for w in read.warnings)


def test_burstgpt_errors(tmp_path):
    head = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,10,20,30,API log\n"
    for row, column, words in [("6,ChatGPT,10,0,10,API log\n", "Response tokens", "failed request"),
                               ("6,ChatGPT,10,20,31,API log\n", "Total tokens", "31 is not Request tokens"),
                               ("4,ChatGPT,10,20,30,API log\n", "Timestamp", "rows must be in time order")]:
        path = tmp_path / "b.csv"
        path.write_text(head + row)
        with pytest.raises(InputError) as error:
            read_burstgpt_trace(path)
        assert (error.value.line, error.value.field) == (3, column) and words in error.value.message
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Log Type\n")
    with pytest.raises(InputError, match="no column 'Total tokens'") as error:
        read_burstgpt_trace(path)
    assert error.value.line == 1


def test_output_tokens_are_counted_where_they_were_generated():
    """A window over half of a request's decode holds half of its later tokens; its first token
    counts where it was sampled; summed over a window covering everything: every token."""
    from simulator.workloads.serving.metrics import RequestOutcome, output_tokens_between

    o = RequestOutcome(0, 0.0, 1.0, 11.0, 100, 101, 0, 0)  # first token at 1 s, 100 more until 11 s
    assert output_tokens_between([o], 0.0, 6.0) == pytest.approx(1 + 50)
    assert output_tokens_between([o], 6.0, 11.0) == pytest.approx(50)
    assert output_tokens_between([o], 0.0, 12.0) == pytest.approx(101)
    assert output_tokens_between([o], 2.0, 0.5) == 0
