"""The sine and cosine of one value computed together, with OpenCL's
``sincos`` (a mixin of OpenCLRenderer).

MRI-Q sums ``phi[k] * cos(angle)`` and ``phi[k] * sin(angle)``: two
calls, each reducing ``angle`` to a quarter period first, the costly
part of both. NVIDIA's OpenCL compiler does not share that work between
them; ``sincos(angle, &c)`` reduces once. On the lent H100 (hand-written
compute_q, benchmarks/RESULTS.md) it ran 1.05x as fast without unrolling,
1.27x with ``#pragma unroll 8`` and 1.46x with 32, with results equal
bit for bit (OpenCL gives all three the same accuracy).

Where a value declared with ``let`` (f32 or f64) has both its sine and
its cosine taken in the statements after it, and no later statement
assigns or declares its name again, both are computed right after the
declaration and the two intrinsics read them.
"""
from __future__ import annotations

from hpvm.codegen.source import GENERATED_PREFIX
from hpvm.ir.analysis import assigned_variables
from hpvm.ir.kernel import For, Intrinsic, Let, Var
from hpvm.ir.types import F32, F64
from hpvm.ir.visit import walk

PAIR = "sincos "
"""Prefix of the scope entry naming a value's sine and cosine."""


class SharedSinCos:
    """Statements and intrinsics of OpenCLRenderer; see the module docstring."""

    def statements(self, stmts) -> None:
        for at, stmt in enumerate(stmts):
            self.statement(stmt)
            if isinstance(stmt, Let) and _both_taken(stmt, stmts[at + 1:]):
                self._sincos(stmt)

    def _sincos(self, let: Let) -> None:
        value = self.lookup(let.name).c_name
        sine, cosine = (f"{GENERATED_PREFIX}{part}_{value}" for part in ("sin", "cos"))
        type_name = self.type_name(let.type)
        self.writer.line(f"{type_name} {cosine};")
        self.writer.line(f"{type_name} {sine} = sincos({value}, &{cosine});")
        self.bind(PAIR + let.name, (sine, cosine))

    def _expr_Intrinsic(self, e: Intrinsic) -> str:
        if e.name in ("sin", "cos") and isinstance(e.args[0], Var):
            for scope in reversed(self.scopes):
                pair = scope.get(PAIR + e.args[0].name)
                if pair is not None:
                    return pair[e.name == "cos"]
        return super()._expr_Intrinsic(e)


def _both_taken(let: Let, rest: tuple) -> bool:
    """Whether ``rest`` takes both the sine and the cosine of ``let``'s
    variable (f32 or f64) and neither assigns nor declares its name."""
    if let.type not in (F32, F64) or let.name in assigned_variables(rest):
        return False
    taken = set()
    for node in walk(rest):
        if isinstance(node, Let) and node.name == let.name or \
                isinstance(node, For) and node.var == let.name:
            return False
        if isinstance(node, Intrinsic) and node.name in ("sin", "cos") and \
                node.args[0] == Var(let.name, let.type):
            taken.add(node.name)
    return len(taken) == 2
