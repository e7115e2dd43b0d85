"""Loops the kernel asks to unroll in full, emitted as vector code.

A register tile's column loop (``for j in 0 .. 32 [unroll = 32] { v = b[k,
j]; acc[0, j] = acc[0, j] + a0 * v; ... }``, tiled.py, the register_tile
pass) used to reach LLVM as a scalar loop: LLVM unrolled it into 8 x 32
scalar multiply-adds and its SLP vectoriser put them back together as
vectors, about half of the optimisation time of a model's kernels (SLP
and GVN on thousands of scalars).  Here such a loop is emitted with the
lanes of a vector along it: it steps a vector's width at a time, unrolled
in full as asked, and each statement of its body works on ``width``
iterations at once::

    for j in 0 .. 32 step 16 [unroll = 2] {
        v = load <16 x f32> b[k, j]
        acc[0, j .. j+16] = acc[0, j .. j+16] + splat(a0) * v   ...
    }

The accumulators are then vectors from the start (SROA promotes each
slice of ``acc`` to a vector register), and LLVM has little left to do.

A loop qualifies when its body is straight-line (Lets and Stores, no
calls), its trip count is constant and a multiple of two or more lanes,
and running a statement for every lane of a step before the next
statement cannot change what the loop computes: every buffer it writes is
read and written at one index, which moves with the loop, and buffers it
reads are not ones it writes (kernel.py's aliasing promises, BufferView's
``unaliased``).  Accesses one element apart become vector loads and
stores, ones that stay put a scalar broadcast to every lane; any other
access, and any operation without a vector form here (divisions, casts,
transcendental functions), is computed lane by lane with the scalar code
(lane ``l`` reads ``j + l``) and gathered into a vector, so every loop
that qualifies is emitted whatever its body computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from llvmlite import ir

from hpvm.ir.kernel import (
    Binary, Call, Compare, Const, Expr, For, Intrinsic, Let, Load, Select, Stmt, Store, Unary, Var,
)
from hpvm.ir.strides import IndexStrides, loop_variable
from hpvm.ir.types import I64 as I64_SCALAR
from hpvm.ir.types import ScalarType
from hpvm.ir.visit import walk

from . import arithmetic
from .intrinsics import math_intrinsic
from .llvm_types import attach_metadata, byte_size, memory_type, register_type
from .loop_metadata import loop_id
from .state import BufferView

VECTOR_FLOAT_OPS = frozenset({"add", "sub", "mul", "div"})
VECTOR_INT_OPS = frozenset({"add", "sub", "mul", "and", "or", "xor"})
VECTOR_INTRINSICS = frozenset({"min", "max"})
"""Operations emitted on whole vectors; others run lane by lane."""


def vector_width(loop: For, buffer: Callable[[str], object], vector_bits: int) -> int:
    """Lanes to run ``loop`` with (see the module's text), or 0 to emit it
    as a scalar loop.  ``buffer(name)``: the BufferView a name reaches (or
    anything else: not a buffer); ``vector_bits``: the width of the
    machine's vector registers."""
    trip = _full_unroll_trip(loop)
    if trip is None or vector_bits <= 0:
        return 0
    views = _buffers(loop.body, buffer)
    stored = _stored_buffers(loop.body, views)
    if stored is None or not _independent_iterations(loop, stored, views):
        return 0
    bits = max(views[name].element.bits for name in stored)
    width = 1
    while width * 2 <= vector_bits // max(bits, 8) and trip % (width * 2) == 0:
        width *= 2
    return width if width >= 2 else 0


def _full_unroll_trip(loop: For) -> int | None:
    """The trip count of a loop of constant bounds asked to unroll in full."""
    if loop.step != 1 or loop.reduce or loop.ivdep or not isinstance(loop.start, Const) \
            or not isinstance(loop.stop, Const):
        return None
    trip = int(loop.stop.value) - int(loop.start.value)
    return trip if trip >= 2 and loop.unroll == trip else None


def _buffers(body: tuple[Stmt, ...], buffer) -> dict | None:
    """The views of the buffers ``body`` accesses; None where a name is not
    a buffer here."""
    names = {n.buffer for n in walk(body) if isinstance(n, (Load, Store))}
    views = {name: buffer(name) for name in names}
    return views if all(isinstance(v, BufferView) for v in views.values()) else None


def _stored_buffers(body: tuple[Stmt, ...], views: dict | None) -> set[str] | None:
    """The buffers a straight-line body of Lets and Stores writes; None for
    any other body, a call, or a buffer not known here."""
    if views is None or not all(isinstance(s, Let) and s.value is not None or
                                isinstance(s, Store) for s in body):
        return None
    if any(isinstance(node, Call) for node in walk(body)):
        return None
    names = {s.buffer for s in body if isinstance(s, Store)}
    if not all(_vector_element(views[n].element) for n in names):
        return None
    return names


def _independent_iterations(loop: For, stored: set[str], views: dict) -> bool:
    """Whether no element a statement writes is one another iteration
    reads or writes: every access to a written buffer has the same last
    index, moving with the loop (affine, a nonzero step: a different
    element each iteration), and leading indices that stay put; and no
    buffer read can be one that is written."""
    strides = IndexStrides(loop.body)
    unit = loop_variable(loop.var)
    accesses = [n for n in walk(loop.body) if isinstance(n, (Load, Store))]
    for name in stored:
        mine = [a for a in accesses if a.buffer == name]
        if len({a.indices[-1] if a.indices else None for a in mine}) != 1 or \
                not all(strides.element_stride(a.indices, unit) for a in mine):
            return False
    read = {a.buffer for a in accesses if isinstance(a, Load)} - stored
    return all(views[a].unaliased or views[b].unaliased for a in stored for b in read)


def _vector_element(type: ScalarType) -> bool:
    """Whether stores of ``type`` are worth vectors here: f32, f64 and
    integers (f16 computes in f32 lane by lane, and bool is a byte)."""
    return type.is_float and type.bits >= 32 or type.is_int and not type.is_bool


@dataclass
class VectorLoop:
    """The step of a vector loop being emitted: ``first`` is the loop
    variable's value in lane 0; ``values`` the body's Lets so far (vectors
    or, for values the same in every lane, scalars), ``types`` theirs;
    ``lane`` the lane computed in scalar form, if any."""

    var: str
    first: ir.Value
    width: int
    strides: IndexStrides
    values: dict[str, ir.Value] = field(default_factory=dict)
    types: dict[str, ScalarType] = field(default_factory=dict)
    lane: int | None = None
    _varies: dict[int, bool] = field(default_factory=dict)

    def bind(self, name: str, type: ScalarType, value: ir.Value) -> None:
        """A Let of the body: what ``varies`` knew may change with it."""
        self.values[name], self.types[name] = value, type
        self._varies.clear()

    def is_vector(self, name: str) -> bool:
        """Whether a Let of the body holds a value per lane."""
        value = self.values.get(name)
        return value is not None and isinstance(value.type, ir.VectorType)

    def varies(self, expr: Expr) -> bool:
        """Whether ``expr`` may differ between the lanes of a step."""
        known = self._varies.get(id(expr))
        if known is None:
            known = any(isinstance(n, Var) and (n.name == self.var or self.is_vector(n.name))
                        for n in walk(expr))
            self._varies[id(expr)] = known
        return known

    def stride(self, indices: tuple[Expr, ...]) -> int | None:
        return self.strides.element_stride(indices, loop_variable(self.var))


class VectorLoopLowering:
    """The vector forms of statements and expressions, mixed into the
    statement lowering (which supplies ``value``, ``buffer`` ...)."""

    vector_loop: VectorLoop | None = None

    def vector_for(self, stmt: For, width: int) -> None:
        """Emit ``stmt`` stepping ``width`` iterations at a time (see the
        module's text)."""
        trip = int(stmt.stop.value) - int(stmt.start.value)
        metadata = loop_id(self.module, trip // width)

        def body(first: ir.Value, next_iteration: ir.Block) -> None:
            outer, self.vector_loop = self.vector_loop, VectorLoop(
                stmt.var, first, width, IndexStrides(stmt.body))
            try:
                for statement in stmt.body:
                    if isinstance(statement, Let):
                        self._vector_let(statement)
                    else:
                        self._vector_store(statement)
            finally:
                self.vector_loop = outer

        self.counted_loop(stmt.var, self.index(stmt.start), lambda: self.index(stmt.stop),
                          width, body, metadata)

    def _vector_let(self, stmt: Let) -> None:
        loop = self.vector_loop
        value = (self.vector_value(stmt.value, stmt.type) if loop.varies(stmt.value)
                 else self.value_as(stmt.value, stmt.type))
        loop.bind(stmt.name, stmt.type, value)

    def _vector_store(self, stmt: Store) -> None:
        loop = self.vector_loop
        view = self.buffer(stmt.buffer)
        if loop.stride(stmt.indices) != 1:
            for lane in range(loop.width):
                with _Lane(loop, lane):
                    self._store_stmt(stmt)
            return
        value = self.vector_value(stmt.value, view.element)
        # llvmlite checks a typed pointer's element type against the value
        pointer = self.builder.bitcast(self._first_lane_pointer(view, stmt.indices),
                                       value.type.as_pointer())
        store = self.builder.store(value, pointer, align=byte_size(view.element))
        attach_metadata(store, self.access_metadata(view.parallel))

    def _first_lane_pointer(self, view, indices: tuple[Expr, ...]) -> ir.Value:
        """The address lane 0 accesses (the others follow it)."""
        with _Lane(self.vector_loop, 0):
            return self.element_pointer(view, [self.index(i) for i in indices])

    # -- expressions -------------------------------------------------------
    def vector_value(self, expr: Expr, type: ScalarType) -> ir.Value:
        """``expr`` converted to ``type`` as a vector of every lane's value."""
        loop = self.vector_loop
        if not loop.varies(expr):
            return self._splat(self.value_as(expr, type))
        if expr.type == type:
            value = self._vector_expression(expr)
            if value is not None:
                return value
        return self._lanes(expr, type)

    def _vector_expression(self, expr: Expr) -> ir.Value | None:
        """The vector form of a varying ``expr``, or None if it has none here."""
        if expr.type.is_float and expr.type.bits == 16:
            return None
        if isinstance(expr, Var):
            return self._vector_var(expr)
        if isinstance(expr, Load):
            return self._vector_load(expr)
        operands = _vector_operands(expr)
        if operands is None:
            return None
        values = [self.vector_value(e, t) for e, t in operands]
        if isinstance(expr, Binary):
            return arithmetic.binary(self.builder, expr.op, *values, expr.type)
        if isinstance(expr, Unary):
            return self.builder.fneg(values[0])
        if isinstance(expr, Compare):
            return arithmetic.compare(self.builder, expr.op, *values, expr.lhs.type)
        if isinstance(expr, Select):
            return self.builder.select(*values)
        return math_intrinsic(self.builder, expr.name, values, expr.type, self.numbers(expr))

    def _vector_var(self, expr: Var) -> ir.Value | None:
        loop = self.vector_loop
        if loop.is_vector(expr.name):
            return loop.values[expr.name]
        if expr.type != I64_SCALAR:
            return None
        steps = ir.Constant(ir.VectorType(register_type(I64_SCALAR), loop.width),
                            list(range(loop.width)))
        return self.builder.add(self._splat(loop.first), steps)

    def _vector_load(self, expr: Load) -> ir.Value | None:
        loop = self.vector_loop
        view = self.buffer(expr.buffer)
        if view.element.is_bool or loop.stride(expr.indices) != 1:
            return None
        vector = ir.VectorType(memory_type(view.element), loop.width)
        load = self.builder.load(self._first_lane_pointer(view, expr.indices), typ=vector,
                                 align=byte_size(view.element))
        attach_metadata(load, self.access_metadata(view.parallel))
        return load

    def _lanes(self, expr: Expr, type: ScalarType) -> ir.Value:
        """``expr`` computed lane by lane in scalar form, as a vector."""
        loop = self.vector_loop
        vector = ir.Constant(ir.VectorType(register_type(type), loop.width), ir.Undefined)
        for lane in range(loop.width):
            with _Lane(loop, lane):
                scalar = self.value_as(expr, type)
            vector = self.builder.insert_element(vector, scalar, ir.Constant(ir.IntType(32), lane))
        return vector

    def _splat(self, scalar: ir.Value) -> ir.Value:
        width = self.vector_loop.width
        if isinstance(scalar, ir.Constant):
            return ir.Constant(ir.VectorType(scalar.type, width), [scalar.constant] * width)
        index = ir.IntType(32)
        one = self.builder.insert_element(ir.Constant(ir.VectorType(scalar.type, 1), ir.Undefined),
                                          scalar, ir.Constant(index, 0))
        return self.builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(index, width),
                                                                  [0] * width))

    def lane_variable(self, name: str, type: ScalarType) -> ir.Value | None:
        """In a vector loop, the value a Var names for the lane being
        computed in scalar form (the loop variable, a Let of the body);
        None for a name declared outside the loop."""
        loop = self.vector_loop
        if name == loop.var:
            lane = ir.Constant(register_type(I64_SCALAR), loop.lane or 0)
            value = self.builder.add(loop.first, lane)
            return arithmetic.convert(self.builder, value, I64_SCALAR, type)
        if name not in loop.values:
            return None
        value = loop.values[name]
        if loop.is_vector(name):
            value = self.builder.extract_element(value, ir.Constant(ir.IntType(32), loop.lane or 0))
        return arithmetic.convert(self.builder, value, loop.types[name], type)


