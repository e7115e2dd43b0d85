"""Lane strips: the body of a node kernel rewritten to run a block of
adjacent instances together (``lanes`` along the innermost replication
dimension, optionally ``rows`` along the one before).

LLVM vectorises only innermost loops, so an instance loop around a body
with its own loop (the k loop of ``c[i, j] = sum_k a[i, k] * b[k, j]``)
stays scalar.  ``strip_body`` turns the body inside out: uniform control
flow (loops and ifs that are the same for every instance, see
uniformity.py) runs once per strip, and each varying statement runs in a
loop over the lanes, innermost, whose iterations are independent instances::

    acc = 0; for k { acc = acc + a[i, k] * b[k, j] }; c[i, j] = acc
      ->
    array acc[L]; for l { acc[l] = 0 }
    for k { for l [ivdep] { acc[l] = acc[l] + a[i, k] * b[k, j0 + l] } }
    for l [ivdep] { c[i, j0 + l] = acc[l] }

A varying variable becomes a private array with one element per instance
of the block; ``InstanceId(dim)`` reads the block's first instance, to
which each lane (row) adds its index.  With rows, lane loops sit in a loop
over the rows, so values of one row (``a[i, k]``) are loaded once per row
and values of one lane (``b[k, j]``) are shared by the rows once LLVM
unrolls them.  Statements under varying control (an ``if`` on a varying
condition, a loop with varying bounds) run whole inside the lane loops.
The code generator runs blocks over the full multiples of the block and
the original body for the remaining instances.
"""
from __future__ import annotations

import dataclasses

from hpvm.ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Binary, Cast, Const, Expr, For, If,
    InstanceCount, InstanceId, KernelFunction, Let, Load, Stmt, Store, Unary, Var, While,
)
from hpvm.ir.types import I64
from hpvm.ir.uniformity import Uniformity
from hpvm.ir.visit import rewrite, walk

from .loop_lanes import lanes_along_loops
from .row_tiles import tile_row_reads
from .uniformity import Unsupported, check_supported


def strip_body(kernel: KernelFunction, block: dict[int, int]) -> tuple[Stmt, ...] | None:
    """The body of ``kernel`` for a block of instances starting at the
    InstanceIds: ``block`` maps replication dims (at most two, the last
    innermost) to instance counts; None when the kernel is not supported
    or has no uniform loop with varying work (LLVM's own vectoriser then
    does better on the instance loop), or when its loops are better
    vectorised along themselves (loop_lanes.py)."""
    if not block or min(block.values()) < 1 or max(block.values()) < 2:
        return None
    try:
        check_supported(kernel)
        uniformity = Uniformity(kernel, tuple(block))
        if uniformity.varying & {p.name for p in kernel.params}:
            raise Unsupported("an assigned scalar parameter")
        if not _has_varying_loop_work(kernel.body, uniformity) or \
                lanes_along_loops(kernel, uniformity, max(block)):
            return None
        writer = _StripWriter(kernel, uniformity, block)
        taken = _names(kernel) | {c.name for c in writer.indices}

        def fresh(hint: str) -> str:
            name = _fresh(hint, taken)
            taken.add(name)
            return name
        return tile_row_reads(writer.block(kernel.body), kernel.body, writer.indices,
                              writer.block_shape, fresh)
    except Unsupported:
        return None


def repeats_uniform_work(kernel: KernelFunction, dim: int) -> bool:
    """Whether ``kernel`` has a loop and every load it makes reads the same
    element for instances adjacent in replication dim ``dim`` (a
    reduction of a whole tensor to one value): vectorised across those
    instances, every lane would compute the same values, and LLVM's loop
    vectoriser took 18 s on such a kernel (a chain of 24 float min
    selects, a 4 x 6 reduction's loops unrolled)."""
    body = kernel.body
    if not any(isinstance(s, (For, While)) for s in walk(body)):
        return False
    try:
        check_supported(kernel)
    except Unsupported:
        return False
    uniformity = Uniformity(kernel, (dim,))
    return not any(uniformity.is_varying(e) for e in walk(body) if isinstance(e, Load))


