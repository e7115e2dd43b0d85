"""The SIMT evaluator: runs a kernel body once for all instances of a node.

Each scalar is a numpy value over instances (0-d while uniform); control
flow is handled with masks: both arms of a divergent ``if`` run under
complementary masks, loops iterate while any lane is active, ``return``
masks lanes off.  Loads gather, stores scatter on active lanes only, so a
masked-off lane never faults.  Construct a :class:`KernelEvaluator` and call
:meth:`KernelEvaluator.run` (see hpvm.interp.kernel_launch for the usual
entry point).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hpvm.ir import kernel as k
from hpvm.ir.graph import Module
from hpvm.ir.types import I64, BufferType

from . import memory, scalar_ops, trip_counter
from .memory import Lanes, Storage
from .simt_state import Frame, Scope, and_masks, kill, merge, narrow

MAX_CALL_DEPTH = 64


@dataclass
class WorkGroups:
    """Which work group each lane belongs to (``ids``), how many groups
    there are and how many lanes each has."""

    ids: np.ndarray
    count: int
    sizes: np.ndarray


class KernelEvaluator:
    """Evaluates kernel IR for ``lanes`` (the instances of one node)."""

    def __init__(self, module: Module, lanes: Lanes, replication: tuple[int, ...],
                 groups: WorkGroups):
        self.module = module
        self.lanes = lanes
        self.replication = replication
        self.groups = groups
        self.depth = 0
        # keyed by identity: -0.0 == 0.0 would make value-equal keys collide
        self._consts: dict[int, tuple[k.Const, np.ndarray]] = {}
        self._exprs = {
            k.Const: self._const, k.Var: self._var, k.Unary: self._unary,
            k.Binary: self._binary, k.Compare: self._compare, k.Select: self._select,
            k.Cast: self._cast, k.Bitcast: self._bitcast, k.Load: self._load,
            k.Intrinsic: self._intrinsic,
            k.InstanceId: self._instance_id, k.InstanceCount: self._instance_count,
            k.Call: self._call,
        }
        self._stmts = {
            k.Let: self._let, k.Assign: self._assign, k.Store: self._store,
            k.For: self._for, k.While: self._while, k.If: self._if,
            k.ArrayDecl: self._array_decl, k.AtomicUpdate: self._atomic,
            k.Barrier: self._barrier, k.Return: self._return, k.ExprStmt: self._expr_stmt,
        }

    def run(self, function: k.KernelFunction, scope: Scope) -> None:
        """Run ``function``'s body on every lane, starting from ``scope``
        (its parameters and shape symbols)."""
        with np.errstate(all="ignore"):
            self.exec_block(function.body, scope, None, Frame(function.name))

    # ----------------------------------------------------------- statements

    def exec_block(self, stmts, scope: Scope, mask, frame: Frame) -> None:
        for stmt in stmts:
            active = and_masks(mask, frame.alive)
            if active is not None and not active.any():
                return
            handler = self._stmts.get(type(stmt))
            if handler is None:
                raise self.lanes.error(f"cannot execute statement {type(stmt).__name__}",
                                       "use only kernel IR statements")
            handler(stmt, scope, active, frame)

    def _let(self, stmt: k.Let, scope, mask, frame) -> None:
        if stmt.value is None:
            value = np.zeros((), dtype=stmt.type.numpy_dtype)
        else:
            value = scalar_ops.cast(self.eval(stmt.value, scope, mask), stmt.type)
        scope.declare(stmt.name, value)

    def _assign(self, stmt: k.Assign, scope, mask, frame) -> None:
        self._set_variable(scope, stmt.name, self.eval(stmt.value, scope, mask), mask)

    def _set_variable(self, scope: Scope, name: str, value, mask) -> None:
        owner = scope.find(name)
        if owner is None:
            raise self.lanes.error(f"assignment to undeclared variable '{name}'",
                                   f"declare it first with 'let {name}'")
        old = owner.values[name]
        value = np.asarray(value).astype(np.asarray(old).dtype, copy=False)
        owner.values[name] = merge(mask, value, old)

    def _store(self, stmt: k.Store, scope, mask, frame) -> None:
        storage = self._storage(scope, stmt.buffer)
        indices = [self.eval(i, scope, mask) for i in stmt.indices]
        value = self.eval(stmt.value, scope, mask)
        memory.store(storage, indices, value, mask, self.lanes)

    def _for(self, stmt: k.For, scope, mask, frame) -> None:
        if not isinstance(stmt.step, int) or stmt.step == 0:
            raise self.lanes.error(f"loop over '{stmt.var}' has step {stmt.step!r}",
                                   "use a non-zero integer constant step")
        loop_scope = Scope(scope)
        loop_scope.declare(stmt.var, scalar_ops.cast(self.eval(stmt.start, scope, mask), I64))
        keep_going = np.less if stmt.step > 0 else np.greater
        step = np.int64(stmt.step)
        counter = trip_counter.ACTIVE
        if counter is not None:
            counter.count(stmt, self._active_lanes(and_masks(mask, frame.alive)), True)
        while True:
            mask = and_masks(mask, frame.alive)
            stop = self.eval(stmt.stop, loop_scope, mask)
            mask, any_left = narrow(mask, keep_going(loop_scope.values[stmt.var], stop))
            if not any_left:
                return
            if counter is not None:
                counter.count(stmt, self._active_lanes(mask), False)
            self.exec_block(stmt.body, Scope(loop_scope), mask, frame)
            loop_scope.values[stmt.var] = loop_scope.values[stmt.var] + step

    def _active_lanes(self, mask) -> int:
        return self.lanes.count if mask is None else int(np.count_nonzero(mask))

    def _while(self, stmt: k.While, scope, mask, frame) -> None:
        while True:
            mask = and_masks(mask, frame.alive)
            mask, any_left = narrow(mask, self.eval(stmt.cond, scope, mask))
            if not any_left:
                return
            self.exec_block(stmt.body, Scope(scope), mask, frame)

    def _if(self, stmt: k.If, scope, mask, frame) -> None:
        cond = self.eval(stmt.cond, scope, mask)
        if np.ndim(cond) == 0:
            body = stmt.then_body if cond else stmt.else_body
            self.exec_block(body, Scope(scope), mask, frame)
            return
        then_mask, any_then = narrow(mask, cond)
        else_mask, any_else = narrow(mask, ~cond)
        if any_then:
            self.exec_block(stmt.then_body, Scope(scope), then_mask, frame)
        if any_else:
            self.exec_block(stmt.else_body, Scope(scope), else_mask, frame)

    def _array_decl(self, stmt: k.ArrayDecl, scope, mask, frame) -> None:
        shape = tuple(int(d) for d in stmt.shape)
        size = int(np.prod(shape, dtype=np.int64))
        if stmt.space == "local":
            rows, owner = self.groups.count, self.groups.ids
        else:
            rows, owner = self.lanes.count, np.arange(self.lanes.count, dtype=np.int64)
        array = np.zeros((rows,) + shape, dtype=stmt.element.numpy_dtype)
        scope.declare(stmt.name, Storage(stmt.name, array, shape, owner * size))

    def _atomic(self, stmt: k.AtomicUpdate, scope, mask, frame) -> None:
        storage = self._storage(scope, stmt.buffer)
        indices = [self.eval(i, scope, mask) for i in stmt.indices]
        value = self.eval(stmt.value, scope, mask)
        old = memory.atomic_update(stmt.op, storage, indices, value, mask, self.lanes,
                                   want_old=stmt.result is not None)
        if stmt.result is not None:
            self._set_variable(scope, stmt.result, old, mask)

    def _barrier(self, stmt: k.Barrier, scope, mask, frame) -> None:
        if mask is None:
            return
        groups = self.groups
        arrived = np.bincount(groups.ids, weights=mask, minlength=groups.count)
        if np.any((arrived != 0) & (arrived != groups.sizes)):
            raise self.lanes.error(
                "barrier reached by only some instances of a work group "
                "(it is inside divergent control flow or after an early return)",
                "move the barrier where every instance of the work group reaches it")

    def _return(self, stmt: k.Return, scope, mask, frame) -> None:
        if stmt.value is not None:
            value = self.eval(stmt.value, scope, mask)
            previous = frame.result
            if previous is None:
                previous = np.zeros((), dtype=np.asarray(value).dtype)
            frame.result = merge(mask, value, previous)
        frame.alive = kill(frame.alive, mask, self.lanes.count)

    def _expr_stmt(self, stmt: k.ExprStmt, scope, mask, frame) -> None:
        self.eval(stmt.call, scope, mask)

    # ---------------------------------------------------------- expressions

    def eval(self, expr: k.Expr, scope: Scope, mask):
        """The value of ``expr`` on every lane; only lanes in ``mask`` may
        fault (out-of-range index, division by zero)."""
        handler = self._exprs.get(type(expr))
        if handler is None:
            raise self.lanes.error(f"cannot evaluate expression {type(expr).__name__}",
                                   "use only kernel IR expressions")
        return handler(expr, scope, mask)

    def _const(self, expr: k.Const, scope, mask):
        cached = self._consts.get(id(expr))
        if cached is None:
            cached = (expr, np.asarray(expr.value, dtype=expr.type.numpy_dtype))
            self._consts[id(expr)] = cached
        return cached[1]

    def _var(self, expr: k.Var, scope, mask):
        try:
            return scope.lookup(expr.name)
        except KeyError:
            raise self.lanes.error(f"variable '{expr.name}' is not defined",
                                   f"declare '{expr.name}' before using it") from None

    def _storage(self, scope: Scope, name: str) -> Storage:
        storage = scope.find(name)
        storage = None if storage is None else storage.values[name]
        if not isinstance(storage, Storage):
            raise self.lanes.error(f"'{name}' is not a buffer or array",
                                   "load from and store to buffer parameters or declared arrays")
        return storage

    def _unary(self, expr: k.Unary, scope, mask):
        return scalar_ops.unary(expr.op, self.eval(expr.operand, scope, mask))

    def _binary(self, expr: k.Binary, scope, mask):
        if expr.op in ("land", "lor"):
            return self._short_circuit(expr, scope, mask)
        lhs = self.eval(expr.lhs, scope, mask)
        rhs = self.eval(expr.rhs, scope, mask)
        dtype = np.asarray(lhs).dtype
        if expr.op in ("div", "rem") and dtype.kind in "iub":
            rhs = self._checked_divisor(expr.op, rhs, mask)
        return scalar_ops.binary(expr.op, lhs, rhs, dtype)

    def _short_circuit(self, expr: k.Binary, scope, mask):
        lhs = np.asarray(self.eval(expr.lhs, scope, mask), dtype=bool)
        needs_rhs = lhs if expr.op == "land" else ~lhs
        rhs_mask, any_left = narrow(mask, needs_rhs)
        if not any_left:
            return lhs
        rhs = np.asarray(self.eval(expr.rhs, scope, rhs_mask), dtype=bool)
        return lhs & rhs if expr.op == "land" else lhs | rhs

    def _checked_divisor(self, op: str, divisor, mask):
        zero = np.asarray(divisor) == 0
        if not zero.any():
            return divisor
        faulting = zero if mask is None else zero & mask
        if faulting.any():
            lane = int(np.argmax(faulting)) if np.ndim(faulting) else 0
            where = (f"instance {self.lanes.instance(lane)}" if np.ndim(faulting)
                     else "every instance")
            name = "division" if op == "div" else "remainder"
            raise self.lanes.error(f"integer {name} by zero in {where}",
                                   "guard the divisor so it is never zero")
        return np.where(zero, np.ones_like(divisor), divisor)

    def _compare(self, expr: k.Compare, scope, mask):
        return scalar_ops.compare(expr.op, self.eval(expr.lhs, scope, mask),
                                  self.eval(expr.rhs, scope, mask))

    def _select(self, expr: k.Select, scope, mask):
        cond = self.eval(expr.cond, scope, mask)
        if_true = self.eval(expr.if_true, scope, mask)
        if_false = self.eval(expr.if_false, scope, mask)
        return np.where(cond, if_true, if_false).astype(np.asarray(if_true).dtype, copy=False)

    def _cast(self, expr: k.Cast, scope, mask):
        return scalar_ops.cast(self.eval(expr.value, scope, mask), expr.type)

    def _bitcast(self, expr: k.Bitcast, scope, mask):
        value = np.asarray(self.eval(expr.value, scope, mask))
        return value.astype(expr.value.type.numpy_dtype, copy=False).view(expr.type.numpy_dtype)

    def _load(self, expr: k.Load, scope, mask):
        storage = self._storage(scope, expr.buffer)
        indices = [self.eval(i, scope, mask) for i in expr.indices]
        return memory.load(storage, indices, mask, self.lanes)

    def _intrinsic(self, expr: k.Intrinsic, scope, mask):
        if expr.name not in scalar_ops.INTRINSICS:
            raise self.lanes.error(f"unknown intrinsic '{expr.name}'",
                                   f"use one of {', '.join(scalar_ops.INTRINSICS)}")
        args = [self.eval(a, scope, mask) for a in expr.args]
        return scalar_ops.intrinsic(expr.name, args, np.asarray(args[0]).dtype)

    def _replication_dim(self, expr, what: str) -> int:
        if not 0 <= expr.dim < len(self.replication):
            raise self.lanes.error(
                f"{what}({expr.dim}) used, but the node is replicated in "
                f"{len(self.replication)} dimension(s)",
                "use a dimension below the node's replication rank")
        return expr.dim

    def _instance_id(self, expr: k.InstanceId, scope, mask):
        return self.lanes.ids[self._replication_dim(expr, "instance_id")]

    def _instance_count(self, expr: k.InstanceCount, scope, mask):
        return np.int64(self.replication[self._replication_dim(expr, "instance_count")])

    def _call(self, expr: k.Call, scope, mask):
        function = self.module.functions.get(expr.function)
        if function is None:
            raise self.lanes.error(f"call of unknown function '@{expr.function}'",
                                   "define the helper function in the module")
        if len(expr.args) != len(function.params):
            raise self.lanes.error(
                f"call of '@{function.name}' passes {len(expr.args)} arguments, "
                f"it takes {len(function.params)}", "pass one argument per parameter")
        if self.depth >= MAX_CALL_DEPTH:
            raise self.lanes.error(f"calls nested deeper than {MAX_CALL_DEPTH} "
                                   f"(recursion through '@{function.name}'?)",
                                   "kernel helpers must not recurse")
        callee_scope = self._callee_scope(function, expr.args, scope, mask)
        frame = Frame(function.name, alive=mask)
        caller_lanes = self.lanes
        self.lanes = dataclasses.replace(caller_lanes, function=function.name)
        self.depth += 1
        try:
            self.exec_block(function.body, callee_scope, mask, frame)
        finally:
            self.depth -= 1
            self.lanes = caller_lanes
        if function.return_type is None:
            return None
        if frame.result is None:
            return np.zeros((), dtype=function.return_type.numpy_dtype)
        return scalar_ops.cast(frame.result, function.return_type)

    def _callee_scope(self, function: k.KernelFunction, args, scope, mask) -> Scope:
        values: dict = {}
        for param, arg in zip(function.params, args):
            value = self.eval(arg, scope, mask)
            if isinstance(param.type, BufferType):
                if not isinstance(value, Storage):
                    raise self.lanes.error(
                        f"argument '{param.name}' of '@{function.name}' must be a buffer",
                        "pass a buffer parameter or a declared array")
                # inside the helper the buffer goes by the parameter's name
                values[param.name] = dataclasses.replace(value, name=param.name)
                self._bind_helper_symbols(function, param, value, values)
            else:
                values[param.name] = scalar_ops.cast(value, param.type)
        return Scope(None, values)

    def _bind_helper_symbols(self, function, param, storage: Storage, values: dict) -> None:
        if param.type.shape is None:
            return
        shape = storage.logical_shape
        if len(shape) != len(param.type.shape):
            raise self.lanes.error(
                f"argument '{param.name}' of '@{function.name}' has shape {list(shape)}, "
                f"expected {param.type}", "pass a buffer of the declared rank")
        for dim, size in zip(param.type.shape, shape):
            if isinstance(dim, str):
                values.setdefault(dim, np.int64(size))
