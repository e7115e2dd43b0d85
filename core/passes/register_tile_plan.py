"""Which kernel nodes ``register-tile`` can schedule, and how their body
splits (see register_tile.py).

A node qualifies when, for two of its replication dimensions (``rows``
and ``cols``), its body is::

    prelude     lets only: the loop's index values and accumulators
    for k ...   one loop, bounds the same in every instance, only lets
                and assignments inside; or a perfect nest of such loops
                (``for c: for r: for s:``, a convolution's), taken as one
                loop over their steps in the nest's order
    epilogue    anything per instance (stores of the results)

and the loop reads *reused* values: some load the same in every
instance of a row (its indices do not follow ``cols``: ``A[i, k]``) and
some the same down a column (``B[k, j]``).  What the node computes is
read from those access patterns, never from names.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import KernelBody, Module, Node
from ..ir.kernel import (
    ArrayDecl, Assign, Barrier, Binary, Call, Cast, Compare, Const, Expr, ExprStmt, For, If,
    InstanceCount, InstanceId, KernelFunction, Let, Load, Return, Stmt, Unary, Var, While,
)
from ..ir.strides import IndexStrides, instance_of, loop_variable
from ..ir.types import I64
from ..ir.uniformity import Uniformity, written_buffers
from ..ir.visit import children, rewrite, walk
from .names import function_names, substitute, unique_name
from .reduce_forms import offset, trip_count


@dataclass(frozen=True)
class NestPlan:
    """A node's body split for register tiles along ``rows`` and ``cols``
    (replication dimensions; ``cols`` the one the packed reads follow)."""

    rows: int
    cols: int
    uniform: tuple[Stmt, ...]
    """Prelude lets the same in every instance of a tile: kept first."""
    accumulators: tuple[Let, ...]
    """Prelude lets the loop assigns: one value per instance."""
    loop: For
    """The loop (its variable and bounds)."""
    steps: tuple[Stmt, ...]
    """The loop's body, the prelude's index values (``i``, ``j``: lets
    without loads that follow the instance) read as their expressions."""
    results: tuple[Stmt, ...]
    """The other per-instance prelude lets and the epilogue, index values
    read as in ``steps``."""
    packed: tuple[Load, ...]
    """Loads of the loop that follow ``cols`` only, indices free of the
    loop's own variables: copied into contiguous panels."""
    row_packed: tuple[Load, ...]
    """The same for loads that follow ``rows`` only."""
    row_values: tuple[Expr, ...] = ()
    """The largest expressions of ``steps`` made of ``row_packed`` loads,
    constants and variables the loop does not declare (``alpha * a[i,
    k]``), one load at least, following no column: packed as their
    values, computed once per row and step instead of once per result."""
    col_values: tuple[Expr, ...] = ()
    """The same of ``packed`` loads, following no row (``a[j, k] *
    alpha``, syr2k's): computed once per column and step."""


def nest_plan(module: Module, node: Node) -> NestPlan | str:
    """The plan of ``node`` (its innermost columns first), or why it does
    not qualify (in words, to follow "node 'x' ")."""
    plans = nest_plans(module, node)
    return plans if isinstance(plans, str) else plans[0]


def nest_plans(module: Module, node: Node) -> list[NestPlan] | str:
    """Every plan of ``node``, one per pair of rows and columns that
    qualifies, innermost columns first; or why none does."""
    if not isinstance(node.body, KernelBody):
        return "is not a kernel node"
    rank = len(node.replication)
    if rank < 2:
        return (f"has {rank} replication dimension(s); register tiles need two (rows and "
                "columns of results)")
    function = module.function(node.body.function)
    for item in walk(function.body):
        if isinstance(item, (Barrier, Return, Call, ExprStmt)) or (
                isinstance(item, ArrayDecl) and item.space == "local"):
            return (f"uses {type(item).__name__.lower()} statements or local arrays (run "
                    "inline first for calls)")
    plans, problems = [], []
    for cols in reversed(range(rank)):
        for rows in reversed(range(rank)):
            if rows != cols:
                plan = _plan(function, rows, cols)
                (plans if isinstance(plan, NestPlan) else problems).append(plan)
    return plans or problems[0]


