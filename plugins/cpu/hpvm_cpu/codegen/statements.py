"""Lowering of kernel IR statements: structured control flow to basic
blocks, variables to allocas, arrays to zeroed stack memory."""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from hpvm.ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, ExprStmt, For, If, Let, Return,
    Stmt, Store, While,
)
from hpvm.ir.reduction import folded_value
from hpvm.ir.types import I64 as I64_SCALAR

from . import arithmetic
from .expressions import ExpressionLowering
from .intrinsics import atomic_update
from .llvm_types import I64, byte_size, i64, memory_type, register_type, store_element
from .loop_metadata import access_group, loop_id
from .state import BufferView
from .vector_loops import VectorLoopLowering, vector_width
from .vector_math import call_intrinsic

FLOAT_FOLDS = {"add": "fadd", "mul": "fmul", "max": "llvm.maxnum", "min": "llvm.minnum"}
"""The float reductions folded in a vectorisable form, and their LLVM forms:
an instruction (taking the ``reassoc`` flag) or an intrinsic."""


class StatementLowering(VectorLoopLowering, ExpressionLowering):
    """``self.statements(body)`` emits a statement list in a new scope."""

    def statements(self, body: tuple[Stmt, ...]) -> None:
        self.push_scope()
        for stmt in body:
            method = getattr(self, "_" + type(stmt).__name__.lower() + "_stmt", None)
            if method is None:
                raise self.fail(f"statements of kind {type(stmt).__name__} are not supported")
            method(stmt)
        self.pop_scope()

    def _let_stmt(self, stmt: Let) -> None:
        value = None if stmt.value is None else self.value_as(stmt.value, stmt.type)
        self.declare_variable(stmt.name, stmt.type, value)

    def _assign_stmt(self, stmt: Assign) -> None:
        variable = self.variable(stmt.name)
        value = self._reassociable_fold(stmt, variable)
        if value is None:
            value = self.value_as(stmt.value, variable.type)
        self.builder.store(value, variable.pointer)

    def _reassociable_fold(self, stmt: Assign, variable):
        """A float sum, product, max or min that an enclosing reduction loop
        folds, in a form LLVM's vectoriser folds per lane: the loop promised
        any order (For.reduce), so sums and products carry the ``reassoc``
        flag, and max and min are ``llvm.maxnum``/``minnum`` (the kernel
        IR's max: the other operand where one is NaN).  None for any other
        assignment."""
        reduction = next((r for r in self.reductions if r.var == stmt.name), None)
        type = variable.type
        if reduction is None or reduction.op not in FLOAT_FOLDS or not type.is_float \
                or type.bits == 16:
            return None
        item = folded_value(stmt, reduction)
        if item is None:
            return None
        folded = self.builder.load(variable.pointer, typ=register_type(type))
        value, form = self.value_as(item, type), FLOAT_FOLDS[reduction.op]
        if form.startswith("llvm."):
            return call_intrinsic(self.builder, form, folded.type, folded, value)
        return getattr(self.builder, form)(folded, value, flags=("reassoc",))

    def _store_stmt(self, stmt: Store) -> None:
        view = self.buffer(stmt.buffer)
        pointer = self.element_pointer(view, [self.index(i) for i in stmt.indices])
        value = self.value_as(stmt.value, view.element)
        metadata = self.access_metadata(view.parallel)
        store_element(self.builder, value, pointer, view.element, metadata)

    def _exprstmt_stmt(self, stmt: ExprStmt) -> None:
        self.value(stmt.call)

    def _atomicupdate_stmt(self, stmt: AtomicUpdate) -> None:
        view = self.buffer(stmt.buffer)
        pointer = self.element_pointer(view, [self.index(i) for i in stmt.indices])
        value = self.value_as(stmt.value, view.element)
        old = atomic_update(self.builder, stmt.op, pointer, value, view.element)
        if stmt.result is not None:
            variable = self.variable(stmt.result)
            self.builder.store(arithmetic.convert(self.builder, old, view.element, variable.type), variable.pointer)

    def _arraydecl_stmt(self, stmt: ArrayDecl) -> None:
        """Private arrays are zeroed each time the declaration runs; local
        arrays once per call (the work group is the whole chunk); arrays
        left undefined (``zeroed`` False) never."""
        count = math.prod(stmt.shape)
        pointer = self.alloca(memory_type(stmt.element), stmt.name, count)
        size = i64(count * byte_size(stmt.element))
        builder = self.entry_builder if stmt.space == "local" else self.builder
        if stmt.zeroed:
            self.fill_zero(builder, pointer, size)
        self.bind(stmt.name, BufferView(stmt.element, pointer, tuple(i64(e) for e in stmt.shape),
                                        unaliased=True))

    def _barrier_stmt(self, stmt: Barrier) -> None:
        raise self.fail("barriers are not supported by the cpu target yet",
                        "run this node on a target with work-group barriers (gpu_opencl), "
                        "or rewrite it without local-memory cooperation")

    def _return_stmt(self, stmt: Return) -> None:
        if self.return_block is not None:
            self.builder.branch(self.return_block)
        elif self.return_type is None:
            self.builder.ret_void()
        else:
            self.builder.ret(self.value_as(stmt.value, self.return_type))
        # Code after a return is unreachable; it still needs a block.
        self.continue_in(self.new_block("after.return"))

    def _if_stmt(self, stmt: If) -> None:
        condition = self.value(stmt.cond)
        then_block, else_block, merge = (self.new_block(n) for n in ("if.then", "if.else", "if.end"))
        self.builder.cbranch(condition, then_block, else_block)
        for block, body in ((then_block, stmt.then_body), (else_block, stmt.else_body)):
            self.continue_in(block)
            self.statements(body)
            self.jump(merge)
        self.continue_in(merge)

    def _while_stmt(self, stmt: While) -> None:
        header, body, exit_block = (self.new_block(n) for n in ("while.cond", "while.body", "while.end"))
        self.builder.branch(header)
        self.continue_in(header)
        self.builder.cbranch(self.value(stmt.cond), body, exit_block)
        self.continue_in(body)
        self.statements(stmt.body)
        self.jump(header)
        self.continue_in(exit_block)

    def _for_stmt(self, stmt: For) -> None:
        width = vector_width(stmt, self.lookup, self.context.vector_bits)
        if width:
            self.vector_for(stmt, width)
            return
        group = access_group(self.module) if stmt.ivdep else None
        metadata = loop_id(self.module, stmt.unroll, group,
                           vectorize=True if stmt.ivdep else None)

        def body(index: ir.Value, next_iteration: ir.Block) -> None:
            self.push_scope()
            self.declare_variable(stmt.var, I64_SCALAR, index)
            self.statements(stmt.body)
            self.pop_scope()

        if group is not None:
            self.loop_groups.append(group)
        self.reductions.extend(stmt.reduce)
        self.counted_loop(stmt.var, self.index(stmt.start), lambda: self.index(stmt.stop),
                          stmt.step, body, metadata)
        del self.reductions[len(self.reductions) - len(stmt.reduce):]
        if group is not None:
            self.loop_groups.pop()

    def counted_loop(self, name: str, start: ir.Value, stop: Callable[[], ir.Value], step: int,
                     body: Callable[[ir.Value, ir.Block], None], metadata=None) -> None:
        """``for (i = start; i < stop(); i += step)`` (``>`` when step < 0);
        ``stop()`` emits the bound, evaluated before every iteration as in C
        (LLVM hoists it when invariant); ``body(i, latch)`` emits the body,
        and may branch to ``latch`` to go to the next iteration."""
        counter = self.alloca(I64, name + ".counter")
        self.builder.store(start, counter)
        header, body_block, latch, exit_block = (
            self.new_block(name + suffix) for suffix in (".cond", ".body", ".next", ".end"))
        self.builder.branch(header)
        self.continue_in(header)
        current = self.builder.load(counter, typ=I64)
        keep_going = self.builder.icmp_signed("<" if step > 0 else ">", current, stop())
        self.builder.cbranch(keep_going, body_block, exit_block)
        self.continue_in(body_block)
        body(current, latch)
        self.jump(latch)
        self.continue_in(latch)
        following = self.builder.add(self.builder.load(counter, typ=I64), i64(step))
        self.builder.store(following, counter)
        back_edge = self.builder.branch(header)
        if metadata is not None:
            back_edge.set_metadata("llvm.loop", metadata)
        self.continue_in(exit_block)

