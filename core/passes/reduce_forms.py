"""The kernel bodies parallel-reduce makes (see parallel_reduce.py).

A kernel it can rewrite (``ReducingKernel``) has one or more reduction
loops (``For.reduce``) at the top level of its body.  Each loop's
iterations are numbered 0 .. count (a perfect nest of unit-step reduction
loops with invariant bounds is flattened into one numbering) and split
over lanes: strided (lane l runs l, l + L, ...: neighbouring lanes read
neighbouring elements, as a GPU work group wants) or chunked (lane l runs
one contiguous block, as a CPU thread wants).  Each lane folds into a
partial result starting at the op's identity; ``tree_combine`` folds a
work group's partials through local memory in log2(L) steps.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Call, Cast, Const, Expr, For, If, Intrinsic,
    KernelFunction, Let, Load, Reduction, Return, Stmt, Store, Var,
)
from ..ir.reduction import combine, identity, promise_problem
from ..ir.types import I64, ScalarType
from ..ir.visit import walk
from .names import NameGenerator, declared_names, substitute


@dataclass(frozen=True)
class ReducingKernel:
    """A function whose body is a prelude, then reduction loops (at
    ``loops``, indices into the body) with store-free statements between
    them, then a tail; ``types`` gives each reduced variable's type."""

    function: KernelFunction
    loops: tuple[int, ...]
    types: dict[str, ScalarType]

    @property
    def tail_start(self) -> int:
        return self.loops[-1] + 1

    def reductions(self, index: int) -> tuple[Reduction, ...]:
        return self.function.body[index].reduce


def reducing_kernel(function: KernelFunction, lane_stores: bool = False
                    ) -> ReducingKernel | str:
    """``function`` as a ReducingKernel, or why parallel-reduce cannot
    rewrite it.  With ``lane_stores`` (the tree form), the last reduction
    loop may store when its iterations are independent (ivdep): each runs
    once, in one lane (see stores_read_in_lane)."""
    body = function.body
    loops = tuple(i for i, s in enumerate(body) if isinstance(s, For) and s.reduce)
    if not loops:
        return ("has no reduction loop at the top level of its body "
                "(write reduce(...) outside ifs and loops)")
    if any(isinstance(s, Barrier) or (isinstance(s, ArrayDecl) and s.space == "local")
           for s in walk(body)):
        return "already synchronises its work group (a barrier or a local array)"
    buffers = {p.name for p in function.params if p.is_buffer}
    for index, stmt in enumerate(body[:loops[-1] + 1]):
        problem = _effect(stmt, buffers)
        if problem is not None and index not in loops:
            return f"{problem} before its last reduction loop (every lane runs that part)"
        if index in loops:
            problem = _loop_problem(stmt, buffers, lane_stores and index == loops[-1]
                                    and stmt.ivdep and len(_flattenable_nest(stmt)) == 1)
            if problem is not None:
                return f"reduction loop '{stmt.var}' {problem}"
    types = _declared_types(function, loops)
    return ReducingKernel(function, loops, types)


def _effect(stmt: Stmt, buffers: set[str], stores: bool = False) -> str | None:
    """What in ``stmt`` every lane running it would do more than once: a
    write to a buffer parameter (a call passing one may write it; plain
    stores are let through with ``stores``), a return."""
    for node in walk(stmt):
        if isinstance(node, (Store, AtomicUpdate)) and node.buffer in buffers and not (
                stores and isinstance(node, Store)):
            return f"writes '{node.buffer}'"
        if isinstance(node, Call) and any(isinstance(a, Var) and a.name in buffers
                                          for a in node.args):
            return f"passes a buffer to '@{node.function}'"
        if isinstance(node, Return):
            return "returns"
    return None


