"""NVLSTree: NVLS inside each node, NCCL's double binary trees between the nodes' heads.

NCCL's all_reduce across NVLink-SHARP nodes (NCCL_ALGO_NVLS_TREE; src/device/all_reduce.h
``RunWorkColl<AllReduce, NVLS_TREE, Simple>``, src/graph/connect.cc ``connectNvls``). Nodes are the
GPUs' ``Node.group``s joined by the network (``rails.rail_nodes``: an HGX server, or an NVL72 rack,
whose trays NCCL joins into one node over MNNVL); every node holds the same number m of the GPUs
and its first h = min(m, NCCL_MAX_NVLS_ARITY = 32) local GPUs are its heads. Each of the
``nvls_tree_channels`` CTAs of a GPU splits its share of S into h shards, shard j for head j:
  inside a node: every rank's copy of shard j is reduced by the switches (multimem.ld_reduce) into
      head j, and head j's result is multicast back (multimem.st): NVLS's link traffic
      (``nvls.switch_shares``) and its staging copies (``nvls.stage``);
  between nodes: head j of every node joins head j of the others (the same local GPU, hence the
      same rail) by NCCL's double binary tree over node indices (``dtree.dtree_parents``); channel c
      runs tree c mod 2. A head sends its node's partial shard up to its parent and gets the total
      back down, so each tree edge carries S x (that tree's share of the channels) / h each way.
All of this is pipelined in one kernel (the warps of a CTA do each part concurrently), so the
transfers run side by side. NCCL's 2-node case (the tuner's ``interBw x 2``) follows: on 2 nodes
tree 0 and tree 1 have opposite roots, so every head's NIC carries S / h each way.

What a CTA does sets the pace: a channel whose rank has a parent between nodes gives 9 of its 20
warps to reducing up and broadcasting down, leaving 6 + 5 to copy the user buffers in and out
where NVLS has 8 + 7 (``CollectiveLibrary.nvls_copy_warps``, parts/gpu_side.yaml ``nvls_warps``).
A CTA's memory rate is shared by its threads (as for Tree's split, ``tree_up_share``), so such a
channel stages at 11/15 of NVLS's rate, and as every channel carries the same data, a GPU's
slowest channel sets its staging time. The reduce and broadcast warps' own pace is left out:
they move S / h per call through a head, well under their share of the CTA (a head's network
traffic is about 1/h of its staging).

Latency is NCCL's (src/graph/tuning.cc, ``ncclTopoTuneModel``, NVLSTree): the NVLink step
``intraLat`` once and ``2 x log2i(nNodes)`` network steps, on every transfer of the call.
Not modelled: user-buffer registration (nccl-tests' default leaves it off), NVLSTree for nodes of
different GPU counts (NCCL pairs heads by index across nodes), and the chunked granularity (the
steady transfers are built either way: the kernel streams them concurrently).
"""

from __future__ import annotations

import math

from simulator.errors import InputError
from simulator.workloads.collectives.base import CollectiveSpec, DagBuilder
from simulator.workloads.collectives.dtree import dtree_parents
from simulator.workloads.collectives.gpu_side import CtaRule
from simulator.workloads.collectives.nvls import applicable as nvls_applicable
from simulator.workloads.collectives.nvls import efficiency, gpu_planes, heads, stage, switch_shares, switch_transfers
from simulator.workloads.collectives.rails import even, rail_nodes
from simulator.workloads.collectives.registry import AlgorithmRecord

OPS = frozenset({"all_reduce"})


def applicable(fabric, gpus) -> str | None:
    """None if NVLSTree can run: nodes joined by the network, each with NVLS inside
    (``nvls.applicable``) and the same number of the GPUs; else why."""
    nodes = rail_nodes(fabric, gpus)
    if nodes is None:
        return "NVLSTree joins NVLink domains over the network; these GPUs are in one node (use nvls)"
    if not even(nodes):
        return ("the nodes hold different numbers of the GPUs; NVLSTree pairs each node's NVLS heads with "
                "the other nodes' by index (use ring or tree)")
    for node in nodes:
        reason = nvls_applicable(fabric, node)
        if reason:
            return f"inside node {fabric.nodes[node[0]].group}: {reason}"
    return None


def tree_shares(channels: int) -> tuple[float, float]:
    """The fraction of S that trees 0 and 1 carry: channel c runs tree c mod 2, every channel the
    same share."""
    return math.ceil(channels / 2) / channels, (channels // 2) / channels


def build(spec: CollectiveSpec, dag: DagBuilder) -> None:
    reason = applicable(spec.fabric, spec.gpus)
    if reason:
        raise InputError(f"nvls_tree impossible on {spec.fabric.name}: {reason}", field="algo")
    fabric, S = spec.fabric, spec.nbytes
    nodes = rail_nodes(fabric, spec.gpus)
    k, h = len(nodes), heads(spec, len(nodes[0]))
    parents = dtree_parents(k)
    shares = tree_shares(spec.channels)
    levels = max(1, int(math.floor(math.log2(k))))  # NCCL log2i(nNodes)
    base = spec.base_s()
    eff = efficiency(spec)
    lib = spec.gpu.library
    slow = lib.nvls_copy_warps(spec.n, tree_up=True) / lib.nvls_copy_warps(spec.n)
    net_hop = spec.hop_s(nodes[0][0], nodes[1][0])
    for i, node in enumerate(nodes):
        head = set(node[:h])
        by_gpu = gpu_planes(fabric, node)
        some_switch = next(iter(by_gpu[node[0]]))
        delay = base + spec.hop_s(node[0], some_switch) + 2 * levels * net_hop  # NCCL's NVLSTree latency
        # a head whose node has a parent in a tree that some channel runs stages at the slower split;
        # its last copy out waits for the sum that went up and down the trees: the same latency
        up = any(parents[t][i] >= 0 and shares[t] for t in (0, 1))
        stage(dag, spec, node, h, delay, True, True, pace=lambda g, head=head, up=up: slow if up and g in head else 1.0)
        switch_transfers(dag, spec, by_gpu, lambda g, head=head: switch_shares(g in head, h, True, True), eff,
                         lambda g, sw, delay=delay: delay, f"nvls_tree.n{i}")
        for t in (0, 1):
            p = parents[t][i]
            if p < 0 or not shares[t]:
                continue
            data = spec.wire(S * shares[t] / h)
            for j in range(h):
                child, parent = node[j], nodes[p][j]
                dag.add(child, parent, data, (), delay, None, f"nvls_tree.t{t}.h{j}.up")
                dag.add(parent, child, data, (), delay, None, f"nvls_tree.t{t}.h{j}.down")


RECORD = AlgorithmRecord(
    "nvls_tree", OPS, build, "NCCL NVLSTree: NVLS inside each node, double binary trees between nodes' heads",
    applicable=applicable, ctas=CtaRule(pool="nvls_tree_channels", by_size=False), auto_multi_node_only=True,
    nccl_algo="NVLSTree", nccl_since=(2, 18))
"""NVLSTree's rules: the architecture's NVLS channels across nodes at every size (as NVLS);
``auto`` considers it only across nodes joined by the network, where ``applicable`` finds NVLS
inside every node (NCCL disables NVLSTree on one node, src/graph/tuning.cc)."""
