"""``reduce(op, (value for i in range(...) ...), initial=...)`` in kernels.

    best = reduce(max, (mag[y, x] for x in range(W)))
    total = reduce("+", (J[i, j] for i in range(r1, r2 + 1) for j in range(c1, c2 + 1)))
    hits = reduce("+", (1 for i in range(n) if x[i] > t))

becomes a variable holding ``initial`` (default: the op's identity: 0 for
``+``, -inf for ``max`` ...; Python's ``sum``, ``min`` and ``max`` of a
generator are the same reductions, an empty one giving the identity) and a loop nest folding each value into it,
every loop carrying the reduction (``For.reduce``, core/ir/reduction.py),
so that passes may fold in parallel (parallel-reduce).  ``op``: ``"+"``,
``"*"``, ``min``, ``max``, ``"&"``, ``"|"``, ``"^"`` (or their names
``"add"``, ``"mul"`` ... and the ``operator`` module's functions), or an
``@hpvm.kernel`` helper ``(a, b) -> value`` the author promises is
associative and commutative, with ``identity=`` its neutral element (the
helper becomes a function of the module that the reduction calls).  The
result is the fold's value, typed like the values.
"""
from __future__ import annotations

import ast
import builtins
import operator

from ..ir.kernel import Assign, Const, For, If, Let, Reduction, Var
from ..ir.reduction import combine, identity, op_problem
from .loops import loop_header
from .typing_rules import Value, convert

USAGE = "write: total = reduce('+', (x[i] for i in range(n)))"
SPELLINGS = {"+": "add", "*": "mul", "&": "and", "|": "or", "^": "xor",
             "add": "add", "mul": "mul", "min": "min", "max": "max",
             "and": "and", "or": "or", "xor": "xor"}
PYTHON_OPS = {builtins.min: "min", builtins.max: "max", operator.add: "add",
              operator.mul: "mul", operator.and_: "and", operator.or_: "or",
              operator.xor: "xor"}


class ReduceMixin:
    """Translation of ``reduce(...)`` for StmtTranslator."""

    def reduction(self, node: ast.Call) -> Value:
        if len(node.args) != 2 or not isinstance(node.args[1], ast.GeneratorExp):
            raise self.error(node, "reduce takes an op and a generator of values", USAGE)
        op = self._reduce_op(node.args[0])
        options = {}
        for keyword in node.keywords:
            if keyword.arg not in ("initial", "identity"):
                raise self.error(keyword, f"reduce has no option '{keyword.arg}'",
                                 "reduce(op, values, initial=v) (identity=e for a helper op)")
            options[keyword.arg] = keyword.value
        if op.startswith("@") != ("identity" in options):
            raise self.error(node, "an @hpvm.kernel op needs identity=, a built-in op does not take it",
                             "reduce(combine, values, identity=0.0): the e with combine(e, v) == v")
        return self.fold(node, op, node.args[1], options.get("initial"), options.get("identity"))

    def builtin_fold(self, node: ast.Call, callee) -> Value | None:
        """``sum(gen)``, ``min(gen)``, ``max(gen)`` as reductions (None
        for other calls)."""
        op = {builtins.sum: "add", builtins.min: "min", builtins.max: "max"}.get(callee)
        if op is None or len(node.args) != 1 or not isinstance(node.args[0], ast.GeneratorExp):
            return None
        return self.fold(node, op, node.args[0], None)

    def fold(self, node, op: str, generator: ast.GeneratorExp, initial, neutral=None) -> Value:
        """The reduction of ``generator``'s values with ``op`` (``neutral``:
        the identity of a helper op, an expression node)."""
        name = self.scope.names.fresh(self.scope.local_prefix + "reduced")
        state: dict = {"neutral": neutral}
        loop = self._reduce_loop(generator, generator.generators, op, name, state)
        type = state["type"]
        reduction = Reduction(name, op, state.get("identity"))
        start = identity(reduction, type)
        if initial is not None:
            start = self.rule(initial, convert, self.scalar(initial), type,
                              "the initial value of reduce")
        problem = op_problem(reduction, type)
        if problem is not None:
            raise self.error(node, f"reduce over {type} values: {problem}", USAGE)
        self.emit(Let(name, type, start))
        self.emit(loop)
        return Value(Var(name, type))

    def _reduce_op(self, node) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            op = SPELLINGS.get(node.value)
        else:
            callee = self.python_object(node)
            if getattr(callee, "hpvm_kernel", None) is not None:
                return self._helper_op(node, callee)
            op = PYTHON_OPS.get(callee)
        if op is None:
            raise self.error(node, f"'{ast.unparse(node)}' is not a reduction op",
                             "use '+', '*', min, max, '&', '|', '^' or an @hpvm.kernel "
                             "(a, b) -> value that is associative and commutative")
        return op

    def _helper_op(self, node, kernel) -> str:
        """``@name`` of a user-associative op; the helper becomes a
        function of the module (the reduction calls it)."""
        if len(kernel.params) != 2 or kernel.return_type is None:
            raise self.error(node, f"the reduce op '{kernel.name}' must take two values and "
                             "return one", f"def {kernel.name}(a: f32, b: f32) -> f32")
        self.scope.helpers[kernel.name] = kernel.helper()
        return "@" + kernel.name

    def _reduce_loop(self, generator, clauses, op: str, name: str, state: dict) -> For:
        """The loop of ``clauses[0]`` with the rest nested in it; the
        innermost body folds the generator's value into ``name``."""
        clause = clauses[0]
        if not isinstance(clause.target, ast.Name) or clause.is_async:
            raise self.error(clause, "each 'for' of a reduce has one variable", USAGE)
        header = loop_header(self, clause.iter)

        def emit_inner():
            if len(clauses) > 1:
                self.emit(self._reduce_loop(generator, clauses[1:], op, name, state))
            else:
                self.emit(self._fold(generator.elt, op, name, state))

        ir_var, body = self.in_loop(clause.target, lambda: self._collected(
            lambda: self._guarded(clause.ifs, emit_inner)))
        return For(ir_var, header.start, header.stop, header.step, body, header.unroll,
                   header.ivdep, header.trip_count, (Reduction(name, op, state.get("identity")),))

    def _collected(self, emit) -> tuple:
        """The statements ``emit()`` emits, kept apart from the current block."""
        saved, self.out = self.out, []
        emit()
        body, self.out = tuple(self.out), saved
        return body

    def _guarded(self, tests, emit_inner) -> None:
        """``emit_inner()`` under the ``if`` filters ``tests``, each tested
        only where the ones before it hold."""
        if not tests:
            emit_inner()
            return
        condition = self.condition(tests[0])
        self.emit(If(condition, self._collected(lambda: self._guarded(tests[1:], emit_inner))))

    def _fold(self, node, op: str, name: str, state: dict) -> Assign:
        value = self.scalar(node, "a reduced value")
        self.settle(value, value.type)
        state["type"] = value.type
        if state["neutral"] is not None:
            neutral = self.scalar(state["neutral"])
            if not isinstance(neutral.expr, Const):
                raise self.error(state["neutral"], "the identity of a reduce op is a constant",
                                 "identity=0.0")
            state["identity"] = Const(neutral.expr.value, value.type)
        accumulator = Var(name, value.type)
        return Assign(name, combine(Reduction(name, op), accumulator, value.expr, value.type))
