"""Where a kernel's local variables are declared.

Python variables live in the whole function; IR ``let`` is block scoped.  A
variable is declared where it is first assigned when every later use is in
that block (or blocks nested in it); otherwise it is *hoisted*: declared
without a value at the top of the function."""
from __future__ import annotations

import ast


def hoisted_names(body: list[ast.stmt]) -> set[str]:
    """Names assigned in ``body`` that must be declared at the top."""
    first: dict[str, tuple] = {}
    hoisted: set[str] = set()

    def use(name: str, path: tuple, is_write: bool) -> None:
        if name not in first:
            first[name] = path
            if not is_write:
                hoisted.add(name)
        elif path[:len(first[name])] != first[name]:
            hoisted.add(name)

    def expr(node, path) -> None:
        if node is None:
            return
        for item in ast.walk(node):
            if isinstance(item, ast.Name):
                use(item.id, path, False)

    def target(node, path) -> None:
        if isinstance(node, ast.Name):
            use(node.id, path, True)
        else:
            expr(node, path)

    def block(stmts, path) -> None:
        for index, stmt in enumerate(stmts):
            here = path
            if isinstance(stmt, ast.Assign):
                expr(stmt.value, here)
                for t in stmt.targets:
                    target(t, here)
            elif isinstance(stmt, ast.AugAssign):
                expr(stmt.target, here)
                target(stmt.target, here)
                expr(stmt.value, here)
            elif isinstance(stmt, ast.AnnAssign):
                expr(stmt.value, here)
                target(stmt.target, here)
            elif isinstance(stmt, (ast.If, ast.While)):
                expr(stmt.test, here)
                block(stmt.body, here + ((index, "body"),))
                block(stmt.orelse, here + ((index, "else"),))
            elif isinstance(stmt, ast.For):
                expr(stmt.iter, here)
                block(stmt.body, here + ((index, "body"),))
            else:
                for child in ast.iter_child_nodes(stmt):
                    expr(child, here)

    block(body, ())
    return hoisted
