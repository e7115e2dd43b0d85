"""Nodes made by ``parallel_loop`` and ``task`` blocks of a program.

``NodeSpec`` is what the block declares; ``build_leaf`` translates its body
to a kernel, chooses port directions, makes sure every shape symbol the
node needs is bound by one of its inputs, and wires it into the graph."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..ir.graph import GraphBody, KernelBody, Node
from ..ir.kernel import Cast, InstanceId, KernelFunction, Var
from ..ir.parameter import Parameter
from ..ir.types import I64
from .kernels import translate_body
from .scope import BufferRef, KernelScope, NameAllocator
from .statements import StmtTranslator
from .tracer import BufferInfo, Tracer

OPTIONS = ("ins", "outs", "privates", "name", "hint")
MAX_DIMS = 3


@dataclass
class NodeSpec:
    """A parallel_loop / task block: declared buffers, replication, body."""

    kind: str                      # "loop" or "task"
    where: ast.AST
    body: list
    name: str
    hint: str | None = None
    ins: list[str] = field(default_factory=list)
    outs: list[str] = field(default_factory=list)
    privates: list[str] = field(default_factory=list)
    dims: list = field(default_factory=list)
    loop_vars: list[str] = field(default_factory=list)

    def declared(self) -> list[str]:
        return list(dict.fromkeys(self.ins + self.outs + self.privates))


def parse_spec(tracer, kind: str, call: ast.Call, body, where) -> NodeSpec:
    """Read the keywords of ``parallel_loop(...)`` / ``task(...)``."""
    source = tracer.source
    spec = NodeSpec(kind, where, body, name="")
    for keyword in call.keywords:
        if keyword.arg not in OPTIONS:
            raise source.error(keyword.value if keyword.arg else call,
                               f"unknown option '{keyword.arg}' of {kind}",
                               f"options are {', '.join(OPTIONS)}")
        if keyword.arg in ("name", "hint"):
            if not (isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)):
                raise source.error(keyword.value, f"{keyword.arg}= must be a string constant",
                                   f'write {keyword.arg}="..."')
            setattr(spec, keyword.arg, keyword.value.value)
        else:
            setattr(spec, keyword.arg, _buffer_names(tracer, keyword.value, keyword.arg))
    _check_overlaps(source, spec, call)
    default = "loop" if kind == "loop" else "task"
    spec.name = tracer.node_names.fresh(spec.name or f"{default}{len(tracer.nodes)}")
    return spec


def _buffer_names(tracer, node, option: str) -> list[str]:
    items = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    names = []
    for item in items:
        if not isinstance(item, ast.Name) or item.id not in tracer.buffers:
            known = ", ".join(tracer.buffers) or "none"
            raise tracer.source.error(item, f"'{ast.unparse(item)}' in {option}= is not a buffer of "
                                            f"this program", f"name buffers here; known: {known}")
        if option != "ins" and not tracer.buffers[item.id].writable:
            raise tracer.source.error(item, f"buffer '{item.id}' is read-only here (an input of the "
                                            "enclosing task)", f"add {item.id} to the enclosing task's outs")
        names.append(item.id)
    return names


def _check_overlaps(source, spec: NodeSpec, where) -> None:
    for name in spec.privates:
        if name in spec.ins or name in spec.outs:
            raise source.error(where, f"buffer '{name}' is both private and in ins/outs",
                               "a private buffer is a per-instance copy: list it only in privates")


def kernel_scope(tracer, spec: NodeSpec) -> KernelScope:
    """The names a node's body sees: its declared buffers, the visible
    scalars and shape symbols, and compile-time constants."""
    buffers = {}
    for name in spec.declared():
        denied = None
        if name in spec.ins and name not in spec.outs and name not in spec.privates:
            denied = (f"node '{spec.name}' writes buffer '{name}', which it lists in ins only",
                      f"add {name} to outs=(...)")
        buffers[name] = BufferRef(name, tracer.buffers[name].type, write_denied=denied)
    symbols = {s: Var(s, I64) for info in tracer.buffers.values() for s in info.type.symbols}
    scalars = {name: Var(name, t) for name, t in tracer.scalars.items()}
    undeclared = {name: spec.name for name in tracer.buffers if name not in buffers}
    taken = set(tracer.buffers) | set(scalars) | set(symbols)
    return KernelScope(tracer.source, buffers=buffers, scalars=scalars, symbols=symbols,
                       constants=dict(tracer.constants), undeclared=undeclared,
                       names=NameAllocator(taken))


def replication(tracer, spec: NodeSpec, scope: KernelScope) -> tuple:
    """The replication expressions (i64) of a parallel loop."""
    translator = StmtTranslator(scope)
    result = []
    for dim in spec.dims:
        value = translator.scalar(dim)
        if not value.type.is_int:
            raise tracer.source.error(dim, f"a parallel_loop size must be an integer, not {value.type}",
                                      f"cast it: i64({ast.unparse(dim)})")
        result.append(value.expr if value.type == I64 else Cast(value.expr, I64))
    return tuple(result)


def build_leaf(tracer, spec: NodeSpec) -> None:
    """Translate a leaf block and add its node to ``tracer``'s graph."""
    dims_scope = kernel_scope(tracer, spec)
    rep = replication(tracer, spec, dims_scope)
    prelude = [(var, InstanceId(d)) for d, var in enumerate(spec.loop_vars)]
    stmts, scope = translate_body(spec.body, lambda: kernel_scope(tracer, spec), prelude)
    usage = scope.usage
    for kind in ("symbols", "scalars"):
        for name in getattr(dims_scope.usage, kind):
            usage.note(kind, name)
    ports = port_directions(tracer, spec, lambda name: name in usage.reads)
    scalars = [n for n in tracer.scalars if n in usage.scalars]
    bind_symbols(tracer, spec, ports, scalars, usage.symbols)
    params = tuple(Parameter(n, tracer.buffers[n].type, d) for n, d in ports.items()) + tuple(
        tracer.scalar_param(n) for n in scalars)
    for name, helper in scope.helpers.items():
        known = tracer.module.functions.get(name)
        if known is not None and known != helper:
            raise tracer.source.error(spec.where, f"the reduce op '@{name}' shares its name with "
                                      "another function of the program", "rename the helper")
        tracer.module.function_names.taken.add(name)
        tracer.module.functions[name] = helper
    function = KernelFunction(tracer.module.function_names.fresh(spec.name), params, stmts)
    tracer.module.functions[function.name] = function
    add_node(tracer, spec, Node(spec.name, KernelBody(function.name), rep, spec.hint), ports, scalars)