def shared_tail(function: KernelFunction, tail: tuple[Stmt, ...], lane: Var,
                lanes: int) -> list[Stmt]:
    """What follows a tree's last reduction loop, where every lane holds
    the combined values: loops promising independent iterations (ivdep)
    and carrying no variable are shared by the lanes (strided, as the
    reductions were), statements without effects run in every lane; when
    any other statement has an effect, or two do (the second could read
    what another lane's share of the first wrote), lane 0 runs the whole
    tail."""
    if not tail:
        return []
    shareable, loop = _tail_loop(function, tail)
    if not shareable:
        return [If(lane.eq(0), tail)]
    return [dataclasses.replace(s, start=offset(as_i64(s.start), lane, s.step), step=s.step * lanes,
                                trip_count=None) if s is loop else s for s in tail]


def _tail_loop(function: KernelFunction, tail: tuple[Stmt, ...]) -> tuple[bool, For | None]:
    """(whether the lanes may share ``tail``, its one statement with an
    effect: a loop they split, or None)."""
    buffers = {p.name for p in function.params if p.is_buffer}
    effects = [s for s in tail if _effect(s, buffers) is not None]
    if len(effects) > 1 or not all(_shareable_loop(s) for s in effects):
        return False, None
    return True, (effects[0] if effects else None)


def _shareable_loop(stmt: Stmt) -> bool:
    if not (isinstance(stmt, For) and stmt.ivdep and stmt.step > 0):
        return False
    if any(isinstance(n, (Return, Call, AtomicUpdate, Barrier)) for n in walk(stmt.body)):
        return False
    return not assigned_variables(stmt.body) - set(declared_names(stmt.body))


def stores_read_in_lane(kernel: ReducingKernel) -> str | None:
    """Why the stores of the last reduction loop could be read by another
    lane than the one that made them, or None: the tail must read them in
    its one shared loop (shared_tail), of the reduction loop's bounds, at
    the indices they were stored at, so that each element is read by the
    lane that wrote it."""
    body = kernel.function.body
    last = body[kernel.loops[-1]]
    stored = {(n.buffer, n.indices) for n in walk(last.body) if isinstance(n, Store)}
    if not stored:
        return None
    problem = (f"stores in its last reduction loop '{last.var}', and what follows does not "
               "read those elements back in the same lanes")
    tail = body[kernel.tail_start:]
    _, loop = _tail_loop(kernel.function, tail)
    if loop is None or (loop.start, loop.stop, loop.step) != (last.start, last.stop, last.step):
        return problem
    names = {buffer for buffer, _ in stored}
    renamed = substitute(loop.body, {}, {loop.var: Var(last.var, I64)})
    for node in walk(renamed):
        if isinstance(node, (Load, Store)) and node.buffer in names and \
                (node.buffer, node.indices) not in stored:
            return problem
    if any(isinstance(n, Load) and n.buffer in names for s in tail if s is not loop
           for n in walk(s)):
        return problem
    return None


def _loop_problem(loop: For, buffers: set[str], stores: bool = False) -> str | None:
    problem = _effect(loop, buffers, stores)
    if problem is not None:
        return problem
    reduced = {r.var for r in loop.reduce}
    carried = assigned_variables(loop.body) - set(declared_names(loop.body)) - reduced
    if carried:
        return f"carries '{sorted(carried)[0]}' from one iteration to the next"
    for reduction in loop.reduce:
        problem = promise_problem(loop, reduction)
        if problem is not None:
            return problem
    return None


def _declared_types(function: KernelFunction, loops) -> dict[str, ScalarType]:
    reduced = {r.var for i in loops for r in function.body[i].reduce}
    return {s.name: s.type for s in walk(function.body)
            if isinstance(s, Let) and s.name in reduced}


def chunk_statements(kernel: ReducingKernel) -> tuple[list[int], str | None]:
    """The body indices a chunk of partial results runs (the reduction
    loops and the statements before them that they depend on), and a
    reduced variable those read outside its own loop (its value is the
    combined one only after that loop), or None."""
    body = kernel.function.body
    needed: set[str] = set()
    kept: list[int] = []
    for index in reversed(range(kernel.tail_start)):
        stmt = body[index]
        writes = set(declared_names((stmt,))) | assigned_variables((stmt,))
        if index in kernel.loops or writes & needed:
            kept.insert(0, index)
            needed |= names_read(stmt)
    reduced: set[str] = set()
    for index in kept:
        own = {r.var for r in body[index].reduce} if index in kernel.loops else set()
        early = names_read(body[index]) & (reduced - own)
        if early:
            return kept, sorted(early)[0]
        reduced |= own
    return kept, None


