"""Names inside kernel functions, fresh names, and renaming/substitution of
variables and buffers (used by passes that move code between scopes)."""
from __future__ import annotations

import dataclasses
from typing import Iterable

from ..ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Expr, For, KernelFunction, Let, Load,
    Stmt, Store, Var,
)
from ..ir.types import BufferType
from ..ir.visit import rewrite, walk

_DECLARING = {Let: "name", For: "var", ArrayDecl: "name"}
_NAMED_FIELDS = {
    Let: ("name",), Assign: ("name",), For: ("var",), ArrayDecl: ("name",),
    AtomicUpdate: ("buffer", "result"), Load: ("buffer",), Store: ("buffer",),
    Var: ("name",),
}


def declared_names(stmts: tuple[Stmt, ...]) -> list[str]:
    """Names declared anywhere in ``stmts`` (Let, For variable, ArrayDecl),
    in order, with repeats (one entry per declaration)."""
    return [getattr(node, _DECLARING[type(node)]) for node in walk(stmts)
            if type(node) in _DECLARING]


def names_in(stmts: tuple[Stmt, ...] | Expr) -> set[str]:
    """Every variable, array and buffer name mentioned in ``stmts``."""
    found = set()
    for node in walk(stmts):
        for field in _NAMED_FIELDS.get(type(node), ()):
            value = getattr(node, field)
            if value is not None:
                found.add(value)
    return found


def function_names(function: KernelFunction) -> set[str]:
    """Every name visible or used in ``function``: parameters, shape
    symbols, locals, loop variables, arrays."""
    return ({p.name for p in function.params} | set(function.shape_symbols)
            | names_in(function.body))


class NameGenerator:
    """Hands out names not in ``used``: ``base`` itself if free, else
    ``base_1``, ``base_2`` ..."""

    def __init__(self, used: Iterable[str] = ()):
        self.used = set(used)

    def fresh(self, base: str) -> str:
        name = unique_name(base, self.used)
        self.used.add(name)
        return name


def unique_name(base: str, taken) -> str:
    """``base``, or ``base_1``, ``base_2`` ... whichever is not in ``taken``."""
    name, count = base, 0
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    return name


def substitute(root, renames: dict[str, str] | None = None,
               values: dict[str, Expr] | None = None):
    """``root`` (a statement tuple or an expression) with names renamed
    (declarations, assignments, reads, buffer accesses) and reads of the
    names in ``values`` replaced by those expressions.  Renaming is
    simultaneous, so ``{a: b, b: a}`` swaps."""
    renames = renames or {}
    values = values or {}

    def visit(node):
        if isinstance(node, Var) and node.name in values:
            return values[node.name]
        fields = _NAMED_FIELDS.get(type(node), ())
        changes = {f: renames[getattr(node, f)] for f in fields
                   if getattr(node, f) in renames}
        if isinstance(node, For) and any(r.var in renames for r in node.reduce):
            changes["reduce"] = tuple(dataclasses.replace(r, var=renames.get(r.var, r.var))
                                      for r in node.reduce)
        return dataclasses.replace(node, **changes) if changes else None

    return rewrite(root, visit)


def fresh_copy(stmts: tuple[Stmt, ...], names: NameGenerator,
               values: dict[str, Expr] | None = None) -> tuple[Stmt, ...]:
    """``stmts`` with every name declared in them renamed fresh by ``names``
    (a copy that may stand beside the original or other copies), and reads
    of the names in ``values`` replaced by those expressions."""
    renames = {name: names.fresh(name) for name in dict.fromkeys(declared_names(stmts))}
    return substitute(stmts, renames, values)


def renamed_shape(type_, shapes: dict):
    """``type_`` with the shape symbols of a buffer type replaced as
    ``shapes`` says (a new name or a constant size); other types as they are."""
    if not isinstance(type_, BufferType) or type_.shape is None:
        return type_
    shape = tuple(shapes.get(d, d) if isinstance(d, str) else d for d in type_.shape)
    return dataclasses.replace(type_, shape=shape)
