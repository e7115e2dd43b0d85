"""Hypothesis strategies that generate random, VALID HPVM IR.

    from hypothesis import given
    from hpvm.ir.testing import modules, kernel_functions, expressions

    @given(modules())
    def test_something(module): ...

Generated modules are well typed, every name is declared before use, and
they behave deterministically on any correct target: every buffer index is
in range by construction (``(non-negative) % extent``), each instance stores
only to its own element of an ``out`` buffer (``out[instance_id(0), ...]``),
atomics go to integer buffers only, loops are bounded, integer division is
by non-zero constants, floats are never converted to integers, and
barriers stand at the top level of a kernel.  ``example_inputs(module)``
gives matching input arrays for the root graph.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import strategies as st

from .graph import (
    BindIn, BindOut, ConstantBody, Edge, Graph, GraphBody, KernelBody, Module, Node,
)
from .kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Binary, Call, Cast, Compare, Const,
    Expr, ExprStmt, For, If, InstanceCount, InstanceId, Intrinsic, KernelFunction,
    Let, Load, Return, Select, Store, Unary, Var, While,
)
from .parameter import Parameter
from .types import BOOL, F32, F64, I32, I64, BufferType, ScalarType
from .visit import walk

VALUE_TYPES = (I32, I64, F32, F64)
_WEIRD = ("for", "let", "true", "in", "x y", "é", "a-b", "0x", "", "const", "graph")


@dataclass
class _Names:
    """Fresh names; with ``weird`` some come out needing the quoted form."""

    draw: object
    weird: bool = False
    counter: itertools.count = field(default_factory=itertools.count)
    used: set = field(default_factory=set)

    def fresh(self, prefix: str) -> str:
        name = f"{prefix}{next(self.counter)}"
        if self.weird and self.draw(st.booleans()):
            unused = [w for w in _WEIRD if w not in self.used]
            name = self.draw(st.sampled_from(unused)) if unused else name + " !"
        self.used.add(name)
        return name


@dataclass
class _Context:
    """What kernel code at some point may read and write."""

    names: _Names
    scalars: dict[str, ScalarType] = field(default_factory=dict)
    assignable: tuple[str, ...] = ()
    buffers: dict[str, BufferType] = field(default_factory=dict)   # readable
    arrays: dict[str, BufferType] = field(default_factory=dict)    # private arrays
    nonneg: tuple[Expr, ...] = ()        # i64 expressions known to be >= 0
    rank: int = 0                        # replication dims (0: a helper)
    outputs: dict[str, BufferType] = field(default_factory=dict)
    atomics: dict[str, BufferType] = field(default_factory=dict)
    helpers: tuple[KernelFunction, ...] = ()


def _extent(dim) -> Expr:
    return Var(dim, I64) if isinstance(dim, str) else Const(dim, I64)


# ------------------------------------------------------------ expressions

def _constant(draw, t: ScalarType) -> Const:
    if t.is_bool:
        return Const(draw(st.booleans()), BOOL)
    if t.is_int:
        return Const(draw(st.integers(-100, 100) | st.integers(-(1 << (t.bits - 1)),
                                                              (1 << (t.bits - 1)) - 1)), t)
    width = 32 if t == F32 else 64
    return Const(draw(st.floats(-1e6, 1e6, allow_nan=False, width=width)), t)


def _safe_indices(draw, ctx: _Context, shape) -> tuple[Expr, ...]:
    """In-range indices into a buffer of ``shape`` (every extent >= 1)."""
    def position() -> Expr:
        terms = draw(st.lists(st.sampled_from(ctx.nonneg), min_size=1, max_size=2))
        return terms[0] if len(terms) == 1 else Binary("add", terms[0], terms[1])
    if len(shape) > 1 and draw(st.integers(0, 4)) == 0:
        total = _extent(shape[0])
        for dim in shape[1:]:
            total = Binary("mul", total, _extent(dim))
        return (Binary("rem", position(), total),)
    return tuple(Binary("rem", position(), _extent(dim)) for dim in shape)


def _leaf(draw, ctx: _Context, t: ScalarType) -> Expr:
    options = ["const"]
    if any(v == t for v in ctx.scalars.values()):
        options += ["var", "var"]
    readable = {n: b for n, b in {**ctx.buffers, **ctx.arrays}.items() if b.element == t}
    if readable:
        options += ["load", "load"]
    if t == I64 and ctx.rank:
        options += ["instance"]
    choice = draw(st.sampled_from(options))
    if choice == "var":
        return Var(draw(st.sampled_from([n for n, v in ctx.scalars.items() if v == t])), t)
    if choice == "load":
        name = draw(st.sampled_from(sorted(readable)))
        return Load(name, _safe_indices(draw, ctx, readable[name].shape), t)
    if choice == "instance":
        dim = draw(st.integers(0, ctx.rank - 1))
        return draw(st.sampled_from([InstanceId(dim), InstanceCount(dim)]))
    return _constant(draw, t)


def _numeric(draw, ctx, t: ScalarType, depth: int) -> Expr:
    def sub(u=t):
        return _expr(draw, ctx, u, depth - 1)
    kinds = ["binary", "unary", "select", "cast", "intrinsic"]
    kinds += ["call"] if any(h.return_type == t for h in ctx.helpers) else []
    kind = draw(st.sampled_from(kinds))
    if kind == "binary":
        ops = ["add", "sub", "mul"] + (["and", "or", "xor", "shl", "shr", "div", "rem"]
                                       if t.is_int else ["div"])
        op = draw(st.sampled_from(ops))
        if t.is_int and op in ("div", "rem"):
            return Binary(op, sub(), Const(draw(st.integers(1, 9)), t))
        return Binary(op, sub(), sub())
    if kind == "unary":
        return Unary(draw(st.sampled_from(["neg", "bitnot"] if t.is_int else ["neg"])), sub())
    if kind == "select":
        return Select(sub(BOOL), sub(), sub())
    if kind == "cast":
        sources = [u for u in VALUE_TYPES + (BOOL,) if not (u.is_float and t.is_int)]
        return Cast(sub(draw(st.sampled_from(sources))), t)
    if kind == "call":
        helper = draw(st.sampled_from([h for h in ctx.helpers if h.return_type == t]))
        return Call(helper.name, tuple(sub(p.type) for p in helper.params), t)
    if t.is_float:
        name = draw(st.sampled_from(["sqrt", "exp", "log", "sin", "cos", "tanh", "abs",
                                     "floor", "ceil", "min", "max", "pow"]))
    else:
        name = draw(st.sampled_from(["abs", "min", "max"]))
    arity = 2 if name in ("min", "max", "pow") else 1
    return Intrinsic(name, tuple(sub() for _ in range(arity)))


def _boolean(draw, ctx, depth: int) -> Expr:
    kind = draw(st.sampled_from(["compare", "compare", "logic", "not"]))
    if kind == "compare":
        u = draw(st.sampled_from(VALUE_TYPES))
        op = draw(st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]))
        return Compare(op, _expr(draw, ctx, u, depth - 1), _expr(draw, ctx, u, depth - 1))
    if kind == "logic":
        op = draw(st.sampled_from(["land", "lor"]))
        return Binary(op, _expr(draw, ctx, BOOL, depth - 1), _expr(draw, ctx, BOOL, depth - 1))
    return Unary("not", _expr(draw, ctx, BOOL, depth - 1))


def _expr(draw, ctx: _Context, t: ScalarType, depth: int) -> Expr:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return _leaf(draw, ctx, t)
    return _boolean(draw, ctx, depth) if t.is_bool else _numeric(draw, ctx, t, depth)


@st.composite
def expressions(draw, scope: dict[str, ScalarType] | None = None,
                type: ScalarType | None = None, max_depth: int = 3) -> Expr:
    """A well-typed expression over the scalar variables of ``scope``
    (default: one variable of each value type), of ``type`` (default: any)."""
    if scope is None:
        scope = {f"{t}_var": t for t in VALUE_TYPES}
    t = type or draw(st.sampled_from(VALUE_TYPES + (BOOL,)))
    ctx = _Context(_Names(draw), scalars=dict(scope), nonneg=(Const(0, I64),))
    return _expr(draw, ctx, t, max_depth)


# ------------------------------------------------------------- statements

def _block(draw, ctx: _Context, depth: int, top: bool = False) -> tuple:
    ctx = replace(ctx, scalars=dict(ctx.scalars), arrays=dict(ctx.arrays))
    kinds = ["let", "let", "assign", "store", "if", "for", "while", "array", "call"]
    kinds += ["atomic", "atomic"] if ctx.atomics else []
    kinds += ["barrier"] if top and ctx.rank else []
    stmts = []
    for _ in range(draw(st.integers(0, 4 if top else 2))):
        kind = draw(st.sampled_from(kinds))
        if depth <= 0 and kind in ("if", "for", "while"):
            kind = "let"
        stmts.extend(_statement(draw, ctx, kind, depth))
    return tuple(stmts)


def _statement(draw, ctx: _Context, kind: str, depth: int) -> list:
    if kind == "assign" and not ctx.assignable:
        kind = "let"
    return _STATEMENT_MAKERS[kind](draw, ctx, depth)


def _let(draw, ctx: _Context, depth: int) -> list:
    t = draw(st.sampled_from(VALUE_TYPES))
    name = ctx.names.fresh("v")
    stmt = Let(name, t, _expr(draw, ctx, t, 2))
    ctx.scalars[name] = t
    ctx.assignable += (name,)
    return [stmt]


def _assign(draw, ctx: _Context, depth: int) -> list:
    name = draw(st.sampled_from(ctx.assignable))
    return [Assign(name, _expr(draw, ctx, ctx.scalars[name], 2))]


def _store(draw, ctx: _Context, depth: int) -> list:
    targets = {**ctx.outputs, **ctx.arrays}
    if not targets:
        return []
    name = draw(st.sampled_from(sorted(targets)))
    if name in ctx.outputs:   # each instance writes only its own element
        indices = tuple(InstanceId(d) for d in range(ctx.rank))
    else:
        indices = _safe_indices(draw, ctx, targets[name].shape)
    return [Store(name, indices, _expr(draw, ctx, targets[name].element, 2))]


def _if(draw, ctx: _Context, depth: int) -> list:
    return [If(_expr(draw, ctx, BOOL, 2), _block(draw, ctx, depth - 1),
               _block(draw, ctx, depth - 1))]


def _while(draw, ctx: _Context, depth: int) -> list:
    """``while c < n { ...; c = c + 1 }``: bounded, with c never assigned
    in the body."""
    counter = ctx.names.fresh("c")
    inner = replace(ctx, nonneg=ctx.nonneg + (Var(counter, I64),),
                    scalars={**ctx.scalars, counter: I64})
    body = _block(draw, inner, depth - 1) + (
        Assign(counter, Binary("add", Var(counter, I64), Const(1, I64))),)
    limit = Const(draw(st.integers(0, 3)), I64)
    return [Let(counter, I64, Const(0, I64)),
            While(Compare("lt", Var(counter, I64), limit), body)]


def _array(draw, ctx: _Context, depth: int) -> list:
    name = ctx.names.fresh("a")
    t = draw(st.sampled_from(VALUE_TYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    ctx.arrays[name] = BufferType(t, shape)
    return [ArrayDecl(name, t, shape, "private")]


def _call(draw, ctx: _Context, depth: int) -> list:
    if not ctx.helpers:
        return []
    helper = draw(st.sampled_from(ctx.helpers))
    args = tuple(_expr(draw, ctx, p.type, 2) for p in helper.params)
    return [ExprStmt(Call(helper.name, args, helper.return_type))]


def _atomic(draw, ctx: _Context, depth: int) -> list:
    name = draw(st.sampled_from(sorted(ctx.atomics)))
    buffer = ctx.atomics[name]
    stmts, result = [], None
    if draw(st.booleans()):
        result = ctx.names.fresh("old")
        stmts.append(Let(result, buffer.element, None))
        ctx.scalars[result] = buffer.element   # read only after the atomic
    op = draw(st.sampled_from(["add", "min", "max"]))
    stmts.append(AtomicUpdate(op, name, _safe_indices(draw, ctx, buffer.shape),
                              _expr(draw, ctx, buffer.element, 2), result))
    return stmts


def _barrier(draw, ctx: _Context, depth: int) -> list:
    return [Barrier()]


def _loop(draw, ctx: _Context, depth: int) -> list:
    """A counted loop over a constant range of non-negative values."""
    var = ctx.names.fresh("k")
    count = draw(st.integers(0, 4))
    inner = replace(ctx, nonneg=ctx.nonneg + (Var(var, I64),), scalars={**ctx.scalars, var: I64})
    body = _block(draw, inner, depth - 1)
    start, stop, step = (count - 1, -1, -1) if draw(st.booleans()) else (
        0, count, draw(st.integers(1, 2)))
    unroll = draw(st.none() | st.integers(1, 4))
    # ivdep promises no memory dependence between iterations: only without stores.
    writes = any(isinstance(n, (Store, AtomicUpdate)) for n in walk(body))
    ivdep = not writes and draw(st.booleans())
    trip = draw(st.none() | st.just(len(range(start, stop, step))))
    return [For(var, Const(start, I64), Const(stop, I64), step, body, unroll, ivdep, trip)]


_STATEMENT_MAKERS = {
    "let": _let, "assign": _assign, "store": _store, "if": _if, "for": _loop,
    "while": _while, "array": _array, "call": _call, "atomic": _atomic, "barrier": _barrier,
}


# -------------------------------------------------------------- functions

def _helper(draw, names: _Names) -> KernelFunction:
    t = draw(st.sampled_from(VALUE_TYPES))
    params = tuple(Parameter(names.fresh("p"), draw(st.sampled_from(VALUE_TYPES)))
                   for _ in range(draw(st.integers(0, 2))))
    ctx = _Context(names, scalars={p.name: p.type for p in params},
                   nonneg=(Const(0, I64), Const(1, I64)))
    body = _block(draw, ctx, 1, top=True)
    ctx.scalars.update({s.name: s.type for s in body if isinstance(s, Let) and s.value})
    return KernelFunction(names.fresh("h"), params, body + (Return(_expr(draw, ctx, t, 2)),), t)


def _kernel(draw, names: _Names, shape: tuple, helpers=()) -> KernelFunction:
    def buffer_param(direction, element=None):
        element = element or draw(st.sampled_from(VALUE_TYPES))
        return Parameter(names.fresh("b"), BufferType(element, shape), direction,
                         draw(st.booleans()))
    # A symbolic out shape is taken from an input, so then one is needed.
    symbolic = any(isinstance(d, str) for d in shape)
    params = [buffer_param("in") for _ in range(draw(st.integers(int(symbolic), 2)))]
    params += [Parameter(names.fresh("s"), draw(st.sampled_from(VALUE_TYPES)))
               for _ in range(draw(st.integers(0, 2)))]
    output = buffer_param("out")
    atomics = [buffer_param("out", I32)] if draw(st.integers(0, 2)) == 0 else []
    params += [output, *atomics]
    rank = len(shape)
    ctx = _Context(
        names,
        scalars={**{d: I64 for d in shape if isinstance(d, str)},
                 **{p.name: p.type for p in params if not p.is_buffer}},
        buffers={p.name: p.type for p in params if p.direction == "in" and p.is_buffer},
        nonneg=tuple(InstanceId(d) for d in range(rank)) + (Const(0, I64),),
        rank=rank, outputs={output.name: output.type},
        atomics={p.name: p.type for p in atomics}, helpers=tuple(helpers))
    body = _block(draw, ctx, 2, top=True)
    final = Store(output.name, tuple(InstanceId(d) for d in range(rank)),
                  _expr(draw, ctx, output.type.element, 2))
    tail = (Return(),) if draw(st.booleans()) else ()
    return KernelFunction(names.fresh("k"), tuple(params), body + (final,) + tail)


@st.composite
def helper_functions(draw) -> KernelFunction:
    """A pure scalar helper ``@h(in a: T, ...) -> T`` ending in a return."""
    return _helper(draw, _Names(draw))


@st.composite
def shapes(draw) -> tuple:
    """A buffer shape of 1-3 dims, each a small int or a shape symbol."""
    rank = draw(st.integers(1, 3))
    return tuple(draw(st.sampled_from([s, 1, 2, 3, 4])) for s in ("H", "W", "D")[:rank])


@st.composite
def kernel_functions(draw, shape: tuple | None = None) -> KernelFunction:
    """A node kernel meant to run with replication ``shape`` (drawn when
    None): ``in`` buffers and scalars, an ``out`` buffer of that shape
    written at the instance's own element, maybe an i32 atomic buffer."""
    return _kernel(draw, _Names(draw), shape or draw(shapes()))


