"""``@hpvm.program``: a Python function whose body is a dataflow graph.

At program level the body may hold only: ``parallel_loop`` loops and
``task`` blocks (nodes), ``x = buffer(f32, ("H", "W"))`` (intermediate
buffers), ``for`` over a constant ``range`` and ``if`` on a constant
(unrolled / chosen at compile time), and ``return a, b`` (intermediate
buffers that are outputs).  Program parameters are buffers and scalars;
a buffer parameter that some node writes is an output; it is also an input
when its first use reads it, when annotated ``InOut[...]``, or when no
other input can tell its size (its shape symbols).
"""
from __future__ import annotations

import ast
import builtins
from functools import cached_property

from ..interp import run_module
from ..ir.draw import svg
from ..ir.graph import Module
from ..ir.kernel import Const
from ..ir.parameter import Parameter
from ..ir.types import BufferType, ScalarType
from .kernels import parameter_specs
from .nodes import build_internal, build_leaf, parse_spec
from .scope import KernelScope
from .source import FunctionSource, source_of
from .statements import StmtTranslator
from .tracer import BufferInfo, ModuleState, Tracer
from .typing_rules import literal
from .verifying import verify_module

PROGRAM_LEVEL = ("at program level write parallel_loop / task blocks, buffer(...) "
                 "declarations, or return; put computation inside a parallel_loop or task")


class ProgramDef:
    """What ``@hpvm.program`` returns: ``build()`` gives the Module,
    ``run(**inputs)`` runs it on the reference interpreter."""

    def __init__(self, function, name: str | None = None):
        self.python_function = function
        self.name = name or function.__name__
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    def __repr__(self) -> str:
        return f"<hpvm program {self.name}>"

    def _repr_svg_(self) -> str:
        """The program's dataflow graph (Jupyter shows a program so)."""
        return svg(self.build())

    @cached_property
    def source(self) -> FunctionSource:
        return source_of(self.python_function)

    def build(self) -> Module:
        """The program as a verified Module (built once, then cached)."""
        return self._module

    @cached_property
    def _module(self) -> Module:
        module = trace_program(self)
        verify_module(module)
        return module

    def run(self, **inputs) -> dict:
        """Run on the reference interpreter; returns the outputs by name."""
        return run_module(self.build(), inputs)

    __call__ = run


def program(function=None, *, name: str | None = None):
    """Decorator: ``@hpvm.program`` or ``@hpvm.program(name="...")``."""
    if function is None:
        return lambda f: ProgramDef(f, name)
    return ProgramDef(function, name)


def trace_program(prog: ProgramDef) -> Module:
    """Trace ``prog``'s body into a Module (not yet verified)."""
    source = prog.source
    state = ModuleState()
    root = Tracer(state, state.names.fresh(prog.name), source)
    specs = parameter_specs(source)
    for spec in specs:
        if isinstance(spec.type, BufferType):
            if spec.direction == "private":
                raise source.error(source.tree, f"program parameter '{spec.name}' cannot be Private",
                                   "use Buffer[...], Out[...] or InOut[...]")
            given = None if spec.direction is None else spec.direction != "out"
            root.add_buffer(BufferInfo(spec.name, spec.type, True, given,
                                       writable=spec.direction != "in"))
        else:
            root.scalars[spec.name] = spec.type
    trace_block(root, source.tree.body, top=True)
    params = tuple(_root_param(root, spec) for spec in specs) + tuple(
        Parameter(name, root.buffers[name].type, "out") for name in root.outputs)
    graph = root.graph(params)
    return Module(prog.name, dict(state.functions), {graph.name: graph, **state.graphs}, graph.name)


def _root_param(root: Tracer, spec) -> Parameter:
    if not isinstance(spec.type, BufferType):
        return Parameter(spec.name, spec.type, "in")
    info = root.buffers[spec.name]
    if spec.direction in ("out", "inout") and not info.written:
        raise root.source.error(root.source.tree, f"output '{spec.name}' is never written",
                                f"list {spec.name} in the outs of a node that writes it")
    if not info.written:
        return Parameter(spec.name, spec.type, "in")
    return Parameter(spec.name, spec.type, "inout" if info.input else "out")


