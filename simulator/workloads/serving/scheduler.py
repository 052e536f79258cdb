"""Continuous batching over a paged KV cache, as vLLM's V1 scheduler does it, driven by a
discrete-event loop over iterations whose durations come from an injected cost function.

The rules, and where each comes from (vLLM ``vllm/v1/core/sched/scheduler.py``, ``Scheduler``;
SGLang ``python/sglang/srt/managers/``):

1. **One token budget per iteration** (``max_num_batched_tokens``), shared by decode tokens and
   prefill chunks; at most ``max_num_seqs`` requests running (vLLM ``schedule()``: ``token_budget
   = self.max_num_scheduled_tokens``, ``max_num_running_reqs``). There is no prefill or decode
   phase in the batch: each request is scheduled the tokens it still lacks, ``num_tokens -
   num_computed_tokens``, capped by what is left of the budget (chunked prefill, Sarathi-Serve's
   idea; SGLang's ``PrefillAdder`` with ``rem_chunk_tokens`` carries one chunked request at a time,
   as this loop ends up doing). As in vLLM's config check, ``max_num_batched_tokens >=
   max_num_seqs``, so every running decode is scheduled every iteration.
2. **Running requests first, in admission order** (the ``while req_index < len(self.running)``
   loop): decodes take one token each; a request whose prefill is unfinished (at most one, the
   newest) takes the next chunk.
3. **KV blocks on demand** (``kv_cache_manager.allocate_slots``): a request holds the blocks of
   the tokens it has computed plus those scheduled now; decode asks for one more block each time
   the sequence crosses a block boundary.
4. **Preemption by recompute when blocks run out**: while a running request's blocks do not fit,
   the newest running request is preempted (``preempted_req = self.running.pop()`` under the FCFS
   policy; ``_preempt_request``): its blocks are freed, its computed tokens reset to 0, and it goes
   back to the *front* of the waiting queue (``self.waiting.prepend_request``). If the request that
   needed the blocks is itself the newest, it is the one preempted. On resumption it recomputes its
   prompt and the tokens it had generated as one prefill (``num_new_tokens = request.num_tokens -
   num_computed_tokens``). SGLang's ``ScheduleBatch.retract_decode`` retracts by another order (the
   fewest output tokens, then the longest input, first).

   **Or by swap** (``SchedulerConfig(preemption="swap")``; vLLM v0.6 ``vllm/core/scheduler.py``:
   ``_preempt`` with ``PreemptionMode.SWAP``, ``_swap_out`` / ``_swap_in``; SGLang has no swap, and
   vLLM V1 dropped it): the same victim (the newest running) has the tokens in its KV cache copied
   to host memory (a decoding request: all it has computed, its prompt and its generated tokens but
   the last sampled; the partial prefill: its computed tokens), its HBM blocks are freed, and it goes
   to the front of the waiting queue *keeping* its computed and generated tokens. It is admitted again
   by rule 5, as any waiting head, once its blocks fit: those of its computed tokens plus the tokens
   scheduled now; its computed tokens are copied back and count as the chunk's context, and it is
   scheduled the tokens it still lacks, ``prompt + generated - computed``: exactly 1 for a request
   that was decoding (a 1-token prefill chunk that samples its next token, after which it decodes
   again), the rest of the prompt for a partial prefill. Its first-token time is not touched. The
   copies are costed by the caller's ``swap_s(tokens)``, one way, per iteration and direction (V0
   gathers a step's blocks into one ``blocks_to_swap_out`` / ``blocks_to_swap_in`` list): the
   iteration that swaps out lasts ``iteration_s(shape) + swap_s(out tokens)``, the one that swaps in
   ``iteration_s(shape) + swap_s(in tokens)`` (never both: nothing is admitted in an iteration that
   preempted). Simplified, and assumptions: the copy is not overlapped with compute (V0's
   ``Worker.execute_worker`` issues it before the forward pass); host memory is unbounded (V0
   bounds it by ``swap_space``, 4 GiB per GPU by default, and raises "Aborted due to the lack of CPU
   swap space" past it); the copy is of tokens, not whole blocks (a caller may round up); V0's
   separate ``swapped`` queue, served before new prefills, is the front of the waiting queue here.
5. **Waiting requests, FCFS, only when nothing was preempted this iteration** (``if not
   preempted_reqs``): the head of the queue is admitted while a running slot and budget remain and
   its blocks fit; a head that does not fit stops admission (no skipping ahead); with
   ``chunked_prefill=False`` a head whose whole remaining prefill exceeds the budget stops it too
   (``if not enable_chunked_prefill and num_new_tokens > token_budget: break``).
6. **Prefix-cache hits as a parameter** (and remote KV: a request of a disaggregated decode instance
   arrives with ``remote_kv_tokens`` of its prompt's KV, used at its first admission like a hit of
   exactly that many tokens): a fraction of each prompt is already in the cache
   (``get_computed_blocks``): whole blocks only, never the last token (vLLM recomputes at least one
   token for the logits: ``max_cache_hit_length = request.num_tokens - 1``). Those tokens cost no
   prefill compute but their blocks are held by the request (no sharing between requests is
   modelled: an upper bound on the memory they take).
7. **First token**: the iteration that completes a request's prefill samples its first token
   (``update_from_output``), at that iteration's end; each later iteration samples one more; the
   request finishes at the end of the iteration that samples its last token and frees its blocks.

Time: the loop advances by ``iteration_s(shape)`` per iteration (plus its swap copies, rule 4),
``shape`` a :class:`BatchShape` (a small frozen, hashable summary, so a caller may wrap its cost
function in ``functools.lru_cache``); requests that arrived by an iteration's start join the
waiting queue before it is scheduled; an idle engine jumps to the next arrival.

Speed: a running decode costs nothing per iteration. Its context grows by one token per iteration,
so the iterations at which it needs its next block and at which it finishes are known when its
decode starts; they wait in two heaps (stale entries of a preempted request are skipped by an
epoch), and per iteration the loop touches only the requests with an event. A swapped request that
resumes decoding goes through the same path as any finished prefill, which pushes its heap entries.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from simulator.errors import InputError, SimulationError
from simulator.workloads.serving.kv_blocks import KVBlockAllocator
from simulator.workloads.serving.metrics import RequestOutcome, ServingRun
from simulator.workloads.serving.requests import Request

PREEMPTION_MODES = ("recompute", "swap")
"""The values of :attr:`SchedulerConfig.preemption` (rule 4)."""

DEFAULT_CONTEXT_BUCKET_TOKENS = 256
"""assumption: decode contexts are summarized to 256-token buckets (16 blocks of vLLM's 16 tokens) in
a :class:`BatchShape`: decode attention reads each sequence's KV, so a bucket moves its cost by at
most 256 tokens' reads per sequence, while shapes repeat often enough for a cache to hit."""


@dataclass(frozen=True, slots=True)
class BatchShape:
    """What one iteration computes, summarized so that equal shapes cost the same (hashable)."""

    decode_seqs: int
    """Running requests that compute one token this iteration."""
    decode_contexts: tuple[tuple[int, int], ...]
    """The decode sequences' context lengths as ``(bucket_tokens, count)`` pairs, ascending: ``count``
    sequences attend to more than ``bucket_tokens - context_bucket_tokens`` and at most
    ``bucket_tokens`` tokens (the new token included)."""
    prefill_seqs: int
    """Requests computing a prefill chunk this iteration."""
    prefill_tokens: int
    """Tokens of those chunks (exact: the GEMMs' row count with ``decode_seqs``)."""
    prefill_context_tokens: int
    """Tokens already in the cache before the chunks (cached prefixes and earlier chunks), summed
    and rounded up to a whole bucket: what the chunks' attention reads besides themselves."""

    @property
    def tokens(self) -> int:
        """All tokens computed this iteration: decode_seqs + prefill_tokens."""
        return self.decode_seqs + self.prefill_tokens


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The scheduler's limits (vLLM's ``SchedulerConfig`` names)."""

    max_num_seqs: int
    """Most requests running at once."""
    max_num_batched_tokens: int
    """Token budget of one iteration, decode tokens and prefill chunks together."""
    chunked_prefill: bool = True
    """Split a prefill that does not fit the budget over iterations (vLLM V1's default)."""
    prefix_cache_hit_fraction: float = 0.0
    """Fraction of each prompt already in the prefix cache, 0 <= f < 1 (whole blocks, see rule 6)."""
    context_bucket_tokens: int = DEFAULT_CONTEXT_BUCKET_TOKENS
    """Bucket of decode contexts in :class:`BatchShape`; a multiple of the KV block size."""
    preemption: str = "recompute"
    """How a preempted request gives back its blocks (rule 4): ``"recompute"`` (vLLM V1, the default:
    its KV is dropped and recomputed) or ``"swap"`` (vLLM V0's ``preemption_mode="swap"``: its KV is
    copied to host memory and back)."""

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "context_bucket_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} {value!r} must be a whole number >= 1", field=name)
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise InputError(f"max_num_batched_tokens {self.max_num_batched_tokens} is below max_num_seqs "
                             f"{self.max_num_seqs}; give at least {self.max_num_seqs} (vLLM's rule: every "
                             "running request must get its decode token)", field="max_num_batched_tokens")
        f = self.prefix_cache_hit_fraction
        if not (isinstance(f, (int, float)) and 0 <= f < 1):
            raise InputError(f"prefix_cache_hit_fraction {f!r} must be >= 0 and < 1", field="prefix_cache_hit_fraction")
        if self.preemption not in PREEMPTION_MODES:
            raise InputError(f"preemption {self.preemption!r} must be \"recompute\" (drop the KV and recompute it) "
                             "or \"swap\" (copy it to host memory and back)", field="preemption")