def _plan(function: KernelFunction, rows: int, cols: int) -> NestPlan | str:
    loops = [i for i, s in enumerate(function.body) if isinstance(s, (For, While))]
    if len(loops) != 1 or not isinstance(function.body[loops[0]], For):
        return "has no single counted loop at the top of its body"
    at = loops[0]
    loop, prelude, epilogue = function.body[at], function.body[:at], function.body[at + 1:]
    tile = Uniformity(function, (rows, cols))
    loop = _unit_steps(_collapsed(loop, tile, function_names(function)), function_names(function))
    if loop.step != 1 or any(tile.is_varying(b) for b in (loop.start, loop.stop)):
        return f"loop '{loop.var}' steps by {loop.step} or has bounds that differ by instance"
    if any(not isinstance(s, (Let, Assign)) for s in loop.body):
        return f"loop '{loop.var}' holds statements other than lets and assignments"
    if any(not isinstance(s, Let) for s in prelude):
        return "sets something other than new variables before its loop"
    assigned = {s.name for s in loop.body if isinstance(s, Assign)}
    after = {s.name for s in walk(epilogue) if isinstance(s, Assign)}
    declared = {s.name for s in prelude}
    if assigned - declared - {s.name for s in loop.body if isinstance(s, Let)}:
        return f"loop '{loop.var}' assigns a parameter"
    uniform, index_values, accumulators, sunk = [], {}, [], []
    read_in_loop = {n.name for n in walk(loop.body) if isinstance(n, Var)}
    for let in prelude:
        value = substitute(let.value, values=index_values) if let.value is not None else None
        if let.name in assigned:
            accumulators.append(Let(let.name, let.type, value))
        elif let.name in after:
            if let.name in read_in_loop:
                return f"variable '{let.name}' is read by the loop and set after it"
            sunk.append(let)
        elif not tile.is_varying(Var(let.name, let.type)):
            uniform.append(let)
        elif value is not None and not any(isinstance(n, Load) for n in walk(value)):
            index_values[let.name] = value
        elif let.name in read_in_loop:
            return (f"variable '{let.name}' differs by instance, reads memory and is read "
                    "by the loop")
        else:
            sunk.append(let)
    if not accumulators:
        return f"loop '{loop.var}' accumulates into no variable declared before it"
    written = written_buffers(function.body)
    body = _steps_indices(substitute(loop.body, values=index_values), assigned)
    temporaries = {s.name for s in body if isinstance(s, Let)}
    follows_rows, follows_cols = _follows(body, rows, temporaries), _follows(body, cols,
                                                                           temporaries)
    loads = [n for n in walk(body) if isinstance(n, Load)]
    row_reads = [n for n in loads if not follows_cols(n) and follows_rows(n)]
    col_reads = [n for n in loads if not follows_rows(n) and follows_cols(n)]
    if not row_reads or not col_reads:
        return (f"loop '{loop.var}' reads nothing reused across instances (a value the same "
                "along a row of results and one the same down a column)")
    local = temporaries | {a.name for a in accumulators}

    def packable(reads):
        return tuple(dict.fromkeys(n for n in reads if n.buffer not in written
                                   and not _names(n) & local))
    row_packed, col_packed = packable(row_reads), packable(col_reads)
    return NestPlan(rows, cols, tuple(uniform), tuple(accumulators), loop, body,
                    substitute(tuple(sunk) + tuple(epilogue), values=index_values),
                    col_packed, row_packed,
                    _values(body, set(row_packed), local, follows_cols),
                    _values(body, set(col_packed), local, follows_rows))