def _has_varying_loop_work(body: tuple[Stmt, ...], uniformity: Uniformity,
                           in_loop: bool = False) -> bool:
    """Whether a loop with uniform control holds a varying statement."""
    for stmt in body:
        if in_loop and (isinstance(stmt, (Store, AtomicUpdate)) or
                        isinstance(stmt, (Let, Assign)) and stmt.name in uniformity.varying or
                        _varying_control(stmt, uniformity)):
            return True
        if isinstance(stmt, For) and not _varying_control(stmt, uniformity):
            if _has_varying_loop_work(stmt.body, uniformity, True):
                return True
        elif isinstance(stmt, While) and not uniformity.is_varying(stmt.cond):
            if _has_varying_loop_work(stmt.body, uniformity, True):
                return True
        elif isinstance(stmt, If) and not uniformity.is_varying(stmt.cond):
            if _has_varying_loop_work(stmt.then_body + stmt.else_body, uniformity, in_loop):
                return True
    return False


def _varying_control(stmt: Stmt, uniformity: Uniformity) -> bool:
    if isinstance(stmt, For):
        return uniformity.is_varying(stmt.start) or uniformity.is_varying(stmt.stop)
    if isinstance(stmt, If):
        return uniformity.is_varying(stmt.cond)
    if isinstance(stmt, While):
        return uniformity.is_varying(stmt.cond)
    return False


def _names(kernel: KernelFunction) -> set[str]:
    names = {p.name for p in kernel.params}
    for p in kernel.params:
        names.update(getattr(p.type, "symbols", ()))
    for item in walk(kernel.body):
        for field in ("name", "var", "buffer"):
            value = getattr(item, field, None)
            if isinstance(value, str):
                names.add(value)
    return names


def _fresh(hint: str, taken: set[str]) -> str:
    name, suffix = hint, 0
    while name in taken:
        suffix += 1
        name = f"{hint}{suffix}"
    return name


def _index_lets(kernel: KernelFunction, varying: frozenset[str]) -> dict[str, Expr]:
    """Varying variables declared once, never assigned, whose value is
    index arithmetic on instance ids and names nothing declares (parameters,
    shape symbols): their uses read the value itself, so LLVM sees affine
    indices where an array would hide them."""
    declared: dict[str, list] = {}
    assigned = set()
    for item in walk(kernel.body):
        if isinstance(item, Let):
            declared.setdefault(item.name, []).append(item.value)
        elif isinstance(item, For):
            declared.setdefault(item.var, []).append(None)
        elif isinstance(item, (Assign, AtomicUpdate)):
            assigned.add(getattr(item, "name", None) or getattr(item, "result", None))

    def pure(expr) -> bool:
        return all(isinstance(n, (Const, InstanceId, InstanceCount, Binary, Unary, Cast)) or
                   isinstance(n, Var) and n.name not in declared and n.name not in assigned
                   for n in walk(expr))

    return {name: values[0] for name, values in declared.items()
            if name in varying and len(values) == 1 and name not in assigned
            and values[0] is not None and pure(values[0])}


def _declared_types(kernel: KernelFunction, varying: frozenset[str]) -> dict:
    types: dict = {}
    for item in walk(kernel.body):
        if isinstance(item, Let) and item.name in varying:
            if types.setdefault(item.name, item.type) != item.type:
                raise Unsupported(f"variable '{item.name}' declared with two types")
    return types


