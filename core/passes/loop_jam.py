"""``loop-jam``: unroll a loop and jam its copies into the loop inside it,
so that an inner loop waiting on a chain of operations runs several
independent chains at once.

Each row of a matrix-vector product written as loops adds into one
element, a chain of float sums whose order the program fixes::

    for i in 0 .. M { for j in 0 .. N { y[i] = y[i] + a[i, j] * x[j] } }

A core starts one add of the chain only when the last has finished (four
cycles), though it could start two a cycle.  The rows are independent:
jammed by ``factor``, one walk over j carries ``factor`` rows' chains
side by side, each still in its own order, so every value is the same
bit for bit::

    for i0 in 0 .. M - M % 8 step 8 { for j { y[i0] = ...; y[i0 + 1] = ...; ... } }
    for i in M - M % 8 .. M { for j { y[i] = ... } }    # the rows left over

Which loops: those named in ``loops`` (ids as loop-unroll's), or by
default every loop stepping by 1 whose body is statements around one
innermost loop that carries a chain: a variable it assigns and does not
declare, or an element it loads and stores at indices that do not read
its variable; not one whose folds may be reordered (``reduce``), which
back ends run in vector lanes instead, nor one marked never to unroll
(``unroll=1``: the loop of the rows left over).  Legal where no two
iterations of the loop share anything the body writes or assigns
(loop_nests.iterations_share: each buffer written is accessed with
the loop's variable at one index position in every access, or no two
of its accesses meet in different iterations) and the
inner loop's bounds are the same in every iteration.
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables
from ..ir.graph import Module
from ..ir.kernel import For, KernelFunction, Let, Load, Stmt, Store, Var
from ..ir.reduction import reads_variable
from ..ir.types import I64
from ..ir.visit import map_blocks, walk
from .loop_nests import NestRewriter, check_loop_ids, sharing_problem
from .names import NameGenerator, declared_names, function_names, substitute
from .reduce_forms import as_i64, trip_count
from .registry import Option, register_pass


@register_pass("loop-jam", options=[
    Option("loops", list, (), "the loops to jam into the loop inside them (ids as "
                              "loop-unroll's: fn.var, fn.var#2; default: every loop whose inner "
                              "loop waits on a chain)"),
    Option("factor", int, 8, "copies of the loop jammed together", minimum=2)])
def loop_jam(module: Module, loops: tuple[str, ...], factor: int) -> Module:
    """Jam the named loops, or every legal loop whose inner loop carries a
    chain, ``factor`` iterations at a time."""
    check_loop_ids("loop-jam", module, loops)
    functions = {name: _Jammer(function, module, set(loops), factor).run()
                 for name, function in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def jam_problem(outer: For, function: KernelFunction, module: Module) -> str | None:
    """Why ``outer``'s iterations may not be jammed into its inner loop;
    None when they may."""
    inners = [s for s in outer.body if isinstance(s, For)]
    if outer.step != 1:
        return "steps by other than 1"
    if len(inners) != 1 or any(isinstance(n, For) for n in walk(inners[0].body)):
        return "has a body other than statements around one innermost loop"
    inner = inners[0]
    declared = set(declared_names(outer.body)) - set(declared_names(inner.body))
    if reads_variable((inner.start, inner.stop), outer.var) or any(
            reads_variable((inner.start, inner.stop), name) for name in declared):
        return f"has an inner loop '{inner.var}' whose bounds change from one iteration to the next"
    return sharing_problem(outer, module)


def carries_chain(inner: For) -> bool:
    """Whether ``inner`` waits on a chain from one iteration to the next
    that it may not reorder: a variable it assigns and does not declare,
    or an element it loads and stores at indices not reading its
    variable."""
    if inner.reduce:
        return False
    declared = set(declared_names(inner.body))
    if assigned_variables(inner.body) - declared:
        return True
    loaded = {(n.buffer, n.indices) for n in walk(inner.body) if isinstance(n, Load)}
    return any(isinstance(n, Store) and (n.buffer, n.indices) in loaded
               and not reads_variable(n.indices, inner.var) for n in walk(inner.body))


class _Jammer(NestRewriter):
    pass_name = "loop-jam"

    def __init__(self, function: KernelFunction, module: Module, requests: set[str],
                 factor: int):
        super().__init__(function, module, requests)
        self.factor = factor
        self.names = NameGenerator(function_names(function))

    def statement(self, stmt: Stmt) -> Stmt | tuple[Stmt, ...]:
        """A loop as NestRewriter takes it, without moving its values into
        the inner loop first (each copy computes its own)."""
        if isinstance(stmt, For) and self._wanted(stmt, self.ids.get(id(stmt))):
            return self.rewrite(stmt)
        return map_blocks(stmt, self.block)

    def problem(self, loop: For) -> str | None:
        return jam_problem(loop, self.function, self.module)

    def worth(self, loop: For) -> bool:
        return loop.unroll != 1 and carries_chain(next(s for s in loop.body
                                                       if isinstance(s, For)))

    def rewrite(self, loop: For) -> tuple[Stmt, ...]:
        """The jammed loop over whole groups of ``factor`` iterations, then
        the loop as written over the rest (never jammed again)."""
        at = next(index for index, s in enumerate(loop.body) if isinstance(s, For))
        inner = loop.body[at]
        first = Var(self.names.fresh(f"{loop.var}_group"), I64)
        count = Var(self.names.fresh(f"{loop.var}_count"), I64)
        start = as_i64(loop.start)
        whole = start + (count / self.factor) * self.factor
        before, inside, after, lets, folds = [], [], [], [], []
        for copy in range(self.factor):
            row = self.names.fresh(loop.var)
            lets.append(Let(row, I64, first + copy))
            renames = {name: self.names.fresh(name) for name in dict.fromkeys(
                declared_names(loop.body)) if name != inner.var}
            values = {loop.var: Var(row, I64)}
            before += substitute(loop.body[:at], renames, values)
            inside += substitute(inner.body, renames, values)
            after += substitute(loop.body[at + 1:], renames, values)
            folds += [dataclasses.replace(r, var=renames.get(r.var, r.var)) for r in inner.reduce]
        jammed_inner = dataclasses.replace(inner, body=tuple(inside), reduce=tuple(folds))
        jammed = For(first.name, start, whole, self.factor,
                     (*lets, *before, jammed_inner, *after))
        rest = dataclasses.replace(loop, start=whole, unroll=1, trip_count=None)
        return Let(count.name, I64, trip_count(loop)), jammed, rest