def _steps_indices(body: tuple[Stmt, ...], assigned: set[str]) -> tuple[Stmt, ...]:
    """``body`` with its lets of index values (no loads, nothing the loop
    assigns) read as their expressions: a chunk's ``let k = iteration``
    (parallel-reduce{form=split}) leaves ``a[i, k]`` a read of the step,
    which the panels and local tiles copy."""
    values: dict[str, Expr] = {}
    kept = []
    for stmt in body:
        if isinstance(stmt, Let) and stmt.value is not None and stmt.name not in assigned \
                and not any(isinstance(n, Load) for n in walk(stmt.value)) \
                and not _names(stmt.value) & assigned:
            values[stmt.name] = substitute(stmt.value, values=values)
        else:
            kept.append(stmt)
    return substitute(tuple(kept), values=values) if values else body


def _values(body: tuple[Stmt, ...], loads: set[Load], local: set[str],
            follows_other) -> tuple[Expr, ...]:
    """The largest expressions of ``body`` made of ``loads``, constants
    and variables not ``local``, one load at least, following no
    dimension by ``follows_other`` (NestPlan.row_values, col_values)."""
    found: dict[Expr, None] = {}

    def of_loads(expr: Expr) -> bool:
        if isinstance(expr, (Binary, Unary, Cast)):
            return all(of_loads(c) for c in children(expr) if isinstance(c, Expr))
        return expr in loads or isinstance(expr, Const) or \
            isinstance(expr, Var) and expr.name not in local

    def visit(expr: Expr) -> None:
        if of_loads(expr) and any(n in loads for n in walk(expr)) and \
                not follows_other(expr):
            found[expr] = None
            return
        for child in children(expr):
            if isinstance(child, Expr):
                visit(child)
    for stmt in body:
        if stmt.value is not None:
            visit(stmt.value)
    return tuple(found)


def _collapsed(loop: For, tile: Uniformity, taken: set[str]) -> For:
    """A perfect nest of counted loops (each the only statement of the one
    around it, steps of 1, bounds the same in every instance of a tile and
    free of the nest's variables) as one loop over all their steps in the
    nest's order, each variable read as its expression of the new one;
    ``loop`` itself where it is no such nest."""
    nest = [loop]
    while len(nest[-1].body) == 1 and isinstance(nest[-1].body[0], For):
        nest.append(nest[-1].body[0])
    variables = {inner.var for inner in nest}
    if len(nest) == 1 or any(
            inner.step != 1 or tile.is_varying(bound) or _names(bound) & variables
            for inner in nest for bound in (inner.start, inner.stop)):
        return loop
    step = Var(unique_name("_".join(inner.var for inner in nest), taken), I64)
    values, inner_steps = {}, None
    for inner in reversed(nest):
        from_zero = isinstance(inner.start, Const) and inner.start.value == 0
        trips = inner.stop if from_zero else inner.stop - inner.start
        position = step if inner_steps is None else Binary("div", step, inner_steps)
        if inner is not nest[0]:
            position = Binary("rem", position, trips)
        values[inner.var] = position if from_zero else inner.start + position
        inner_steps = trips if inner_steps is None else inner_steps * trips
    return For(step.name, Const(0, I64), inner_steps, 1, substitute(nest[-1].body, values=values))


def _unit_steps(loop: For, taken: set[str]) -> For:
    """A loop of a constant step s > 1 (parallel-reduce{form=split
    layout=strided}'s every s-th step) as one over its steps counted from
    0, its variable read as ``start + step * s``; ``loop`` itself
    otherwise."""
    if loop.step <= 1:
        return loop
    step = Var(unique_name(f"{loop.var}_step", taken), I64)
    value = offset(loop.start, step, loop.step)
    return For(step.name, Const(0, I64), trip_count(loop), 1,
               substitute(loop.body, values={loop.var: value}), unroll=loop.unroll,
               reduce=loop.reduce)


def _names(expr: Expr) -> set[str]:
    return {n.name for n in walk(expr) if isinstance(n, Var)}


