"""``inline``: inline calls of helper functions into their callers.

Each call is replaced by the callee's body: scalar parameters become fresh
locals (or the argument itself when it is a constant or a variable the
callee never assigns), buffer parameters are renamed to the caller's
buffers, the callee's shape symbols become the caller's sizes, and every
local of the callee gets a fresh name so nothing is captured.  A helper
returning only at its end stores its value in a result variable; one with
early returns is lowered with a ``done`` flag guarding what follows.
Calls are hoisted in evaluation order (see hoist).  Recursive functions
are not inlined.  Helpers no longer called are removed unless ``keep``.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.analysis import assigned_variables
from ..ir.graph import Module
from ..ir.kernel import (
    Assign, Call, Const, KernelFunction, Let, Return, Stmt, Var,
)
from ..ir.types import BOOL, I64, BufferType
from ..ir.visit import walk
from .errors import PassError
from .hoist import CallHoister, Expansion
from .module_tools import callees, called_functions, node_functions
from .names import NameGenerator, declared_names, function_names, substitute
from .registry import Option, register_pass
from .returns import lower_returns, returns_only_at_end


@register_pass("inline", options=[
    Option("keep", bool, False, "keep helper functions after inlining all their calls")])
def inline_calls(module: Module, keep: bool) -> Module:
    """Inline calls of helper functions into their callers."""
    recursive = _recursive_functions(module)
    functions = dict(module.functions)
    for name in _callees_first(module):
        functions[name] = _inline_into(functions[name], functions, recursive)
    if not keep:
        still_used = node_functions(module) | {
            c for f in functions.values() for c in callees(f)}
        inlined = called_functions(module) - still_used
        functions = {n: f for n, f in functions.items() if n not in inlined}
    return dataclasses.replace(module, functions=functions)


def _inline_into(function: KernelFunction, functions: dict, recursive: set[str]) -> KernelFunction:
    names = NameGenerator(function_names(function))

    def is_target(call: Call) -> bool:
        return call.function in functions and call.function not in recursive

    hoister = CallHoister(lambda call: _expand(call, functions[call.function], names, function),
                          is_target, names)
    if not hoister.has_call(function.body):
        return function
    return dataclasses.replace(function, body=hoister.block(function.body))


def _expand(call: Call, callee: KernelFunction, names: NameGenerator,
            caller: KernelFunction) -> Expansion:
    """The statements replacing ``call`` and the expression for its value."""
    if len(call.args) != len(callee.params):
        raise _error(caller, f"calls '@{callee.name}' with {len(call.args)} arguments "
                     f"but it has {len(callee.params)} parameters",
                     "pass one argument per parameter")
    pre: list[Stmt] = []
    renames, values = _bind_parameters(call, callee, names, pre, caller)
    for local in dict.fromkeys(declared_names(callee.body)):
        renames[local] = names.fresh(local)
    body = substitute(callee.body, renames, values)
    result = None
    if callee.return_type is not None:
        result = names.fresh(f"{callee.name}_result")
        pre.append(Let(result, callee.return_type, None))
    if returns_only_at_end(body):
        body = _final_return_as_assignment(body, result)
    else:
        done = names.fresh(f"{callee.name}_done")
        pre.append(Let(done, BOOL, Const(False, BOOL)))
        body = lower_returns(body, done, result)
    value = Var(result, callee.return_type) if result is not None else None
    return pre + list(body), value


def _bind_parameters(call, callee, names, pre, caller):
    """(renames, values) mapping callee parameters and shape symbols to the
    caller's names and expressions; appends Lets for copied scalars."""
    renames: dict[str, str] = {}
    scalar_params = {p.name for p in callee.params if not p.is_buffer}
    values: dict = {}
    assigned = assigned_variables(callee.body)
    for param, arg in zip(callee.params, call.args):
        if param.is_buffer:
            if not (isinstance(arg, Var) and isinstance(arg.type, BufferType)):
                raise _error(caller, f"passes a non-buffer argument to buffer parameter "
                             f"'{param.name}' of '@{callee.name}'", "pass the buffer by name")
            renames[param.name] = arg.name
            values.update(_shape_values(param.type, arg.type, values.keys() | scalar_params))
        elif isinstance(arg, Const) or (isinstance(arg, Var) and param.name not in assigned):
            values[param.name] = arg
        else:
            local = names.fresh(param.name)
            pre.append(Let(local, param.type, arg))
            renames[param.name] = local
    missing = [s for s in callee.shape_symbols if s not in values and s not in scalar_params]
    used = {n.name for n in walk(callee.body) if isinstance(n, Var)}
    if any(s in used for s in missing):
        raise _error(caller, f"cannot inline '@{callee.name}': the size "
                     f"{', '.join(missing)} of its buffers is not known at the call",
                     "pass buffers whose types give the sizes the helper reads")
    return renames, values


def _shape_values(callee_type: BufferType, caller_type: BufferType, known) -> dict:
    """Values of the callee's shape symbols (not in ``known``) from the
    caller's buffer type."""
    if callee_type.shape is None or caller_type.shape is None:
        return {}
    if len(callee_type.shape) != len(caller_type.shape):
        return {}
    found = {}
    for own, actual in zip(callee_type.shape, caller_type.shape):
        if isinstance(own, str) and own not in known and own not in found:
            found[own] = Const(actual, I64) if isinstance(actual, int) else Var(actual, I64)
    return found


def _final_return_as_assignment(body: tuple[Stmt, ...], result: str | None) -> tuple[Stmt, ...]:
    if not body or not isinstance(body[-1], Return):
        return body
    final = body[-1]
    if final.value is None or result is None:
        return body[:-1]
    return body[:-1] + (Assign(result, final.value),)


def _callees_first(module: Module) -> list[str]:
    """Function names ordered so that callees come before their callers."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name in visiting or name not in module.functions:
            return
        visiting.add(name)
        for callee in callees(module.functions[name]):
            visit(callee)
        visiting.discard(name)
        order.append(name)

    for name in module.functions:
        visit(name)
    return order


def _recursive_functions(module: Module) -> set[str]:
    """Functions that can reach themselves through calls."""
    recursive = set()
    for start in module.functions:
        pending, seen = list(callees(module.functions[start])), set()
        while pending:
            name = pending.pop()
            if name == start:
                recursive.add(start)
                break
            if name in seen or name not in module.functions:
                continue
            seen.add(name)
            pending.extend(callees(module.functions[name]))
    return recursive


def _error(caller: KernelFunction, message: str, fix: str) -> PassError:
    return PassError(Diagnostic(Location(function=caller.name), message, fix))
