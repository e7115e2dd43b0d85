"""What a kernel stores in one buffer, as expressions of its instance ids:
the producer's side of ``stencil-fusion``.

The kernel's body is evaluated symbolically, statement by statement: a
local's value is the expression it was given, with the values of the
locals it reads put in; an ``if`` evaluates both branches and merges what
they assign or store as ``select(cond, then, else)`` (if-conversion); a
store of the buffer records the value of the element it stores.  The
buffer's dimensions are the instance ones (indexed by the instance ids, in
order, at the same positions in every store) and, around them, *channels*
of constant size indexed by constants (``rgb[0, y, x]``, ``rgb[1, y, x]``,
``rgb[2, y, x]``): every channel must be stored in every instance.  Loops,
calls, other stores and early returns are refused, with the reason.
"""
from __future__ import annotations

import dataclasses
import itertools

from ..ir.kernel import (
    Assign, Binary, Call, Cast, Compare, Const, Expr, If, InstanceCount, InstanceId,
    KernelFunction, Let, Load, Select, Store, Var,
)
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .const_fold import fold_expression
from .names import substitute

MAX_NODES = 2000
"""The largest stored value (in expression nodes, variables replaced) a
consumer may recompute."""


@dataclasses.dataclass(frozen=True)
class StoredElements:
    """The value of each element a kernel stores in a buffer: per channel
    (the constant indices of the dimensions that are not instance ones),
    an expression of the instance ids, parameters and shape symbols."""

    values: dict[tuple[int, ...], Expr]
    instance_positions: tuple[int, ...]
    """The index position of instance dimension 0, 1, ... in a store."""

    def renamed(self, fn) -> "StoredElements":
        """Each value passed through ``fn``."""
        return dataclasses.replace(self, values={k: fn(v) for k, v in self.values.items()})

    def at(self, indices: tuple[Expr, ...], counts: tuple[Expr, ...]) -> Expr:
        """The value of the element at ``indices`` (a reader's expressions),
        given the producer's replication ``counts``: a channel index that
        is not a constant selects among the channels."""
        ids = [indices[p] for p in self.instance_positions]

        def placed(value: Expr) -> Expr:
            return rewrite(value, lambda n: ids[n.dim] if isinstance(n, InstanceId)
                           else counts[n.dim] if isinstance(n, InstanceCount) else None)

        channels = [i for p, i in enumerate(indices) if p not in self.instance_positions]
        folded = [fold_expression(c) for c in channels]
        if all(isinstance(c, Const) for c in folded):
            return placed(self.values[tuple(int(c.value) for c in folded)])
        keys = list(self.values)
        value = placed(self.values[keys[-1]])
        for key in reversed(keys[:-1]):
            test = None
            for index, constant in zip(channels, key):
                same = Compare("eq", index, Const(constant, index.type))
                test = same if test is None else Binary("land", test, same)
            value = Select(test, placed(self.values[key]), value)
        return value


def stored_elements(function: KernelFunction, buffer: str,
                    replication: tuple[Expr, ...]) -> StoredElements | str:
    """What ``function`` stores in ``buffer``, or why it cannot be told."""
    evaluation = _Evaluation(function, buffer, len(replication))
    stored: dict[tuple[int, ...], Expr | None] = {}
    problem = evaluation.block(function.body, {}, stored)
    if problem is not None:
        return problem
    carried = next(p.type for p in function.params if p.name == buffer)
    shape = tuple(Const(d, I64) if isinstance(d, int) else Var(d, I64)
                  for d in carried.shape or ())
    positions = evaluation.positions
    if positions is None:
        return evaluation.straight
    if tuple(shape[p] for p in positions) != tuple(replication):
        return f"'{buffer}' does not have the shape of the producer's replication"
    channels = [d for p, d in enumerate(shape) if p not in positions]
    if not all(isinstance(d, Const) for d in channels):
        return (f"'{buffer}' has a dimension that is neither one of the producer's instances "
                "nor of constant size")
    expected = set(itertools.product(*(range(d.value) for d in channels)))
    if set(stored) != expected or any(v is None for v in stored.values()):
        return f"'@{function.name}' does not store every element of '{buffer}' in every instance"
    terms = itertools.chain.from_iterable(walk(v) for v in stored.values())
    if sum(1 for _ in itertools.islice(terms, MAX_NODES + 1)) > MAX_NODES:
        return (f"the value '@{function.name}' stores has more than {MAX_NODES} terms once its "
                "variables are replaced: too large to recompute")
    values = {key: v if v.type == carried.element else Cast(v, carried.element)
              for key, v in sorted(stored.items())}
    return StoredElements(values, positions)


