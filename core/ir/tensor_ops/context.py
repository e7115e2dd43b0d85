"""One use of a tensor op: its input types and attributes, with checked
accessors that fail with a diagnostic naming the node, port and fix.  The
op's spec (spec.py) makes it; lowerings and shape rules read it."""
from __future__ import annotations

from typing import Any, NoReturn

from ...errors import Diagnostic, Location, VerificationError
from ..types import BufferType, ScalarType


class OpContext:
    """One use of an op: ``types`` (input port -> BufferType, in port order)
    and ``attrs`` (defaults filled in), with checked accessors."""

    def __init__(self, spec: Any, types: dict[str, BufferType],
                 attrs: dict[str, Any], node: str | None = None):
        self.spec = spec
        """The op's TensorOpSpec (spec.py, which builds on this module)."""
        self.types = types
        self.attrs = attrs
        self.node = node

    @property
    def op(self) -> str:
        return self.spec.name

    def fail(self, message: str, fix: str = "", port: str | None = None) -> NoReturn:
        """Raise a VerificationError about this use of the op."""
        raise VerificationError(Diagnostic(
            Location(node=self.node, port=port), f"{self.op}: {message}", fix))

    # ports --------------------------------------------------------------
    def has(self, port: str) -> bool:
        return port in self.types

    def shape(self, port: str) -> tuple:
        return self.types[port].shape

    def rank(self, port: str) -> int:
        return len(self.types[port].shape)

    def element(self, port: str) -> ScalarType:
        return self.types[port].element

    def expect_rank(self, port: str, *ranks: int) -> None:
        if self.rank(port) not in ranks:
            wanted = " or ".join(str(r) for r in ranks)
            self.fail(f"input '{port}' must have rank {wanted}, got {self.types[port]}",
                      f"pass a rank-{wanted} buffer to '{port}'", port)

    def same_element(self) -> ScalarType:
        """The element type shared by all inputs (error if they differ)."""
        ports = list(self.types)
        first = self.element(ports[0])
        for port in ports[1:]:
            if self.element(port) != first:
                self.fail(f"input '{port}' has element type {self.element(port)} but "
                          f"'{ports[0]}' has {first}",
                          "give all inputs the same element type", port)
        return first

    def float_element(self) -> ScalarType:
        """Like :meth:`same_element`, requiring a float type."""
        element = self.same_element()
        if not element.is_float:
            self.fail(f"needs float inputs, got {element}",
                      "cast the inputs to f16, f32 or f64", next(iter(self.types)))
        return element

    def numeric_element(self) -> ScalarType:
        """Like :meth:`same_element`, rejecting bool."""
        element = self.same_element()
        if element.is_bool:
            self.fail("needs numeric inputs, got bool", "cast the inputs to a number type",
                      next(iter(self.types)))
        return element

    # attributes ---------------------------------------------------------
    def _bad_attr(self, name: str, wanted: str) -> NoReturn:
        self.fail(f"attribute '{name}' must be {wanted}, got {self.attrs[name]!r}",
                  f"set {name} to {wanted}")

    def int_attr(self, name: str, minimum: int | None = None) -> int:
        value = self.attrs[name]
        if isinstance(value, bool) or not isinstance(value, int) or (
                minimum is not None and value < minimum):
            self._bad_attr(name, "an integer" + ("" if minimum is None else f" >= {minimum}"))
        return value

    def ints_attr(self, name: str, count: int | None = None,
                  minimum: int | None = None) -> tuple[int, ...]:
        """A tuple of ints; a single int is repeated ``count`` times."""
        value = self.attrs[name]
        if isinstance(value, int) and not isinstance(value, bool) and count is not None:
            value = (value,) * count
        ok = isinstance(value, tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value)
        ok = ok and (count is None or len(value) == count)
        ok = ok and (minimum is None or all(v >= minimum for v in value))
        if not ok:
            size = "integers" if count is None else f"{count} integers"
            self._bad_attr(name, f"a list of {size}" + (
                "" if minimum is None else f" >= {minimum}"))
        return value

    def float_attr(self, name: str) -> float:
        value = self.attrs[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self._bad_attr(name, "a number")
        return float(value)

    def flag_attr(self, name: str) -> bool:
        value = self.attrs[name]
        if value not in (0, 1) or not isinstance(value, (bool, int)):
            self._bad_attr(name, "true/false (or 0/1)")
        return bool(value)

    def axis_attr(self, name: str, rank: int) -> int:
        """An axis in [-rank, rank), returned as a non-negative index."""
        value = self.int_attr(name)
        if not -rank <= value < rank:
            self._bad_attr(name, f"an axis in [{-rank}, {rank - 1}] for a rank-{rank} input")
        return value % rank