def names_read(root) -> set[str]:
    """Variables and buffers ``root`` (a statement or a tuple) reads."""
    return {n.name for n in walk(root) if isinstance(n, Var)} | {
        n.buffer for n in walk(root) if isinstance(n, Load)}


def product(factors: list[Expr]) -> Expr:
    """``factors[0] * factors[1] * ...``."""
    total = factors[0]
    for factor in factors[1:]:
        total = total * factor
    return total


# -- lanes -------------------------------------------------------------------

def iteration_count(loop: For) -> tuple[list[For], list[Expr]]:
    """(the nest lane_loop numbers: ``loop`` and the loops flattened into
    it, the trip count of each level)."""
    nest = _flattenable_nest(loop)
    return nest, [trip_count(level) for level in nest]


def lane_loop(loop: For, lane: Expr, lanes: Expr, layout: str, names: NameGenerator,
              partials: dict[str, str]) -> tuple[Stmt, ...]:
    """Statements running ``lane``'s share of ``loop``'s iterations
    (``layout`` "strided" or "chunked") among ``lanes`` (a constant or an
    expression), folding into the variables ``partials`` maps each
    reduced variable to; the lane's loop keeps ``loop``'s unroll hint."""
    nest, trips = iteration_count(loop)
    counts, lets = [], []
    for level, trip in zip(nest, trips):
        count = names.fresh(f"{level.var}_count")
        lets.append(Let(count, I64, trip))
        counts.append(Var(count, I64))
    total = product(counts)
    k = names.fresh("iteration")
    position = Var(k, I64)
    body: list[Stmt] = []
    stride: Expr | None = None
    for level, count in reversed(list(zip(nest, counts))):
        index = position if stride is None else position / stride
        if level is not nest[0]:
            index = index % count
        body.insert(0, Let(level.var, I64, offset(as_i64(level.start), index, level.step)))
        stride = count if stride is None else stride * count
    body.extend(substitute(nest[-1].body, partials))
    reduce = tuple(Reduction(partials[r.var], r.op, r.identity) for r in loop.reduce)
    if layout == "strided" and isinstance(lanes, Const):
        return (*lets, For(k, lane, total, lanes.value, tuple(body), loop.unroll, reduce=reduce))
    if layout == "strided":   # a step must be constant: count this lane's turns instead
        turn = names.fresh("turn")
        turns = (total - lane + (lanes - 1)) / lanes
        body.insert(0, Let(k, I64, lane + Var(turn, I64) * lanes))
        return (*lets, For(turn, Const(0, I64), turns, 1, tuple(body), loop.unroll,
                           reduce=reduce))
    chunk = names.fresh("chunk")
    lets.append(Let(chunk, I64, (total + (lanes - 1)) / lanes))
    start = lane * Var(chunk, I64)
    stop = Intrinsic("min", (start + Var(chunk, I64), total))
    return (*lets, For(k, start, stop, 1, tuple(body), loop.unroll, reduce=reduce))


def _flattenable_nest(loop: For) -> list[For]:
    """``loop`` and the unit-step reduction loops perfectly nested in it
    whose bounds neither the outer loops nor memory change."""
    nest = [loop]
    while True:
        inner = nest[-1].body[0] if len(nest[-1].body) == 1 else None
        if not (isinstance(inner, For) and inner.reduce and inner.step == 1 and loop.step == 1):
            return nest
        outer_vars = {level.var for level in nest}
        reads_memory, changed = bound_dependences(inner, (nest[0].body,))
        bounds_vars = {n.name for n in walk((inner.start, inner.stop)) if isinstance(n, Var)}
        if reads_memory or changed or bounds_vars & outer_vars:
            return nest
        nest.append(inner)