# ----------------------------------------------------------------- graphs

def _constant_node(draw, names: _Names, type: BufferType) -> Node:
    values = draw(st.lists(st.integers(-9, 9), min_size=math.prod(type.shape),
                           max_size=math.prod(type.shape)))
    data = np.array(values, dtype=type.element.numpy_dtype).reshape(type.shape)
    return Node(names.fresh("c"), ConstantBody(type, data))


def _decorate(draw, node: Node) -> Node:
    """Give a node a hint and attributes that change nothing it computes."""
    hint = draw(st.sampled_from([None, "cpu", "gpu_opencl", "fpga-aoc"]))
    attrs = draw(st.dictionaries(st.sampled_from(["note", "level", "ratio", "flags", "x y"]),
                                 st.sampled_from(["text \"q\"\n", 3, -0.5, 1e-9,
                                                  (True, "a", (1, 2)), ()]), max_size=2))
    return replace(node, hint=hint, attributes=attrs)


def _graph(draw, names: _Names, shape: tuple, kernels, decorate: bool) -> Graph:
    """A graph running ``kernels`` in order; inputs come from graph
    parameters, constants or earlier nodes (all-to-all edges)."""
    params, nodes, edges, bind_ins = [], [], [], []
    produced: list[tuple[str, str, BufferType]] = []
    consumed = set()
    concrete = all(isinstance(d, int) for d in shape)
    for kernel in kernels:
        node_name = names.fresh("n")
        for p in kernel.params:
            if p.direction != "in":
                continue
            sources = [src for src in produced if src[2] == p.type]
            choice = draw(st.sampled_from(["param"] + ["edge"] * bool(sources and p.is_buffer)
                                          + ["const"] * (concrete and p.is_buffer)))
            if choice == "edge":
                source = draw(st.sampled_from(sources))
                consumed.add(source)
                edges.append(Edge(source[0], source[1], node_name, p.name))
            elif choice == "const":
                constant = _constant_node(draw, names, p.type)
                nodes.append(constant)
                edges.append(Edge(constant.name, "value", node_name, p.name))
            else:
                param = Parameter(names.fresh("x"), p.type, "in")
                params.append(param)
                bind_ins.append(BindIn(param.name, node_name, p.name))
        node = Node(node_name, KernelBody(kernel.name), tuple(_extent(d) for d in shape))
        nodes.append(_decorate(draw, node) if decorate else node)
        produced += [(node_name, p.name, p.type) for p in kernel.params if p.direction == "out"]
    bind_outs = []
    for source in produced:
        if source not in consumed or draw(st.booleans()):
            param = Parameter(names.fresh("y"), source[2], "out")
            params.append(param)
            bind_outs.append(BindOut(source[0], source[1], param.name))
    return Graph(names.fresh("g"), tuple(params), tuple(nodes), tuple(edges),
                 tuple(bind_ins), tuple(bind_outs))


