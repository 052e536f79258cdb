"""The engines a run may ask for, by name: a leaf module (no engine code), so that schemas and CLI
help can list them without importing the engines."""

from __future__ import annotations

from typing import Literal

EngineName = Literal["packet", "flow", "auto"]
"""``packet``: every packet and credit; ``flow``: max-min fair flows; ``auto``: by estimated packet-hops."""
ENGINES: tuple[str, ...] = EngineName.__args__  # type: ignore[attr-defined]
"""The ``EngineName`` choices."""
