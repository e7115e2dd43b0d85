"""Kernel IR: typed scalar code with structured control flow.

A :class:`KernelFunction` is the body of a leaf node (or a helper called from
one).  Every instance of a replicated leaf node runs the whole body; it reads
its position with :class:`InstanceId` and the replication size with
:class:`InstanceCount`.

Expressions are frozen dataclasses.  Arithmetic operators build IR
(``a + 1`` is ``Binary("add", a, Const(1, a.type))``); comparisons use
methods (``a.lt(b)``) because ``==`` stays structural equality.

Semantics every back end must honour:
- integer arithmetic wraps (two's complement); ``div`` and ``rem`` on
  integers truncate toward zero, as in C; shifts take the count modulo the
  bit width; integer division by zero is undefined;
- ``land`` / ``lor`` (on bool) short-circuit: the right operand is not
  evaluated (its loads do not happen) when the left decides the result;
- a buffer indexed with one index is addressed flat (row-major); with as
  many indices as its rank, element-wise;
- a buffer of a narrow storage type (bf16, f8..., i4 ...; types.py) holds
  its storage integers: loads give and stores take ``storage_type``
  values, which tensor_ops/storage.py converts;
- a ``for`` loop runs ``var = start; var < stop; var += step`` (``>`` for a
  negative step); ``step`` is a non-zero integer constant;
- out-of-range loads and stores are errors (the interpreter reports them);
- a float multiply whose product is added or subtracted may be fused with
  that add into one multiply-add, rounded once (OpenCL C's default
  FP_CONTRACT; the cpu target does it too): results may differ from the
  interpreter's, which rounds twice, in the last bits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from .parameter import Parameter
from .types import BOOL, I64, BufferType, ScalarType, Type

UNARY_OPS = ("neg", "not", "bitnot")
ARITHMETIC_OPS = ("add", "sub", "mul", "div", "rem")
BITWISE_OPS = ("and", "or", "xor", "shl", "shr")
LOGICAL_OPS = ("land", "lor")
BINARY_OPS = ARITHMETIC_OPS + BITWISE_OPS + LOGICAL_OPS
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
INTRINSICS = {
    # name: number of arguments
    "sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1,
    "abs": 1, "floor": 1, "ceil": 1, "min": 2, "max": 2, "pow": 2,
}
FLOAT_ONLY_INTRINSICS = ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "pow")
ATOMIC_OPS = ("add", "min", "max")
REDUCE_OPS = ("add", "mul", "min", "max", "and", "or", "xor")
ARRAY_SPACES = ("private", "local")


class Expr:
    """Base of all expressions; ``type`` is the expression's ScalarType."""

    __slots__ = ()
    type: Type

    def _binary(self, op: str, other, reverse: bool = False) -> "Binary":
        other = as_expr(other, self.type)
        return Binary(op, other, self) if reverse else Binary(op, self, other)

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, True)
    def __truediv__(self, o): return self._binary("div", o)
    def __rtruediv__(self, o): return self._binary("div", o, True)
    def __mod__(self, o): return self._binary("rem", o)
    def __rmod__(self, o): return self._binary("rem", o, True)
    def __and__(self, o): return self._binary("and", o)
    def __or__(self, o): return self._binary("or", o)
    def __xor__(self, o): return self._binary("xor", o)
    def __lshift__(self, o): return self._binary("shl", o)
    def __rshift__(self, o): return self._binary("shr", o)
    def __neg__(self): return Unary("neg", self)
    def __invert__(self): return Unary("bitnot", self)

    def _compare(self, op: str, other) -> "Compare":
        return Compare(op, self, as_expr(other, self.type))

    def eq(self, o): return self._compare("eq", o)
    def ne(self, o): return self._compare("ne", o)
    def lt(self, o): return self._compare("lt", o)
    def le(self, o): return self._compare("le", o)
    def gt(self, o): return self._compare("gt", o)
    def ge(self, o): return self._compare("ge", o)

    def cast(self, type: ScalarType) -> "Cast":
        return Cast(self, type)


