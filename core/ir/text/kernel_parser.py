"""Parsing of kernel IR text: expressions and statements.

Types are not written in expressions: the parser derives them from the
declarations in scope (parameters, shape symbols, ``let``, loop variables,
arrays) and from the signatures of all functions of the module.
"""
from __future__ import annotations

import contextlib
import dataclasses

from ..kernel import (
    COMPARE_OPS, INTRINSICS, ArrayDecl, Assign, AtomicUpdate, Barrier, Binary,
    Bitcast, Call, Cast, Compare, Const, Expr, ExprStmt, For, If, InstanceCount,
    InstanceId, Intrinsic, KernelFunction, Let, Load, Reduction, Return, Select,
    Stmt, Store, Unary, Var, While,
)
from ..types import BOOL, F64, I64, SCALAR_TYPES, BufferType, ScalarType, Type
from .lexer import Token
from .stream import TokenStream, suggestion
from .syntax import (
    LOOP_FLAGS, LOOP_OPTIONS, OPERATOR_BY_SPELLING, PRECEDENCE, UNARY_BY_SPELLING,
)

_LITERAL_KINDS = ("int", "float")


def scope_of_params(params) -> dict[str, Type]:
    """Names a kernel body (or a node's replication) sees from its ports:
    the shape symbols (i64) and the parameters, which win on a clash."""
    names: dict[str, Type] = {}
    for p in params:
        if isinstance(p.type, BufferType):
            names.update({s: I64 for s in p.type.symbols if s not in names})
    names.update({p.name: p.type for p in params})
    return names


class Scope:
    """Nested blocks of declarations.  A name declared in a finished block
    stays readable later in the function (the latest declaration wins), so
    code that declares in a branch and reads after it still parses."""

    def __init__(self, base: dict[str, Type]):
        self.blocks = [dict(base)]
        self.seen = dict(base)

    def push(self) -> None:
        self.blocks.append({})

    def pop(self) -> None:
        self.blocks.pop()

    def declare(self, name: str, type: Type) -> None:
        self.blocks[-1][name] = type
        self.seen[name] = type

    def lookup(self, name: str) -> Type | None:
        for block in reversed(self.blocks):
            if name in block:
                return block[name]
        return self.seen.get(name)


def check_int_range(stream: TokenStream, token: Token, value: int, type: ScalarType) -> None:
    low, high = (-(1 << (type.bits - 1)), (1 << (type.bits - 1)) - 1) if type.is_signed \
        else (0, (1 << type.bits) - 1)
    if not low <= value <= high:
        raise stream.error(token, f"constant {value} does not fit {type} "
                                  f"(range {low} .. {high})", "use a wider type")


MAX_EXPRESSION_DEPTH = 100
"""Deepest expression tree the parser builds: every pass, printer and
target walks expressions recursively, so deeper ones are refused here with
a located message instead of a RecursionError later."""
MAX_BLOCK_DEPTH = 50
"""Deepest nesting of statement blocks (loops and ifs inside each other)."""


def _operands(node: Expr) -> list:
    """The expressions directly inside ``node``."""
    found = []
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, Expr):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, Expr))
    return found


