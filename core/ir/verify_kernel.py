"""The kernel type checker: statements, scopes and functions.

``check_functions(module, report, users)`` checks every kernel function of
a module once; ``users`` maps a function name to the (graph, node) pairs
that run it, so diagnostics also name a node using the function.
"""
from __future__ import annotations

from dataclasses import replace

from .kernel import (
    ARRAY_SPACES, ATOMIC_OPS, Call, Expr, If, InstanceCount, InstanceId,
    KernelFunction, Return, Stmt,
)
from .reduction import op_problem, promise_problem
from .text import print_stmts
from .types import I64, BufferType
from .verify_common import Report, check_param_list, cycles, quoted
from .verify_expr import READ_ONLY_KINDS, ExprChecker, Symbol, is_scalar_type
from .visit import walk


class KernelChecker(ExprChecker):
    """Checks the statements of one function (see ExprChecker for names)."""

    def check(self) -> None:
        """Check the whole function."""
        self.mentioned: set[int] = set()
        check_param_list(self.function.params, self.report,
                         f"function '@{self.function.name}'")
        return_type = self.function.return_type
        if return_type is not None and not is_scalar_type(return_type):
            self.report.error(f"return type {return_type!r} is not a scalar "
                              "type", "return a scalar such as i32 or f32")
        self.check_block(self.function.body, new_scope=False)
        if is_scalar_type(return_type) and not always_returns(self.function.body):
            self.report.error(
                f"'@{self.function.name}' returns {return_type} but can reach "
                "its end without a return value",
                f"end every path with Return(value of type {return_type})")

    def check_block(self, stmts, new_scope: bool = True,
                    symbol: Symbol | None = None) -> None:
        """Check ``stmts``, in a new scope holding ``symbol`` if given."""
        if new_scope:
            self.scopes.append({})
        if symbol is not None:
            self.declare(symbol)
        for stmt in stmts:
            self.check_stmt(stmt)
        if new_scope:
            self.scopes.pop()

    def check_stmt(self, stmt) -> None:
        method = getattr(self, f"_check_{type(stmt).__name__}", None)
        if not isinstance(stmt, Stmt) or method is None:
            self.report.error(f"{stmt!r} is not a kernel statement",
                              "build statements from hpvm.ir.kernel classes")
            return
        start = len(self.report.diagnostics)
        method(stmt)
        self._mention(stmt, start)

    def _mention(self, stmt, start: int) -> None:
        """Quote ``stmt`` in the diagnostics it raised from index ``start``
        on; those of nested statements already quote theirs."""
        diagnostics = self.report.diagnostics
        text = None
        for index in range(start, len(diagnostics)):
            if index in self.mentioned:
                continue
            self.mentioned.add(index)
            text = text or statement_text(stmt)
            if text:
                diagnostic = diagnostics[index]
                diagnostics[index] = replace(
                    diagnostic, message=f"{diagnostic.message} in `{text}`")

    def _check_Let(self, stmt) -> None:
        if not is_scalar_type(stmt.type):
            self.report.error(f"variable '{stmt.name}' has invalid type "
                              f"{stmt.type!r}", "declare scalars with a "
                              "ScalarType; use ArrayDecl for arrays")
        elif stmt.value is not None:
            self.expect(stmt.value, stmt.type, f"initial value of '{stmt.name}'")
        self.declare(Symbol(stmt.name, "let", stmt.type))

    def _check_Assign(self, stmt) -> None:
        symbol = self.lookup(stmt.name)
        if symbol is None:
            self.scalar_type(stmt.value, f"value assigned to '{stmt.name}'")
            self.report.error(
                f"assignment to undeclared variable '{stmt.name}'",
                f"declare it first: Let('{stmt.name}', type, value) in this "
                "block or an enclosing one")
        elif symbol.kind in READ_ONLY_KINDS:
            self.report.error(
                f"cannot assign to '{stmt.name}': it is "
                f"{READ_ONLY_KINDS[symbol.kind]} (read-only)",
                "copy it into a Let variable and assign to that")
        elif symbol.is_buffer:
            self.report.error(f"cannot assign to buffer '{stmt.name}'",
                              f"write an element: Store('{stmt.name}', "
                              "indices, value)")
        else:
            self.expect(stmt.value, symbol.type,
                        f"value assigned to '{stmt.name}'")

    def _check_Store(self, stmt) -> None:
        symbol = self.writable_buffer(stmt.buffer, stmt.indices, "store")
        if symbol is None:
            self.scalar_type(stmt.value, f"value stored into '{stmt.buffer}'")
            return
        self.expect(stmt.value, symbol.type.element.storage_type,
                    f"value stored into '{stmt.buffer}'")

    def writable_buffer(self, name: str, indices, what: str) -> Symbol | None:
        """Like buffer_access, and report a write into an ``in`` buffer."""
        symbol = self.buffer_access(name, indices, what)
        if symbol is not None and symbol.kind == "buffer" and symbol.direction == "in":
            self.report.error(
                f"parameter '{name}' is read-only (direction in)",
                "declare it out or inout", port=name)
        return symbol

    def _check_For(self, stmt) -> None:
        for part in ("start", "stop"):
            t = self.scalar_type(getattr(stmt, part), f"loop {part}")
            if t is not None and not t.is_int:
                self.report.error(
                    f"loop '{stmt.var}': {part} has type {t}; it must be an "
                    "integer", f"cast it: Cast({part}, i64)")
        if not _is_int(stmt.step) or stmt.step == 0:
            self.report.error(
                f"loop '{stmt.var}': step {stmt.step!r} must be a non-zero "
                "integer constant", "use a step such as 1 or -1")
        if stmt.unroll is not None and (not _is_int(stmt.unroll) or stmt.unroll < 1):
            self.report.error(
                f"loop '{stmt.var}': unroll factor {stmt.unroll!r} must be an "
                "integer >= 1", "use None (back end decides), 1 (never) or "
                "a factor > 1")
        if stmt.trip_count is not None and (
                not _is_int(stmt.trip_count) or stmt.trip_count < 0):
            self.report.error(
                f"loop '{stmt.var}': trip count hint {stmt.trip_count!r} must "
                "be a non-negative integer", "remove the hint or fix it")
        self.check_block(stmt.body, symbol=Symbol(stmt.var, "loop", I64))
        for reduction in stmt.reduce:
            self._check_reduction(stmt, reduction)

    def _check_reduction(self, loop, reduction) -> None:
        where = f"loop '{loop.var}' reducing into '{reduction.var}'"
        symbol = self.lookup(reduction.var)
        if symbol is None or symbol.kind != "let" or not is_scalar_type(symbol.type):
            self.report.error(f"{where}: '{reduction.var}' is not a scalar variable declared "
                              "before the loop", "declare it with Let before the loop")
            return
        problem = op_problem(reduction, symbol.type)
        if problem is None and reduction.op.startswith("@"):
            problem = self._helper_op_problem(reduction, symbol.type)
        if problem is not None:
            self.report.error(f"{where}: {problem}", "name a reduction op the variable's type "
                              "allows, or a helper (T, T) -> T with its identity")
            return
        problem = promise_problem(loop, reduction)
        if problem is not None:
            self.report.error(f"{where}: {problem}",
                              f"update it only by '{reduction.var} = {reduction.op}"
                              f"({reduction.var}, value)', or drop the reduce attribute")

    def _helper_op_problem(self, reduction, type) -> str | None:
        helper = self.module.functions.get(reduction.op[1:])
        if helper is None:
            return f"the module has no helper '{reduction.op}'"
        if (helper.return_type != type or len(helper.params) != 2
                or any(p.type != type for p in helper.params)):
            return f"'{reduction.op}' must take two {type} values and return a {type}"
        if reduction.identity.type != type:
            return f"the identity {reduction.identity.value!r} must be a {type}"
        return None

    def _check_While(self, stmt) -> None:
        self.expect_bool(stmt.cond, "while condition")
        self.check_block(stmt.body)

    def _check_If(self, stmt) -> None:
        self.expect_bool(stmt.cond, "if condition")
        self.check_block(stmt.then_body)
        self.check_block(stmt.else_body)

    def _check_ArrayDecl(self, stmt) -> None:
        if not is_scalar_type(stmt.element):
            self.report.error(f"array '{stmt.name}' has invalid element type "
                              f"{stmt.element!r}", "use a scalar type")
        shape = stmt.shape if isinstance(stmt.shape, tuple) else ()
        if not shape or any(not _is_int(d) or d <= 0 for d in shape):
            self.report.error(
                f"array '{stmt.name}' has shape {stmt.shape!r}; every "
                "dimension must be a positive integer constant",
                "give a non-empty tuple of positive ints")
        if stmt.space not in ARRAY_SPACES:
            self.report.error(f"array '{stmt.name}' has unknown memory space "
                              f"'{stmt.space}'", f"use {quoted(ARRAY_SPACES)}")
        self.declare(Symbol(stmt.name, "array", BufferType(stmt.element, shape)))

    def _check_AtomicUpdate(self, stmt) -> None:
        if stmt.op not in ATOMIC_OPS:
            self.report.error(f"unknown atomic operation '{stmt.op}'",
                              f"use one of {quoted(ATOMIC_OPS)}")
        symbol = self.writable_buffer(stmt.buffer, stmt.indices, "atomic update")
        element = symbol.type.element if symbol is not None else None
        if element is not None and element.is_bool:
            self.report.error(f"atomic '{stmt.op}' on bool buffer "
                              f"'{stmt.buffer}'", "use an integer buffer")
        what = f"value of atomic '{stmt.op}' on '{stmt.buffer}'"
        if element is None:
            self.scalar_type(stmt.value, what)
        else:
            self.expect(stmt.value, element, what)
        if stmt.result is not None:
            self._check_atomic_result(stmt.result, element)

    def _check_atomic_result(self, name: str, element) -> None:
        symbol = self.lookup(name)
        if symbol is None or symbol.kind != "let":
            self.report.error(
                f"atomic result '{name}' is not a declared variable",
                f"declare it first: Let('{name}', type, None)")
        elif element is not None and symbol.type != element:
            self.report.error(
                f"atomic result '{name}' is {symbol.type} but the buffer "
                f"holds {element}", f"declare '{name}' as {element}")

    def _check_Barrier(self, stmt) -> None:
        pass

    def _check_Return(self, stmt) -> None:
        expected = self.function.return_type
        if expected is None and stmt.value is not None:
            self.scalar_type(stmt.value, "return value")
            self.report.error(
                f"'@{self.function.name}' has no return type but returns a "
                "value", "remove the value, or give the helper a return type")
        elif expected is not None and stmt.value is None:
            self.report.error(
                f"'@{self.function.name}' returns {expected} but a Return has "
                "no value", f"return a value of type {expected}")
        elif stmt.value is not None and is_scalar_type(expected):
            self.expect(stmt.value, expected, "return value")

    def _check_ExprStmt(self, stmt) -> None:
        if isinstance(stmt.call, Call):
            self.call_type(stmt.call)
        else:
            self.report.error(f"an expression statement must be a call, got "
                              f"{stmt.call!r}", "use ExprStmt(Call(...))")