@dataclass(frozen=True, slots=True)
class IterationRecord:
    """One iteration, as an observer sees it after it ran."""

    index: int
    """1 for the first iteration."""
    start_s: float
    duration_s: float
    shape: BatchShape
    used_blocks: int
    """KV blocks held after the iteration's allocations, before its finished requests free theirs."""
    running: int
    """Requests running in the iteration."""
    waiting: int
    """Requests waiting after it was scheduled."""
    preempted: int
    """Requests preempted while scheduling it."""
    swapped_out_tokens: int = 0
    """Tokens of KV copied to host memory by its preemptions (swap mode); ``duration_s`` includes
    ``swap_s`` of them."""
    swapped_in_tokens: int = 0
    """Tokens of KV copied back to HBM for the swapped requests it admitted (swap mode);
    ``duration_s`` includes ``swap_s`` of them."""


class _Seq:
    """A request's state inside the scheduler."""

    __slots__ = ("req", "key", "prompt", "output", "generated", "computed", "decoding", "p", "computed0", "g0",
                 "finish_it", "bucket", "epoch", "first_token_s", "preemptions", "cached", "admitted_s")

    def __init__(self, req: Request) -> None:
        self.req = req
        self.key = req.request_id
        self.prompt = req.prompt_tokens
        self.output = req.output_tokens
        self.generated = 0
        """Tokens sampled so far (as of the decode start ``p`` while decoding)."""
        self.computed = 0
        """Tokens in the KV cache (while not decoding)."""
        self.decoding = False
        self.p = 0
        """The iteration that ended its prefill (decode starts at ``p + 1``)."""
        self.computed0 = 0
        self.g0 = 0
        self.finish_it = 0
        self.bucket = 0
        self.epoch = 0
        self.first_token_s: float | None = None
        self.preemptions = 0
        self.cached = -1
        """Prompt tokens found in the prefix cache at the first admission (-1 before it)."""
        self.admitted_s = math.nan