class _Evaluation:
    def __init__(self, function: KernelFunction, buffer: str, rank: int):
        self.function = function
        self.buffer = buffer
        self.rank = rank
        self.straight = (f"'@{function.name}' is not code of lets, assignments, ifs and stores "
                         f"of '{buffer}' at its instance's elements")
        self.positions: tuple[int, ...] | None = None
        self.types = {s.name: s.type for s in walk(function.body) if isinstance(s, Let)}

    def block(self, stmts, current: dict[str, Expr | None],
              stored: dict[tuple[int, ...], Expr | None]) -> str | None:
        """Evaluate ``stmts`` into ``current`` (locals) and ``stored``
        (elements); the reason it cannot, or None."""
        for stmt in stmts:
            problem = self.statement(stmt, current, stored)
            if problem is not None:
                return problem
        return None

    def statement(self, stmt, current, stored) -> str | None:
        if isinstance(stmt, (Let, Assign)):
            if isinstance(stmt, Assign) and stmt.name not in current:
                return self.straight
            value = None if stmt.value is None else self.read(stmt.value, current)
            if stmt.value is not None and value is None:
                return self.straight
            declared = self.types.get(stmt.name)
            if value is not None and declared is not None and value.type != declared:
                value = Cast(value, declared)
            current[stmt.name] = value
            return None
        if isinstance(stmt, Store) and stmt.buffer == self.buffer:
            return self.store(stmt, current, stored)
        if isinstance(stmt, If):
            cond = self.read(stmt.cond, current)
            if cond is None:
                return self.straight
            branches = []
            for body in (stmt.then_body, stmt.else_body):
                locals_, elements = dict(current), dict(stored)
                problem = self.block(body, locals_, elements)
                if problem is not None:
                    return problem
                branches.append((locals_, elements))
            (then_locals, then_stored), (else_locals, else_stored) = branches
            for name in current:
                current[name] = _merged(cond, then_locals[name], else_locals[name])
            for key in then_stored.keys() | else_stored.keys():
                stored[key] = _merged(cond, then_stored.get(key), else_stored.get(key))
            return None
        return self.straight

    def store(self, stmt: Store, current, stored) -> str | None:
        indices = [self.read(i, current) for i in stmt.indices]
        if any(i is None for i in indices):
            return self.straight
        ids = [i.dim if isinstance(i, InstanceId) else None for i in indices]
        others = (f"'@{self.function.name}' stores '{self.buffer}' at elements other than "
                  "its instance's")
        if sorted(d for d in ids if d is not None) != list(range(self.rank)):
            return others
        positions = tuple(ids.index(d) for d in range(self.rank))
        if self.positions not in (None, positions):
            return others
        self.positions = positions
        channel = [fold_expression(i) for p, i in enumerate(indices) if p not in positions]
        if not all(isinstance(c, Const) for c in channel):
            return (f"'@{self.function.name}' stores '{self.buffer}' at a channel that is not "
                    "a constant")
        value = self.read(stmt.value, current)
        if value is None:
            return self.straight
        stored[tuple(int(c.value) for c in channel)] = value
        return None

    def read(self, expr: Expr, current) -> Expr | None:
        """``expr`` with the locals' values put in; None where one is not
        known, or the expression calls a helper or reads the buffer."""
        names = {n.name for n in walk(expr) if isinstance(n, Var)}
        if any(name in current and current[name] is None for name in names) or any(
                isinstance(n, Call) or isinstance(n, Load) and n.buffer == self.buffer
                for n in walk(expr)):
            return None
        return substitute(expr, values={k: v for k, v in current.items()
                                        if k in names and v is not None})


def _merged(cond: Expr, then: Expr | None, otherwise: Expr | None) -> Expr | None:
    """What a local or element holds after an ``if``: unknown where a
    branch left it unknown."""
    if then is None or otherwise is None:
        return None
    return then if then == otherwise else Select(cond, then, otherwise)
