"""An example Chakra trace: one forward pass of a tensor-parallel transformer layer (Megatron-style).

Per rank: attention GEMMs and attention (COMP_NODE, FLOPs and bytes for the roofline), an
all-reduce of the activations (COMM_COLL_NODE), the MLP GEMMs, a second all-reduce: the two
all-reduces per layer of Megatron tensor parallelism. Defaults are Llama-3-70B's shape
(hidden 8192, 64 heads, 8 KV heads of 128, SwiGLU FFN 28672: the model's config.json), BF16,
batch 1 x 4096 tokens, TP 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.workloads.traces.chakra_schema import COMM_TYPES, NODE_TYPES, message_class

BF16_BYTES = 2


@dataclass(frozen=True)
class LayerShape:
    hidden: int = 8192
    heads: int = 64
    kv_heads: int = 8
    head_dim: int = 128
    ffn: int = 28672
    tokens: int = 4096
    """Batch x sequence length."""
    tp: int = 8

    def attention_flops(self) -> float:
        """Per rank: QKV and output projections (GQA) plus causal attention, 2 FLOPs per MAC."""
        h, t = self.hidden, self.tokens
        proj = 2 * t * (h * (h + 2 * self.kv_heads * self.head_dim) + h * h)
        attn = 2 * t * t * self.heads * self.head_dim  # QK^T and AV, half of each kept by the causal mask
        return (proj + attn) / self.tp

    def attention_bytes(self) -> float:
        """Per rank: projection weights plus activations in and out (BF16)."""
        h = self.hidden
        weights = (h * (h + 2 * self.kv_heads * self.head_dim) + h * h) / self.tp
        return BF16_BYTES * (weights + 2 * self.tokens * h)

    def mlp_flops(self) -> float:
        """Per rank: SwiGLU's three h x ffn matrices."""
        return 2 * self.tokens * 3 * self.hidden * self.ffn / self.tp

    def mlp_bytes(self) -> float:
        return BF16_BYTES * (3 * self.hidden * self.ffn / self.tp + 2 * self.tokens * self.hidden)

    def allreduce_bytes(self) -> int:
        """The activations every rank holds after a row-parallel GEMM: tokens x hidden x BF16."""
        return BF16_BYTES * self.tokens * self.hidden


def _attr(node, name: str, **value: Any) -> None:  # noqa: ANN001
    a = node.attr.add(name=name)
    for key, v in value.items():
        setattr(a, key, v)


def tp_layer_nodes(shape: LayerShape = LayerShape()) -> list[list[Any]]:
    """One list of Chakra Node messages per rank."""
    node_cls = message_class("Node")
    ranks = []
    for _rank in range(shape.tp):
        nodes = []
        steps = (("attention", shape.attention_flops(), shape.attention_bytes()), ("attn_allreduce", None, None),
                 ("mlp", shape.mlp_flops(), shape.mlp_bytes()), ("mlp_allreduce", None, None))
        for i, (name, flops, nbytes) in enumerate(steps):
            node = node_cls(id=i, name=name, data_deps=[i - 1] if i else [])
            if flops is not None:
                node.type = NODE_TYPES["COMP_NODE"]
                _attr(node, "num_ops", int64_val=int(flops))
                _attr(node, "tensor_size", int64_val=int(nbytes))
            else:
                node.type = NODE_TYPES["COMM_COLL_NODE"]
                _attr(node, "comm_type", int64_val=COMM_TYPES["ALL_REDUCE"])
                _attr(node, "comm_size", int64_val=shape.allreduce_bytes())
            nodes.append(node)
        ranks.append(nodes)
    return ranks
