"""NCCL's double binary tree over nodes (src/graph/trees.cc, ``ncclGetBtree`` and ``ncclGetDtree``).

Tree 0 is a binary tree over node indices 0..k-1 rooted at 0 that alternates leaves and inner
nodes (built on the bits of the index, so that on k = 2^j - 1 nodes it is complete); tree 1 is its
mirror (node k-1-i in the place of node i) when k is even and the same tree shifted by one node
when k is odd. A node that is inner in one tree is mostly a leaf in the other, so the two trees
together load every node's links about evenly. NCCL joins nodes this way for Tree (between the
nodes' chains) and for NVLSTree (between each head rank and the same head of the other nodes:
src/graph/connect.cc ``connectNvls``); channel c runs tree c mod 2.
"""

from __future__ import annotations

from functools import lru_cache


def _btree_parent(k: int, rank: int) -> int:
    """``ncclGetBtree``'s parent of ``rank`` among ``k`` (-1 for the root, rank 0)."""
    if rank == 0:
        return -1
    bit = 1
    while bit < k and not bit & rank:
        bit <<= 1
    up = (rank ^ bit) | (bit << 1)
    return rank ^ bit if up >= k else up


@lru_cache(maxsize=None)
def dtree_parents(k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The parent of every node index 0..k-1 in NCCL's tree 0 and tree 1 (-1: that tree's root)."""
    tree0 = tuple(_btree_parent(k, r) for r in range(k))
    if k % 2:  # shifted: node r sits where node r - 1 sits in tree 0
        tree1 = tuple(-1 if (u := _btree_parent(k, (r - 1) % k)) == -1 else (u + 1) % k for r in range(k))
    else:  # mirrored
        tree1 = tuple(-1 if (u := _btree_parent(k, k - 1 - r)) == -1 else k - 1 - u for r in range(k))
    return tree0, tree1
