"""``loop-fusion`` (HPVM2FPGA's LF, greedy): adjacent ``for`` loops with the
same bounds and step become one loop running both bodies in each
iteration, outermost level first, as long as that computes the same
values.

Legal when neither body returns, synchronises or calls a function; the
bounds read no memory and no variable either body assigns; no variable
assigned in one loop is used in the other (the second would see partial
values); and every buffer or array written in one loop and used in the
other is accessed at the iteration's own element in both (one index is
the loop variable itself, at the same position): iteration i of the
second loop then reads only what iteration i of the first wrote.  The
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
    AtomicUpdate, Barrier, Call, For, KernelFunction, Load, Return, Stmt, Store, Var,
)
from ..ir.visit import walk
from .errors import PassError
from .names import NameGenerator, declared_names, function_names, names_in, substitute
from .registry import Option, register_pass

_BODIES = ("body", "then_body", "else_body")


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


class _Fuser:
    def __init__(self, function: KernelFunction):
        self.names = NameGenerator(function_names(function))
        self.fused = 0
        self.first_problem: str | None = None

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            previous = out[-1] if out else None
            if isinstance(previous, For) and isinstance(stmt, For):
                problem = fusion_problem(previous, stmt)
                if problem is None:
                    out[-1] = self._fuse(previous, stmt)
                    self.fused += 1
                    continue
                self.first_problem = self.first_problem or \
                    f"loops over '{previous.var}' and '{stmt.var}' {problem}"
            out.append(stmt)
        # Inner levels after this one: loops fused here have merged bodies.
        return tuple(self._inner(stmt) for stmt in out)

    def _inner(self, stmt: Stmt) -> Stmt:
        changes = {f: self.block(getattr(stmt, f)) for f in _BODIES if hasattr(stmt, f)}
        return dataclasses.replace(stmt, **changes) if changes else stmt

    def _fuse(self, first: For, second: For) -> For:
        # The second body's locals must not clash with the first's names, and
        # the first's locals must not hide names the second reads from outside.
        first_locals, second_locals = set(declared_names(first.body)), set(declared_names(second.body))
        hiding = (first_locals & names_in(second.body)) - second_locals
        first_body = substitute(first.body, {n: self.names.fresh(n) for n in hiding})
        taken = names_in(first_body)
        renames = {name: self.names.fresh(name) for name in second_locals if name in taken}
        body = substitute(second.body, renames, {second.var: Var(first.var, first.start.type)})
        return dataclasses.replace(
            first, body=first_body + body, ivdep=first.ivdep and second.ivdep,
            unroll=first.unroll if first.unroll == second.unroll else None,
            trip_count=first.trip_count if first.trip_count == second.trip_count else None)


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
        if not _owned(bodies, buffer, first.var):
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
