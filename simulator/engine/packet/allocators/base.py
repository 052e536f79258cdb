"""The allocator contract: a separable, output-first request -> grant -> accept matcher (iSLIP's
three steps), with picking kept apart from updating state.

One ``Allocator`` serves one switch. Inputs and outputs are numbered 0..n-1 (the switch's incoming
and outgoing channels in channel-id order). Each cell time the scheduler hands ``match`` the
requests: ``requests[out]`` lists the inputs (ascending) that have a packet for ``out`` and
``age[(inp, out)]`` the injection time of that packet (s, for oldest-first). ``match`` runs up to
``iterations`` rounds; in each round every unmatched output *grants* one of its requesting
unmatched inputs (``grant``), and every input that got grants *accepts* one (``accept``). After a
grant or an accept the allocator is told (``granted``, ``accepted``, with ``first`` = first
iteration) so it can move its pointers; ``grant``/``accept`` themselves never change state, so a
grant that is not accepted changes nothing unless the algorithm says so (RRM).

Follows the structure of BookSim2's separable allocators (``src/allocators/``) and McKeown,
"The iSLIP scheduling algorithm for input-queued switches", IEEE/ACM ToN 7(2), 1999.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


class Allocator:
    """Base class; subclasses override ``grant``/``accept`` and optionally the update hooks."""

    name = "base"

    def __init__(self, n_in: int, n_out: int, rng: np.random.Generator, weights: Sequence[int]) -> None:
        self.n_in = n_in
        self.n_out = n_out
        self.rng = rng
        """The switch's own seeded generator (random picks and tie-breaks)."""
        self.weights = list(weights)
        """Per input: weight (weighted_rr) or priority (fixed_priority, higher wins)."""

    # -- picking (no state change) ------------------------------------------------------------
    def grant(self, out: int, inputs: Sequence[int], age: Mapping[tuple[int, int], float]) -> int:
        """Input that ``out`` grants among ``inputs`` (non-empty, ascending)."""
        raise NotImplementedError

    def accept(self, inp: int, outputs: Sequence[int], age: Mapping[tuple[int, int], float]) -> int:
        """Output whose grant ``inp`` accepts among ``outputs`` (non-empty, ascending)."""
        raise NotImplementedError

    # -- updating -----------------------------------------------------------------------------
    def granted(self, out: int, inp: int, first: bool) -> None:
        """``out`` granted ``inp`` (accepted or not)."""

    def accepted(self, inp: int, out: int, first: bool) -> None:
        """``inp`` accepted ``out``'s grant: the pair is matched."""

    # -- the separable loop ---------------------------------------------------------------------
    def match(self, requests: Mapping[int, Sequence[int]], age: Mapping[tuple[int, int], float],
              iterations: int) -> dict[int, int]:
        """Matching input -> output after up to ``iterations`` request-grant-accept rounds."""
        matched: dict[int, int] = {}
        taken: set[int] = set()
        for it in range(iterations):
            grants: dict[int, list[int]] = {}
            for out in sorted(requests):
                if out in taken:
                    continue
                free = [i for i in requests[out] if i not in matched]
                if not free:
                    continue
                inp = self.grant(out, free, age)
                self.granted(out, inp, it == 0)
                grants.setdefault(inp, []).append(out)
            if not grants:
                break
            for inp in sorted(grants):
                out = self.accept(inp, grants[inp], age)
                self.accepted(inp, out, it == 0)
                matched[inp] = out
                taken.add(out)
        return matched


def next_from(pointer: int, candidates: Sequence[int]) -> int:
    """Round-robin pick: the first candidate at or after ``pointer``, wrapping (ascending list)."""
    for c in candidates:
        if c >= pointer:
            return c
    return candidates[0]