class _StripWriter:
    """Rewrites statement lists of one kernel into their strip form."""

    def __init__(self, kernel: KernelFunction, uniformity: Uniformity, block: dict[int, int]):
        self.uniformity = uniformity
        self.varying = frozenset(uniformity.varying)
        self.block_shape = tuple(block.values())
        taken = _names(kernel)
        hints = ("row", "lane")[-len(block):]
        self.counters = {dim: Var(_fresh(hint, taken), I64) for dim, hint in zip(block, hints)}
        self.indices = tuple(self.counters.values())
        self.types = _declared_types(kernel, self.varying)
        self.substitutes = _index_lets(kernel, self.varying)

    # uniform control ------------------------------------------------------
    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        """``body`` in uniform control: lane statements grouped into lane
        loops, uniform statements kept, their bodies rewritten."""
        out: list[Stmt] = []
        arrays: list[Stmt] = []
        group: list[Stmt] = []

        def flush() -> None:
            out.extend(arrays)
            arrays.clear()
            if group:
                out.append(self._lane_loop(tuple(group)))
                group.clear()

        for stmt in body:
            if isinstance(stmt, Let) and stmt.name in self.substitutes:
                continue
            if isinstance(stmt, Let) and stmt.name in self.varying:
                if any(isinstance(n, (Var, Load)) and stmt.name in (getattr(n, "name", None),
                                                                    getattr(n, "buffer", None))
                       for n in walk(tuple(group))):
                    flush()
                arrays.append(ArrayDecl(stmt.name, stmt.type, self.block_shape, "private"))
                if stmt.value is not None:
                    group.append(Store(stmt.name, self.indices, self.lane_expr(stmt.value)))
            elif isinstance(stmt, (Let, Assign)) and stmt.name not in self.varying:
                flush()
                out.append(stmt)
            elif isinstance(stmt, ArrayDecl):  # local: shared, declared once
                flush()
                out.append(stmt)
            elif isinstance(stmt, (For, If, While)) and not _varying_control(stmt, self.uniformity):
                flush()
                out.append(self._uniform_control(stmt))
            else:
                group.append(self.lane_statement(stmt, frozenset()))
        flush()
        return tuple(out)

    def _uniform_control(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, For):
            if stmt.var in self.varying:
                raise Unsupported(f"loop variable '{stmt.var}' shares a varying variable's name")
            return dataclasses.replace(stmt, body=self.block(stmt.body))
        if isinstance(stmt, If):
            return dataclasses.replace(stmt, then_body=self.block(stmt.then_body),
                                       else_body=self.block(stmt.else_body))
        return dataclasses.replace(stmt, body=self.block(stmt.body))

    def _lane_loop(self, body: tuple[Stmt, ...]) -> For:
        # Iterations are distinct instances: independent by the IR's rules,
        # except atomics; only straight-line stores are worth vectorising.
        simple = all(isinstance(s, Store) for s in body)
        loop = None
        for counter, count in reversed(tuple(zip(self.indices, self.block_shape))):
            innermost = loop is None
            # Rows unrolled: their lane loops share the loads of one lane.
            loop = For(counter.name, Const(0, I64), Const(count, I64), 1,
                       body if innermost else (loop,), ivdep=simple and innermost,
                       unroll=None if innermost else count, trip_count=count)
        return loop

    # one lane -------------------------------------------------------------
    def lane_expr(self, expr: Expr, local: frozenset[str] = frozenset()) -> Expr:
        """``expr`` as one instance of the block computes it: varying
        variables read its element, InstanceIds add its row and lane."""
        def visit(node):
            if isinstance(node, Var) and node.name in self.substitutes and node.name not in local:
                value = self.lane_expr(self.substitutes[node.name], local)
                return value if value.type == node.type else Cast(value, node.type)
            if isinstance(node, Var) and node.name in self.varying and node.name not in local:
                load = Load(node.name, self.indices, self.types[node.name])
                return load if node.type == load.type else Cast(load, node.type)
            if isinstance(node, InstanceId) and node.dim in self.counters:
                return Binary("add", node, self.counters[node.dim])
            return None
        return rewrite(expr, visit)

    def lane_statement(self, stmt: Stmt, local: frozenset[str]) -> Stmt:
        """``stmt`` as one lane runs it; ``local``: variables declared in
        the lane loop (scalars of that lane, not arrays)."""
        value = lambda e: self.lane_expr(e, local)  # noqa: E731
        if isinstance(stmt, Let):
            return dataclasses.replace(stmt, value=None if stmt.value is None else value(stmt.value))
        if isinstance(stmt, Assign):
            if stmt.name in self.varying and stmt.name not in local:
                return Store(stmt.name, self.indices, value(stmt.value))
            return dataclasses.replace(stmt, value=value(stmt.value))
        if isinstance(stmt, (Store, AtomicUpdate)):
            return dataclasses.replace(stmt, indices=tuple(map(value, stmt.indices)),
                                       value=value(stmt.value))
        if isinstance(stmt, For):
            return dataclasses.replace(stmt, start=value(stmt.start), stop=value(stmt.stop),
                                       body=self._lane_block(stmt.body, local | {stmt.var}))
        if isinstance(stmt, If):
            return dataclasses.replace(stmt, cond=value(stmt.cond),
                                       then_body=self._lane_block(stmt.then_body, local),
                                       else_body=self._lane_block(stmt.else_body, local))
        if isinstance(stmt, While):
            return dataclasses.replace(stmt, cond=value(stmt.cond),
                                       body=self._lane_block(stmt.body, local))
        if isinstance(stmt, ArrayDecl):
            return stmt
        raise Unsupported(type(stmt).__name__)

    def _lane_block(self, body: tuple[Stmt, ...], local: frozenset[str]) -> tuple[Stmt, ...]:
        out = []
        for stmt in body:
            out.append(self.lane_statement(stmt, local))
            if isinstance(stmt, Let):
                local = local | {stmt.name}
        return tuple(out)
