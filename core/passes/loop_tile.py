"""``loop-tile``: run a two-deep loop nest in square blocks of iterations,
so that a nest reading one array along its rows and another along its
columns keeps both blocks in cache.

``c[i, j] = a[i, j] + b[j, i]`` walks ``b`` a row apart at every inner
step in either loop order; in blocks of ``size`` x ``size`` iterations,
the block's rows of ``b`` stay in cache while its columns are read::

    for i_block in start .. stop step size:
      for j_block in start .. stop step size:
        for i in i_block .. min(i_block + size, stop):
          for j in j_block .. min(j_block + size, stop):
            body

Which nests: those named in ``loops`` (the outer loop's id, as
loop-unroll's), or by default every nest with an access contiguous
along the outer loop whose earlier index reads the inner one (its cache
lines each read once per inner step: no order walks every access
contiguously), neither loop known to run at most ``size`` iterations (constant bounds,
or a block's own loops: a nest is not blocked twice).  Legal where
loop-interchange may swap the nest (see core/passes/loop_interchange.py:
iterations that touch one element are then apart by no distance that
falls along either loop, which blocks keep in order too), its bounds
make a rectangle, and both loops step by 1.  A nest named in ``loops``
that is not legal is refused with the reason.  The loops of a block keep
their hints.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import Module
from ..ir.kernel import Binary, Const, For, Intrinsic, KernelFunction, Stmt, Var
from ..ir.reduction import reads_variable
from ..ir.types import I64
from .errors import PassError
from .loop_interchange import crossing_accesses, interchange_problem
from .loop_nests import NestRewriter, check_loop_ids, loops_without
from .loop_unroll import constant_trip_count
from .names import NameGenerator, function_names
from .registry import Option, register_pass


@register_pass("loop-tile", options=[
    Option("loops", list, (), "the outer loops of the nests to run in blocks (ids as "
                              "loop-unroll's; default: every nest contiguous along both loops)"),
    Option("size", int, 64, "iterations of each loop in a block")])
def loop_tile(module: Module, loops: tuple[str, ...], size: int) -> Module:
    """Run the named nests, or every legal nest walking memory along both
    of its loops, in blocks of ``size`` x ``size`` iterations."""
    if size < 2:
        raise PassError(Diagnostic(Location(), f"loop-tile: size={size} makes no blocks",
                                   "give size=2 or more (64: a 16 KiB block of f32 per array)"))
    check_loop_ids("loop-tile", module, loops)
    functions = {name: _Tiler(function, module, set(loops), size).run()
                 for name, function in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def tileable_loops(module: Module) -> list[str]:
    """The ids of the outer loops of the nests loop-tile may run in blocks
    (the tuner's knobs)."""
    return loops_without(module, tile_problem)


def tile_problem(outer: For, function: KernelFunction, module: Module) -> str | None:
    """Why ``outer`` and the loop in it cannot run in blocks; None when
    they can."""
    problem = interchange_problem(outer, function, module)
    if problem is not None:
        return problem
    inner = outer.body[0]
    if outer.step != 1 or inner.step != 1:
        return "has a loop that does not step by 1"
    if reads_variable((inner.start, inner.stop), outer.var):
        return (f"has an inner loop '{inner.var}' whose bounds read '{outer.var}' (blocks need "
                "a rectangle)")
    return None


def worth_tiling(outer: For, size: int) -> bool:
    """Whether ``outer``'s nest reads or writes an array contiguously
    along ``outer`` while the loop in it strides through that array (each
    inner step another cache line, read again by the next outer steps,
    which a block keeps in cache), both loops longer than a block."""
    inner = outer.body[0]
    if not crossing_accesses(inner.body, outer.var, inner.var):
        return False
    return all((most_trips(loop) or size + 1) > size for loop in (outer, inner))


def most_trips(loop: For) -> int | None:
    """The most iterations ``loop`` runs, where its bounds say: constant
    bounds, or a block's (``v .. min(v + c, n)``); None otherwise."""
    stop = loop.stop
    if isinstance(stop, Intrinsic) and stop.name == "min" and isinstance(stop.args[0], Binary) \
            and stop.args[0].op == "add" and stop.args[0].lhs == loop.start \
            and isinstance(stop.args[0].rhs, Const) and loop.step == 1:
        return int(stop.args[0].rhs.value)
    return constant_trip_count(loop)


def _tiled(outer: For, size: int, names: NameGenerator) -> For:
    inner = outer.body[0]
    blocks = {loop.var: names.fresh(f"{loop.var}_block") for loop in (outer, inner)}

    def within(loop: For, body: tuple[Stmt, ...]) -> For:
        first = Var(blocks[loop.var], I64)
        last = Intrinsic("min", (Binary("add", first, Const(size, I64)), loop.stop))
        return dataclasses.replace(loop, start=first, stop=last, body=body, trip_count=None)

    def over_blocks(loop: For, body: tuple[Stmt, ...]) -> For:
        return For(blocks[loop.var], loop.start, loop.stop, size, body)
    return over_blocks(outer, (over_blocks(inner, (within(outer, (within(inner, inner.body),)),)),))


class _Tiler(NestRewriter):
    pass_name = "loop-tile"

    def __init__(self, function: KernelFunction, module: Module, requests: set[str], size: int):
        super().__init__(function, module, requests)
        self.size = size
        self.names = NameGenerator(function_names(function))

    def problem(self, loop: For) -> str | None:
        return tile_problem(loop, self.function, self.module)

    def worth(self, loop: For) -> bool:
        return worth_tiling(loop, self.size)

    def rewrite(self, loop: For) -> Stmt:
        return _tiled(loop, self.size, self.names)