def as_expr(value, type: Type) -> Expr:
    """``value`` as an expression: Exprs pass through, Python numbers become
    a Const of ``type``."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float)) and isinstance(type, ScalarType):
        return Const(value, type)
    raise TypeError(f"cannot use {value!r} as an expression of type {type}")


@dataclass(frozen=True)
class Const(Expr):
    value: Union[bool, int, float]
    type: ScalarType

    def __post_init__(self):
        object.__setattr__(self, "value", normalize_constant(self.value, self.type))


def normalize_constant(value, type: ScalarType):
    """``value`` converted to the Python value a constant of ``type`` holds:
    bools for bool, wrapped ints for integers, rounded floats for floats."""
    if type.is_bool:
        return bool(value)
    if type.is_int:
        wrapped = int(value) & ((1 << type.bits) - 1)
        if type.is_signed and wrapped >= 1 << (type.bits - 1):
            wrapped -= 1 << type.bits
        return wrapped
    return float(np.array(value, dtype=np.float64).astype(type.numpy_dtype))


@dataclass(frozen=True)
class Var(Expr):
    """A read of a variable, scalar parameter, shape symbol or buffer name."""

    name: str
    type: Type


@dataclass(frozen=True)
class Unary(Expr):
    op: str
    operand: Expr

    @property
    def type(self) -> ScalarType:
        return self.operand.type


@dataclass(frozen=True)
class Binary(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    @property
    def type(self) -> ScalarType:
        return self.lhs.type


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    @property
    def type(self) -> ScalarType:
        return BOOL


@dataclass(frozen=True)
class Select(Expr):
    """``cond ? if_true : if_false``; both arms are evaluated."""

    cond: Expr
    if_true: Expr
    if_false: Expr

    @property
    def type(self) -> ScalarType:
        return self.if_true.type


@dataclass(frozen=True)
class Cast(Expr):
    """Numeric conversion: floats to ints truncate toward zero; to bool is
    ``!= 0``; between integers wraps."""

    value: Expr
    type: ScalarType


@dataclass(frozen=True)
class Bitcast(Expr):
    """The bits of ``value`` read as ``type``, a type of the same width
    (f32 <-> i32/u32, f16 <-> i16/u16, f64 <-> i64/u64)."""

    value: Expr
    type: ScalarType


@dataclass(frozen=True)
class Load(Expr):
    """``buffer[indices]`` of a buffer parameter or a declared array."""

    buffer: str
    indices: tuple[Expr, ...]
    type: ScalarType


@dataclass(frozen=True)
class Intrinsic(Expr):
    """A math intrinsic (see INTRINSICS); the result has the type of args[0]."""

    name: str
    args: tuple[Expr, ...]

    @property
    def type(self) -> ScalarType:
        return self.args[0].type


@dataclass(frozen=True)
class InstanceId(Expr):
    """This instance's index in replication dimension ``dim`` (i64)."""

    dim: int

    @property
    def type(self) -> ScalarType:
        return I64


@dataclass(frozen=True)
class InstanceCount(Expr):
    """The replication size in dimension ``dim`` (i64)."""

    dim: int

    @property
    def type(self) -> ScalarType:
        return I64


@dataclass(frozen=True)
class Call(Expr):
    """A call of a helper KernelFunction; ``type`` is its return type (None
    for a helper that returns nothing, usable only as a statement).  Buffer
    arguments are passed as ``Var`` of a BufferType."""

    function: str
    args: tuple[Expr, ...]
    type: ScalarType | None


class Stmt:
    """Base of all statements."""

    __slots__ = ()


@dataclass(frozen=True)
class Let(Stmt):
    """Declare a mutable local scalar variable (value None: undefined)."""

    name: str
    type: ScalarType
    value: Expr | None


@dataclass(frozen=True)
class Assign(Stmt):
    name: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    buffer: str
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True)
class Reduction:
    """A loop's promise that it folds values into the scalar variable
    ``var`` with ``op``: the body changes ``var`` only by statements
    ``var = op(var, value)`` whose value does not read ``var``, and reads
    ``var`` nowhere else.  Its iterations may then be folded into partial
    results in any order and grouping (core/ir/reduction.py).

    ``op``: one of REDUCE_OPS, or ``@name`` of a helper ``(a, b) -> t``
    that the author promises is associative and commutative, with
    ``identity`` its neutral element (required for helpers; the built-in
    ops know theirs).
    """

    var: str
    op: str
    identity: "Const | None" = None


@dataclass(frozen=True)
class For(Stmt):
    """A counted loop over the i64 variable ``var`` (declared by the loop).

    ``unroll``: requested unroll factor (None: back end decides; 1: never);
    ``ivdep``: iterations carry no memory dependence; ``trip_count``: the
    expected number of iterations, a hint for cost models and pipelining;
    ``reduce``: the variables the loop folds values into (Reduction).
    """

    var: str
    start: Expr
    stop: Expr
    step: int
    body: tuple[Stmt, ...]
    unroll: int | None = None
    ivdep: bool = False
    trip_count: int | None = None
    reduce: tuple[Reduction, ...] = ()


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ArrayDecl(Stmt):
    """A fixed-size array, zero-initialised.  ``private``: one per instance;
    ``local``: one per work group of the node, shared by its instances
    (visible to the others after a Barrier).  ``zeroed`` False: its values
    are undefined until written (the text form's ``= undef``), for arrays
    a kernel writes before it reads them; a back end may then skip the
    zero fill (the cpu's memset of a large private array per instance)."""

    name: str
    element: ScalarType
    shape: tuple[int, ...]
    space: str = "private"
    zeroed: bool = True


@dataclass(frozen=True)
class AtomicUpdate(Stmt):
    """Atomically ``buffer[indices] = op(buffer[indices], value)``; the old
    value goes to the declared variable ``result`` when given."""

    op: str
    buffer: str
    indices: tuple[Expr, ...]
    value: Expr
    result: str | None = None


@dataclass(frozen=True)
class Barrier(Stmt):
    """Every instance of the work group waits here; local arrays written
    before it are visible after it."""


@dataclass(frozen=True)
class Return(Stmt):
    """End this instance (node kernels) or return ``value`` (helpers)."""

    value: Expr | None = None


@dataclass(frozen=True)
class ExprStmt(Stmt):
    """A call evaluated for its effects."""

    call: Call


@dataclass(frozen=True)
class KernelFunction:
    """A kernel: parameters, a body, and a return type for helpers."""

    name: str
    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]
    return_type: ScalarType | None = None

    def param(self, name: str) -> Parameter:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def shape_symbols(self) -> tuple[str, ...]:
        """Shape symbols of the buffer parameters, in order of appearance;
        inside the body each reads as an i64 value."""
        seen: list[str] = []
        for p in self.params:
            if isinstance(p.type, BufferType):
                seen.extend(s for s in p.type.symbols if s not in seen)
        return tuple(seen)
