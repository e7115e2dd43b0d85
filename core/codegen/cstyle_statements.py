"""Kernel-IR statements as C statements: the other half of
:class:`hpvm.codegen.cstyle.CStyleRenderer` (it relies on the renderer's
writer, scopes and hooks).

Every statement's lines carry the statement as their origin, so compiler
messages map back to the IR.  Local arrays are declared once per entry, at
its top (C dialects allow shared arrays only at function scope): a local
``ArrayDecl`` in the body only binds the name.
"""
from __future__ import annotations

import math

from ..errors import TargetError
from ..ir import kernel as k
from ..ir.types import I64
from ..ir.visit import walk
from .cstyle_expressions import BufferBinding, ScalarBinding
from .source import Origin


class CStyleStatements:
    """Statement rendering; see the module docstring."""

    in_entry = False
    """True while rendering a node entry (``return`` ends the instance)."""

    def statements(self, stmts) -> None:
        for stmt in stmts:
            self.statement(stmt)

    def block(self, stmts) -> None:
        """``stmts`` in a nested scope (the caller writes the braces)."""
        self.scopes.append({})
        self.statements(stmts)
        self.scopes.pop()

    def body(self, stmts) -> None:
        """A function body in its own C block, so its declarations may
        shadow parameters and shape symbols as the IR allows."""
        self.writer.open("")
        self.block(stmts)
        self.writer.close()

    def statement(self, stmt: k.Stmt) -> None:
        method = getattr(self, f"_stmt_{type(stmt).__name__}", None)
        if method is None:
            raise TargetError(f"{self.language}: cannot render statement {type(stmt).__name__}")
        previous = self.writer.origin
        self.writer.origin = Origin(self.function.name, stmt)
        method(stmt)
        self.writer.origin = previous

    # ------------------------------------------------------------ scalars
    def _stmt_Let(self, s: k.Let) -> None:
        c_name = self.names(s.name)
        value = "" if s.value is None else " = " + self.converted(s.value, s.type)
        self.writer.line(f"{self.type_name(s.type)} {c_name}{value};")
        self.bind(s.name, ScalarBinding(c_name, s.type))

    def _stmt_Assign(self, s: k.Assign) -> None:
        binding = self.lookup(s.name)
        self.writer.line(f"{binding.c_name} = {self.converted(s.value, binding.type)};")

    def _stmt_Store(self, s: k.Store) -> None:
        binding = self.buffer(s.buffer)
        value = self.converted(s.value, binding.element)
        self.writer.line(self.store_element(binding, self.index(binding, s.indices), value))

    def _stmt_ExprStmt(self, s: k.ExprStmt) -> None:
        self.writer.line(self.expr(s.call) + ";")

    # ------------------------------------------------------- control flow
    def _stmt_For(self, s: k.For) -> None:
        for pragma in self.loop_pragmas(s):
            self.writer.line(pragma)
        start = self.loop_bound(s.start, s)
        var = self.names(s.var)
        self.scopes.append({s.var: ScalarBinding(var, I64)})
        stop = self.loop_bound(s.stop, s)
        compare = "<" if s.step > 0 else ">"
        self.writer.open(f"for ({self.loop_counter_type(s)} {var} = {start}; {var} {compare} "
                         f"{stop}; {var} += {s.step})")
        self.block(s.body)
        self.writer.close()
        self.scopes.pop()

    def loop_counter_type(self, s: k.For) -> str:
        """The C type of ``s``'s counter."""
        return "long"

    def loop_bound(self, bound: k.Expr, s: k.For) -> str:
        """``s``'s start or stop as C text of its counter's type."""
        return self.converted(bound, I64)

    def _stmt_While(self, s: k.While) -> None:
        self.writer.open(f"while {self.condition(s.cond)}")
        self.block(s.body)
        self.writer.close()

    def _stmt_If(self, s: k.If) -> None:
        self.writer.open(f"if {self.branch_condition(s.cond)}")
        self.block(s.then_body)
        if s.else_body:
            self.writer.close("} else {")
            self.writer.depth += 1
            self.block(s.else_body)
        self.writer.close()

    def branch_condition(self, cond: k.Expr) -> str:
        """``(cond)`` of an if statement (a renderer may write lines
        before it, or name the condition instead)."""
        return self.condition(cond)

    def condition(self, cond: k.Expr) -> str:
        """``(cond)`` without doubled parentheses (compilers warn about
        ``if ((a == b))``)."""
        text = self.expr(cond)
        return text if _parenthesised(text) else f"({text})"

    def _stmt_Return(self, s: k.Return) -> None:
        if self.in_entry:
            self.writer.line(self.node_return())
        elif s.value is None or self.function.return_type is None:
            self.writer.line("return;")
        else:
            self.writer.line(f"return {self.converted(s.value, self.function.return_type)};")

    def _stmt_Barrier(self, s: k.Barrier) -> None:
        self.writer.line(self.barrier())

    # ---------------------------------------------------- arrays, atomics
    def _stmt_ArrayDecl(self, s: k.ArrayDecl) -> None:
        c_name = self.names(s.name)
        size = math.prod(s.shape)
        if s.space == "local":
            if not self.in_entry:
                raise TargetError(
                    f"{self.language}: function '@{self.function.name}' declares the local "
                    f"array '{s.name}'; declare local arrays in the node kernel and pass them "
                    "to helpers as arguments")
        else:
            storage = self.storage_type(s.element, "private")
            initial = " = {0}" if s.zeroed else ""
            self.writer.line(f"{storage} {c_name}[{size}]{initial};")
        self.bind(s.name, self.array_binding(s, c_name))

    @staticmethod
    def array_binding(s: k.ArrayDecl, c_name: str) -> BufferBinding:
        return BufferBinding(c_name, s.element, s.space, tuple(str(d) for d in s.shape))

    def local_arrays(self, kernel: k.KernelFunction) -> list[k.ArrayDecl]:
        """The local arrays a node kernel declares (names must be unique:
        they all live at the top of the entry)."""
        arrays: dict[str, k.ArrayDecl] = {}
        for item in walk(kernel.body):
            if isinstance(item, k.ArrayDecl) and item.space == "local":
                if item.name in arrays:
                    raise TargetError(
                        f"{self.language}: function '@{kernel.name}' declares the local array "
                        f"'{item.name}' twice; give each local array its own name")
                arrays[item.name] = item
        return list(arrays.values())

    def declare_local_arrays(self, kernel: k.KernelFunction) -> None:
        """Declare the kernel's local arrays at the entry's top, and zero
        those not declared undefined (``zeroed`` False)."""
        qualifier = self.space_qualifiers["local"]
        arrays = self.local_arrays(kernel)
        for decl in arrays:
            c_name = self.names(decl.name)
            storage = self.storage_type(decl.element, "local")
            prefix = f"{qualifier} " if qualifier else ""
            self.writer.line(f"{prefix}{storage} {c_name}[{math.prod(decl.shape)}];")
            if decl.zeroed:
                self.zero_local_array(c_name, math.prod(decl.shape))
        if any(decl.zeroed for decl in arrays):
            self.synchronize_local_arrays(kernel)

    def zero_local_array(self, c_name: str, size: int) -> None:
        self.writer.line(f"for (long hpvm_i = 0; hpvm_i < {size}; hpvm_i++) {c_name}[hpvm_i] = 0;")

    def synchronize_local_arrays(self, kernel: k.KernelFunction) -> None:
        """After zeroing: nothing in plain C (one thread)."""

    def _stmt_AtomicUpdate(self, s: k.AtomicUpdate) -> None:
        binding = self.buffer(s.buffer)
        value = self.converted(s.value, binding.element)
        index = self.index(binding, s.indices)
        update = self.atomic_update(s.op, binding, index, value, binding.element)
        if s.result is None:
            self.writer.line(f"{update};")
            return
        result = self.lookup(s.result)
        self.writer.line(f"{result.c_name} = "
                         f"{self.cast_text(update, binding.element, result.type)};")


def _parenthesised(text: str) -> bool:
    """True if ``text`` is one parenthesised group: ``(a) + (b)`` is not."""
    if not text.startswith("("):
        return False
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return position == len(text) - 1
    return False
