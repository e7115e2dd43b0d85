"""What the passes that rewrite a kernel's loop nests in place share
(loop-interchange, loop-tile, loop-jam, column strips, loop-instances):
an index or bound read as a variable plus an offset (``shifted``),
whether a loop's iterations may share what they write
(``iterations_share``); loops named by id (loop-unroll's ids:
``fn.var``, ``fn.var#2``), checked against the module; and a rewriter
that walks a function, rewriting each loop a request names (refusing it
with the reason where the rewrite would not compute the same) or, with
no request, each loop where the rewrite is legal and worth it.  Values
the outer loop computes before the inner one (``for j { let s = w[j] * 2;
for i { ... s ... } }``, a programmer's hoisting) are computed in the
inner loop first (``with_lets_sunk``), which makes the nest perfect."""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.graph import Module
from ..ir.instance_access import access_positions
from ..ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Binary, Call, Const, Expr, For, KernelFunction, Let, Load,
    Return, Stmt, Store, Var,
)
from ..ir.reduction import reads_variable
from ..ir.types import I64
from ..ir.visit import map_blocks, walk
from .errors import PassError
from .affine_dependences import apart_in_iterations
from .infer_reductions import has_effects
from .loop_unroll import loop_ids
from .names import declared_names


def check_loop_ids(pass_name: str, module: Module, loops) -> None:
    """PassError naming the first of ``loops`` that ``module`` lacks."""
    known = {loop_id for function in module.functions.values() for loop_id in loop_ids(function)}
    for loop_id in loops:
        if loop_id not in known:
            raise PassError(Diagnostic(Location(), f"{pass_name}: no loop '{loop_id}'",
                                       f"the loops are: {', '.join(sorted(known)) or 'none'}"))


def loops_without(module: Module, problem) -> list[str]:
    """The ids of the loops of ``module`` for which ``problem(loop,
    function, module)`` finds none."""
    found = []
    for function in module.functions.values():
        ids = _ids(function)
        found += [ids[id(node)] for node in walk(function.body)
                  if isinstance(node, For) and problem(node, function, module) is None]
    return found


def one_element_per_value(indices: tuple[Expr, ...], loop_vars, changing) -> bool:
    """Whether ``indices`` are loop variables (of ``loop_vars``), one at
    least, each maybe plus or minus a fixed value, and fixed expressions:
    the same in every iteration, reading no loop variable, no name in
    ``changing`` (variables the iterations assign), no memory.
    Iterations then share the element only with those of the same values
    of those loop variables."""
    moving = set(loop_vars) | set(changing)

    def fixed(index: Expr) -> bool:
        return not any(isinstance(n, (Load, Call)) or isinstance(n, Var) and n.name in moving
                       for n in walk(index))

    def along(index: Expr) -> bool:
        if isinstance(index, Var):
            return index.name in loop_vars
        return isinstance(index, Binary) and index.op in ("add", "sub") and (
            along(index.lhs) and fixed(index.rhs)
            or index.op == "add" and along(index.rhs) and fixed(index.lhs))
    loops = [along(i) for i in indices]
    return any(loops) and all(loop or fixed(i) for loop, i in zip(loops, indices))


@dataclasses.dataclass(frozen=True)
class Shifted:
    """``var + offset`` (``minus``: ``var - offset``)."""

    offset: Expr
    minus: bool = False

    def added_to(self, base: Expr) -> Expr:
        """``base + offset`` (or minus)."""
        return self._with(base, "sub" if self.minus else "add")

    def taken_from(self, base: Expr) -> Expr:
        """``base - offset`` (or plus)."""
        return self._with(base, "add" if self.minus else "sub")

    def _with(self, base: Expr, op: str) -> Expr:
        return base if self.offset == Const(0, I64) else Binary(op, base, self.offset)


def shifted(bound: Expr, var: str) -> Shifted | None:
    """``bound`` as ``var`` plus an expression that does not read it (a sum
    or difference of terms, one of them ``var`` once, added), or None."""
    split = _linear(bound, var)
    if split is None or split[0] != 1:
        return None
    rest = split[1]
    if rest is None:
        return Shifted(Const(0, I64))
    if isinstance(rest, Binary) and rest.op == "sub" and rest.lhs == Const(0, I64):
        return Shifted(rest.rhs, minus=True)
    return Shifted(rest)


def _linear(expr: Expr, var: str) -> tuple[int, Expr | None] | None:
    """(k, rest) with ``expr`` = k x ``var`` + rest (rest None: 0), through
    sums and differences; None where ``var`` is read otherwise."""
    if isinstance(expr, Var) and expr.name == var:
        return 1, None
    if isinstance(expr, Binary) and expr.op in ("add", "sub"):
        left, right = _linear(expr.lhs, var), _linear(expr.rhs, var)
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "add" else -1
        rest = left[1] if right[1] is None else (
            Binary(expr.op, left[1], right[1]) if left[1] is not None
            else right[1] if sign == 1 else Binary("sub", Const(0, I64), right[1]))
        return left[0] + sign * right[0], rest
    return None if reads_variable(expr, var) else (0, expr)


