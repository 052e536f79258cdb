"""NVLS: in-switch reduction and multicast on NVSwitches with ``Node.reduction`` (NVLink SHARP).

all_reduce (S per rank), per switch plane s carrying the fraction f_s of each GPU's links, with
h = min(n, NCCL_MAX_NVLS_ARITY = 32) head ranks (the first h ranks; only heads reduce and store):
  reduce   GPU j -> switch: f_s S (the switch pulls every rank's copy of every shard: multimem.ld_reduce)
           switch -> head j: f_s S / h (j's reduced shard)
  multicast head j -> switch: f_s S / h (j stores its reduced shard: multimem.st)
           switch -> GPU j: f_s S (every reduced shard, replicated by the switch)
so a head's links carry S(1 + 1/h) each way, another rank's S, against 2(n-1)/n S for a ring.
reduce_scatter is the reduce half, all_gather the multicast half (S = whole array). Wire bytes
include the generation's NVLS efficiency (protocol parts), on top of the protocol's.

The GPU side: without user-buffer registration (nccl-tests' default) NCCL stages data through its
NVLS buffers: each NVLS channel's CTA has scatter warps copying the user input into the buffer and
gather warps copying the result out, concurrently with the reduce warps' multimem loads and stores.
Each rank therefore copies S in (all_reduce, reduce_scatter; S/n for all_gather) and S out
(all_reduce, all_gather; S/n for reduce_scatter) with its NVLS channels' copy warps, which share
the CTA's memory rate: one local transfer per GPU of (in + out) / 2 bytes per byte of S, paced at
``nvls channels x per-CTA staging rate`` (the measured copy CTA scaled by the work of a copy in and
a copy out, ``copy_work`` in parts/gpu_side.yaml), running beside the link transfers. At large rank
counts this, not the links, sets all_reduce's pace: busbw -> 2(n-1)/n x channels x staging rate;
all_gather and reduce_scatter stage half as much and stay link-bound.
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder, n_chunks, route_lat_s
from simulator.workloads.collectives.gpu_side import CtaRule
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_reduce", "reduce_scatter", "all_gather"})
MIN_RANKS = 2
"""NCCL src/transport/nvls.cc (ncclNvlsInit): no NVLS with 2 GPUs or fewer."""


def planes(spec: CollectiveSpec) -> dict[str, dict[str, float]]:
    """GPU -> {reduction switch: fraction of the GPU's links to reduction switches}."""
    reason = applicable(spec.fabric, spec.gpus)
    if reason:
        raise InputError(f"nvls impossible on {spec.fabric.name}: {reason}", field="algo")
    return gpu_planes(spec.fabric, spec.gpus)


def gpu_planes(fabric, gpus) -> dict[str, dict[str, float]]:
    """``planes`` of ``gpus`` without the check (a caller that checked ``applicable``)."""
    out = {}
    for g in gpus:
        links: dict[str, int] = {}
        for ch in fabric.out_channels(g):
            node = fabric.nodes[ch.dst]
            if node.kind == "switch" and node.reduction:
                links[ch.dst] = links.get(ch.dst, 0) + 1
        total = sum(links.values())
        out[g] = {s: k / total for s, k in sorted(links.items())}
    return out


def _reduction_switches(fabric, gpu: str) -> frozenset[str]:
    return frozenset(c.dst for c in fabric.out_channels(gpu)
                     if fabric.nodes[c.dst].kind == "switch" and fabric.nodes[c.dst].reduction)


def applicable(fabric, gpus) -> str | None:
    """None if NVLS can run on these GPUs (all on the same reduction-capable switches, more than
    two of them), else why."""
    if len(gpus) <= MIN_RANKS:
        return f"NVLS needs more than {MIN_RANKS} GPUs (NCCL disables it at {MIN_RANKS} or fewer)"
    if not any(node.kind == "switch" and node.reduction for node in fabric.nodes.values()):
        return (f"NVLS needs an NVSwitch with in-switch reduction (NVLink SHARP); {fabric.name} has none "
                f"(try ring or tree)")
    first = _reduction_switches(fabric, gpus[0])
    for g in gpus:
        mine = _reduction_switches(fabric, g)
        if not mine:
            return f"{g} has no link to a reduction-capable switch"
        if mine != first:
            if fabric.faults:  # one GPU lost a plane: NCCL's NVLS multicast group needs every rank on every switch
                odd = g if len(mine) < len(first) else gpus[0]
                return (f"after the faults {odd} does not reach every reduction switch the other GPUs reach; "
                        "nvls needs all ranks on the same switches (use ring)")
            return "the GPUs span several NVLink domains (use hierarchical)"
    return None


def efficiency(spec: CollectiveSpec) -> float:
    """The NVLS efficiency of the GPUs' NVLink generation (protocol parts), on top of the protocol's."""
    gen = spec.fabric.out_channels(spec.gpus[0])[0].generation
    return spec.table.nvls_efficiency_for(gen)


def heads(spec: CollectiveSpec, ranks: int | None = None) -> int:
    """NVLS head ranks of a domain of ``ranks`` GPUs (default all of the call's): one per rank up
    to the library's limit (NCCL_MAX_NVLS_ARITY)."""
    return min(spec.n if ranks is None else ranks, spec.gpu.library.nvls_max_heads)


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    eff, h = efficiency(spec), heads(spec)
    by_gpu = planes(spec)
    switches = sorted({s for m in by_gpu.values() for s in m})
    reduce = spec.op in ("all_reduce", "reduce_scatter")
    multicast = spec.op in ("all_reduce", "all_gather")
    head = set(spec.gpus[:h])

    def shares(g: str) -> tuple[tuple[float, float], tuple[float, float]]:
        """g's data bytes per byte of S on one plane: ((reduce up, down), (multicast up, down))."""
        return switch_shares(g in head, h, reduce, multicast)

    phases = int(reduce) + int(multicast)
    base = spec.base_s()
    stage(dag, spec, spec.gpus, h, base, reduce, multicast)
    if spec.granularity == "steady":
        def delay(g: str, sw: str) -> float:
            return base + phases * spec.hop_s(g, sw) + (2 * phases - 1) * route_lat_s(spec.fabric, g, sw)
        switch_transfers(dag, spec, by_gpu, shares, eff, delay, "nvls")
        return
    for sw in switches:
        members = [g for g in spec.gpus if sw in by_gpu[g]]
        _chunked(dag, spec, sw, members, by_gpu, eff, shares, base)


def switch_shares(is_head: bool, h: int, reduce: bool, multicast: bool) -> tuple[tuple[float, float],
                                                                                  tuple[float, float]]:
    """A rank's data bytes per byte of S on one plane, ((reduce up, down), (multicast up, down)):
    every rank's copy goes up to be reduced and every reduced shard comes down; a head also takes
    its reduced shard (S / h) down and stores it up (module docstring)."""
    mine = 1.0 / h if is_head else 0.0
    return (1.0, mine) if reduce else (0.0, 0.0), (mine, 1.0) if multicast else (0.0, 0.0)


def switch_transfers(dag: DagBuilder, spec: CollectiveSpec, by_gpu: dict[str, dict[str, float]], shares,
                     eff: float, delay, tag: str) -> None:
    """The steady link transfers between the GPUs of ``by_gpu`` and their reduction switches:
    per GPU and plane one transfer up and one down, of the plane's fraction of S times ``shares(g)``
    (``switch_shares``), wire bytes at the NVLS efficiency ``eff``, after ``delay(g, switch)``."""
    S = spec.nbytes
    for sw in sorted({s for m in by_gpu.values() for s in m}):
        for g, by_switch in by_gpu.items():
            if sw not in by_switch or not spec.builds(g, sw):
                continue
            (up_r, down_r), (up_m, down_m) = shares(g)
            wait = delay(g, sw)
            for src, dst, share, kind in ((g, sw, up_r + up_m, "up"), (sw, g, down_r + down_m, "down")):
                if share:
                    dag.add(src, dst, spec.wire(by_switch[sw] * S * share, eff), (), wait, None,
                            f"{tag}.{sw}.{kind}")


def stage(dag: DagBuilder, spec: CollectiveSpec, gpus: tuple[str, ...], h: int, base: float, reduce: bool,
          multicast: bool, pace=None) -> None:
    """Each GPU's copies into and out of the NVLS buffer, by its NVLS channels' copy warps
    (``gpus``: one NVLS domain's ranks, ``h`` its heads; ``pace(g)``: the share of the NVLS
    channel's staging rate g's slowest channel copies at, default 1).

    A rank copies in what it reduces (all_reduce, reduce_scatter: S; all_gather: its S/n) and
    copies out what it receives (all_reduce, all_gather: S; reduce_scatter: its S/n). NCCL gives
    each copy its own warps of the channel's CTA (``src/device/all_reduce.h``: scatter 8, gather 7;
    ``all_gather.h``: gather 16, bcast 4; ``reduce_scatter.h``: scatter 8), and they share the CTA's
    memory rate: ``nvls_staging`` (parts/gpu_side.yaml) is the work of a copy in and a copy out
    per byte, so a call stages ``(in + out) / 2 x S`` at that rate: S for all_reduce, S(1 + 1/n)/2
    for all_gather and reduce_scatter.

    NCCL moves NVLS data in loops: per channel, one loop stages one chunk (``nvls_chunk_B``: at
    most ``NCCL_NVLS_CHUNKSIZE``, less for smaller calls) for each head's shard; the multimem
    reduce of a loop needs every rank's copy-in of that loop, and its copy-out follows the
    multicast. Copy-in of loop l+1 overlaps copy-out of loop l, so the stream takes (loops + 1)
    loop times: the copies at the channels' rate plus one loop of pipeline fill (which is why NVLS
    needs large messages on many ranks: a loop grows with the heads, up to NCCL_MAX_NVLS_ARITY)."""
    side = spec.side
    if side is None or side.arch is None:
        return
    n, S = len(gpus), spec.nbytes
    work = ((1.0 if reduce else 1.0 / n) + (1.0 if multicast else 1.0 / n)) / 2  # bytes staged per byte of S
    per_channel = side.channel_Bps("nvls_staging")  # a copy in and a copy out, per second
    loop = min(h * nvls_chunk_B(side.library.nvls_chunk_B, S, spec.channels, h), S / spec.channels)
    for g in gpus:
        if not spec.builds(g, g):
            continue
        rate = per_channel * (pace(g) if pace else 1.0)
        dag.add(g, g, int(round(S * work)), (), base + loop * work / rate, None, "nvls.staging", spec.channels * rate)


def nvls_chunk_B(max_chunk: int, nbytes: float, channels: int, heads: int) -> int:
    """NCCL's NVLS chunk for a call of ``nbytes`` (src/enqueue.cc, NCCL_ALGO_NVLS): the
    ``NCCL_NVLS_CHUNKSIZE`` maximum, cut to 64, 32 and 16 KiB while the call is smaller than 64, 8 and
    2 times ``channels x heads x chunk`` (``heads``: head ranks, at most NCCL_MAX_NVLS_ARITY)."""
    chunk = max_chunk
    ops = channels * heads
    for times, smaller in ((64, 65536), (8, 32768), (2, 16384)):
        if nbytes < times * ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def _chunked(dag, spec, sw, members, by_gpu, eff, shares, base) -> None:
    """Every loop a transfer per rank and direction. ``shares(g)``: g's data bytes per byte of S
    ((reduce up, reduce down), (multicast up, multicast down))."""
    reduce, multicast = spec.op in ("all_reduce", "reduce_scatter"), spec.op in ("all_reduce", "all_gather")
    loops = n_chunks(max(by_gpu[g][sw] for g in members) * spec.nbytes, spec.chunk_bytes)
    prev: dict[tuple[int, str], int] = {}
    for loop in range(loops):
        hop = (lambda g: spec.hop_s(g, sw)) if loop == 0 else (lambda g: 0.0)  # NVLS latency: per call
        first: dict[str, int] = {}
        if reduce:
            ups = {}
            for g in members:
                deps = [prev[(loop - spec.window, g)]] if loop >= spec.window else []
                piece = by_gpu[g][sw] * spec.nbytes / loops
                ups[g] = dag.add(g, sw, spec.wire(piece * shares(g)[0][0], eff), deps,
                                 (base if loop == 0 else 0.0) + hop(g), None, f"nvls.{sw}.l{loop}.reduce.up")
                first[g] = ups[g]
            downs = {g: dag.add(sw, g, spec.wire(by_gpu[g][sw] * spec.nbytes / loops * shares(g)[0][1], eff),
                                list(ups.values()), 0.0, None, f"nvls.{sw}.l{loop}.reduce.down")
                     for g in members}
        if multicast:
            ups = {}
            for g in members:
                piece = by_gpu[g][sw] * spec.nbytes / loops
                if reduce:
                    deps = [downs[g]]
                else:
                    deps = [prev[(loop - spec.window, g)]] if loop >= spec.window else []
                ups[g] = dag.add(g, sw, spec.wire(piece * shares(g)[1][0], eff), deps,
                                 hop(g) + (0.0 if reduce or loop else base), None, f"nvls.{sw}.l{loop}.mc.up")
                first.setdefault(g, ups[g])
            for g in members:
                dag.add(sw, g, spec.wire(by_gpu[g][sw] * spec.nbytes / loops * shares(g)[1][1], eff),
                        list(ups.values()), 0.0, None, f"nvls.{sw}.l{loop}.mc.down")
        for g, tid in first.items():
            prev[(loop, g)] = tid


RECORD = AlgorithmRecord(
    "nvls", OPS, build, "NVLink SHARP: in-switch reduction and multicast inside one NVLink domain",
    applicable=applicable, ctas=CtaRule(pool="nvls_channels", by_size=False), nccl_algo="NVLS", nccl_since=(2, 17))
"""NVLS's rules: the architecture's NVLS channels at every size; only where ``applicable`` finds
reduction switches every rank reaches."""
