"""Expression helpers of the model: which operator of the device profile
an IR expression is, its operands, and the integer value of a size
expression (trip counts)."""
from __future__ import annotations

from hpvm.ir import kernel as k

_FLOAT_OPS = {"add": "fadd", "sub": "fadd", "mul": "fmul", "div": "fdiv", "rem": "fdiv"}
_INT_OPS = {"add": "int_add", "sub": "int_add", "mul": "int_mul", "div": "int_div",
            "rem": "int_div"}


def operator_name(e: k.Expr, model) -> str:
    if isinstance(e, k.Load):
        space = model.spaces.get(e.buffer, "global")
        if space == "global":
            return "load_global"
        return "select" if model._memory_op(e.buffer, "load").latency <= 1 else "load_local"
    if isinstance(e, k.Binary):
        if e.type.is_float:
            name = _FLOAT_OPS.get(e.op, "logic")
            return {"fadd": "dadd", "fmul": "dmul", "fdiv": "ddiv"}.get(name, name) \
                if e.type.bits == 64 else name
        return _INT_OPS.get(e.op, "logic")
    if isinstance(e, k.Intrinsic):
        if e.name in ("min", "max", "abs"):
            return "fminmax" if e.type.is_float else "compare"
        if e.name in ("floor", "ceil"):
            return "convert"
        return "dmath" if e.type.bits == 64 else e.name
    if isinstance(e, (k.Compare, k.Unary)):
        return "compare"
    if isinstance(e, k.Select):
        return "select"
    if isinstance(e, k.Cast):
        return "convert" if (e.type.is_float != e.value.type.is_float) else "select"
    return "select"   # vars, constants, ids: wires (one cycle at most)


def operands(e: k.Expr) -> tuple:
    if isinstance(e, (k.Unary,)):
        return (e.operand,)
    if isinstance(e, (k.Binary, k.Compare)):
        return (e.lhs, e.rhs)
    if isinstance(e, k.Select):
        return (e.cond, e.if_true, e.if_false)
    if isinstance(e, (k.Cast, k.Bitcast)):
        return (e.value,)
    if isinstance(e, k.Load):
        return e.indices
    if isinstance(e, (k.Intrinsic, k.Call)):
        return e.args
    return ()


def unrolled(loop: k.For, env: dict) -> bool:
    """Whether ``loop`` is completely unrolled (its hint covers its trips)."""
    start, stop = evaluate(loop.start, env), evaluate(loop.stop, env)
    if not loop.unroll or start is None or stop is None:
        return False
    return abs(stop - start) <= loop.unroll * abs(loop.step)


def evaluate(e: k.Expr | None, env: dict) -> int | None:
    """The integer value of ``e`` from ``env``, or None when unknown."""
    if isinstance(e, k.Const):
        return int(e.value) if not isinstance(e.value, float) else None
    if isinstance(e, k.Var):
        return env.get(e.name)
    if isinstance(e, k.Cast) and e.type.is_int:
        return evaluate(e.value, env)
    if isinstance(e, k.Binary) and e.type.is_int:
        a, b = evaluate(e.lhs, env), evaluate(e.rhs, env)
        if a is None or b is None:
            return None
        if e.op in ("div", "rem"):
            if b == 0:
                return None
            quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return quotient if e.op == "div" else a - b * quotient
        operations = {"add": a + b, "sub": a - b, "mul": a * b,
                      "shl": a << (b % 64), "shr": a >> (b % 64)}
        return operations.get(e.op)
    if isinstance(e, k.Intrinsic) and e.name in ("min", "max") and e.type.is_int:
        values = [evaluate(a, env) for a in e.args]
        return None if None in values else (min if e.name == "min" else max)(values)
    if isinstance(e, k.Compare):
        a, b = evaluate(e.lhs, env), evaluate(e.rhs, env)
        if a is None or b is None:
            return None
        return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
                    "ge": a >= b}[e.op])
    if isinstance(e, k.Select):
        cond = evaluate(e.cond, env)
        return None if cond is None else evaluate(e.if_true if cond else e.if_false, env)
    if isinstance(e, k.Unary) and e.op == "neg":
        value = evaluate(e.operand, env)
        return None if value is None else -value
    return None
