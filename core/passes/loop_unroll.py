"""``loop-unroll`` (HPVM2FPGA's LU): unroll kernel ``for`` loops by a factor.

Which loops, and by how much:

- a loop named in ``loops`` (``"blur.k:4"``, ``"blur.k#2:full"``: function,
  loop variable, and ``#n`` for its n-th loop of that variable, counted in
  source order) gets that factor; ``full`` unrolls it completely, which
  needs constant bounds.  These are the design-space exploration's knobs,
  one integer per loop (``loop_ids`` lists them);
- any other loop with an ``unroll=`` hint gets the hint (``unroll = 1``:
  never);
- any other loop gets ``factor`` (0 or 1: left alone).

A loop with constant bounds and at most ``factor`` iterations is unrolled
completely.  Otherwise the loop becomes a main loop whose body runs
``factor`` copies of the old one, and a remainder loop for the last
iterations.  Each copy declares fresh names; the loop variable reads
``v + k * step`` in copy ``k``.

Legal only when the loop's bound is invariant (it is evaluated before
every iteration: no variable it reads is assigned in the body, and it
reads no memory), the step is positive (or the bounds constant), and the
result stays under ``max_statements``.  A loop named in ``loops`` that is
not legal to unroll is refused with the reason; a loop that only a hint or
``factor`` selects is left for the back end instead.
"""
from __future__ import annotations

import dataclasses
import re

from ..errors import Diagnostic, Location
from ..ir.graph import Module
from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.kernel import Binary, Compare, Const, Expr, For, KernelFunction, Select, Stmt, Var
from ..ir.types import I64
from ..ir.visit import map_blocks, walk
from .const_fold import fold_expression
from .errors import PassError
from .module_tools import map_functions
from .names import NameGenerator, fresh_copy, function_names
from .registry import Option, register_pass

FULL = "full"
_REQUEST = re.compile(r"^(?P<loop>[\w.]+(?:#\d+)?):(?P<factor>\d+|full)$")


@register_pass("loop-unroll", options=[
    Option("factor", int, 0, "unroll factor of loops without a hint or a request "
                             "(0 or 1: leave them)"),
    Option("loops", list, (), "per-loop requests FUNCTION.VAR[#N]:FACTOR or :full"),
    Option("max_statements", int, 2000, "largest unrolled body, in statements")])
def loop_unroll(module: Module, factor: int, loops: tuple[str, ...],
                max_statements: int) -> Module:
    """Unroll kernel loops: loops=FN.VAR:N or :full per loop, else the unroll hint, else factor."""
    requests = _parse_requests(module, loops)

    def unroll_function(function: KernelFunction) -> KernelFunction:
        unroller = Unroller(function, requests, factor, max_statements)
        return unroller.run()

    return map_functions(module, unroll_function)


def loop_ids(function: KernelFunction) -> list[str]:
    """The ids of ``function``'s loops, in source order: ``fn.var``, and
    ``fn.var#2`` ... for later loops of the same variable."""
    seen: dict[str, int] = {}
    ids = []
    for node in walk(function.body):
        if isinstance(node, For):
            seen[node.var] = seen.get(node.var, 0) + 1
            suffix = "" if seen[node.var] == 1 else f"#{seen[node.var]}"
            ids.append(f"{function.name}.{node.var}{suffix}")
    return ids


def _parse_requests(module: Module, loops: tuple[str, ...]) -> dict[str, int | str]:
    known = {loop_id for function in module.functions.values() for loop_id in loop_ids(function)}
    requests: dict[str, int | str] = {}
    for text in loops:
        match = _REQUEST.match(text.replace(" ", ""))
        if match is None:
            raise PassError(Diagnostic(Location(), f"loop-unroll: '{text}' is not "
                                       "FUNCTION.VAR[#N]:FACTOR", "write e.g. blur.k:4 or blur.k:full"))
        if match["loop"] not in known:
            raise PassError(Diagnostic(Location(), f"loop-unroll: no loop '{match['loop']}'",
                                       f"the loops are: {', '.join(sorted(known)) or 'none'}"))
        factor = match["factor"]
        requests[match["loop"]] = FULL if factor == FULL else int(factor)
    return requests


