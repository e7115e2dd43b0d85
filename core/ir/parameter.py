"""Parameters: the typed ports of kernels, graphs and nodes."""
from __future__ import annotations

from dataclasses import dataclass

from .types import Type, is_buffer

DIRECTIONS = ("in", "out", "inout", "private")
"""``in``: read only; ``out``: written (a fresh buffer is made for it);
``inout``: read and written in place; ``private``: every instance works on
its own copy of the incoming value and its writes are not seen outside."""


@dataclass(frozen=True)
class Parameter:
    """A named, typed port.

    ``restrict`` promises that the buffer aliases no other parameter, so
    back ends may reorder its loads and stores freely.
    """

    name: str
    type: Type
    direction: str = "in"
    restrict: bool = False

    @property
    def is_buffer(self) -> bool:
        return is_buffer(self.type)

    @property
    def reads(self) -> bool:
        """True if the incoming value is observed (in, inout, private)."""
        return self.direction != "out"

    @property
    def writes(self) -> bool:
        """True if the port produces a value visible to consumers."""
        return self.direction in ("out", "inout")