def port_directions(tracer, spec: NodeSpec, body_reads) -> dict[str, str]:
    """Direction of each declared buffer port (see tracer.py)."""
    ports = {}
    for name in spec.declared():
        if name in spec.privates:
            reads, direction = True, "private"
        elif name in spec.outs:
            reads = name in spec.ins or body_reads(name)
            direction = None
        else:
            reads, direction = True, "in"
        tracer.decide_input(name, reads)
        if direction is None:
            direction = "inout" if tracer.has_value(name) else "out"
        else:
            _require_value(tracer, spec, name)
        ports[name] = direction
    return ports


def _require_value(tracer, spec: NodeSpec, name: str) -> None:
    if not tracer.has_value(name):
        raise tracer.source.error(spec.where, f"node '{spec.name}' reads buffer '{name}' before any "
                                              "node writes it", f"write {name} in an earlier node, or "
                                              "list it in outs only")


def bind_symbols(tracer, spec: NodeSpec, ports: dict, scalars: list, used: list) -> None:
    """Add ports so that every shape symbol the node needs is bound by an
    input (an int scalar of that name, or a buffer whose shape names it)."""
    needed = list(used)
    for name, direction in ports.items():
        if direction == "out":
            needed += [s for s in tracer.buffers[name].type.symbols if s not in needed]
    for symbol in needed:
        if _is_bound(tracer, symbol, ports, scalars):
            continue
        scalar_type = tracer.scalars.get(symbol)
        if scalar_type is not None and scalar_type.is_int:
            scalars.append(symbol)
            continue
        holder = tracer.buffer_with_symbol(symbol)
        if holder is None or holder in ports:
            raise tracer.source.error(spec.where, f"node '{spec.name}' needs size '{symbol}', but none of "
                                                  "its inputs has that dimension",
                                      f"add a buffer whose shape has '{symbol}' to ins, or a parameter "
                                      f"{symbol}: i64 to the program")
        ports[holder] = "in"


def _is_bound(tracer, symbol: str, ports: dict, scalars: list) -> bool:
    if symbol in scalars and tracer.scalars[symbol].is_int:
        return True
    return any(d != "out" and symbol in tracer.buffers[n].type.symbols for n, d in ports.items())


def add_node(tracer, spec: NodeSpec, node: Node, ports: dict, scalars: list) -> None:
    """Append ``node`` and wire its ports from / to the buffers' values."""
    tracer.nodes.append(node)
    for name, direction in ports.items():
        if direction != "out":
            tracer.feed(node.name, name, name)
    for name, direction in ports.items():
        if direction in ("out", "inout"):
            tracer.produce(node.name, name, name)
    for name in scalars:
        tracer.use_scalar(name, node.name)



def build_internal(tracer, spec: NodeSpec, trace_block) -> None:
    """A task holding loops / tasks: an internal node whose child graph is
    traced by ``trace_block(child_tracer, body)``."""
    if spec.privates:
        raise tracer.source.error(spec.where, f"task '{spec.name}' holds nodes, so it has no private buffers",
                                  "list private buffers on the inner parallel_loop")
    child = Tracer(tracer.module, tracer.module.names.fresh(spec.name), tracer.source, parent=tracer,
                   scalars=dict(tracer.scalars), constants=dict(tracer.constants))
    for name in spec.declared():
        if name in spec.ins:
            tracer.decide_input(name, True)
            _require_value(tracer, spec, name)
        outer = tracer.buffers[name]
        child_input = None if outer.input is None else tracer.has_value(name)
        child.add_buffer(BufferInfo(name, outer.type, True, child_input, writable=name in spec.outs))
    trace_block(child, spec.body)
    ports = {}
    for name, info in child.buffers.items():
        if not info.is_param:
            continue
        tracer.decide_input(name, bool(info.input))
        if info.input:
            _require_value(tracer, spec, name)
        if info.input or info.written:
            ports[name] = ("inout" if info.input else "out") if info.written else "in"
    params = tuple(Parameter(n, child.buffers[n].type, d) for n, d in ports.items()) + tuple(
        child.scalar_param(n) for n in child.used_scalars)
    graph = child.graph(params)
    tracer.module.graphs[graph.name] = graph
    node = Node(spec.name, GraphBody(graph.name), (), spec.hint)
    add_node(tracer, spec, node, ports, list(child.used_scalars))
