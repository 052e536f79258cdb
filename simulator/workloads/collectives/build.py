"""One collective call of a chosen algorithm and protocol as a workload: what ``build_collective``
runs once the algorithm and protocol are known, and what the tuner builds each candidate with.

Below both the package's entry point (``collectives.build_collective``, which asks the tuner when
``algo`` or ``protocol`` is ``auto``) and the tuner (``tuner.choose``), so neither imports the other
back.
"""

from __future__ import annotations

from simulator.engine.transfer import Workload
from simulator.errors import InputError
from simulator.hardware.protocols import ProtocolTable
from simulator.topology.fabric import Fabric
from simulator.workloads.collectives.base import DEFAULT_CHUNK_BYTES, DEFAULT_WINDOW, CollectiveSpec, DagBuilder
from simulator.workloads.collectives.gpu_side import GpuSide
from simulator.workloads.collectives.ops import busbw_factor
from simulator.workloads.collectives.registry import ALGORITHMS, why_not


def build_algorithm(fabric: Fabric, gpus: tuple[str, ...], op: str, nbytes: int, algo: str, protocol: str,
                    table: ProtocolTable, channels: int | None = None, granularity: str = "steady",
                    chunk_bytes: int = DEFAULT_CHUNK_BYTES, window: int = DEFAULT_WINDOW, root: int = 0,
                    exposed_launch: bool = False, sample: str | None = None, kernel_fixed_s: float = 0.0,
                    pxn: bool = False, meta_extra: dict | None = None) -> Workload:
    """The workload of ``op`` on ``gpus`` with the registered algorithm ``algo`` and the protocol
    ``protocol`` (neither ``auto``; arguments checked as ``build_collective`` checks them), or an
    input error saying why they cannot run it (``why_not``). ``channels``: the CTA count, None for
    the algorithm's own (``AlgorithmRecord.call_ctas``). ``meta_extra`` joins the workload's meta."""
    reason = why_not(fabric, gpus, op, algo, protocol, table)
    if reason:
        raise InputError(reason, field="algo")
    record = ALGORITHMS[algo]
    gpu = GpuSide.of(fabric, gpus)
    if not channels:
        channels = record.call_ctas(fabric, gpus, gpu, op, protocol, nbytes)
    spec = CollectiveSpec(fabric=fabric, gpus=gpus, op=op, nbytes=int(nbytes), algo=algo,
                          protocol=table.protocol(protocol), table=table, channels=channels,
                          granularity=granularity, chunk_bytes=chunk_bytes, window=window, root=root,
                          gpu=gpu, exposed_launch=exposed_launch, table_row=record.row, sample=sample,
                          kernel_fixed_s=kernel_fixed_s, pxn=pxn)
    dag = DagBuilder(merge=sample is not None)  # an estimate: identical transfers merged
    record.build(spec, dag)
    meta = {"op": op, "algo": algo, "protocol": protocol, "bytes": int(nbytes), "n": len(gpus),
            "busbw_factor": busbw_factor(op, len(gpus)), "channels": spec.channels,
            "granularity": granularity, **(meta_extra or {})}
    return dag.workload(f"{op}.{algo}.{protocol}.{nbytes}B.{len(gpus)}gpu", meta)
