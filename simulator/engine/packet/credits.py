"""Credit bookkeeping of one channel, in one place: the sender's counter and the receiver's batching.

Credits are plain integers in units of ``CreditSpec.credit_bytes``; a packet of ``w`` wire bytes
takes ``ceil(w / credit_bytes)`` credits. The sender's counter tracks credits *in use* per VC (sent,
not yet returned); how the receive buffer is split across VCs is the policy:

- ``StaticCredits``: each VC owns ``buffer // vcs`` credits.
- ``SharedCredits``: each VC owns ``vc_min`` credits; the rest is a pool any VC may borrow from.

Range violations (in use below 0 or above the buffer) are counted, never silently clamped; the
engine turns them into an invariant failure at the end of the run.
"""

from __future__ import annotations


def credits_for(wire_bytes: int, credit_bytes: int) -> int:
    """Credits a packet of ``wire_bytes`` takes: ceil(wire / credit_bytes)."""
    return -(-wire_bytes // credit_bytes)


class StaticCredits:
    """Sender-side credit counter with a static equal partition of the buffer across VCs."""

    __slots__ = ("total", "cap", "used", "room", "violations", "peak")

    def __init__(self, total_credits: int, vcs: int, vc_min: int = 0) -> None:
        self.total = total_credits
        """Receive buffer of the channel in credits."""
        self.cap = total_credits // vcs
        """Credits each VC owns."""
        self.used = [0] * vcs
        """Credits in use per VC: sent and not yet returned."""
        self.room = [self.cap] * vcs
        """Per VC: credits it may take now (``fits(vc, k)`` is ``room[vc] >= k``), kept by ``take``
        and ``give``; the hot path reads it without a call (``OutputPort.start_time``)."""
        self.violations: list[str] = []
        self.peak = 0
        """Most credits ever in use on one VC (for reports)."""

    def fits(self, vc: int, k: int) -> bool:
        """True if ``k`` more credits may be taken on ``vc``."""
        return self.room[vc] >= k

    def take(self, vc: int, k: int) -> None:
        used = self.used[vc] + k
        self.used[vc] = used
        self.room[vc] = self.cap - used
        if used > self.peak:
            self.peak = used
            if used > self.cap:
                self.violations.append(f"vc{vc}: {used} credits in use > buffer {self.cap}")

    def give(self, vc: int, k: int) -> None:
        used = self.used[vc] - k
        self.used[vc] = used
        self.room[vc] = self.cap - used
        if used < 0:
            self.violations.append(f"vc{vc}: credits returned beyond the buffer ({-used} too many)")

    def available(self) -> int:
        """Credits the sender may still use, summed over VCs."""
        return sum(self.cap - u for u in self.used)

    def max_take(self) -> int:
        """Most credits one VC can ever hold at once."""
        return self.cap


class SharedCredits(StaticCredits):
    """Each VC owns ``vc_min`` credits; the rest of the buffer is a pool shared by all VCs."""

    __slots__ = ("vc_min", "pool", "pool_used")

    def __init__(self, total_credits: int, vcs: int, vc_min: int = 0) -> None:
        super().__init__(total_credits, vcs)
        self.vc_min = min(vc_min, total_credits // vcs)
        self.pool = total_credits - vcs * self.vc_min
        """Credits shared by all VCs above their minimum."""
        self.pool_used = 0
        self.cap = total_credits
        self._refresh()

    def _over(self, used: int) -> int:
        return used - self.vc_min if used > self.vc_min else 0

    def _refresh(self) -> None:
        """Recompute ``room`` of every VC: what is left of its own minimum plus the free pool
        (-1 for every VC while the pool is over-used, a violation: nothing fits)."""
        free = self.pool - self.pool_used
        vc_min = self.vc_min
        room = self.room
        for vc, used in enumerate(self.used):
            room[vc] = (vc_min - used if used < vc_min else 0) + free if free >= 0 else -1

    def take(self, vc: int, k: int) -> None:
        used = self.used[vc]
        self.pool_used += self._over(used + k) - self._over(used)
        super().take(vc, k)
        self._refresh()
        if self.pool_used > self.pool:
            self.violations.append(f"shared pool: {self.pool_used} credits in use > {self.pool}")

    def give(self, vc: int, k: int) -> None:
        used = self.used[vc]
        self.pool_used += self._over(used - k) - self._over(used)
        super().give(vc, k)
        self._refresh()

    def available(self) -> int:
        return self.total - sum(self.used)

    def max_take(self) -> int:
        return self.vc_min + self.pool


CREDIT_POLICIES = {"static": StaticCredits, "shared": SharedCredits}


class CreditBatcher:
    """Receiver side: frees accumulate per VC and go back in updates of ``batch`` credits
    (PCIe UpdateFC, NVLink credit batching). ``batch == 1`` returns every credit at once."""

    __slots__ = ("batch", "held")

    def __init__(self, batch: int, vcs: int) -> None:
        self.batch = batch
        self.held = [0] * vcs
        """Credits freed but not yet sent back, per VC."""

    def free(self, vc: int, k: int) -> int:
        """Record ``k`` freed credits; return how many go back now (a multiple of ``batch``)."""
        held = self.held[vc] + k
        out = held - held % self.batch
        self.held[vc] = held - out
        return out
