"""32-bit index arithmetic: an entry's narrow i64 values (hpvm.ir.narrow_values)
computed in ``HPVM_INDEX`` (a mixin of OpenCLRenderer).

The program is built twice (program.py): with ``HPVM_INDEX`` ``int`` for
launches whose buffers have at most NARROW_ELEMENTS elements and whose
replication counts and buffer dimensions are at most NARROW_SIZE, with
``long`` otherwise.  In an entry, a narrow variable (an instance id's
alias, a neighbour's index, a loop counter over a dimension) is declared
``HPVM_INDEX``, a shape symbol too, and a narrow expression is computed
in ``HPVM_INDEX`` with plain C operators (it cannot overflow), then
widened to ``long`` where the code around it computes in 64 bits: the
device compiler narrows a compare of two widened ints itself.  With
``long``, every such value computes as before (no operation overflows).

On the lent H200, nodes as written: sgemm 0.114 -> 0.058 ms, edge 0.31 ->
0.23 ms, the geometric mean of 12 suite programs 0.90x (benchmarks/
RESULTS.md, "32-bit index arithmetic"); cfd's compute_flux and srad_2
1.16-1.22x slower, in every run, with nearly the same PTX (cause not
found; the knob ``narrow_indices`` lets the tuner switch it off).  The
stencil's sweeps moved only once the lanes' own clamps and tests were in
``HPVM_INDEX`` too (lanes.py): 0.69 -> 0.75-0.76 of the copy kernel's
bandwidth.
"""
from __future__ import annotations

from hpvm.codegen.cstyle_expressions import C_OPERATORS, ScalarBinding
from hpvm.ir.kernel import (
    Binary, Cast, Compare, Const, Expr, For, InstanceCount, InstanceId, Intrinsic,
    KernelFunction, Let, Select, Var,
)
from hpvm.ir.narrow_values import NarrowValues
from hpvm.ir.types import BufferType, I64

NARROW_SIZE = 2 ** 29
"""The most instances along a replication dimension, and elements along a
buffer dimension, of a launch that runs the ``int`` program."""
ANALYSED_SIZE = 2 * NARROW_SIZE
"""The sizes narrow values are found for: twice NARROW_SIZE, so that the
ids of a launch padded up to whole work groups stay inside too."""


def _int_constant(e: Expr) -> bool:
    """An i64 constant an ``int`` holds."""
    return isinstance(e, Const) and e.type == I64 and -2 ** 31 <= int(e.value) < 2 ** 31


class NarrowIndices:
    """Narrow values of the entry being rendered; the renderer supplies
    ``index_type``, ``narrow_indices``, ``writer``, ``names``, ``bind`` and
    the C-style statements and expressions, and calls ``narrow_entry``
    and ``end_narrow_entry`` around each entry (helpers keep 64 bits)."""

    _narrow: NarrowValues | None = None

    def narrow_entry(self, kernel: KernelFunction) -> None:
        """Find ``kernel``'s narrow values before its entry renders (None
        after it: helpers keep 64 bits)."""
        shapes = [p.type.shape for p in kernel.params
                  if isinstance(p.type, BufferType) and p.type.shape]
        symbols = {dim for shape in shapes for dim in shape if isinstance(dim, str)} \
            - {p.name for p in kernel.params}
        self._narrow = NarrowValues(kernel, symbols, ANALYSED_SIZE) \
            if self.index_type and self.narrow_indices else None

    def end_narrow_entry(self) -> None:
        self._narrow = None

    def _is_narrow(self, e: Expr) -> bool:
        return self._narrow is not None and self._narrow.is_narrow(e)

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const) or not self._is_narrow(e):
            return super().expr(e)
        return f"((long){self.narrow_text(e)})"

    def _expr_Compare(self, e: Compare) -> str:
        """Two narrow operands (or one and a constant) compare in 32 bits."""
        sides = (e.lhs, e.rhs)
        if not all(self._is_narrow(side) or _int_constant(side) for side in sides) \
                or all(isinstance(side, Const) for side in sides):
            return super()._expr_Compare(e)
        lhs, rhs = (self.narrow_text(side) for side in sides)
        return f"({lhs} {C_OPERATORS[e.op]} {rhs})"

    def index(self, binding, indices) -> str:
        """Narrow indices flatten from their 32-bit values."""
        return binding.flat_index([self.narrow_text(i) if self._is_narrow(i) else self.expr(i)
                                   for i in indices], self.index_cast)

    def narrow_text(self, e: Expr) -> str:
        """``e`` (narrow) computed in HPVM_INDEX."""
        if isinstance(e, Const):
            value = int(e.value)
            return f"({value})" if value < 0 else str(value)
        if isinstance(e, Var):
            return self.lookup(e.name).c_name
        if isinstance(e, InstanceId):
            return f"(({self.index_type}){self.instance_id(e.dim)})"
        if isinstance(e, InstanceCount):
            return f"(({self.index_type}){self.instance_count(e.dim)})"
        if isinstance(e, Binary):
            return f"({self.narrow_text(e.lhs)} {C_OPERATORS[e.op]} {self.narrow_text(e.rhs)})"
        if isinstance(e, Intrinsic):  # both arguments of one type: the overloads differ
            args = ", ".join(f"({self.index_type}){self.narrow_text(a)}" for a in e.args)
            return f"{e.name}({args})"
        if isinstance(e, Select):
            return (f"({super().expr(e.cond)} ? {self.narrow_text(e.if_true)} : "
                    f"{self.narrow_text(e.if_false)})")
        if isinstance(e, Cast):
            return f"(({self.index_type}){super().expr(e.value)})"
        raise AssertionError(f"not a narrow expression: {type(e).__name__}")

    def _narrow_variable(self, name: str) -> bool:
        return self._narrow is not None and name in self._narrow.variables

    def _stmt_Let(self, s: Let) -> None:
        if s.type != I64 or not self._narrow_variable(s.name):
            super()._stmt_Let(s)
            return
        c_name = self.names(s.name)
        self.writer.line(f"{self.index_type} {c_name} = {self.narrow_text(s.value)};")
        self.bind(s.name, ScalarBinding(c_name, I64))

    def _stmt_Assign(self, s) -> None:
        if not self._narrow_variable(s.name):
            super()._stmt_Assign(s)
            return
        self.writer.line(f"{self.lookup(s.name).c_name} = {self.narrow_text(s.value)};")

    def loop_counter_type(self, s: For) -> str:
        return self.index_type if self._narrow_variable(s.var) else super().loop_counter_type(s)

    def loop_bound(self, bound: Expr, s: For) -> str:
        return self.narrow_text(bound) if self._narrow_variable(s.var) \
            else super().loop_bound(bound, s)

    def shape_symbol_type(self, name: str) -> str:
        """The C type a shape symbol of the entry is declared in."""
        return self.index_type if self._narrow is not None else "long"