class ContinuousBatchingScheduler:
    """vLLM V1's continuous batching (module docstring, rules 1-7) over a :class:`KVBlockAllocator`."""

    def __init__(self, config: SchedulerConfig, kv: KVBlockAllocator, iteration_s: Callable[[BatchShape], float],
                 observer: Callable[[IterationRecord], None] | None = None, *,
                 swap_s: Callable[[int], float] | None = None,
                 swap_in_s: Callable[[int], float] | None = None) -> None:
        if config.context_bucket_tokens % kv.block_tokens:
            raise InputError(f"context_bucket_tokens {config.context_bucket_tokens} is not a multiple of the KV "
                             f"block size {kv.block_tokens}", field="context_bucket_tokens")
        if config.preemption == "swap" and swap_s is None:
            raise InputError("preemption \"swap\" needs swap_s, the seconds to copy the KV of N tokens one way "
                             "between HBM and host memory", field="swap_s")
        self.config = config
        self.kv = kv
        """The KV cache (an observer may :meth:`~KVBlockAllocator.check` it after every iteration)."""
        self.iteration_s = iteration_s
        self.observer = observer
        self.swap_s = swap_s
        """Seconds to copy the KV of N tokens one way between HBM and host memory (swap mode; unused in
        recompute mode)."""
        self.swap_in_s = swap_in_s or swap_s
        """The copy back to HBM when it differs (a PCIe read is not a posted write); default ``swap_s``."""

    def run(self, requests: Sequence[Request]) -> ServingRun:
        """Serve ``requests`` (in arrival order, ``request_id`` their index) until every one has
        finished; the observer, when given, sees each iteration after it is scheduled and costed."""
        cfg, kv = self.config, self.kv
        B, W = kv.block_tokens, cfg.context_bucket_tokens
        max_tokens, max_seqs = cfg.max_num_batched_tokens, cfg.max_num_seqs
        hit = cfg.prefix_cache_hit_fraction
        self._validate(requests)
        if kv.used_blocks:
            raise SimulationError(f"the KV cache starts with {kv.used_blocks} blocks held; a run needs an empty one")
        n = len(requests)
        outcomes: list[RequestOutcome | None] = [None] * n
        waiting: deque[_Seq] = deque()
        running: dict[_Seq, None] = {}
        hist: dict[int, int] = {}
        block_heap: list[tuple[int, int, int, _Seq]] = []
        finish_heap: list[tuple[int, int, int, _Seq]] = []
        push = heapq.heappush
        pop = heapq.heappop
        order = 0
        partial: _Seq | None = None
        n_decode = 0
        t = 0.0
        it = 0
        nxt = 0
        iterations = preemptions = 0
        busy_s = 0.0
        cost = self.iteration_s
        observer = self.observer
        swap = cfg.preemption == "swap"
        swap_s, swap_in_s = self.swap_s, self.swap_in_s
        swapped_out = swapped_in = 0
        contexts: tuple[tuple[int, int], ...] = ()
        dirty = False

        def hist_add(bucket: int, delta: int) -> None:
            nonlocal dirty
            count = hist.get(bucket, 0) + delta
            if count:
                hist[bucket] = count
            else:
                del hist[bucket]
            dirty = True

        def preempt(s: _Seq) -> None:
            nonlocal n_decode, partial, preemptions, swapped_out
            if s.decoding:
                decoded = it - 1 - s.p
                s.generated = s.g0 + decoded
                s.computed = s.computed0 + decoded
                hist_add(s.bucket, -1)
                n_decode -= 1
                s.decoding = False
            if s is partial:
                partial = None
            kv.free(s.key)
            if swap:  # its KV goes to host memory: it keeps its computed tokens
                swapped_out += s.computed
            else:
                s.computed = 0
            s.epoch += 1
            s.preemptions += 1
            preemptions += 1
            del running[s]
            waiting.appendleft(s)

        def grant_decode_block(s: _Seq, context: int) -> None:
            nonlocal order
            if (context - 1) % W == 0:
                hist_add(s.bucket, -1)
                s.bucket += 1
                hist_add(s.bucket, 1)
            if it + B <= s.finish_it:
                order += 1
                push(block_heap, (it + B, order, s.epoch, s))

        while True:
            while nxt < n and requests[nxt].arrival_s <= t:
                waiting.append(_Seq(requests[nxt]))
                nxt += 1
            if not running and not waiting:
                if nxt == n:
                    break
                t = requests[nxt].arrival_s
                continue
            it += 1
            swapped_out = swapped_in = 0
            needers: list[_Seq] = []
            while block_heap and block_heap[0][0] <= it:
                _, _, epoch, s = pop(block_heap)
                if s.epoch == epoch:
                    needers.append(s)
            chunk = 0
            need = len(needers)
            if partial is not None:
                chunk = min(partial.prompt + partial.generated - partial.computed, max_tokens - n_decode)
                need += kv.blocks_for(partial.computed + chunk) - kv.held(partial.key)
            preempted_now = 0
            if need <= kv.free_blocks:
                for s in needers:
                    context = s.computed0 + it - s.p
                    kv.grow(s.key, context)
                    grant_decode_block(s, context)
                if partial is not None:
                    kv.grow(partial.key, partial.computed + chunk)
            else:
                # vLLM's loop over the running requests in order, preempting the newest on a miss
                needy = set(needers)
                queue = list(running)
                i, end = 0, len(queue)
                before = preemptions
                while i < end:
                    s = queue[i]
                    if s is partial:
                        tokens = s.computed + chunk
                    elif s in needy:
                        tokens = s.computed0 + it - s.p
                    else:
                        i += 1
                        continue
                    while not kv.grow(s.key, tokens):
                        end -= 1
                        victim = queue[end]
                        preempt(victim)
                        if victim is s:
                            break
                    else:
                        if s.decoding:
                            grant_decode_block(s, tokens)
                    i += 1
                preempted_now = preemptions - before
            prefills: list[tuple[_Seq, int]] = []
            if partial is not None:
                prefills.append((partial, chunk))
            if not preempted_now:
                budget = max_tokens - n_decode - chunk
                while waiting and budget > 0 and len(running) < max_seqs:
                    s = waiting[0]
                    total = s.prompt + s.generated
                    if s.computed:  # swapped out: its KV comes back from host memory
                        cached = s.computed
                    else:
                        cached = (min(int(hit * s.prompt), total - 1) // B) * B if hit else 0
                        if s.cached < 0 and s.req.remote_kv_tokens:
                            cached = max(cached, s.req.remote_kv_tokens)
                    take = min(total - cached, budget)
                    if not cfg.chunked_prefill and take < total - cached:
                        break
                    if not kv.grow(s.key, cached + take):
                        break
                    waiting.popleft()
                    running[s] = None
                    if s.computed:
                        swapped_in += cached
                    s.computed = cached
                    if s.cached < 0:
                        s.cached = cached
                        s.admitted_s = t
                    prefills.append((s, take))
                    budget -= take
            prefill_tokens = prefill_context = 0
            for s, take in prefills:
                prefill_tokens += take
                prefill_context += s.computed
            if dirty:
                contexts = tuple(sorted((b * W, c) for b, c in hist.items()))
                dirty = False
            shape = BatchShape(n_decode, contexts, len(prefills), prefill_tokens, -(-prefill_context // W) * W)
            duration = cost(shape)
            if not (duration > 0 and math.isfinite(duration)):
                raise SimulationError(f"iteration_s returned {duration!r} s for {shape}; an iteration takes a "
                                      "finite time > 0")
            if swapped_out or swapped_in:
                duration += self._swap_time(swap_s, swapped_out) + self._swap_time(swap_in_s, swapped_in)
            end_s = t + duration
            iterations += 1
            busy_s += duration
            if observer is not None:
                observer(IterationRecord(it, t, duration, shape, kv.used_blocks, len(running), len(waiting),
                                         preempted_now, swapped_out, swapped_in))
            partial = None
            for s, take in prefills:
                s.computed += take
                if s.computed < s.prompt + s.generated:
                    partial = s
                    continue
                s.generated += 1
                if s.first_token_s is None:
                    s.first_token_s = end_s
                if s.generated == s.output:
                    self._finish(s, end_s, outcomes, running, kv)
                    continue
                s.decoding = True
                s.p, s.computed0, s.g0 = it, s.computed, s.generated
                s.finish_it = it + s.output - s.generated
                s.bucket = -(-s.computed // W)
                hist_add(s.bucket, 1)
                n_decode += 1
                order += 1
                push(finish_heap, (s.finish_it, order, s.epoch, s))
                first_block = it + 1 + (B - s.computed % B) % B
                if first_block <= s.finish_it:
                    order += 1
                    push(block_heap, (first_block, order, s.epoch, s))
            while finish_heap and finish_heap[0][0] <= it:
                _, _, epoch, s = pop(finish_heap)
                if s.epoch == epoch:
                    hist_add(s.bucket, -1)
                    n_decode -= 1
                    s.decoding = False
                    self._finish(s, end_s, outcomes, running, kv)
            t = end_s
        missing = [i for i, o in enumerate(outcomes) if o is None]
        if missing:
            raise SimulationError(f"{len(missing)} requests never finished (first: {missing[0]})")
        return ServingRun(tuple(outcomes), iterations, preemptions, busy_s)  # type: ignore[arg-type]

    @staticmethod
    def _swap_time(swap_s: Callable[[int], float], tokens: int) -> float:
        """``swap_s(tokens)``, checked finite and >= 0; 0 for no tokens (no copy is issued)."""
        if not tokens:
            return 0.0
        seconds = swap_s(tokens)
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise SimulationError(f"swap_s returned {seconds!r} s for {tokens} tokens; a copy takes a finite "
                                  "time >= 0")
        return seconds

    @staticmethod
    def _finish(s: _Seq, end_s: float, outcomes: list, running: dict, kv: KVBlockAllocator) -> None:
        index = s.key
        if outcomes[index] is not None:
            raise SimulationError(f"request {index} finished twice")
        outcomes[index] = RequestOutcome(index, s.req.arrival_s, s.first_token_s, end_s, s.prompt, s.output,
                                         s.preemptions, max(s.cached, 0), s.admitted_s)
        kv.free(s.key)
        del running[s]

    def _validate(self, requests: Sequence[Request]) -> None:
        kv, cfg = self.kv, self.config
        last = -math.inf
        for i, r in enumerate(requests):
            if r.request_id != i:
                raise InputError(f"request {i} has request_id {r.request_id}; ids are the requests' indexes "
                                 "in arrival order", field=f"requests[{i}]")
            if r.arrival_s < last:
                raise InputError(f"request {i} arrives at {r.arrival_s} s, before request {i - 1} "
                                 f"({last} s); give requests in arrival order", field=f"requests[{i}]")
            last = r.arrival_s
            if not 0 <= r.remote_kv_tokens < r.prompt_tokens:
                raise InputError(f"request {i} arrives with {r.remote_kv_tokens} tokens of remote KV for a "
                                 f"{r.prompt_tokens}-token prompt; give 0 to {r.prompt_tokens - 1} (the last "
                                 "prompt token is computed here)", field=f"requests[{i}]")
            if r.prompt_tokens < 1 or r.output_tokens < 1:
                raise InputError(f"request {i} has {r.prompt_tokens} prompt and {r.output_tokens} output tokens; "
                                 "each needs at least 1", field=f"requests[{i}]")
            # the last sampled token is never fed back, so a request holds at most prompt + output - 1 tokens
            need = kv.blocks_for(r.prompt_tokens + r.output_tokens - 1)
            if need > kv.capacity_blocks:
                raise InputError(f"request {i} needs {need} KV blocks ({r.prompt_tokens} + {r.output_tokens} - 1 "
                                 f"tokens) but the cache holds {kv.capacity_blocks}; it could never run (vLLM "
                                 "refuses a max_model_len the cache cannot hold)", field=f"requests[{i}]")
            if not cfg.chunked_prefill and r.prompt_tokens + r.output_tokens - 1 > cfg.max_num_batched_tokens:
                raise InputError(f"request {i}'s prefill ({r.prompt_tokens} tokens, more after a preemption) "
                                 f"can exceed max_num_batched_tokens {cfg.max_num_batched_tokens} and chunked "
                                 "prefill is off; turn it on or raise the budget", field=f"requests[{i}]")
