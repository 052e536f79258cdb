"""Attention workloads for LLM serving: TP decode, prefill, PagedAttention KV transfer, ring attention.

Each builder returns an :class:`AttentionRun`: a Workload (compute as ``bytes == 0`` delay
transfers on the GPU, communication as transfers) plus analytic figures for the report.
"""

from simulator.workloads.attention.decode import decode_step
from simulator.workloads.attention.kv_transfer import kv_transfer
from simulator.workloads.attention.model import AttentionRun, ModelShape
from simulator.workloads.attention.prefill import prefill
from simulator.workloads.attention.ring_attention import ring_attention

__all__ = ["AttentionRun", "ModelShape", "decode_step", "kv_transfer", "prefill",
           "ring_attention"]
