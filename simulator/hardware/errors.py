"""The one error the hardware layer raises for a broken physical rule."""

from __future__ import annotations


class HardwareError(ValueError):
    """A physical rule broken (copper past reach, a third retimer, an unknown part): one-line message.

    The topology builder adds the file, line and field of the YAML node that caused it.
    """