def statement_text(stmt, limit: int = 80) -> str | None:
    """``stmt`` as text for messages (a loop or if without its body);
    None if it cannot be printed."""
    bodies = {name: () for name in ("body", "then_body", "else_body")
              if hasattr(stmt, name)}
    try:
        text = print_stmts((replace(stmt, **bodies),)).splitlines()[0]
    except Exception:  # malformed IR, or no text module: the message stands
        return None
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def always_returns(stmts) -> bool:
    """True if every path through ``stmts`` ends at a Return."""
    for stmt in stmts:
        if isinstance(stmt, Return):
            return True
        if isinstance(stmt, If) and always_returns(stmt.then_body) \
                and always_returns(stmt.else_body):
            return True
    return False


def _walk_body(function: KernelFunction):
    """walk() over the body, skipping malformed entries (reported by the
    statement checks)."""
    return walk(tuple(s for s in function.body if isinstance(s, (Stmt, Expr))))


def call_graph(module) -> list[tuple[str, str]]:
    """The calls of the module's functions: (caller, callee) pairs."""
    return [(name, item.function) for name, function in module.functions.items()
            if isinstance(function, KernelFunction)   # else reported by check_functions
            for item in _walk_body(function) if isinstance(item, Call)]


def check_recursion(module, report: Report) -> None:
    """Kernels cannot recurse: report every cycle of the call graph."""
    for first, cycle in cycles(module.functions, call_graph(module)):
        path = " -> ".join(f"'@{n}'" for n in cycle + [cycle[0]])
        report.error(f"recursive calls {path}; HPVM kernels cannot recurse",
                     "rewrite the recursion as a loop", function=first)