def _wrap(names: _Names, child: Graph) -> Graph:
    """A graph with ``child``'s interface running it as one internal node."""
    node = names.fresh("inner")
    bind_ins = tuple(BindIn(p.name, node, p.name) for p in child.params if p.direction == "in")
    bind_outs = tuple(BindOut(node, p.name, p.name) for p in child.params
                      if p.direction == "out")
    return Graph(names.fresh("g"), child.params, (Node(node, GraphBody(child.name)),), (),
                 bind_ins, bind_outs)


@st.composite
def modules(draw, max_nodes: int = 3, hierarchy: bool = True, helpers: bool = True,
            weird_names: bool = False, decorations: bool = False) -> Module:
    """A valid module: a root graph of 1..max_nodes kernel nodes sharing one
    replication shape, maybe inside an internal node (``hierarchy``), with
    scalar helper functions (``helpers``).  ``weird_names`` draws names
    that need quoting in the text form; ``decorations`` adds hints and
    attributes (both for syntax tests, not for running)."""
    names = _Names(draw, weird_names)
    shape = draw(shapes())
    helper_list = [_helper(draw, names) for _ in range(draw(st.integers(0, 2 * helpers)))]
    kernels = [_kernel(draw, names, shape, helper_list)
               for _ in range(draw(st.integers(1, max_nodes)))]
    graph = _graph(draw, names, shape, kernels, decorations)
    graphs = [graph]
    if hierarchy and draw(st.booleans()):
        graphs.append(_wrap(names, graph))
    functions = {f.name: f for f in helper_list + kernels}
    return Module(names.fresh("m"), functions, {g.name: g for g in graphs}, graphs[-1].name)


def example_inputs(module: Module, sizes: dict[str, int] | None = None,
                   seed: int = 0) -> dict:
    """Random inputs for the root graph's ``in`` parameters: arrays whose
    shape symbols take ``sizes`` (default 3 for H, 2 for the others) and
    Python numbers for scalars."""
    rng = np.random.default_rng(seed)
    sizes = {"H": 3, **(sizes or {})}
    inputs = {}
    for p in module.root_graph.params:
        if p.direction == "out":
            continue
        t = p.type.element if p.is_buffer else p.type
        shape = p.type.concrete_shape({s: sizes.get(s, 2) for s in p.type.symbols}) \
            if p.is_buffer else ()
        values = rng.integers(-9, 10, size=shape) if t.is_int else rng.uniform(-4, 4, shape)
        array = np.asarray(values).astype(t.numpy_dtype)
        inputs[p.name] = array if p.is_buffer else array.item()
    return inputs