def trip_count(loop: For) -> Expr:
    step, start, stop = loop.step, as_i64(loop.start), as_i64(loop.stop)
    low, high = (start, stop) if step > 0 else (stop, start)
    span = high if isinstance(low, Const) and low.value == 0 else high - low
    count = span if abs(step) == 1 else (span + (abs(step) - 1)) / abs(step)
    return Intrinsic("max", (count, Const(0, I64)))


def offset(base: Expr, index: Expr, step: int) -> Expr:
    """``base + index * step``, without adding 0 or multiplying by 1."""
    scaled = index if step == 1 else index * step
    return scaled if isinstance(base, Const) and base.value == 0 else base + scaled


def as_i64(expr: Expr) -> Expr:
    return expr if expr.type == I64 else Cast(expr, I64)


def partial_lets(kernel: ReducingKernel, index: int, names: NameGenerator
                 ) -> tuple[dict[str, str], tuple[Stmt, ...]]:
    """(reduced variable -> partial's name, the partials' declarations at
    the op's identity) for the loop at ``index``."""
    partials, lets = {}, []
    for reduction in kernel.reductions(index):
        type = kernel.types[reduction.var]
        partials[reduction.var] = names.fresh(f"{reduction.var}_partial")
        lets.append(Let(partials[reduction.var], type, identity(reduction, type)))
    return partials, tuple(lets)


def tree_combine(kernel: ReducingKernel, index: int, partials: dict[str, str], lane: Expr,
                 lanes: int, names: NameGenerator) -> tuple[Stmt, ...]:
    """Every lane's partials folded in a work group's local memory, then
    into each reduced variable (the same value in every lane).  Each lane
    stores its own slot before the first barrier, so the arrays start
    undefined (no fill and barrier before them)."""
    reductions = kernel.reductions(index)
    scratch = {r.var: names.fresh(f"{r.var}_lanes") for r in reductions}
    stmts: list[Stmt] = []
    for r in reductions:
        stmts += [ArrayDecl(scratch[r.var], kernel.types[r.var], (lanes,), "local", zeroed=False),
                  Store(scratch[r.var], (lane,), Var(partials[r.var], kernel.types[r.var]))]
    stmts.append(Barrier())
    half = lanes // 2
    while half >= 1:
        folds = tuple(Store(scratch[r.var], (lane,), combine(
            r, _at(scratch[r.var], lane, kernel.types[r.var]),
            _at(scratch[r.var], lane + half, kernel.types[r.var]), kernel.types[r.var]))
            for r in reductions)
        stmts += [If(lane.lt(half), folds), Barrier()]
        half //= 2
    for r in reductions:
        type = kernel.types[r.var]
        stmts.append(_fold_into(r, _at(scratch[r.var], Const(0, I64), type), type))
    return tuple(stmts)


def _at(array: str, index: Expr, type: ScalarType) -> Load:
    return Load(array, (index,), type)


def _fold_into(reduction: Reduction, value: Expr, type: ScalarType) -> Stmt:
    return Assign(reduction.var, combine(reduction, Var(reduction.var, type), value, type))


def fold_partials(kernel: ReducingKernel, index: int, buffers: dict[str, str], lanes: Expr,
                  names: NameGenerator, outer: tuple[Expr, ...] = (),
                  inner: tuple[Expr, ...] = ()) -> For:
    """A loop folding each reduced variable's ``lanes`` partial results,
    read from the buffer ``buffers`` names for it at ``(*outer, part,
    *inner)``."""
    p = names.fresh("part")
    reductions = kernel.reductions(index)
    body = tuple(_fold_into(r, Load(buffers[r.var], (*outer, Var(p, I64), *inner),
                                    kernel.types[r.var]),
                            kernel.types[r.var]) for r in reductions)
    return For(p, Const(0, I64), lanes, 1, body, reduce=reductions)
