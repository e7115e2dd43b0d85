"""Headers of sequential loops: ``range(...)`` and ``loop(...)``."""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from ..ir.kernel import Const, Expr
from ..ir.types import I64

LOOP_USAGE = "write: for k in range(n), range(a, b), range(a, b, step), or loop(a, b, trip_count=16)"
HINTS = {"unroll": int, "ivdep": bool, "trip_count": int, "step": int}


@dataclass(frozen=True)
class LoopHeader:
    start: Expr
    stop: Expr
    step: int = 1
    unroll: int | None = None
    ivdep: bool = False
    trip_count: int | None = None


def loop_header(translator, node) -> LoopHeader:
    """The bounds and hints of ``range(...)`` / ``loop(...)`` in ``node``."""
    if not isinstance(node, ast.Call):
        raise translator.error(node, f"cannot loop over '{ast.unparse(node)}'", LOOP_USAGE)
    callee = translator.python_object(node.func)
    is_loop = getattr(callee, "hpvm_marker", None) == "loop"
    if callee is not builtins.range and not is_loop:
        raise translator.error(node, f"cannot loop over '{ast.unparse(node)}'", LOOP_USAGE)
    if not 1 <= len(node.args) <= 3 or (node.keywords and not is_loop):
        raise translator.error(node, "a loop takes 1 to 3 bounds", LOOP_USAGE)
    args = node.args
    start = translator.integer(args[0]) if len(args) >= 2 else Const(0, I64)
    stop = translator.integer(args[1] if len(args) >= 2 else args[0])
    step = _constant(translator, args[2], "step") if len(args) == 3 else 1
    hints = {key.arg: _constant(translator, key.value, key.arg) for key in node.keywords}
    step = hints.pop("step", step)
    if step == 0:
        raise translator.error(node, "a loop step cannot be 0", LOOP_USAGE)
    return LoopHeader(start, stop, step, **hints)


def _constant(translator, node, what: str):
    if what not in HINTS:
        raise translator.error(node, f"unknown loop option '{what}'",
                               "loop(...) accepts unroll=, ivdep=, trip_count=, step=")
    value = translator.scalar(node)
    wanted = HINTS[what]
    if not isinstance(value.expr, Const) or (wanted is int and not value.type.is_int) or (
            wanted is bool and not value.type.is_bool):
        raise translator.error(node, f"loop {what} must be a constant {wanted.__name__}",
                               f"write {what}=4" if wanted is int else f"write {what}=True")
    return value.expr.value
