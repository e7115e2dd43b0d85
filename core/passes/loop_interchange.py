"""``loop-interchange``: swap a loop with the loop nested directly in it,
so that the inner loop walks memory along its contiguous dimension.

A nest written ``for j: for i: out[i, j] = a[i, j] * 2`` walks its
row-major arrays a whole row apart at every inner step; swapped, the
inner loop reads neighbours, which caches fetch together and vector
units load at once (LLVM's own interchange is off by default).

Which nests: those named in ``loops`` (the outer loop's id, as
loop-unroll's: ``fn.var``, ``fn.var#2``), the tuner's knob, one per
nest it may swap; without names, every nest where fewer of the body's
accesses would stride through memory with the outer loop innermost than
they do now (an access strides along a loop that its indices read other
than as the last index's variable plus or minus something that does not
read it; one that does not read it at all stays put: a column-major
``y[i] += a[i, j] * x[j]`` swaps, its ``y[i]`` then held across the
walk of a row), the swapped loop looked at again with the loop now in
it (``for c: for y: for x: out[y, x, c]`` becomes
``for y: for x: for c``).

Legal, so that the swapped nest computes exactly what the nest as
written did, when:

- the nest is perfect: the outer loop's body is the inner loop alone, or
  it becomes perfect by keeping a fold in the output it ends in
  (``let s = 0; for i { s = s + a[i, j] }; out[j] = s``: see
  core/passes/output_expansion.py);
- the inner loop's bounds do not read the outer variable, or read it
  only as the variable plus or minus a value, both loops stepping by 1
  (a triangle or a band: the swapped loops then take the bounds that run
  the same iterations, core/passes/triangle_bounds.py); and neither
  loop's bounds read memory or a variable the body assigns (they are
  evaluated again in their new places);
- the body does not return, wait at a barrier, update atomically, or
  call a helper that stores;
- every variable the body assigns and does not declare is a fold in any
  order: a reduction a loop of the nest carries (``reduce()``), or an
  exact fold infer-reductions would mark (integer ops, float min and
  max);
- every buffer or local array the body writes is accessed, in every
  load and store of the body, with both loop variables as indices at the
  same positions (each iteration then touches its own elements), or
  with the same indices, each a loop variable or the same in every
  iteration (``out[j] += a[i, j]``: iterations share an element only
  with those of the same ``j``, which both orders run in the same
  order); the order of iterations then cannot show.  Or no two
  iterations touching one element, one of them storing it, run later
  along one loop and earlier along the other, solved over the accesses'
  affine indices and the loops' bounds (core/passes/
  affine_dependences.swap_keeps_order): ``out[i - 1, j]`` beside
  ``out[i, j]``, a running sum down each column, whose distance both
  orders keep in order.

A nest named in ``loops`` that is not legal is refused with the reason.
Each loop keeps its own hints (unroll, ivdep, trip count, reductions).
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.graph import Module
from ..ir.instance_access import access_positions
from ..ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Binary, Call, Expr, For, KernelFunction, Let, Load, Return,
    Stmt, Store, Var,
)
from ..ir.reduction import reads_variable
from ..ir.visit import walk
from .affine_dependences import swap_keeps_order
from .column_strips import column_strips
from .infer_reductions import declared_types, has_effects, loop_reductions
from .loop_nests import (
    NestRewriter, check_loop_ids, loops_without, one_element_per_value, with_lets_sunk,
)
from .output_expansion import expanded_into_output
from .registry import Option, register_pass
from .triangle_bounds import swapped_bounds, triangle_problem


@register_pass("loop-interchange", options=[
    Option("loops", list, (), "the outer loops of the nests to swap (ids as loop-unroll's: fn.var, "
                              "fn.var#2; default: every nest walking memory faster outside)")])
def loop_interchange(module: Module, loops: tuple[str, ...]) -> Module:
    """Swap the named nests, or every legal nest whose outer loop walks
    memory contiguously where its inner loop does not."""
    check_loop_ids("loop-interchange", module, loops)
    functions = {name: _Interchanger(function, module, set(loops)).run()
                 for name, function in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def interchangeable_loops(module: Module) -> list[str]:
    """The ids of the outer loops of the nests loop-interchange may swap
    (the tuner's knobs)."""
    return loops_without(module, interchange_problem)


def interchange_problem(outer: For, function: KernelFunction, module: Module) -> str | None:
    """Why swapping ``outer`` with the loop in it would not compute the
    same (see the module text); None when it would."""
    if len(outer.body) != 1 or not isinstance(outer.body[0], For):
        return "is not a perfect nest (its body is more than one loop)"
    inner = outer.body[0]
    if reads_variable((inner.start, inner.stop), outer.var):
        problem = triangle_problem(outer, inner)
        if problem is not None:
            return problem
    for loop in (outer, inner):
        reads_memory, assigned = bound_dependences(loop, [inner.body])
        if reads_memory or assigned:
            return (f"has bounds of loop '{loop.var}' that read memory or a variable the "
                    "body assigns")
    for node in walk(inner.body):
        if isinstance(node, (Return, Barrier, AtomicUpdate)):
            return f"has a body that runs {type(node).__name__.lower()} statements"
        if isinstance(node, Call):
            helper = module.functions.get(node.function)
            if helper is None or has_effects(helper.body, module, frozenset({node.function})):
                return f"calls '@{node.function}', which has effects"
    return _fold_problem(outer, inner, function) or _write_problem(outer, inner)


def _fold_problem(outer: For, inner: For, function: KernelFunction) -> str | None:
    declared = {s.name for s in walk(inner.body) if isinstance(s, (Let, ArrayDecl))}
    carried = set(assigned_variables(inner.body)) - declared
    if not carried:
        return None
    types = declared_types(function)
    folds = {r.var for r in outer.reduce + inner.reduce} | \
        {r.var for r in loop_reductions(outer, types)}
    unordered = sorted(carried - folds)
    if unordered:
        return (f"assigns '{unordered[0]}', declared outside the nest, other than by a fold "
                "whose order does not matter")
    return None


def _write_problem(outer: For, inner: For) -> str | None:
    declared = {s.name for s in walk(inner.body) if isinstance(s, ArrayDecl)}
    written = {s.buffer for s in walk(inner.body) if isinstance(s, Store)} - declared

    def dimension_of(index: Expr) -> int | None:
        if isinstance(index, Var):
            return {outer.var: 0, inner.var: 1}.get(index.name)
        return None
    assigned = assigned_variables(inner.body)
    for buffer in sorted(written):
        if not access_positions(inner.body, buffer, 2, dimension_of) and \
                not _shared_along_one_loop(inner.body, buffer, (outer.var, inner.var), assigned) \
                and not (outer.step > 0 and inner.step > 0 and swap_keeps_order(outer, buffer)):
            return (f"writes '{buffer}' at elements another iteration may access (every access "
                    f"needs '{outer.var}' and '{inner.var}' as indices at the same positions, "
                    "maybe shifted by constants that rise or fall along both loops alike, or "
                    "the same indices, each a loop variable or the same in every iteration)")
    return None


def _shared_along_one_loop(stmts, buffer: str, loop_vars: tuple[str, str], assigned) -> bool:
    """Whether every access of ``stmts`` to ``buffer`` has the same indices,
    and those are one element per value of the loop variables they use
    (loop_nests.one_element_per_value): iterations then share an element
    only with those of the same value of that variable, which both orders
    of the nest run in the same order (``out[j] += a[i, j]``)."""
    found = set()
    for node in walk(stmts):
        if isinstance(node, (Load, Store)) and node.buffer == buffer:
            found.add(node.indices)
        elif isinstance(node, AtomicUpdate) and node.buffer == buffer or \
                isinstance(node, Call) and any(isinstance(a, Var) and a.name == buffer
                                               for a in node.args):
            return False
    return len(found) == 1 and one_element_per_value(found.pop(), loop_vars, assigned)


def crossing_accesses(stmts, outer: str, inner: str) -> int:
    """How many loads and stores of ``stmts`` walk contiguously along
    ``outer`` (their last index ``outer`` plus or minus something else)
    while an earlier index reads ``inner``: in a nest of ``inner`` in
    ``outer``, each inner step lands on another cache line, which the
    next outer steps read again (``b[j, i]`` under ``for i: for j:``)."""
    return sum(1 for node in walk(stmts) if isinstance(node, (Load, Store)) and node.indices
               and _along(node.indices[-1], outer)
               and reads_variable(node.indices[:-1], inner))


def _along(index: Expr, var: str) -> bool:
    """Whether ``index`` is ``var`` plus or minus something that does not
    read it."""
    if isinstance(index, Var):
        return index.name == var
    if isinstance(index, Binary) and index.op == "add":
        return _along(index.lhs, var) and not reads_variable(index.rhs, var) or \
            _along(index.rhs, var) and not reads_variable(index.lhs, var)
    if isinstance(index, Binary) and index.op == "sub":
        return _along(index.lhs, var) and not reads_variable(index.rhs, var)
    return False


def strided_accesses(stmts, var: str, ignoring=frozenset()) -> int:
    """How many loads and stores of ``stmts`` (but those of the arrays
    ``ignoring`` names) would stride through memory in a loop over
    ``var``: their indices read it, or a value that follows it (a block's
    loop), other than as the last index being ``var`` plus or minus
    something else (a contiguous walk); those that read neither stay at
    the same element at every step."""
    following = _following(stmts, var)

    def strided(node) -> bool:
        moving = [any(isinstance(n, Var) and n.name in following for n in walk(index))
                  for index in node.indices]
        return any(moving) and (any(moving[:-1]) or not _along(node.indices[-1], var))
    return sum(1 for node in walk(stmts) if isinstance(node, (Load, Store)) and node.indices
               and node.buffer not in ignoring and strided(node))


def _following(stmts, var: str) -> set[str]:
    """``var`` and the names of ``stmts`` whose values follow it: loops
    whose bounds read it (a block's loop), lets computed from it."""
    names = {var}
    for node in walk(stmts):
        if isinstance(node, For) and any(isinstance(n, Var) and n.name in names
                                         for n in walk((node.start, node.stop))):
            names.add(node.var)
        elif isinstance(node, Let) and node.value is not None and any(
                isinstance(n, Var) and n.name in names for n in walk(node.value)):
            names.add(node.name)
    return names


def swapped(outer: For) -> For:
    """The perfect nest ``outer`` with its two loops swapped (bounds that
    run the same iterations where the inner's read the outer's
    variable); legal where interchange_problem finds nothing."""
    inner = outer.body[0]
    new_outer, new_inner = swapped_bounds(outer, inner) if reads_variable(
        (inner.start, inner.stop), outer.var) else (inner, outer)
    return dataclasses.replace(new_outer, body=(dataclasses.replace(new_inner, body=inner.body),))


class _Interchanger(NestRewriter):
    pass_name = "loop-interchange"

    def statement(self, stmt: Stmt) -> Stmt | tuple[Stmt, ...]:
        """A nest made perfect by keeping its fold in the output
        (output_expansion.py) is split and its middle nest swapped, where
        that is legal and asked for or worth it; a loop that cannot swap
        as it stands is cut in strips of its statements (column_strips.py)
        where one of their nests then swaps; any other statement as
        NestRewriter does."""
        if isinstance(stmt, For) and (not self.requests or self.ids.get(id(stmt)) in self.requests):
            nest = with_lets_sunk(stmt) or stmt
            loops = expanded_into_output(nest, self.function)
            if loops is not None and self.problem(loops[1]) is None and \
                    (self.requests or self.worth(loops[1])):
                return (loops[0], self.rewrite(loops[1]), *loops[2:])
            if self.problem(nest) is not None:
                strips = self._strips(stmt)
                if strips is not None:
                    return strips
        return super().statement(stmt)

    def _strips(self, loop: For) -> For | None:
        """``loop`` in strips of its statements (column_strips.py), each
        nest swapped where legal and asked for or worth it (the strip's
        own arrays, small, not counted); None unless one is."""
        strips = column_strips(loop, self.function, self.module)
        if strips is None:
            return None
        arrays = frozenset(s.name for s in strips.body if isinstance(s, ArrayDecl))
        body, swapped = [], False
        for item in strips.body:
            nest = (with_lets_sunk(item) or item) if isinstance(item, For) else item
            if isinstance(item, For) and self.problem(nest) is None and \
                    (self.requests or self.worth(nest, arrays)):
                body.append(self.rewrite(nest))
                swapped = True
            else:
                body.append(item)
        return dataclasses.replace(strips, body=tuple(body)) if swapped else None

    def problem(self, loop: For) -> str | None:
        return interchange_problem(loop, self.function, self.module)

    def worth(self, loop: For, ignoring=frozenset()) -> bool:
        """Whether fewer of the nest's accesses (but those of the arrays
        ``ignoring`` names) would stride through memory with the outer
        loop innermost."""
        inner = loop.body[0]
        return strided_accesses(inner.body, loop.var, ignoring) < \
            strided_accesses(inner.body, inner.var, ignoring)

    def rewrite(self, loop: For) -> Stmt:
        """The nest swapped; the loop moved inwards is looked at again with
        the loop now in it, so that the loop walking memory contiguously
        sinks to the innermost place of a deeper nest."""
        nest = swapped(loop)
        return dataclasses.replace(nest, body=(self.statement(nest.body[0]),))
