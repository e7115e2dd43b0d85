"""parallel-reduce's ordered form: a fold's terms computed by many lanes,
folded in the order the program wrote.

A replicated node whose instances each fold a long loop (mriq's
``real += phi_mag[k] * cos(angle)`` over k, one voxel an instance) has
as much parallelism as it has instances; a GPU with more lanes than that
waits on each instance's chain.  Reassociating the fold (the tree, split
and chunks forms) breaks the chain but changes a float sum's rounding,
which only the user may allow.  The ordered form keeps every result
bit for bit: what each iteration adds (its term) does not depend on the
fold, so lanes compute the terms and one lane per instance adds them up
in the written order.

The node gets one more replication dimension of ``lanes`` instances and
work groups of ``instances`` of its innermost dimension x ``lanes``
(padded to whole groups).  The iterations run in rounds of ``block``: the
group's lanes compute the round's terms of each of its instances into a
local array (lane l the iterations l, l + lanes, ...), a barrier, then
the group's first ``instances`` lanes (one warp) each fold one
instance's row of terms in order, and a barrier before the next round.
That folding lane then runs what follows the loops (the stores of the
results).  So each statement runs for an instance it names: the terms'
for the group's row of this lane (``row``), the fold's and the rest for
the instance this lane folds (``mine``); both are clamped to the
node's last instance, so that the lanes past its end (padding) or past
the group's instances read what a real instance reads, and store nothing.

A loop qualifies when its bounds are the same in every instance (the
rounds' barriers need every lane of a group) and each folded variable
is updated once, at the top of the loop's body; the statements the loop
needs before it are copied for the terms (under fresh names).
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables
from ..ir.kernel import (
    ArrayDecl, Assign, Barrier, Binary, Call, Const, Expr, For, If, InstanceCount, InstanceId,
    Intrinsic, Let, Load, Reduction, Stmt, Store, Var,
)
from ..ir.reduction import folded_value
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .names import NameGenerator, declared_names, substitute
from .reduce_forms import ReducingKernel, as_i64, names_read, offset, trip_count

BLOCK = 64
"""Iterations per round (rounded up to a multiple of the lanes): the
local arrays hold instances x (BLOCK + 1) terms per folded variable."""


def ordered_problem(kernel: ReducingKernel, rank: int) -> str | None:
    """Why the ordered form cannot fold the loops of ``kernel`` (a node of
    ``rank`` replication dimensions), or None."""
    body = kernel.function.body
    uniform = _uniform_names(kernel, rank - 1)
    held = _needed_by_terms(kernel)[1] - set(kernel.types)
    for index in kernel.loops:
        loop = body[index]
        read = sorted(names_read(loop.body) & held)
        if read:
            return (f"has reduction loop '{loop.var}' whose terms read '{read[0]}', computed "
                    "from a folded variable (only the lane folding an instance holds it)")
        for node in walk((loop.start, loop.stop)):
            if isinstance(node, (Load, Call)) or (isinstance(node, InstanceId)
                                                  and node.dim == rank - 1) or (
                    isinstance(node, Var) and node.name not in uniform):
                return (f"has reduction loop '{loop.var}' whose bounds differ between "
                        "the instances of a work group (its lanes run the rounds together)")
        for reduction in loop.reduce:
            updates = [s for s in walk(loop.body) if isinstance(s, Stmt)
                       and folded_value(s, reduction) is not None]
            if len(updates) != 1 or not any(s is updates[0] for s in loop.body):
                return (f"updates '{reduction.var}' in loop '{loop.var}' other than once, at "
                        "the top of its body")
    return None


def _uniform_names(kernel: ReducingKernel, inner: int) -> set[str]:
    """The names whose value is the same in every instance of a work
    group (whose instances differ only in dimension ``inner``): scalar
    parameters, shape symbols, and the lets before the last loop computed
    from them, constants and the other dimensions' ids and counts,
    without loads or calls, and never assigned again."""
    function = kernel.function
    uniform = {p.name for p in function.params if not p.is_buffer} | set(
        function.shape_symbols)
    assigned = assigned_variables(function.body)
    for stmt in function.body[:kernel.tail_start]:
        if not isinstance(stmt, Let) or stmt.name in assigned or stmt.value is None:
            continue
        if all(not isinstance(n, (Load, Call)) and not (isinstance(n, InstanceId)
                                                        and n.dim == inner)
               and not (isinstance(n, Var) and n.name not in uniform)
               for n in walk(stmt.value)):
            uniform.add(stmt.name)
    return uniform


def ordered_body(kernel: ReducingKernel, written: tuple[Stmt, ...], rank: int, lanes: int,
                 instances: int, names: NameGenerator) -> tuple[Stmt, ...]:
    """The body of the ordered form of ``kernel`` (a node of ``rank``
    replication dimensions, the lanes its new last one).  ``written`` is
    the body as the program wrote it: ``kernel``'s marks its float folds
    as reductions, which no statement of the result may keep (they would
    let a later pass reorder them)."""
    inner = rank - 1
    lane, slot, folder = (Var(names.fresh(n), I64) for n in ("lane", "slot", "folder"))
    row, mine = Var(names.fresh("row"), I64), Var(names.fresh("mine"), I64)
    last = InstanceCount(inner) - 1
    first = InstanceId(inner) - slot
    body: list[Stmt] = [
        Let(lane.name, I64, InstanceId(rank)),
        Let(slot.name, I64, InstanceId(inner) % instances),
        Let(folder.name, I64, slot * lanes + lane),
        Let(row.name, I64, Intrinsic("min", (InstanceId(inner), last))),
        Let(mine.name, I64, Intrinsic("min", (first + folder, last)))]
    before = written[:kernel.tail_start]
    copied, _ = _needed_by_terms(kernel)
    renames = {name: names.fresh(name) for index in copied
               for name in declared_names((before[index],))}
    lanes_of = _Lanes(lane, slot, folder, lanes, instances, -(-BLOCK // lanes) * lanes)
    for index, stmt in enumerate(before):
        if index in kernel.loops:
            terms = _at_instance(substitute(stmt.body, renames), inner, row)
            folding = _at_instance((stmt,), inner, mine)[0]
            body += _rounds(kernel, kernel.reductions(index), folding, terms, lanes_of, names)
            continue
        body.extend(_at_instance((stmt,), inner, mine))
        if index in copied:
            body.extend(_at_instance(substitute((stmt,), renames), inner, row))
    tail = _at_instance(written[kernel.tail_start:], inner, mine)
    valid = folder.lt(instances) & (first + folder).lt(InstanceCount(inner))
    return (*body, If(valid, tail)) if tail else tuple(body)


def _needed_by_terms(kernel: ReducingKernel) -> tuple[list[int], set[str]]:
    """(the indices of the statements before the last loop that the terms
    run too: all but the loops and what reads or writes a folded
    variable, or a name declared by one of those; those names, which only
    the folding lanes hold)."""
    body = kernel.function.body
    held = set(kernel.types)
    copied = []
    for index, stmt in enumerate(body[:kernel.tail_start]):
        if index in kernel.loops:
            continue
        declared = set(declared_names((stmt,)))
        if (names_read(stmt) | declared | assigned_variables((stmt,))) & held:
            held |= declared
        else:
            copied.append(index)
    return copied, held


@dataclasses.dataclass(frozen=True)
class _Lanes:
    lane: Var
    slot: Var
    folder: Var
    lanes: int
    instances: int
    block: int


def _rounds(kernel: ReducingKernel, reductions: tuple[Reduction, ...], loop: For,
            terms: tuple[Stmt, ...], lanes: _Lanes, names: NameGenerator) -> list[Stmt]:
    """``loop`` (run for the instance a lane folds) in rounds: the lanes
    store its terms (``terms``: its body for the lane's row) into local
    arrays, the folding lanes add them up."""
    arrays = {r.var: names.fresh(f"{r.var}_terms") for r in reductions}
    count, base = Var(names.fresh(f"{loop.var}_count"), I64), Var(names.fresh("base"), I64)
    turn, n, t = (names.fresh(n) for n in ("turn", "n", "t"))
    position = Var(turn, I64)
    iteration = base + position

    def stored(stmt: Stmt) -> Stmt:
        for reduction in reductions:
            term = folded_value(stmt, reduction)
            if term is not None:
                return Store(arrays[reduction.var], (lanes.slot, position), term)
        return stmt
    compute = For(turn, lanes.lane, Const(lanes.block, I64), lanes.lanes, (
        If(iteration.lt(count), (
            Let(loop.var, I64, offset(as_i64(loop.start), iteration, loop.step)),
            *(stored(s) for s in terms))),), loop.unroll)
    updates = tuple(Assign(r.var, _with_value(s, r, Load(arrays[r.var], (lanes.folder, Var(
        t, I64)), kernel.types[r.var]))) for s in loop.body for r in reductions
        if folded_value(s, r) is not None)
    fold = If(lanes.folder.lt(lanes.instances), (
        Let(n, I64, Intrinsic("min", (Const(lanes.block, I64), count - base))),
        For(t, Const(0, I64), Var(n, I64), 1, updates)))
    decls = [ArrayDecl(arrays[r.var], kernel.types[r.var], (lanes.instances, lanes.block + 1),
                       "local", zeroed=False) for r in reductions]
    return [Let(count.name, I64, trip_count(loop)), *decls,
            For(base.name, Const(0, I64), count, lanes.block,
                (compute, Barrier(), fold, Barrier()))]


def _with_value(update: Assign, reduction: Reduction, value: Expr) -> Expr:
    """``update``'s folded expression with its term replaced by ``value``
    (the operands in the order written: a float sum rounds the same either
    way, a helper's fold need not)."""
    term = folded_value(update, reduction)
    expr = update.value
    if isinstance(expr, Binary):
        return dataclasses.replace(expr, lhs=value if expr.lhs is term else expr.lhs,
                                   rhs=value if expr.rhs is term else expr.rhs)
    args = tuple(value if a is term else a for a in expr.args)
    return dataclasses.replace(expr, args=args)


def _at_instance(stmts: tuple[Stmt, ...], dim: int, instance: Var) -> tuple[Stmt, ...]:
    """``stmts`` run for ``instance`` in replication dimension ``dim``."""
    return rewrite(stmts, lambda node: instance if isinstance(node, InstanceId)
                   and node.dim == dim else None)
