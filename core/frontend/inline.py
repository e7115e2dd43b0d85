"""Inlining of ``@hpvm.kernel`` helpers called from kernel bodies.

A call ``h(buf, x)`` becomes the helper's statements in the caller:
scalar arguments are copied into fresh variables, buffer (and array)
arguments are passed by name, the helper's locals are renamed
``h_name``, and ``return e`` assigns the result variable.  A helper
returns at the end of a path: ``if c: return a`` followed by more code is
fine (the code moves into the else branch); a return inside a loop is not."""
from __future__ import annotations

import ast

from ..ir.kernel import Assign, Const, Let, Var
from ..ir.types import I64, BufferType
from .hoisting import hoisted_names
from .scope import BufferRef, KernelScope, LocalVar
from .typing_rules import Value


class HelperResult:
    """Collects ``return`` statements of one inlined helper."""

    def __init__(self, kernel, body):
        self.kernel = kernel
        self.type = kernel.return_type
        self.name: str | None = None
        self.tail = _tail_returns(body)

    def return_statement(self, translator, node) -> None:
        if id(node) not in self.tail:
            raise translator.error(node, f"helper '{self.kernel.name}' returns before its end",
                                   "assign the result to a variable and return it once, "
                                   "as the last statement")
        if node.value is None:
            if self.type is not None:
                raise translator.error(node, f"helper '{self.kernel.name}' must return a {self.type}",
                                       "write: return value")
            return
        value = translator.scalar(node.value)
        if self.type is None:
            self.type = value.type
        expr = translator.converted(node, value, self.type, f"the result of '{self.kernel.name}'")
        if self.name is None:
            self.name = translator.scope.names.fresh(f"{self.kernel.name}_result")
        translator.emit(Assign(self.name, expr))


def _ends_with_return(body) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _ends_with_return(last.body) and _ends_with_return(last.orelse)


def _has_return(stmt) -> bool:
    return any(isinstance(node, ast.Return) for node in ast.walk(stmt))


def normalize_returns(body: list) -> list:
    """Move the statements after ``if c: return a`` into the branches that
    do not return, so every return is at the end of a path
    (``if c: return a`` / ``return b`` becomes an if / else)."""
    for index, stmt in enumerate(body[:-1]):
        if isinstance(stmt, ast.If) and _has_return(stmt):
            rest = body[index + 1:]
            branches = [b if _ends_with_return(b) else list(b) + rest for b in (stmt.body, stmt.orelse)]
            new_if = ast.If(stmt.test, normalize_returns(branches[0]), normalize_returns(branches[1]))
            return list(body[:index]) + [ast.copy_location(new_if, stmt)]
    return list(body)


def _tail_returns(body) -> set[int]:
    if not body:
        return set()
    last = body[-1]
    if isinstance(last, ast.Return):
        return {id(last)}
    if isinstance(last, ast.If):
        return _tail_returns(last.body) | _tail_returns(last.orelse)
    return set()


def inline_call(caller, node: ast.Call, kernel) -> Value:
    """Inline helper ``kernel`` at call ``node`` of ``caller`` (a
    statements.StmtTranslator, whose class translates the helper's body too);
    returns its result."""
    scope = caller.scope
    if kernel.name in scope.helper_stack:
        raise caller.error(node, f"helper '{kernel.name}' calls itself (recursion)",
                           "rewrite the recursion as a loop")
    if node.keywords or len(node.args) != len(kernel.params):
        raise caller.error(node, f"helper '{kernel.name}' takes {len(kernel.params)} positional "
                                 f"argument(s): {', '.join(p.name for p in kernel.params)}",
                           "pass every argument by position")
    helper_scope = KernelScope(
        source=kernel.source, usage=scope.usage, names=scope.names,
        settled_types=scope.settled_types, settled_now=scope.settled_now,
        helper_stack=scope.helper_stack + (kernel.name,), local_prefix=f"{kernel.name}_")
    assigned = _assigned_names(kernel.source.tree)
    for param, arg in zip(kernel.params, node.args):
        if isinstance(param.type, BufferType):
            _bind_buffer(caller, helper_scope, param, arg)
            continue
        expr = caller.converted(arg, caller.scalar(arg), param.type,
                                f"argument '{param.name}' of '{kernel.name}'")
        if isinstance(expr, (Var, Const)) and param.name not in assigned:
            helper_scope.constants[param.name] = Value(expr)   # pass simple values directly
            continue
        ir_name = scope.names.fresh(f"{kernel.name}_{param.name}")
        caller.emit(Let(ir_name, param.type, expr))
        helper_scope.locals[param.name] = LocalVar(ir_name, param.type)
    body = normalize_returns(kernel.source.tree.body)
    translator = type(caller)(helper_scope, hoisted_names(body))
    translator.inliner = result = HelperResult(kernel, body)
    statements = list(translator.function_body(body))
    if result.name is None:
        caller.out.extend(statements)
        return Value(None)
    last = statements[-1] if statements else None
    single = sum(isinstance(s, Assign) and s.name == result.name for s in statements) == 1
    if single and isinstance(last, Assign) and last.name == result.name:
        statements[-1] = Let(result.name, result.type, last.value)   # one straight-line result
    else:
        caller.emit(Let(result.name, result.type, None))
    caller.out.extend(statements)
    return Value(Var(result.name, result.type))


def _assigned_names(tree) -> set[str]:
    """Names a function body assigns to."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)}


def _bind_buffer(caller, helper_scope, param, arg) -> None:
    """Pass buffer (or array) ``arg`` to the helper's buffer ``param``."""
    scope = caller.scope
    name = arg.id if isinstance(arg, ast.Name) else None
    if name in scope.buffers:
        ref = scope.buffers[name]
    elif name in scope.arrays:
        array = scope.arrays[name]
        ref = BufferRef(array.ir_name, BufferType(array.element, array.shape))
    else:
        raise caller.error(arg, f"parameter '{param.name}' is a buffer but '{ast.unparse(arg)}' is not",
                           "pass a buffer or array by name")
    wanted, actual = param.type, ref.type
    if wanted.element != actual.element or (
            wanted.shape is not None and actual.shape is not None and len(wanted.shape) != len(actual.shape)):
        raise caller.error(arg, f"'{name}' is {actual} but parameter '{param.name}' is {wanted}",
                           "pass a buffer of the declared element type and rank")
    for want, have in zip(wanted.shape or (), actual.shape or ()):
        if isinstance(want, int):
            if isinstance(have, int) and have != want:
                raise caller.error(arg, f"'{name}' has size {have} where '{param.name}' needs {want}",
                                   "pass a buffer of the declared shape")
            continue
        helper_scope.symbols.setdefault(want, Const(have, I64) if isinstance(have, int)
                                        else scope.symbols.get(have, Var(have, I64)))
    write_denied = ref.write_denied
    if param.direction == "in" and write_denied is None:
        write_denied = (f"helper parameter '{param.name}' is declared In",
                        "declare it Buffer[...] or InOut[...] to write it")
    helper_scope.buffers[param.name] = BufferRef(ref.ir_name, ref.type, ref.read_denied, write_denied)
