"""``@hpvm.kernel``: Python functions as kernel IR.

A kernel is either a *helper* called from other kernels (inlined) or the
body of a graph-builder leaf node (``graph.leaf(my_kernel, ...)``).  Its
parameters are annotated: ``Buffer[f32, "N"]`` (direction inferred: read
only -> in, written only -> out, both -> inout), ``Out[...]``, ``InOut[...]``,
``In[...]``, ``Private[...]`` (explicit), or a scalar type (``i64``, ``f32``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from ..ir.kernel import KernelFunction, Let, Var
from ..ir.parameter import Parameter
from ..ir.types import I64, BufferType, ScalarType
from .api import Directed
from .errors import frontend_error
from .hoisting import hoisted_names
from .scope import BufferRef, KernelScope, LocalVar, NameAllocator
from .source import FunctionSource, source_of
from .statements import StmtTranslator


@dataclass(frozen=True)
class ParamSpec:
    """A declared kernel parameter; ``direction`` None means inferred."""

    name: str
    type: BufferType | ScalarType
    direction: str | None = None


def translate_body(body, make_scope, prelude=(), return_type=None):
    """Translate statement list ``body``: returns ``(stmts, scope)``.

    ``make_scope()`` builds a fresh KernelScope (called once or twice: a
    second pass settles the types of variables first assigned a literal);
    ``prelude`` holds ``(python name, Expr)`` pairs declared as i64-like
    locals before the body (the loop variables of a parallel loop).
    """
    settled: dict = {}
    for _ in range(2):
        scope = make_scope()
        scope.settled_types = settled
        translator = StmtTranslator(scope, hoisted_names(body))
        translator.return_type = return_type
        head = []
        for name, expr in prelude:
            ir_name = scope.names.fresh(name)
            scope.locals[name] = LocalVar(ir_name, expr.type)
            head.append(Let(ir_name, expr.type, expr))
        stmts = tuple(head) + translator.function_body(body)
        if not scope.settled_now or settled:
            return stmts, scope
        settled = dict(scope.settled_now)
    return stmts, scope


def annotation_value(source: FunctionSource, node, what: str, where=None):
    """Evaluate an annotation AST in the function's Python scope (``where``
    locates the error when there is no annotation)."""
    if node is None:
        raise source.error(where, f"{what} has no type annotation",
                           'annotate it, e.g. x: Buffer[f32, "N"] or n: i64')
    try:
        return eval(compile(ast.Expression(node), source.file, "eval"), dict(source.namespace))
    except Exception as exc:  # noqa: BLE001 - any failure is the user's annotation
        raise source.error(node, f"cannot evaluate annotation '{ast.unparse(node)}' of {what}: {exc}",
                           'use hpvm types: Buffer[f32, "N"], Out[...], i32, f32') from None


def parameter_specs(source: FunctionSource) -> list[ParamSpec]:
    """The annotated parameters of ``source``'s function."""
    args = source.tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        raise source.error(source.tree, f"'{source.name}' has *args, **kwargs, defaults or keyword-only "
                                        "parameters", "declare plain annotated parameters")
    specs = []
    for arg in args.args:
        value = annotation_value(source, arg.annotation, f"parameter '{arg.arg}'", arg)
        if isinstance(value, Directed):
            specs.append(ParamSpec(arg.arg, value.type, value.direction))
        elif isinstance(value, (BufferType, ScalarType)):
            specs.append(ParamSpec(arg.arg, value))
        else:
            raise source.error(arg, f"parameter '{arg.arg}' has annotation '{ast.unparse(arg.annotation)}', "
                                    "which is not an hpvm type", 'write Buffer[f32, "N"], Out[...], i32, f32 ...')
    return specs


class KernelDef:
    """What ``@hpvm.kernel`` returns.  ``function()`` gives the KernelFunction;
    calls from other kernels are inlined."""

    def __init__(self, function, name: str | None = None):
        self.helpers: dict = {}
        """Helpers the last translation's reduce ops call (name -> KernelFunction)."""
        self.python_function = function
        self.name = name or function.__name__
        self.hpvm_kernel = self
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    def __repr__(self) -> str:
        return f"<hpvm kernel {self.name}>"

    def __call__(self, *args, **kwargs):
        raise frontend_error(f"kernel '{self.name}' cannot be called from Python",
                             "call it from another kernel, or make it a node: graph.leaf(kernel)")

    @cached_property
    def source(self) -> FunctionSource:
        return source_of(self.python_function)

    @cached_property
    def params(self) -> list[ParamSpec]:
        return parameter_specs(self.source)

    @cached_property
    def return_type(self) -> ScalarType | None:
        node = self.source.tree.returns
        if node is None:
            return None
        value = annotation_value(self.source, node, f"the result of '{self.name}'")
        if not isinstance(value, ScalarType):
            raise self.source.error(node, "a helper returns a scalar", "annotate -> f32 (or omit)")
        return value

    def function(self, name: str | None = None) -> KernelFunction:
        """This kernel as a node's KernelFunction (named ``name``)."""
        return self._function(name or self.name)

    def _function(self, name: str) -> KernelFunction:
        if self.return_type is not None:
            raise self.source.error(self.source.tree.returns, f"kernel '{self.name}' returns a value, "
                                    "so it can only be a helper", "store results into an output buffer")
        stmts, scope = translate_body(self.source.tree.body, self._scope)
        params = tuple(_parameter(spec, scope) for spec in self.params)
        self.helpers = dict(scope.helpers)
        return KernelFunction(name, params, stmts)

    def helper(self) -> KernelFunction:
        """This helper as a function of its own (a reduce op calls it; other
        calls are inlined)."""
        if self.return_type is None:
            raise self.source.error(self.source.tree, f"helper '{self.name}' returns nothing",
                                    "annotate the result: def combine(a: f32, b: f32) -> f32")
        stmts, scope = translate_body(self.source.tree.body, self._scope,
                                      return_type=self.return_type)
        params = tuple(_parameter(spec, scope) for spec in self.params)
        return KernelFunction(self.name, params, stmts, self.return_type)

    def _scope(self) -> KernelScope:
        buffers, scalars, symbols = {}, {}, {}
        for spec in self.params:
            if isinstance(spec.type, BufferType):
                denied = None
                if spec.direction == "in":
                    denied = (f"parameter '{spec.name}' is declared In",
                              "declare it InOut[...] or Out[...] to write it")
                buffers[spec.name] = BufferRef(spec.name, spec.type, write_denied=denied)
                symbols.update({s: Var(s, I64) for s in spec.type.symbols})
            else:
                scalars[spec.name] = Var(spec.name, spec.type)
        taken = set(buffers) | set(scalars) | set(symbols)
        return KernelScope(self.source, buffers=buffers, scalars=scalars, symbols=symbols,
                           names=NameAllocator(taken))


def _parameter(spec: ParamSpec, scope: KernelScope) -> Parameter:
    if not isinstance(spec.type, BufferType):
        return Parameter(spec.name, spec.type, "in")
    direction = spec.direction
    if direction is None:
        reads, writes = spec.name in scope.usage.reads, spec.name in scope.usage.writes
        direction = "inout" if reads and writes else "out" if writes else "in"
    return Parameter(spec.name, spec.type, direction)


def kernel(function=None, *, name: str | None = None):
    """Decorator: ``@hpvm.kernel`` or ``@hpvm.kernel(name="...")``."""
    if function is None:
        return lambda f: KernelDef(f, name)
    return KernelDef(function, name)
