"""``loop-fusion`` (HPVM2FPGA's LF, greedy): adjacent ``for`` loops with the
same bounds and step become one loop running both bodies in each
iteration, outermost level first, as long as that computes the same
values.  Loops separated only by ``let`` declarations count as adjacent
when each declaration can move before the first loop (it reads nothing
the loop assigns or writes) or after the second (which does not read it),
as a reduction's result and the next reduction's start are.

Legal when neither body returns, synchronises or calls a function; the
bounds read no memory and no variable either body assigns; no variable
assigned in one loop is used in the other (the second would see partial
values); and every buffer or array written in one loop and used in the
other is accessed at the iteration's own element in both (one index is
the loop variable itself, at the same position), or no element the
second touches at an iteration is touched by the first at a later one
(affine_dependences.py): iteration i of the second loop then reads only
what iterations up to i of the first wrote.  The
fused loop keeps ``ivdep`` only when both loops had it.

Options: ``functions``, the functions to work on (the DSE's knob, one per
function with more than one loop; default: every function).  A named
function with no legal pair is refused with the reason of its first pair.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import Module
from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.instance_access import access_positions
from ..ir.kernel import (
    AtomicUpdate, Barrier, Call, For, KernelFunction, Let, Load, Return, Stmt, Store, Var,
)
from ..ir.reduction import promise_problem
from ..ir.visit import map_blocks, walk
from .affine_dependences import never_after
from .errors import PassError
from .names import NameGenerator, declared_names, function_names, names_in, substitute
from .registry import Option, register_pass


@register_pass("loop-fusion", options=[
    Option("functions", list, (), "functions whose adjacent loops to fuse (default: every function)")])
def loop_fusion(module: Module, functions: tuple[str, ...]) -> Module:
    """Fuse adjacent loops with the same bounds, greedily, outermost first."""
    for name in functions:
        if name not in module.functions:
            raise PassError(Diagnostic(Location(), f"loop-fusion: no function '@{name}'",
                                       f"the functions are: {', '.join(module.functions)}"))
    chosen = set(functions or module.functions)
    new_functions = {}
    for name, function in module.functions.items():
        if name not in chosen:
            new_functions[name] = function
            continue
        fuser = _Fuser(function)
        new_functions[name] = dataclasses.replace(function, body=fuser.block(function.body))
        if functions and not fuser.fused and fuser.first_problem:
            raise PassError(Diagnostic(Location(function=name),
                                       f"loop-fusion: no loops can be fused: {fuser.first_problem}",
                                       "leave this function out"))
    return dataclasses.replace(module, functions=new_functions)


def fused(stmts: tuple[Stmt, ...], function: KernelFunction) -> tuple[Stmt, ...]:
    """``stmts`` (of ``function``) with adjacent loops fused where legal,
    greedily, outermost first, as the pass does."""
    return _Fuser(function).block(stmts)


class _Fuser:
    def __init__(self, function: KernelFunction):
        self.names = NameGenerator(function_names(function))
        self.fused = 0
        self.first_problem: str | None = None

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            if not (isinstance(stmt, For) and self._fused_into(out, stmt)):
                out.append(stmt)
        # Inner levels after this one: loops fused here have merged bodies.
        return tuple(self._inner(stmt) for stmt in out)

    def _fused_into(self, out: list[Stmt], loop: For) -> bool:
        """Fuse ``loop`` into the last loop of ``out`` when only ``let``
        declarations stand between them that can move before the first
        loop or after the second; whether it did."""
        at = len(out) - 1
        while at >= 0 and isinstance(out[at], Let):
            at -= 1
        if at < 0 or not isinstance(out[at], For):
            return False
        first, between = out[at], out[at + 1:]
        moved = _moved_apart(first, between, loop)
        if moved is None:
            return False
        problem = fusion_problem(first, loop)
        if problem is not None:
            self.first_problem = self.first_problem or \
                f"loops over '{first.var}' and '{loop.var}' {problem}"
            return False
        before, after = moved
        out[at:] = [*before, self._fuse(first, loop), *after]
        self.fused += 1
        return True

    def _inner(self, stmt: Stmt) -> Stmt:
        return map_blocks(stmt, self.block)

    def _fuse(self, first: For, second: For) -> For:
        # The second body's locals must not clash with the first's names, and
        # the first's locals must not hide names the second reads from outside.
        first_locals, second_locals = set(declared_names(first.body)), set(declared_names(second.body))
        hiding = (first_locals & names_in(second.body)) - second_locals
        first_body = substitute(first.body, {n: self.names.fresh(n) for n in hiding})
        taken = names_in(first_body)
        renames = {name: self.names.fresh(name) for name in second_locals if name in taken}
        body = substitute(second.body, renames, {second.var: Var(first.var, first.start.type)})
        fused = dataclasses.replace(
            first, body=first_body + body, ivdep=first.ivdep and second.ivdep,
            unroll=first.unroll if first.unroll == second.unroll else None,
            trip_count=first.trip_count if first.trip_count == second.trip_count else None)
        kept = tuple(r for r in first.reduce + second.reduce if promise_problem(fused, r) is None)
        return dataclasses.replace(fused, reduce=kept)


def _moved_apart(first: For, between: list[Stmt], second: For):
    """``between`` (let declarations) split into those that can run before
    ``first`` (they read nothing it assigns or writes) and those that can
    run after ``second`` (it neither reads their names nor changes what
    they read), in order; None
    when one can do neither."""
    before: list[Stmt] = []
    after: list[Stmt] = []
    first_effects = assigned_variables(first.body) | _written(first.body) | {first.var}
    first_names = names_in((first,))
    second_effects = assigned_variables(second.body) | _written(second.body)
    for let in between:
        reads = {n.name for n in walk(let) if isinstance(n, Var)} | _touched((let,))
        sunk = {a.name for a in after}
        if not reads & (first_effects | sunk) and let.name not in first_names:
            before.append(let)
        elif let.name not in names_in((second,)) and not reads & second_effects:
            after.append(let)
        else:
            return None
    return before, after


def fusion_problem(first: For, second: For) -> str | None:
    """Why ``second`` cannot run in the iterations of ``first``, or None."""
    renamed = substitute(second.body, values={second.var: Var(first.var, first.start.type)})
    if (first.start, first.stop, first.step) != (second.start, second.stop, second.step):
        return "have different bounds or steps"
    if first.var != second.var and first.var in names_in(second.body):
        return f"the second reads a variable named like the first's loop variable '{first.var}'"
    bodies = (first.body, renamed)
    if any(isinstance(n, (Return, Barrier, Call)) for body in bodies for n in walk(body)):
        return "return, synchronise or call a function"
    reads_memory, changed = bound_dependences(first, bodies)
    if reads_memory:
        return "have bounds that read memory"
    if changed:
        return "have bounds their bodies change"
    assigned = [_assigned(body) for body in bodies]
    used = [_used_scalars(body) for body in bodies]
    shared = (assigned[0] & used[1]) | (assigned[1] & used[0])
    if shared:
        return f"share the variable(s) {', '.join(sorted(shared))}, assigned in one of them"
    written = [_written(body) for body in bodies]
    touched = [_touched(body) for body in bodies]
    for buffer in sorted((written[0] & touched[1]) | (written[1] & touched[0])):
        if not _owned(bodies, buffer, first.var) and \
                not never_after(first, first.body, renamed, buffer):
            return f"access '{buffer}' at elements of other iterations"
    return None


def _assigned(body) -> set[str]:
    """Variables declared outside ``body`` that it assigns."""
    return assigned_variables(body) - set(declared_names(body))


def _used_scalars(body) -> set[str]:
    return {n.name for n in walk(body) if isinstance(n, Var)} | _assigned(body)


def _written(body) -> set[str]:
    return {n.buffer for n in walk(body) if isinstance(n, (Store, AtomicUpdate))}


def _touched(body) -> set[str]:
    return {n.buffer for n in walk(body) if isinstance(n, (Load, Store, AtomicUpdate))}


def _owned(bodies, buffer: str, var: str) -> bool:
    """Whether every access to ``buffer`` has ``var`` itself as an index, at
    one position, and no atomic update touches it."""
    def dimension_of(index):
        return 0 if isinstance(index, Var) and index.name == var else None
    return access_positions(sum(bodies, ()), buffer, 1, dimension_of) is not None


def fusible_functions(module: Module) -> list[str]:
    """The functions in which loop-fusion would fuse at least one pair of
    loops (the DSE's knobs)."""
    names = []
    for name, function in module.functions.items():
        fuser = _Fuser(function)
        fuser.block(function.body)
        if fuser.fused:
            names.append(name)
    return names
