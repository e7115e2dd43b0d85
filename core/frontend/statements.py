"""Translation of kernel bodies (Python statements) to kernel IR.

Supported: assignments (``x = e``, ``x: f32 = e``, ``buf[i, j] = e``,
``+=`` and friends), ``if`` / ``elif`` / ``else``, ``for k in range(...)``
and ``for k in loop(..., unroll=, ivdep=, trip_count=)``, ``while``,
``return`` (ends the instance), private / local arrays, atomics,
``barrier()``, ``reduce(op, (... for ...))`` (reductions.py), and calls of ``@hpvm.kernel`` helpers (inlined, see
inline.py).  Everything else is refused with a located error and a fix.
"""
from __future__ import annotations

import ast
from copy import deepcopy

from ..ir.kernel import ArrayDecl, Assign, Const, For, If, Let, Load, Return, Store, Var, While
from ..ir.visit import walk
from ..ir.types import ScalarType
from .calls import CallMixin
from .expressions import ExprTranslator
from .inline import inline_call
from .loops import loop_header
from .reductions import ReduceMixin
from .scope import ArrayRef, LocalVar
from .typing_rules import Value, convert

REFUSED = {
    ast.Break: ("'break' is not supported in kernels", "use a while loop whose condition includes a flag"),
    ast.Continue: ("'continue' is not supported in kernels", "wrap the rest of the loop body in an if"),
    ast.FunctionDef: ("nested functions are not supported", "define an @hpvm.kernel helper at module level"),
    ast.ClassDef: ("classes are not supported in kernels", "use buffers and scalar variables"),
    ast.Try: ("exceptions are not supported in kernels", "check conditions with if instead"),
    ast.Raise: ("exceptions are not supported in kernels", "check conditions with if instead"),
    ast.With: ("'with' is not supported inside a kernel body", "put tasks at program level"),
    ast.Import: ("imports are not supported in kernels", "import at module level"),
    ast.ImportFrom: ("imports are not supported in kernels", "import at module level"),
    ast.Global: ("'global' is not supported in kernels", "pass the value as a parameter"),
    ast.Nonlocal: ("'nonlocal' is not supported in kernels", "pass the value as a parameter"),
    ast.Delete: ("'del' is not supported in kernels", "just stop using the variable"),
    ast.Assert: ("'assert' is not supported in kernels", "check conditions with if instead"),
    ast.Match: ("'match' is not supported in kernels", "use if / elif / else"),
}