def _follows(body: tuple[Stmt, ...], dim: int, temporaries: set[str]):
    """A test whether an expression of ``body`` follows replication
    dimension ``dim`` (through its instance id or a temporary that does)."""
    following: set[str] = set()

    def test(expr: Expr) -> bool:
        return any(isinstance(n, InstanceId) and n.dim == dim or
                   isinstance(n, Var) and n.name in following for n in walk(expr))
    while True:   # an assignment may make a temporary declared earlier follow
        before = len(following)
        following.update(stmt.name for stmt in body if stmt.name in temporaries
                         and stmt.value is not None and test(stmt.value))
        if len(following) == before:
            return test


def at_instance(root, ids: dict[int, Expr], counts: dict[int, Expr]):
    """``root`` (statements or an expression, index values already
    substituted) with the instance ids and counts of the dimensions in
    ``ids`` and ``counts`` replaced."""
    def visit(node):
        if isinstance(node, InstanceId) and node.dim in ids:
            return ids[node.dim]
        if isinstance(node, InstanceCount) and node.dim in counts:
            return counts[node.dim]
        return None
    return rewrite(root, visit)


def adjacent_along(plan: NestPlan, loads: tuple[Load, ...], dim: int) -> str | None:
    """Along what ``loads`` (packed reads that follow replication dimension
    ``dim``) read adjacent elements: ``"steps"`` where every one does for
    adjacent steps of the loop and none for adjacent instances along
    ``dim`` (``b[j, k]`` by columns ``j``), ``"instances"`` the other way
    round (``b[k, j]``), None where they differ or it is not known."""
    strides = IndexStrides(plan.steps)
    along_steps, along_dim = loop_variable(plan.loop.var), instance_of(dim)
    pairs = {(strides.element_stride(load.indices, along_steps) == 1,
              strides.element_stride(load.indices, along_dim) == 1) for load in loads}
    return {(True, False): "steps", (False, True): "instances"}.get(
        next(iter(pairs)) if len(pairs) == 1 else None)


def half_plane(plan: NestPlan) -> Expr | None:
    """The guard of the plan's results where they are values, then one
    ``if`` holding every effect whose condition compares expressions
    linear in the instance ids of its rows and columns (false at the four
    corners of a block of them, it is false all through it: a triangle
    run over its box, triangle_boxes.py); None otherwise."""
    results, dims = plan.results, (plan.rows, plan.cols)
    if not results or not isinstance(results[-1], If) or results[-1].else_body or \
            not all(isinstance(s, Let) for s in results[:-1]):
        return None
    guard = results[-1].cond
    local = {s.name for s in results[:-1]}
    if not isinstance(guard, Compare) or guard.op not in ("lt", "le", "gt", "ge") or any(
            isinstance(n, Var) and n.name in local or isinstance(n, InstanceId) and
            n.dim not in dims for n in walk(guard)):
        return None
    return guard if _linear(guard.lhs) and _linear(guard.rhs) else None


def _linear(expr: Expr) -> bool:
    """Whether ``expr`` is linear in the instance ids it reads."""
    def constant(e: Expr) -> bool:
        return not any(isinstance(n, InstanceId) for n in walk(e))
    if isinstance(expr, Binary) and expr.op in ("add", "sub"):
        return _linear(expr.lhs) and _linear(expr.rhs)
    if isinstance(expr, Binary) and expr.op == "mul":
        return constant(expr.lhs) and _linear(expr.rhs) or \
            constant(expr.rhs) and _linear(expr.lhs)
    if isinstance(expr, Unary) and expr.op == "neg" or isinstance(expr, Cast):
        return _linear(expr.operand if isinstance(expr, Unary) else expr.value)
    return isinstance(expr, InstanceId) or constant(expr)


def eligible(module: Module, node: Node) -> bool:
    return isinstance(nest_plan(module, node), NestPlan)