def trace_block(tracer: Tracer, body, top: bool = False) -> None:
    """Trace program-level statements into ``tracer``'s graph."""
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Return) and top and index == len(body) - 1:
            _trace_return(tracer, stmt)
        elif isinstance(stmt, ast.For):
            _trace_for(tracer, stmt)
        elif isinstance(stmt, ast.With):
            _trace_task(tracer, stmt)
        elif isinstance(stmt, ast.Assign):
            _trace_buffer(tracer, stmt)
        elif isinstance(stmt, ast.If):
            test = _constant(tracer, stmt.test, "an if at program level")
            trace_block(tracer, stmt.body if test else stmt.orelse)
        elif isinstance(stmt, ast.Pass):
            continue
        else:
            raise tracer.source.error(stmt, f"'{ast.unparse(stmt).splitlines()[0]}' is not allowed at "
                                            "program level", PROGRAM_LEVEL)


def _exprs(tracer: Tracer) -> StmtTranslator:
    """An expression translator for compile-time values at program level."""
    return StmtTranslator(KernelScope(tracer.source, constants=dict(tracer.constants)))


def _constant(tracer: Tracer, node, what: str):
    value = _exprs(tracer).scalar(node)
    if not isinstance(value.expr, Const):
        raise tracer.source.error(node, f"{what} needs a compile-time constant, not '{ast.unparse(node)}'",
                                  "use Python constants, or move the decision into a kernel")
    return value.expr.value


def _marker(tracer: Tracer, call) -> str | None:
    if not isinstance(call, ast.Call):
        return None
    callee = _exprs(tracer).python_object(call.func)
    if callee is builtins.range:
        return "range"
    return getattr(callee, "hpvm_marker", None)


def _trace_for(tracer: Tracer, stmt: ast.For) -> None:
    marker = _marker(tracer, stmt.iter)
    if marker == "range":
        return _unroll(tracer, stmt)
    if marker != "parallel_loop":
        raise tracer.source.error(stmt, "a loop at program level must be parallel_loop(...) or a "
                                        "constant range(...)", PROGRAM_LEVEL)
    call = stmt.iter
    targets = stmt.target.elts if isinstance(stmt.target, ast.Tuple) else [stmt.target]
    if not all(isinstance(t, ast.Name) for t in targets):
        raise tracer.source.error(stmt.target, "parallel_loop variables must be plain names",
                                  "write: for i, j in parallel_loop(n, m, ...)")
    if not 1 <= len(call.args) <= 3 or len(call.args) != len(targets):
        raise tracer.source.error(call, f"parallel_loop has {len(call.args)} size(s) but "
                                        f"{len(targets)} loop variable(s)",
                                  "give 1 to 3 sizes and one variable per size")
    if stmt.orelse:
        raise tracer.source.error(stmt, "'for ... else' is not supported", "remove the else")
    spec = parse_spec(tracer, "loop", call, stmt.body, stmt)
    spec.dims, spec.loop_vars = list(call.args), [t.id for t in targets]
    build_leaf(tracer, spec)


def _unroll(tracer: Tracer, stmt: ast.For) -> None:
    if not isinstance(stmt.target, ast.Name) or stmt.orelse:
        raise tracer.source.error(stmt, "a program-level range loop has one variable and no else",
                                  "write: for step in range(3):")
    bounds = [_constant(tracer, arg, "a program-level range") for arg in stmt.iter.args]
    saved = dict(tracer.constants)
    for value in range(*bounds):
        tracer.constants[stmt.target.id] = literal(value)
        trace_block(tracer, stmt.body)
    tracer.constants = saved