class StmtTranslator(ReduceMixin, CallMixin, ExprTranslator):
    """Translates a kernel body; ``hoisted`` names are declared at the top
    (see hoisting.py).  ``helper_result`` is set when inlining a helper."""

    def __init__(self, scope, hoisted=frozenset()):
        super().__init__(scope)
        self.hoisted = set(hoisted)
        self.hoisted_decls: list[Let] = []
        self.inliner = None      # set by inline.py for helper bodies
        self.return_type = None  # set when translating a helper as a function of its own
        self.tail_returns: set[int] = set()

    def block(self, stmts) -> tuple:
        saved, self.out = self.out, []
        for stmt in stmts:
            self.statement(stmt)
        result, self.out = tuple(self.out), saved
        return result

    def function_body(self, stmts) -> tuple:
        body = self.block(stmts)
        return tuple(self.hoisted_decls) + body

    def statement(self, node) -> None:
        method = getattr(self, f"_stmt_{type(node).__name__}", None)
        if method is None:
            message, fix = REFUSED.get(type(node), (
                f"'{type(node).__name__}' statements are not supported in kernels", ""))
            raise self.error(node, message, fix)
        method(node)

    # -- simple statements ---------------------------------------------------
    def _stmt_Pass(self, node):
        pass

    def _stmt_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Constant) and isinstance(call.value, str):
            return  # docstring
        if not isinstance(call, ast.Call):
            raise self.error(node, f"'{ast.unparse(node)}' has no effect",
                             "assign the value, or remove the line")
        callee = self.callee(call)
        marker = getattr(callee, "hpvm_marker", None)
        if marker == "barrier":
            return self.barrier(call)
        if marker is not None and marker.startswith("atomic_"):
            self.atomic(call, marker[len("atomic_"):], result_wanted=False)
            return
        if getattr(callee, "hpvm_kernel", None) is not None:
            self.call_helper(call, callee)
            return
        raise self.error(node, f"the value of '{ast.unparse(call)}' is unused",
                         "assign it to a variable")

    def _stmt_Return(self, node):
        if self.inliner is not None:
            return self.inliner.return_statement(self, node)
        if node.value is not None and self.return_type is not None:
            value = self.scalar(node.value)
            self.emit(Return(self.converted(node, value, self.return_type, "the result")))
            return
        if node.value is not None:
            raise self.error(node, "a node's kernel cannot return a value",
                             "store the result into an output buffer: out[i] = value")
        self.emit(Return())

    def _stmt_Assign(self, node):
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment 'a = b = ...' is not supported",
                             "assign each variable separately")
        target = node.targets[0]
        if self.is_array_declaration(node.value):
            return self.declare_array(target, node.value)
        if isinstance(target, ast.Subscript):
            return self.store(target, self.scalar(node.value))
        if isinstance(target, ast.Name):
            return self.assign(target, self.scalar(node.value))
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and (
                len(target.elts) == len(node.value.elts)):
            return self.assign_tuple(target.elts, node.value.elts)
        raise self.error(node, f"cannot assign to '{ast.unparse(target)}'",
                         "assign one variable or one element per statement")

    def assign_tuple(self, targets, values) -> None:
        """``a, b = x, y``: every right side is evaluated before any target
        is assigned (through a temporary where a value reads an earlier
        target)."""
        for target in targets:
            if not isinstance(target, (ast.Name, ast.Subscript)):
                raise self.error(target, f"cannot assign to '{ast.unparse(target)}'",
                                 "assign names or elements")
        results = [self.scalar(value) for value in values]
        for index in range(1, len(results)):
            if self._reads_targets(results[index].expr, targets[:index]):
                temp = self.scope.names.fresh(self.scope.local_prefix + "tmp")
                self.emit(Let(temp, results[index].type, results[index].expr))
                results[index] = Value(Var(temp, results[index].type), results[index].weak)
        for target, value in zip(targets, results):
            if isinstance(target, ast.Name):
                self.assign(target, value)
            else:
                self.store(target, value)

    def _reads_targets(self, expr, targets) -> bool:
        names = {self.scope.locals[t.id].ir_name for t in targets
                 if isinstance(t, ast.Name) and t.id in self.scope.locals}
        stores = any(isinstance(t, ast.Subscript) for t in targets)
        return any((isinstance(e, Var) and e.name in names) or (stores and isinstance(e, Load))
                   for e in walk(expr))

    def _stmt_AnnAssign(self, node):
        declared = self.python_object(node.annotation)
        if not isinstance(declared, ScalarType) or not isinstance(node.target, ast.Name):
            raise self.error(node, f"'{ast.unparse(node.annotation)}' is not a scalar type",
                             "annotate local variables with hpvm types: acc: f32 = 0")
        name = node.target.id
        if name in self.scope.locals:
            raise self.error(node, f"'{name}' is already declared",
                             "annotate a variable only where it is first assigned")
        value = None if node.value is None else self.converted(node, self.scalar(node.value),
                                                               declared, f"'{name}'")
        self.declare(node, name, declared, value, weak=False)

    def _stmt_AugAssign(self, node):
        load = ast.copy_location(_as_load(node.target), node)
        combined = ast.copy_location(ast.BinOp(load, node.op, node.value), node)
        if isinstance(node.target, ast.Subscript):
            return self.store(node.target, self.scalar(combined))
        if isinstance(node.target, ast.Name):
            return self.assign(node.target, self.scalar(combined))
        raise self.error(node, f"cannot update '{ast.unparse(node.target)}'", "")

    # -- variables -------------------------------------------------------------
    def converted(self, node, value, target, what):
        expr = self.rule(node, convert, value, target, what)
        self.settle(value, target)
        return expr

    def assign(self, target: ast.Name, value) -> None:
        name, scope = target.id, self.scope
        if name in scope.buffers or name in scope.arrays:
            raise self.error(target, f"cannot assign to buffer '{name}'",
                             f"store elements: {name}[i] = value")
        if name in scope.scalars or name in scope.loop_vars:
            raise self.error(target, f"'{name}' is read-only here",
                             f"copy it into a new variable: my_{name} = {name}")
        local = scope.locals.get(name)
        if local is None:
            return self.declare(target, name, value.type, value.expr, weak=value.weak)
        if local.weak and not value.weak:
            scope.settled_now.setdefault(local.ir_name, value.type)
            self.emit(Assign(local.ir_name, value.expr))
            return
        self.emit(Assign(local.ir_name, self.converted(target, value, local.type, f"'{name}'")))

    def declare(self, node, name: str, type, value, weak: bool) -> None:
        scope = self.scope
        ir_name = scope.names.fresh(scope.local_prefix + name)
        settled = scope.settled_types.get(ir_name)
        if weak and settled is not None:
            type, weak = settled, False
            value = self.converted(node, _weak(value), type, f"'{name}'")
        scope.locals[name] = LocalVar(ir_name, type, weak)
        if name in self.hoisted:
            self.hoisted_decls.append(Let(ir_name, type, None))
            if value is not None:
                self.emit(Assign(ir_name, value))
        else:
            self.emit(Let(ir_name, type, value))

    def store(self, target: ast.Subscript, value) -> None:
        buffer, indices, element = self.element(target, "write")
        self.emit(Store(buffer, indices, self.converted(target, value, element,
                                                        f"store to '{target.value.id}'")))

    # -- arrays ------------------------------------------------------------------
    def is_array_declaration(self, node) -> bool:
        return isinstance(node, ast.Call) and getattr(
            self.python_object(node.func), "hpvm_marker", None) in ("private_array", "local_array")

    def declare_array(self, target, call) -> None:
        marker = self.python_object(call.func).hpvm_marker
        usage = f"write: a = {marker}(f32, (4, 4))"
        element = self.python_object(call.args[0]) if call.args else None
        if not isinstance(target, ast.Name) or len(call.args) != 2 or not isinstance(element, ScalarType):
            raise self.error(call, f"{marker} takes an element type and a constant shape", usage)
        shape_node = call.args[1]
        items = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
        shape = []
        for item in items:
            value = self.scalar(item)
            if not (isinstance(value.expr, Const) and value.type.is_int and value.expr.value > 0):
                raise self.error(item, f"array sizes must be positive integer constants, not '{ast.unparse(item)}'",
                                 usage)
            shape.append(value.expr.value)
        name = target.id
        if name in self.scope.locals or name in self.scope.arrays:
            raise self.error(target, f"'{name}' is already declared", "choose a new name for the array")
        ir_name = self.scope.names.fresh(self.scope.local_prefix + name)
        self.scope.arrays[name] = ArrayRef(ir_name, element, tuple(shape))
        self.emit(ArrayDecl(ir_name, element, tuple(shape), marker.split("_")[0]))

    # -- control flow ------------------------------------------------------------
    def _stmt_If(self, node):
        cond = self.condition(node.test)
        self.emit(If(cond, self.block(node.body), self.block(node.orelse)))

    def _stmt_While(self, node):
        if node.orelse:
            raise self.error(node, "'while ... else' is not supported", "move the else code after the loop")
        cond = self.without_statements(node.test, "a while condition", self.condition)
        self.emit(While(cond, self.block(node.body)))

    def _stmt_For(self, node):
        if node.orelse:
            raise self.error(node, "'for ... else' is not supported", "move the else code after the loop")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "a sequential loop has one variable",
                             "write: for k in range(n):")
        header = loop_header(self, node.iter)
        ir_name, body = self.in_loop(node.target, lambda: self.block(node.body))
        self.emit(For(ir_name, header.start, header.stop, header.step, body,
                      header.unroll, header.ivdep, header.trip_count))

    def in_loop(self, target: ast.Name, translate_body):
        """``(IR name, translate_body())`` with the loop variable
        ``target`` in scope while the body is translated."""
        name = target.id
        if name in self.scope.locals or name in self.scope.scalars or name in self.scope.buffers:
            raise self.error(target, f"loop variable '{name}' is already used as a variable",
                             "choose a new name for the loop variable")
        ir_name = self.scope.names.fresh(self.scope.local_prefix + name)
        saved = self.scope.loop_vars.get(name)
        self.scope.loop_vars[name] = ir_name
        body = translate_body()
        if saved is None:
            del self.scope.loop_vars[name]
        else:
            self.scope.loop_vars[name] = saved
        return ir_name, body

    def call_helper(self, node, kernel):
        return inline_call(self, node, kernel)


def _as_load(target):
    """A copy of an assignment target usable as an expression."""
    copy = deepcopy(target)
    copy.ctx = ast.Load()
    return copy


def _weak(expr):
    return Value(expr, weak=True)
