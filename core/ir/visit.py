"""Generic traversal and rewriting of kernel IR (expressions and statements).

Every Expr / Stmt is a frozen dataclass; its children are the fields holding
an Expr, a Stmt, or a tuple of them.  ``walk`` visits a tree pre-order and
``rewrite`` rebuilds it bottom-up through a callback; ``map_blocks``
rebuilds a statement's nested blocks (a loop's body, an if's branches).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from .kernel import Expr, Stmt

IRNode = Expr | Stmt


def _is_ir(value) -> bool:
    return isinstance(value, (Expr, Stmt))


def children(node: IRNode) -> Iterator[IRNode]:
    """The direct Expr / Stmt children of ``node``, in field order."""
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if _is_ir(value):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if _is_ir(v))


def walk(root: IRNode | tuple) -> Iterator[IRNode]:
    """Every Expr and Stmt under ``root`` (a node or a tuple of them),
    parents before children."""
    stack = list(reversed(root)) if isinstance(root, tuple) else [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(children(node))))


BLOCKS = ("body", "then_body", "else_body")
"""The fields of a statement that hold nested statement blocks."""


def map_blocks(stmt: Stmt, fn: Callable[[tuple[Stmt, ...]], tuple[Stmt, ...]]) -> Stmt:
    """``stmt`` with ``fn`` applied to each block nested directly in it
    (``stmt`` itself when it has none): passes that transform statement
    lists recurse through loops and branches with it."""
    changes = {name: fn(getattr(stmt, name)) for name in BLOCKS if hasattr(stmt, name)}
    return dataclasses.replace(stmt, **changes) if changes else stmt


def rewrite(root, fn: Callable[[IRNode], IRNode | tuple | None]):
    """Rebuild ``root`` bottom-up: every node, after its children were
    rewritten, is passed to ``fn``; a non-None result replaces it.  A Stmt
    inside a statement list may be replaced by a tuple of statements (spliced
    in) or by ``()`` (deleted).  ``root`` may be a node or a tuple."""
    if isinstance(root, tuple):
        out = []
        for item in root:
            new = rewrite(item, fn) if _is_ir(item) else item
            if isinstance(new, tuple):
                out.extend(new)
            else:
                out.append(new)
        return tuple(out)
    changes = {}
    for f in dataclasses.fields(root):
        value = getattr(root, f.name)
        if _is_ir(value):
            new = rewrite(value, fn)
        elif isinstance(value, tuple) and any(_is_ir(v) for v in value):
            new = rewrite(value, fn)
        else:
            continue
        if new is not value:
            changes[f.name] = new
    node = dataclasses.replace(root, **changes) if changes else root
    result = fn(node)
    return node if result is None else result


def replace_expressions(root, table: dict):
    """``root`` (a node or a tuple) with each expression that is a key of
    ``table`` replaced by its value, top-down: the largest match wins, and
    nothing inside a replaced expression is looked at."""
    if isinstance(root, tuple):
        return tuple(replace_expressions(item, table) if _is_ir(item) else item
                     for item in root)
    if isinstance(root, Expr) and root in table:
        return table[root]
    changes = {}
    for f in dataclasses.fields(root):
        value = getattr(root, f.name)
        if _is_ir(value) or isinstance(value, tuple) and any(_is_ir(v) for v in value):
            new = replace_expressions(value, table)
            if new is not value:
                changes[f.name] = new
    return dataclasses.replace(root, **changes) if changes else root
