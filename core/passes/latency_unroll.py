"""``latency-unroll``: unroll the loops of small launches, so that each
instance keeps more loads in flight.

A device hides the latency of memory with the loads of many instances at
once: ``in_flight`` is how many work items it keeps resident (an H200: 132
compute units x 2,048).  A launch of fewer instances leaves most of that
idle, and each instance waits on one load after another.  Its loop,
unrolled by a factor f, issues the loads of f iterations together, so a
launch of n instances has n x f chains of loads under way.  Little's law
then asks for the largest f with n x f <= ``in_flight``.

Backprop's ``layerforward`` (128 x 17 instances, each a loop over 8,192
rows, two loads an iteration) took 0.70 ms on an H200 as written and
0.53 / 0.32 / 0.24 / 0.19 ms unrolled by 8 / 16 / 32 / 64; mriq's
``compute_q`` (32,768 instances, eight loads and a sine and cosine an
iteration) was fastest unrolled by 8 (0.085 -> 0.078 ms) and slower
above.  The second limit below is that: a copy's loads each hold a
register until they arrive (a 64-bit value two), so f x (registers the
loads of an iteration take) stays at most ``max_loads``, half the
registers a work item can have (255 on NVIDIA).
The first limit leaves room for them: n x f <= ``in_flight`` leaves a
compute unit at most 2,048 / f work items, each with 32 f of its 65,536
registers.

The instance count is known only at launch (backprop's replication is
``[128, H1]``), so the loop is rendered once per factor behind tests of
the count, the largest first, with the loop as written last::

    if n * 64 <= in_flight { by 64 } else if n * 32 <= ... { by 32 } else if ... else { loop }

Every work item of a launch takes the same branch.  Where the
replication is constant the test is folded and one copy is left.

Which loops: the innermost loops of node functions that read memory, carry
no unroll hint (the tuner's per-loop factors, ``unroll=1``) and are legal
for ``loop-unroll`` (bounds invariant in the body); not loops of constant
trip counts up to 64, which back ends unroll themselves, nor loops with a
barrier or an atomic update, nor loops that read a buffer they write: an
iteration's loads may then wait for the stores of the one before (ms_nw's
wavefronts), and the copies only lengthen the kernel (15x its text).
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import KernelBody, Module
from ..ir.kernel import (
    AtomicUpdate, Barrier, Binary, Compare, Const, Expr, For, If, InstanceCount, KernelFunction,
    Load, Return, Stmt, Store, While,
)
from ..ir.types import I64
from ..ir.visit import map_blocks, walk
from .const_fold import fold_expression
from .errors import PassError
from .loop_unroll import Unroller, constant_trip_count
from .module_tools import iter_nodes
from .reduce_forms import product
from .registry import Option, register_pass

SMALL_TRIPS = 64
"""Constant trip counts up to this are left to the back end's full unroll."""


@register_pass("latency-unroll", options=[
    Option("in_flight", int, 132 * 2048, "work items the device keeps resident (compute units "
                                         "x resident work items a unit)"),
    Option("factors", list, ("64", "32", "16", "8"), "unroll factors, one copy of the loop each"),
    Option("max_loads", int, 128, "most registers the loads in flight of an instance take, "
                                  "over an unrolled iteration (a 64-bit load: two)"),
    Option("max_statements", int, 2000, "largest unrolled body, in statements")])
def latency_unroll(module: Module, in_flight: int, factors: tuple[str, ...], max_loads: int,
                   max_statements: int) -> Module:
    """Unroll the loops of launches too small to fill the device, by their instance count."""
    chosen = _factors(factors)
    if in_flight < 1:
        raise PassError(Diagnostic(Location(), f"latency-unroll: in_flight={in_flight} is not "
                                   "positive", "give the work items the device keeps resident"))
    replications = _replications(module)
    functions = dict(module.functions)
    for name, replication in replications.items():
        if replication is not None:
            unroller = _LatencyUnroller(functions[name], replication, in_flight, chosen,
                                        max_loads, max_statements)
            functions[name] = unroller.run()
    return dataclasses.replace(module, functions=functions)


def _factors(texts: tuple[str, ...]) -> tuple[int, ...]:
    try:
        values = sorted({int(text) for text in texts}, reverse=True)
    except ValueError:
        values = []
    if not values or values[-1] < 2:
        raise PassError(Diagnostic(Location(), f"latency-unroll: factors={','.join(texts)} "
                                   "are not integers of at least 2", "write e.g. factors=32,8"))
    return tuple(values)


def _replications(module: Module) -> dict[str, tuple[Expr, ...] | None]:
    """Each node function -> the replication its nodes run it with; None
    where nodes of different replications share it, or it has none."""
    found: dict[str, tuple[Expr, ...] | None] = {}
    for _, node in iter_nodes(module):
        if isinstance(node.body, KernelBody) and node.replication:
            name = node.body.function
            found[name] = node.replication if found.get(name, node.replication) == \
                node.replication else None
    return found


class _LatencyUnroller:
    def __init__(self, function: KernelFunction, replication: tuple[Expr, ...], in_flight: int,
                 factors: tuple[int, ...], max_loads: int, max_statements: int):
        self.function = function
        self.unroller = Unroller(function, {}, 0, max_statements)
        self.count = fold_expression(product([r if isinstance(r, Const) else InstanceCount(d)
                                              for d, r in enumerate(replication)]))
        self.in_flight = in_flight
        self.factors = factors
        self.max_loads = max_loads

    def run(self) -> KernelFunction:
        body = self.block(self.function.body)
        return self.function if body == self.function.body else \
            dataclasses.replace(self.function, body=body)

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            if isinstance(stmt, For) and self._eligible(stmt):
                out.extend(self._versions(stmt))
                continue
            out.append(map_blocks(stmt, self.block))
        return tuple(out)

    def _eligible(self, loop: For) -> bool:
        inside = list(walk(loop.body))
        trips = constant_trip_count(loop)
        stored = {n.buffer for n in inside if isinstance(n, Store)}
        return (loop.unroll is None and not loop.reduce
                and (trips is None or trips > SMALL_TRIPS)
                and any(isinstance(n, Load) for n in inside)
                and not any(isinstance(n, Load) and n.buffer in stored for n in inside)
                and not any(isinstance(n, (For, While, Barrier, AtomicUpdate, Return))
                            for n in inside))

    def _versions(self, loop: For) -> tuple[Stmt, ...]:
        """The loop unrolled by each factor that fits, behind tests of the
        instance count, the largest factor first; the loop as written last."""
        loads = sum(_registers(n.type) for n in walk(loop.body) if isinstance(n, Load))
        factors = [f for f in self.factors
                   if f * loads <= self.max_loads and self.unroller.problem(loop, f) is None]
        if isinstance(self.count, Const):   # a constant replication: one copy
            fits = [f for f in factors if self.count.value * f <= self.in_flight]
            return self.unroller.unrolled(loop, fits[0]) if fits else (loop,)
        result: tuple[Stmt, ...] = (loop,)
        for factor in reversed(factors):
            test = Compare("le", Binary("mul", self.count, Const(factor, I64)),
                           Const(self.in_flight, I64))
            result = (If(test, self.unroller.unrolled(loop, factor), result),)
        return result


def _registers(element) -> int:
    """32-bit registers a loaded value holds until it arrives (an f64: two)."""
    return max(1, -(-element.bits // 32))