class Unroller:
    """Unrolls the loops of one function, innermost first (``run``), or
    one loop at a time (``problem`` then ``unrolled``), every copy's names
    fresh in the function."""

    def __init__(self, function: KernelFunction, requests: dict, factor: int, max_statements: int):
        self.function = function
        self.requests = requests
        self.default = factor
        self.max_statements = max_statements
        self.names = NameGenerator(function_names(function))
        ids = iter(loop_ids(function))
        self.ids = {id(node): next(ids) for node in walk(function.body) if isinstance(node, For)}

    def run(self) -> KernelFunction:
        if not self.ids:
            return self.function
        body = self.block(self.function.body)
        return dataclasses.replace(self.function, body=body)

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            loop_id = self.ids.get(id(stmt))
            inner = self._inner(stmt)
            out.extend(self.loop(inner, loop_id) if loop_id is not None else (inner,))
        return tuple(out)

    def _inner(self, stmt: Stmt) -> Stmt:
        """``stmt`` with the loops inside it unrolled."""
        return map_blocks(stmt, self.block)

    def loop(self, loop: For, loop_id: str) -> tuple[Stmt, ...]:
        requested = self.requests.get(loop_id)
        factor = requested if requested is not None else (
            loop.unroll if loop.unroll is not None else self.default)
        if factor in (0, 1):
            return (loop,)
        problem = self.problem(loop, factor)
        if problem is not None:
            if requested is not None:
                raise PassError(Diagnostic(Location(function=self.function.name),
                                           f"loop-unroll: loop '{loop_id}' {problem}",
                                           "unroll another loop, or a smaller factor"))
            return (loop,)
        return self.unrolled(loop, factor)

    def unrolled(self, loop: For, factor) -> tuple[Stmt, ...]:
        """``loop`` unrolled by ``factor`` (an int or FULL), which
        ``problem`` allowed."""
        trips = _constant_trips(loop)
        if trips is not None and (factor == FULL or trips <= factor):
            return fold_expression(self._copies(
                loop, [Const(loop.start.value + k * loop.step, I64) for k in range(trips)]))
        return self._strip_mined(loop, factor)

    def problem(self, loop: For, factor) -> str | None:
        """Why ``loop`` cannot be unrolled by ``factor``, or None."""
        trips = _constant_trips(loop)
        if factor == FULL and trips is None:
            return "has bounds that are not constants, so it cannot be unrolled completely"
        if trips is None:
            # The bounds are evaluated again around the unrolled loops.
            reads_memory, changed = bound_dependences(loop, (loop.body,))
            if reads_memory:
                return "has a bound that reads memory, which the body may change"
            if changed:
                return f"has a bound that the body changes ({', '.join(sorted(changed))})"
            if loop.step < 0:
                return "counts down with bounds that are not constants"
        if loop.var in assigned_variables(loop.body):
            return f"assigns its own variable '{loop.var}'"
        copies = trips if factor == FULL or (trips is not None and trips <= factor) else factor
        size = copies * sum(1 for n in walk(loop.body) if isinstance(n, Stmt))
        if size > self.max_statements:
            return f"would grow to {size} statements, more than max_statements={self.max_statements}"
        return None

    def _copies(self, loop: For, values: list[Expr]) -> tuple[Stmt, ...]:
        """The body once per value of the loop variable, each with fresh names."""
        out: list[Stmt] = []
        for value in values:
            out.extend(fresh_copy(loop.body, self.names, {loop.var: value}))
        return tuple(out)

    def _strip_mined(self, loop: For, factor: int) -> tuple[Stmt, ...]:
        """``for v in a .. a + whole step S*U { U copies }`` then the rest:
        ``whole`` is the number of complete groups of U iterations,
        ceil(span / S) // U, which for S > 1 is (span + S - 1) // (S*U)
        (a lane's strided loop of 16 iterations, U = 2: eight pairs,
        where span // (S*U) left seven and two single iterations)."""
        step = loop.step
        var = Var(loop.var, I64)
        span = Binary("sub", loop.stop, loop.start)
        chunk = Const(step * factor, I64)
        iterated = Binary("add", span, Const(step - 1, I64)) if step > 1 else span
        main_stop = Binary("add", loop.start,
                           Binary("mul", Binary("div", iterated, chunk), chunk))
        # A loop that runs no iteration must stay so: max(span, 0).
        main_stop = fold_expression(_select_non_negative(loop.start, span, chunk, main_stop))
        body = self._copies(loop, [var if k == 0 else Binary("add", var, Const(k * step, I64))
                                   for k in range(factor)])
        trips = None if loop.trip_count is None else max(loop.trip_count // factor, 1)
        main = For(loop.var, loop.start, main_stop, step * factor, body, None, loop.ivdep, trips)
        rest = dataclasses.replace(loop, start=main_stop, unroll=1, trip_count=None)
        return (main, rest)


def _select_non_negative(start: Expr, span: Expr, chunk: Expr, main_stop: Expr) -> Expr:
    """``main_stop`` when ``span`` >= 0, else ``start`` (no iteration)."""
    return Select(Compare("ge", span, Const(0, I64)), main_stop, start)


def _constant_trips(loop: For) -> int | None:
    if not (isinstance(loop.start, Const) and isinstance(loop.stop, Const)):
        return None
    start, stop, step = int(loop.start.value), int(loop.stop.value), loop.step
    if step > 0:
        return max(0, -(-(stop - start) // step))
    return max(0, -(-(start - stop) // -step))


def constant_trip_count(loop: For) -> int | None:
    """The number of iterations of a loop with constant bounds, else None."""
    return _constant_trips(loop)


def loops_by_id(function: KernelFunction) -> dict[str, For]:
    """``function``'s loops keyed by their ids (see ``loop_ids``)."""
    loops = [node for node in walk(function.body) if isinstance(node, For)]
    return dict(zip(loop_ids(function), loops))


def with_unroll_hints(module: Module, hints: dict[str, int]) -> Module:
    """``module`` with the ``unroll`` hint of each loop named in ``hints``
    (loop id -> factor) set, so that the hint travels with the loop through
    later passes (loop-fusion, node-fusion rename and merge functions) and
    loop-unroll or the back end honours it.  KeyError for an unknown id."""
    def mark(function: KernelFunction) -> KernelFunction:
        wanted = {loop_id: factor for loop_id, factor in hints.items()
                  if loop_id.partition(".")[0] == function.name}
        if not wanted:
            return function
        seen: dict[str, int] = {}

        def visit(stmt):
            if isinstance(stmt, For):
                seen[stmt.var] = seen.get(stmt.var, 0) + 1
                suffix = "" if seen[stmt.var] == 1 else f"#{seen[stmt.var]}"
                factor = wanted.pop(f"{function.name}.{stmt.var}{suffix}", None)
                if factor is not None:
                    stmt = dataclasses.replace(stmt, unroll=factor)
            return map_blocks(stmt, lambda block: tuple(visit(s) for s in block))

        body = tuple(visit(stmt) for stmt in function.body)
        if wanted:
            raise KeyError(", ".join(wanted))
        return dataclasses.replace(function, body=body)

    return map_functions(module, mark)