def instance_dims_used(module, name: str) -> int:
    """1 + the highest replication dim ``name`` (or a helper it calls)
    reads through InstanceId / InstanceCount; 0 if none."""
    seen: set[str] = set()
    pending, highest = [name], -1
    while pending:
        function = module.functions.get(pending.pop())
        if not isinstance(function, KernelFunction) or function.name in seen:
            continue
        seen.add(function.name)
        for item in _walk_body(function):
            if isinstance(item, (InstanceId, InstanceCount)) and _is_int(item.dim):
                highest = max(highest, item.dim)
            elif isinstance(item, Call):
                pending.append(item.function)
    return highest + 1


def check_functions(module, report: Report, users: dict) -> None:
    """Type-check every function of ``module``; ``users[name]`` lists the
    (graph, node) pairs running function ``name``."""
    for key, function in module.functions.items():
        where = {"function": getattr(function, "name", key)}
        if users.get(key):
            where["graph"], where["node"] = users[key][0]
        function_report = report.at(**where)
        if not isinstance(function, KernelFunction):
            function_report.error(f"'{key}' is not a KernelFunction",
                                  "store KernelFunction objects in functions")
            continue
        if function.name != key:
            function_report.error(
                f"function '@{function.name}' is stored under the name '{key}'",
                "use the function's own name as its key in module.functions")
        KernelChecker(module, function, function_report).check()
    check_recursion(module, report)
