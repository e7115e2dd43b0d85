"""Lowering of kernel IR expressions to LLVM values."""
from __future__ import annotations

from llvmlite import ir

from hpvm.ir.kernel import (
    Binary, Bitcast, Call, Cast, Compare, Const, Expr, InstanceCount, InstanceId,
    Intrinsic, Load, Select, Unary, Var,
)
from hpvm.ir.nan_free import is_nan_free
from hpvm.ir.types import I64 as I64_SCALAR
from hpvm.ir.types import BufferType, ScalarType
from hpvm.ir.visit import walk

from . import arithmetic
from .abi import dim_count
from .intrinsics import math_intrinsic
from .llvm_types import I1, I64, constant, load_element, register_type
from .state import LoweringState, Variable


class ExpressionLowering(LoweringState):
    """``self.value(expr)`` emits the code of ``expr`` at the builder."""

    def value(self, expr: Expr) -> ir.Value:
        method = getattr(self, "_" + type(expr).__name__.lower(), None)
        if method is None:
            raise self.fail(f"expressions of kind {type(expr).__name__} are not supported")
        return method(expr)

    def value_as(self, expr: Expr, type: ScalarType) -> ir.Value:
        """``expr`` converted (C rules) to ``type``."""
        return arithmetic.convert(self.builder, self.value(expr), expr.type, type)

    def index(self, expr: Expr) -> ir.Value:
        """An index expression as i64."""
        return self.value_as(expr, I64_SCALAR)

    def _const(self, expr: Const) -> ir.Value:
        return constant(expr.value, expr.type)

    def _var(self, expr: Var) -> ir.Value:
        if self.vector_loop is not None:
            value = self.lane_variable(expr.name, expr.type)
            if value is not None:
                return value
        found = self.lookup(expr.name)
        if isinstance(found, Variable):
            value = self.builder.load(found.pointer, typ=register_type(found.type))
            return arithmetic.convert(self.builder, value, found.type, expr.type)
        if expr.name in self.symbols:
            return self.symbols[expr.name]
        raise self.fail(f"'{expr.name}' is not a variable, scalar parameter or shape symbol here",
                        "declare it with a Let, or pass it as a parameter")

    def _unary(self, expr: Unary) -> ir.Value:
        return arithmetic.unary(self.builder, expr.op, self.value(expr.operand), expr.type)

    def _binary(self, expr: Binary) -> ir.Value:
        if expr.op in ("land", "lor"):
            return self._logical(expr)
        lhs = self.value(expr.lhs)
        rhs = self.value_as(expr.rhs, expr.type) if expr.op in ("shl", "shr") else self.value(expr.rhs)
        return arithmetic.binary(self.builder, expr.op, lhs, rhs, expr.type)

    def _logical(self, expr: Binary) -> ir.Value:
        """``land``/``lor``: the right operand is evaluated only when the
        left does not decide; without loads or calls it is computed
        unconditionally (no side effects can be seen)."""
        lhs = self.value(expr.lhs)
        is_and = expr.op == "land"
        if not any(isinstance(node, (Load, Call)) for node in walk(expr.rhs)):
            rhs = self.value(expr.rhs)
            return self.builder.and_(lhs, rhs) if is_and else self.builder.or_(lhs, rhs)
        left_block = self.builder.block
        right_block, merge = self.new_block("logic.rhs"), self.new_block("logic.end")
        if is_and:
            self.builder.cbranch(lhs, right_block, merge)
        else:
            self.builder.cbranch(lhs, merge, right_block)
        self.continue_in(right_block)
        rhs = self.value(expr.rhs)
        right_end = self.builder.block
        self.builder.branch(merge)
        self.continue_in(merge)
        result = self.builder.phi(I1)
        result.add_incoming(ir.Constant(I1, 0 if is_and else 1), left_block)
        result.add_incoming(rhs, right_end)
        return result

    def _compare(self, expr: Compare) -> ir.Value:
        lhs = self.value(expr.lhs)
        rhs = self.value_as(expr.rhs, expr.lhs.type)
        return arithmetic.compare(self.builder, expr.op, lhs, rhs, expr.lhs.type)

    def _select(self, expr: Select) -> ir.Value:
        condition = self.value(expr.cond)
        return self.builder.select(condition, self.value(expr.if_true),
                                   self.value_as(expr.if_false, expr.type))

    def _cast(self, expr: Cast) -> ir.Value:
        return self.value_as(expr.value, expr.type)

    def _bitcast(self, expr: Bitcast) -> ir.Value:
        return self.builder.bitcast(self.value(expr.value), register_type(expr.type))

    def _load(self, expr: Load) -> ir.Value:
        view = self.buffer(expr.buffer)
        pointer = self.element_pointer(view, [self.index(i) for i in expr.indices])
        metadata = self.access_metadata(view.parallel)
        return load_element(self.builder, pointer, view.element, metadata)

    def _intrinsic(self, expr: Intrinsic) -> ir.Value:
        args = [self.value_as(a, expr.type) for a in expr.args]
        return math_intrinsic(self.builder, expr.name, args, expr.type, self.numbers(expr))

    def numbers(self, expr: Intrinsic) -> tuple[bool, ...]:
        """Of each argument of ``expr``, whether it is never NaN."""
        return tuple(is_nan_free(a, self.nan_free) for a in expr.args)

    def _instanceid(self, expr: InstanceId) -> ir.Value:
        return self._replication_value(self.instance_ids, expr.dim, "InstanceId")

    def _instancecount(self, expr: InstanceCount) -> ir.Value:
        return self._replication_value(self.instance_counts, expr.dim, "InstanceCount")

    def _replication_value(self, values: list, dim: int, what: str) -> ir.Value:
        if not 0 <= dim < len(values):
            raise self.fail(f"{what}({dim}) in a node replicated in {len(values)} dimension(s)",
                            f"use a dimension below {len(values)} or replicate the node more")
        return values[dim]

    def _call(self, expr: Call) -> ir.Value:
        """A helper call: buffers pass as pointer + dims, scalars by value,
        then the caller's instance ids and counts (hidden arguments)."""
        helper = self.context.helper(expr.function)
        arguments: list[ir.Value] = []
        for parameter, arg in zip(helper.kernel.params, expr.args):
            if isinstance(parameter.type, BufferType):
                arguments.extend(self._buffer_argument(arg, parameter.type))
            else:
                arguments.append(self.value_as(arg, parameter.type))
        arguments.extend(self.instance_ids + [I64_ZERO] * (3 - len(self.instance_ids)))
        arguments.extend(self.instance_counts + [I64_ONE] * (3 - len(self.instance_counts)))
        result = self.builder.call(helper.function, arguments)
        for kind, node in self.access_metadata(parallel=True).items():
            result.set_metadata(kind, node)
        return result

    def _buffer_argument(self, arg: Expr, type: BufferType) -> list[ir.Value]:
        if not isinstance(arg, Var):
            raise self.fail("a buffer argument of a call must name a buffer",
                            "pass the buffer parameter or array by name")
        view = self.buffer(arg.name)
        rank = dim_count(type)
        if rank == len(view.dims):
            return [view.pointer, *view.dims]
        if rank == 1:
            return [view.pointer, view.element_count(self.builder)]
        raise self.fail(f"buffer '{arg.name}' of rank {len(view.dims)} passed as a rank-{rank} buffer",
                        "pass a buffer of the rank the helper declares")


I64_ZERO = ir.Constant(I64, 0)
I64_ONE = ir.Constant(I64, 1)