class KernelParser:
    """Reads expressions and statements from ``stream``; ``functions`` maps
    every function name of the module to its signature (body unused)."""

    def __init__(self, stream: TokenStream, functions: dict[str, KernelFunction]):
        self.s = stream
        self.functions = functions
        self.scope = Scope({})
        self._depths: dict[int, int] = {}
        self._nesting = 0
        self._blocks = 0

    # ------------------------------------------------------ expressions
    def expr(self, min_precedence: int = 1) -> Expr:
        """An infix expression; operators below ``min_precedence`` end it."""
        start = self.s.peek()
        with self._nested(start):
            lhs = self.unary()
            while True:
                token = self.s.peek()
                op = OPERATOR_BY_SPELLING.get(token.value) if token.kind == "op" else None
                if op is None or PRECEDENCE[op] < min_precedence:
                    return self._measured(start, lhs)
                self.s.next()
                rhs = self.expr(PRECEDENCE[op] + 1)
                lhs = self._measured(token, Compare(op, lhs, rhs) if op in COMPARE_OPS
                                     else Binary(op, lhs, rhs))

    @contextlib.contextmanager
    def _nested(self, token: Token):
        """One more level of parser recursion (ParseError at ``token`` past
        MAX_EXPRESSION_DEPTH, before Python's own limit is near)."""
        self._nesting += 1
        try:
            if self._nesting > MAX_EXPRESSION_DEPTH:
                raise self._too_deep(token)
            yield
        finally:
            self._nesting -= 1

    def _measured(self, token: Token, node: Expr) -> Expr:
        """``node``, after checking how deep its tree is (ParseError at
        ``token`` past MAX_EXPRESSION_DEPTH)."""
        if id(node) not in self._depths:
            depth = 1 + max((self._depths.get(id(o), 1) for o in _operands(node)), default=0)
            if depth > MAX_EXPRESSION_DEPTH:
                raise self._too_deep(token)
            self._depths[id(node)] = depth
        return node

    def _too_deep(self, token: Token):
        return self.s.error(token, f"expression nested more than {MAX_EXPRESSION_DEPTH} "
                                   "levels deep", "split it into smaller expressions with "
                                                  "'let' statements")

    def unary(self) -> Expr:
        s = self.s
        if s.at_op("-") and s.peek(1).kind in _LITERAL_KINDS:
            return self.literal()
        token = s.peek()
        if token.kind == "op" and token.value in UNARY_BY_SPELLING:
            s.next()
            with self._nested(token):
                operand = self.unary()
            return self._measured(token, Unary(UNARY_BY_SPELLING[token.value], operand))
        return self._measured(token, self.primary())

    def literal(self) -> Const:
        """A bare number: an i64 or (with '.' or 'e') an f64 constant."""
        token = self.s.peek()
        value = self.s.number()
        if isinstance(value, float):
            return Const(value, F64)
        check_int_range(self.s, token, value, I64)
        return Const(value, I64)

    def primary(self) -> Expr:
        s = self.s
        token = s.peek()
        if token.kind in _LITERAL_KINDS:
            return self.literal()
        if token.kind == "name" and token.value in ("true", "false"):
            return Const(s.next().value == "true", BOOL)
        if s.accept_op("("):
            s.skip_line_breaks()
            inner = self.expr()
            s.skip_line_breaks()
            s.expect_op(")")
            return inner
        if token.kind == "global":
            return self.call()
        if token.kind == "name" and s.at_op("(", 1):
            return self.builtin()
        if s.at_name():
            name = s.name()
            if s.at_op("["):
                return Load(name, self.indices(), self.buffer_type(token, name).element)
            return Var(name, self.lookup(token, name))
        fix = "write inf and nan as f64(inf), f32(nan) ..." if token.value in ("inf", "nan") else ""
        raise s.expected("an expression", fix)

    def args(self) -> tuple[Expr, ...]:
        return tuple(self.s.delimited("(", ")", self.expr, "arguments"))

    def indices(self) -> tuple[Expr, ...]:
        return tuple(self.s.delimited("[", "]", self.expr, "indices"))

    def call(self) -> Call:
        token = self.s.next()
        signature = self.functions.get(token.value)
        if signature is None:
            raise self.s.error(token, f"unknown function '@{token.value}'",
                               suggestion(token.value, self.functions) or
                               "define it with 'func @name(...)' in this module")
        return Call(token.value, self.args(), signature.return_type)

    def builtin(self) -> Expr:
        """``T(...)``, ``select``, ``bitcast``, ``instance_id``,
        ``instance_count`` or an intrinsic such as ``sqrt``."""
        s = self.s
        token = s.next()
        name = token.value
        if name in SCALAR_TYPES:
            return self.typed(SCALAR_TYPES[name])
        if name in ("instance_id", "instance_count"):
            s.expect_op("(")
            dim = s.int_literal("a dimension number")
            s.expect_op(")")
            return InstanceId(dim) if name == "instance_id" else InstanceCount(dim)
        if name == "bitcast":
            s.expect_op("(")
            type = s.scalar_type()
            s.expect_op(",")
            value = self.expr()
            s.expect_op(")")
            return Bitcast(value, type)
        arity = {"select": 3, **INTRINSICS}.get(name)
        if arity is None:
            known = ["select", "bitcast", "instance_id", "instance_count", *INTRINSICS]
            raise s.error(token, f"unknown function '{name}'",
                          suggestion(name, known) or
                          f"call a kernel function as @{name}(...)")
        args = self.args()
        if len(args) != arity:
            raise s.error(token, f"'{name}' takes {arity} argument(s), got {len(args)}")
        return Select(*args) if name == "select" else Intrinsic(name, args)

    def _at_typed_literal(self) -> bool:
        s = self.s
        offset = 1 if s.at_op("-") else 0
        token = s.peek(offset)
        is_number = token.kind in _LITERAL_KINDS or (
            token.kind == "name" and token.value in ("inf", "nan"))
        return is_number and s.at_op(")", offset + 1)

    def typed(self, type: ScalarType) -> Expr:
        """After ``T``: ``(literal)`` is a constant of T, else a cast."""
        s = self.s
        s.expect_op("(")
        if not self._at_typed_literal():
            value = self.expr()
            s.expect_op(")")
            return Cast(value, type)
        token = s.peek()
        value = s.number()
        s.expect_op(")")
        if type.is_int:
            if not isinstance(value, int):
                raise s.error(token, f"{type} constant must be an integer",
                              f"write {type}(3), or convert a float with {type}((2.5))")
            check_int_range(s, token, value, type)
        return Const(value, type)

    # ----------------------------------------------------------- names
    def lookup(self, token: Token, name: str) -> Type:
        found = self.scope.lookup(name)
        if found is None:
            raise self.s.error(token, f"unknown name '{name}'",
                               suggestion(name, self.scope.seen) or
                               "declare it with 'let', as a parameter or as an array")
        return found

    def buffer_type(self, token: Token, name: str) -> BufferType:
        found = self.lookup(token, name)
        if not isinstance(found, BufferType):
            raise self.s.error(token, f"'{name}' is a scalar ({found}), not a buffer",
                               "index only buffer parameters and arrays")
        return found

    # ------------------------------------------------------ statements
    def function_body(self, signature: KernelFunction) -> KernelFunction:
        """The ``{ ... }`` body of the function whose signature was read."""
        self.scope = Scope(scope_of_params(signature.params))
        body = self.block()
        return KernelFunction(signature.name, signature.params, body, signature.return_type)

    def block(self) -> tuple[Stmt, ...]:
        s = self.s
        self._blocks += 1
        try:
            if self._blocks > MAX_BLOCK_DEPTH:
                raise s.error(s.peek(), f"blocks nested more than {MAX_BLOCK_DEPTH} levels deep",
                              "move inner loops into a helper function")
            return self._block_body()
        finally:
            self._blocks -= 1

    def _block_body(self) -> tuple[Stmt, ...]:
        s = self.s
        s.expect_op("{")
        self.scope.push()
        s.skip_newlines()
        stmts = []
        while not s.at_op("}"):
            if s.at("eof"):
                raise s.expected("'}'", "close the block")
            stmts.append(self.statement())
            s.end_statement()
        s.next()
        self.scope.pop()
        return tuple(stmts)

    def statement(self) -> Stmt:
        s = self.s
        token = s.peek()
        if token.kind == "name" and token.value in _STATEMENTS:
            s.next()
            return _STATEMENTS[token.value](self, token)
        if token.kind == "global":
            return ExprStmt(self.call())
        if not s.at_name():
            raise s.expected("a statement")
        name = s.name()
        if s.at_op("["):
            self.buffer_type(token, name)
            indices = self.indices()
            s.expect_op("=", "a store is written 'buf[i] = value'")
            return Store(name, indices, self.expr())
        self.lookup(token, name)
        s.expect_op("=", "an assignment is written 'name = value'")
        return Assign(name, self.expr())

    def _let(self, token: Token) -> Let:
        name = self.s.name("a variable name")
        self.s.expect_op(":", "write 'let name: type = value'")
        type = self.s.scalar_type()
        value = self.expr() if self.s.accept_op("=") else None
        self.scope.declare(name, type)
        return Let(name, type, value)

    def _for(self, token: Token) -> For:
        s = self.s
        var = s.name("a loop variable")
        s.expect_word("in", "write 'for i in start .. stop step 1 { ... }'")
        start = self.expr()
        s.expect_op("..", "write 'start .. stop'")
        stop = self.expr()
        s.expect_word("step", "write 'step 1' after the bounds")
        step = s.int_literal("an integer step")
        options = self._loop_options()
        reduce = tuple(self._reduction(token, name, op, identity)
                       for token, name, op, identity in options.get("reduce", ()))
        self.scope.push()
        self.scope.declare(var, I64)
        body = self.block()
        self.scope.pop()
        return For(var, start, stop, step, body, options.get("unroll"),
                   options.get("ivdep", False), options.get("trip_count"), reduce)

    def _reduction(self, token: Token, name: str, op: str, identity) -> Reduction:
        """``reduce name: op [= identity]``; a literal identity takes the
        variable's type."""
        type = self.lookup(token, name)
        if identity is not None and isinstance(identity, Const) and isinstance(type, ScalarType):
            identity = Const(identity.value, type)
        elif identity is not None:
            raise self.s.error(token, f"the identity of reduction '{name}' must be a constant",
                               "write 'reduce acc: @combine = 0.0'")
        return Reduction(name, op, identity)

    def _loop_options(self) -> dict:
        s = self.s
        options: dict = {}

        def read() -> None:
            token = s.next()
            if token.value == "reduce":
                name = s.name("the reduced variable")
                s.expect_op(":", "write 'reduce name: op'")
                op = "@" + s.global_name("a helper") if s.at("global") else s.name("an op")
                identity = self.expr() if s.accept_op("=") else None
                options.setdefault("reduce", []).append((token, name, op, identity))
            elif token.value in LOOP_FLAGS:
                options[token.value] = True
            elif token.value in LOOP_OPTIONS:
                s.expect_op("=", f"write '{token.value} = N'")
                options[token.value] = s.int_literal()
            else:
                raise s.error(token, f"unknown loop attribute {token.describe()}",
                              "use unroll = N, ivdep, trip_count = N, reduce VAR: OP")
        if s.at_op("["):
            s.delimited("[", "]", read, "loop attributes")
        return options

    def _while(self, token: Token) -> While:
        return While(self.expr(), self.block())

    def _if(self, token: Token) -> If:
        s = self.s
        cond = self.expr()
        then_body = self.block()
        offset = 0
        while s.at("newline", offset=offset):
            offset += 1
        if not s.at_word("else", offset):
            return If(cond, then_body)
        s.pos += offset + 1
        if s.at_word("if"):
            else_token = s.next()
            return If(cond, then_body, (self._if(else_token),))
        return If(cond, then_body, self.block())

    def _return(self, token: Token) -> Return:
        s = self.s
        if s.at("newline") or s.at("eof") or s.at_op(";") or s.at_op("}"):
            return Return()
        return Return(self.expr())

    def _barrier(self, token: Token) -> Barrier:
        return Barrier()

    def _array(self, token: Token) -> ArrayDecl:
        s = self.s
        name = s.name("an array name")
        s.expect_op(":", f"write '{token.value} name: f32[4]'")
        type_token = s.peek()
        type = s.type()
        if not isinstance(type, BufferType) or type.shape is None or not all(
                isinstance(d, int) for d in type.shape):
            raise s.error(type_token, "an array needs a fixed shape",
                          f"write '{token.value} {name}: f32[4, 4]'")
        zeroed = s.accept_op("=") is None
        if not zeroed:
            s.expect_word("undef", f"write '{token.value} {name}: {type} = undef' for an array "
                                   "whose values are undefined until written, or leave out '='")
        self.scope.declare(name, type)
        return ArrayDecl(name, type.element, type.shape, token.value, zeroed)

    def _atomic(self, token: Token) -> AtomicUpdate:
        s = self.s
        buffer_token = s.peek()
        buffer = s.name("a buffer name")
        self.buffer_type(buffer_token, buffer)
        indices = self.indices()
        s.expect_op(",", f"write '{token.value} buf[i], value'")
        value = self.expr()
        result = None
        if s.accept_op("->"):
            result_token = s.peek()
            result = s.name("a variable for the old value")
            self.lookup(result_token, result)
        return AtomicUpdate(token.value[len("atomic_"):], buffer, indices, value, result)


_STATEMENTS = {
    "let": KernelParser._let, "for": KernelParser._for, "while": KernelParser._while,
    "if": KernelParser._if, "return": KernelParser._return,
    "barrier": KernelParser._barrier, "private": KernelParser._array,
    "local": KernelParser._array, "atomic_add": KernelParser._atomic,
    "atomic_min": KernelParser._atomic, "atomic_max": KernelParser._atomic,
}