def _trace_task(tracer: Tracer, stmt: ast.With) -> None:
    if len(stmt.items) != 1 or _marker(tracer, stmt.items[0].context_expr) != "task" or (
            stmt.items[0].optional_vars is not None):
        raise tracer.source.error(stmt, "'with' at program level must be 'with task(...):'", PROGRAM_LEVEL)
    call = stmt.items[0].context_expr
    if call.args:
        raise tracer.source.error(call, "task(...) takes keyword options only",
                                  "write task(ins=(a,), outs=(b,), name=\"t\")")
    spec = parse_spec(tracer, "task", call, stmt.body, stmt)
    if _holds_nodes(tracer, stmt.body):
        for inner in stmt.body:
            if not _is_graph_statement(tracer, inner):
                raise tracer.source.error(inner, f"task '{spec.name}' holds nodes, so it cannot also hold "
                                                 "kernel code", "move this code into its own task or "
                                                 "parallel_loop inside the task")
        build_internal(tracer, spec, trace_block)
    else:
        build_leaf(tracer, spec)


def _is_graph_statement(tracer: Tracer, stmt) -> bool:
    """True for statements allowed at program level (nodes, buffers ...)."""
    if isinstance(stmt, ast.Assign):
        return _marker(tracer, stmt.value) == "buffer"
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)
    return isinstance(stmt, (ast.For, ast.With, ast.If, ast.Pass))


def _holds_nodes(tracer: Tracer, body) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.For) and _marker(tracer, stmt.iter) == "parallel_loop":
            return True
        if isinstance(stmt, ast.With) and stmt.items and _marker(tracer, stmt.items[0].context_expr) == "task":
            return True
        if isinstance(stmt, ast.Assign) and _marker(tracer, stmt.value) == "buffer":
            return True
    return False


def _trace_buffer(tracer: Tracer, stmt: ast.Assign) -> None:
    call = stmt.value
    usage = 'write: tmp = buffer(f32, ("H", "W"))'
    if _marker(tracer, call) != "buffer" or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        raise tracer.source.error(stmt, "assignments at program level only declare buffers", usage)
    element = _exprs(tracer).python_object(call.args[0]) if call.args else None
    if len(call.args) != 2 or not isinstance(element, ScalarType):
        raise tracer.source.error(call, "buffer(...) takes an element type and a shape", usage)
    shape_node = call.args[1]
    dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
    name = stmt.targets[0].id
    if name in tracer.buffers or name in tracer.scalars:
        raise tracer.source.error(stmt.targets[0], f"'{name}' is already a buffer or parameter",
                                  "choose a new name")
    shape = tuple(_dim(tracer, d, usage) for d in dims)
    tracer.add_buffer(BufferInfo(name, BufferType(element, shape), False, False))


def _dim(tracer: Tracer, node, usage: str):
    """A buffer dimension: an int, a symbol name (string or bare), or
    ``x.shape[d]``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    symbols = {s for info in tracer.buffers.values() for s in info.type.symbols}
    if isinstance(node, ast.Name) and node.id in symbols:
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and (
            node.value.attr == "shape" and isinstance(node.value.value, ast.Name)
            and node.value.value.id in tracer.buffers and isinstance(node.slice, ast.Constant)):
        return tracer.buffers[node.value.value.id].type.shape[node.slice.value]
    value = _constant(tracer, node, "a buffer dimension")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise tracer.source.error(node, f"buffer dimension '{ast.unparse(node)}' is not a size", usage)
    return value


def _trace_return(tracer: Tracer, stmt: ast.Return) -> None:
    items = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
    for item in items:
        if not isinstance(item, ast.Name) or item.id not in tracer.buffers:
            raise tracer.source.error(item or stmt, "a program returns intermediate buffers by name",
                                      "write: return tmp  (parameters written by nodes are outputs already)")
        info = tracer.buffers[item.id]
        if info.is_param:
            continue
        if not info.written:
            raise tracer.source.error(item, f"buffer '{item.id}' is returned but never written",
                                      f"list {item.id} in the outs of a node")
        tracer.outputs.append(item.id)