def iterations_share(outer: For, module: Module) -> bool:
    """Whether two iterations of ``outer`` could share what its body writes
    or assigns, or its bounds could change as it runs: the bounds read
    memory or what the body assigns; the body declares an array at its
    top, declares the loop variable again, assigns a variable it does
    not declare, returns, waits at a barrier, updates atomically or
    calls a helper with effects; or a buffer it writes is accessed, in
    some load or store, without the loop variable itself at one same
    index position, and two of its accesses may meet in different
    iterations (affine_dependences.py: a symmetric result's mirror
    store). Where it is False, any order of the iterations computes the
    same (column_strips distributes the loop, loop-jam interleaves its
    iterations, loop-instances runs them as instances)."""
    body = outer.body
    reads_memory, assigned = bound_dependences(outer, [body])
    if reads_memory or assigned or any(isinstance(s, ArrayDecl) for s in body):
        return True
    declared = set(declared_names(body))
    if outer.var in declared or assigned_variables(body) - declared:
        return True
    for node in walk(body):
        if isinstance(node, (Return, Barrier, AtomicUpdate)):
            return True
        if isinstance(node, Call):
            helper = module.functions.get(node.function)
            if helper is None or has_effects(helper.body, module, frozenset({node.function})):
                return True
    written = {n.buffer for n in walk(body) if isinstance(n, Store)} - declared

    def dimension_of(index):
        return 0 if isinstance(index, Var) and index.name == outer.var else None
    return any(not access_positions(body, buffer, 1, dimension_of) and
               not apart_in_iterations(outer, buffer) for buffer in written)


def sharing_problem(loop: For, module: Module) -> str | None:
    """``iterations_share`` as a pass's reason for refusing ``loop``."""
    if not iterations_share(loop, module):
        return None
    return ("has iterations that may share what its body writes or assigns (each buffer "
            f"written needs '{loop.var}' at one index position in every access, or accesses "
            "that meet only in one same iteration)")


def recomputable(let: Let, changing: set[str], written, declared: set[str]) -> bool:
    """Whether ``let``'s value may be computed again in another place of
    a nest: it has one, calls nothing, reads no variable of ``changing``
    and no buffer of ``written``; and its name is none of ``changing``
    nor of ``declared`` (the names the new place declares)."""
    return let.value is not None and let.name not in changing | declared and not any(
        isinstance(n, Call) or isinstance(n, Var) and n.name in changing
        or isinstance(n, Load) and n.buffer in written for n in walk(let.value))


def with_lets_sunk(outer: For) -> For | None:
    """``outer`` with the values it declares before its inner loop
    computed at the start of the inner loop's body instead, where that
    computes the same: the body is lets, then one loop, then anything; a
    sunk let has a value that calls nothing and reads no variable the
    body assigns and no buffer the inner loop writes; the body assigns
    its variable nowhere, and reads it only in the inner loop's body and
    in lets sunk with it.  None where nothing would be sunk."""
    body = outer.body
    at = next((i for i, stmt in enumerate(body) if not isinstance(stmt, Let)), len(body))
    if at == 0 or at == len(body) or not isinstance(body[at], For):
        return None
    inner = body[at]
    written = {n.buffer for n in walk(inner.body) if isinstance(n, (Store, AtomicUpdate))}
    changing = assigned_variables(body)
    declared = {n.name for n in walk(inner.body) if isinstance(n, (Let, ArrayDecl))}
    sunk = {index for index, let in enumerate(body[:at])
            if recomputable(let, changing, written, declared)}
    while True:   # a let that a statement left outside the inner loop reads stays
        outside = (inner.start, inner.stop, *(
            stmt for index, stmt in enumerate(body) if index != at and index not in sunk))
        read = {n.name for n in walk(outside) if isinstance(n, Var)}
        staying = {index for index in sunk if body[index].name in read}
        if not staying:
            break
        sunk -= staying
    if not sunk:
        return None
    kept = tuple(stmt for index, stmt in enumerate(body[:at]) if index not in sunk)
    moved = dataclasses.replace(inner, body=(*(body[i] for i in sorted(sunk)), *inner.body))
    return dataclasses.replace(outer, body=(*kept, moved, *body[at + 1:]))


def _ids(function: KernelFunction) -> dict[int, str]:
    return dict(zip((id(n) for n in walk(function.body) if isinstance(n, For)),
                    loop_ids(function)))


class NestRewriter:
    """Rewrites the loops of one function: ``problem(loop)`` says why a
    loop may not be rewritten (None: it may), ``worth(loop)`` whether to
    rewrite it unasked, ``rewrite(loop)`` the loop's replacement."""

    pass_name = ""

    def __init__(self, function: KernelFunction, module: Module, requests: set[str]):
        self.function, self.module, self.requests = function, module, requests
        self.ids = _ids(function)

    def problem(self, loop: For) -> str | None:
        raise NotImplementedError

    def worth(self, loop: For) -> bool:
        raise NotImplementedError

    def rewrite(self, loop: For) -> Stmt | tuple[Stmt, ...]:
        raise NotImplementedError

    def run(self) -> KernelFunction:
        body = self.block(self.function.body)
        return self.function if body == self.function.body else \
            dataclasses.replace(self.function, body=body)

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            new = self.statement(stmt)
            out.extend(new if isinstance(new, tuple) else (new,))
        return tuple(out)

    def statement(self, stmt: Stmt) -> Stmt | tuple[Stmt, ...]:
        if isinstance(stmt, For):
            nest = with_lets_sunk(stmt) or stmt
            if self._wanted(nest, self.ids.get(id(stmt))):
                return self.rewrite(nest)
        return map_blocks(stmt, self.block)

    def _wanted(self, loop: For, loop_id: str | None) -> bool:
        """Whether to rewrite ``loop`` (its id; None: a loop a rewrite made)."""
        if loop_id in self.requests:
            problem = self.problem(loop)
            if problem:
                raise PassError(Diagnostic(Location(function=self.function.name),
                                           f"{self.pass_name}: loop '{loop_id}' {problem}",
                                           "leave this loop out of loops="))
            return True
        return not self.requests and self.problem(loop) is None and self.worth(loop)