def _vector_operands(expr: Expr) -> list[tuple[Expr, ScalarType]] | None:
    """The operands of ``expr`` and the types its vector form takes them
    in, or None where it has no vector form here."""
    type = expr.type
    if isinstance(expr, Binary):
        ops = VECTOR_FLOAT_OPS if type.is_float else VECTOR_INT_OPS if type.is_int else ()
        return [(expr.lhs, type), (expr.rhs, type)] if expr.op in ops else None
    if isinstance(expr, Unary):
        return [(expr.operand, type)] if expr.op == "neg" and type.is_float else None
    if isinstance(expr, Compare):
        operand = expr.lhs.type
        if operand.is_bool or operand.is_float and operand.bits == 16:
            return None
        return [(expr.lhs, operand), (expr.rhs, operand)]
    if isinstance(expr, Select):
        return [(expr.cond, expr.cond.type), (expr.if_true, type), (expr.if_false, type)]
    if isinstance(expr, Intrinsic) and expr.name in VECTOR_INTRINSICS and not type.is_bool:
        return [(a, type) for a in expr.args]
    return None


class _Lane:
    """``with _Lane(loop, l):`` expressions read lane ``l``'s values."""

    def __init__(self, loop: VectorLoop, lane: int):
        self.loop, self.lane = loop, lane

    def __enter__(self):
        self.saved, self.loop.lane = self.loop.lane, self.lane

    def __exit__(self, *exc):
        self.loop.lane = self.saved
