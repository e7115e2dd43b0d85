"""``parallel-reduce``: the reduction loops of kernel nodes run in parallel.

A reduction loop is what ``reduce(op, (... for ...))`` makes in the kernel
language (``For.reduce`` in the IR, core/ir/reduction.py); a node whose
kernel has them at the top level of its body can fold them with many
instances instead of one (reduce_forms.py builds the bodies):

- ``form=tree`` (GPUs): the node gets one more replication dimension of
  ``lanes`` instances, one work group (attribute ``group``) per original
  instance.  The lanes split the iterations (strided: neighbouring lanes
  read neighbouring elements), fold partial results, and combine them as a
  tree in local memory in log2(lanes) steps separated by barriers; every
  lane then holds the combined values.  What follows the last loop runs in
  lane 0, unless it is one loop of independent iterations (ivdep) and
  statements without effects: then the lanes share that loop as they
  shared the reductions (a layer norm's last pass).  Targets without work
  groups (cpu) decline the node.
- ``form=chunks`` (CPUs; any target): a node without replication gets a
  producer ``<node>_partial`` of ``lanes`` instances, each folding one
  contiguous chunk (``layout=strided``: every lanes-th iteration, as a GPU
  wants) into a small buffer of partial results per reduced variable; the
  node then folds those and runs the rest of its body.  On a GPU the two
  compose: chunks over the whole device, then a tree of the partials
  (gpu_opencl's default pipeline).
- ``form=split`` (any target): chunks for a replicated node, as split-K
  is for a matrix product: the producer's instances are the node's with
  one more dimension of ``lanes`` just outside the innermost, so that
  neighbouring instances still read neighbouring elements (a column sum
  of a row-major matrix: the lanes of one column read rows side by side
  with their neighbours' columns), and the partial results are a buffer
  of the replication's shape with the lanes inserted; the node folds its
  own.  Its replication extents must be constants or sizes of its
  kernel's buffers, and it never applies unless named or asked for.
- ``form=ordered`` (GPUs): the lanes of a replicated node compute the
  terms of each instance's fold, and one lane per instance adds them up
  in the order written (reduce_ordered.py): no result changes, float
  sums written as chains included, which it takes without
  ``reassociate``.  Work groups of ``instances`` x ``lanes``.

Statements before the last reduction loop must not write memory (every
lane runs them), and a reduction loop may not write memory or carry any
other variable between iterations; in the tree form the last one may
store when its iterations are independent and the shared loop after it
reads those elements where they were stored, in the same lanes (a
softmax's exponentials).  Options: ``form``, ``lanes`` (tree: a power of
two, the work-group size), ``layout`` and ``grain`` (chunks), ``nodes``
(``node`` or ``graph.node``; default every eligible node; these are the
DSE's knobs), ``reassociate`` (also loops that sum or multiply floats
in a chain, which infer-reductions leaves as written because another
order rounds differently: Halide's and TVM's rfactor on float sums, taken
only when the caller says the order may change: a tuner told so, which
checks every sample's outputs), ``lowered`` (only kernels lowered from
tensor ops: what gpu_opencl runs on a GPU).  A named node that is not
eligible is refused with the reason.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import PADDED_GROUPS, BindIn, Edge, Graph, KernelBody, Module, Node
from ..ir.kernel import (
    Call, Const, Expr, InstanceCount, InstanceId, Intrinsic, KernelFunction, Let, Load, Stmt,
    Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.text.printer import print_expr
from ..ir.types import I64, BufferType
from ..ir.visit import rewrite, walk
from .errors import PassError
from .infer_reductions import reassociated
from .module_tools import iter_nodes, named_kernel_nodes
from .names import NameGenerator, function_names, unique_name
from .legalize_tensor_ops import LOWERED_FROM
from .reduce_forms import (
    ReducingKernel, chunk_statements, fold_partials, iteration_count, lane_loop, names_read,
    partial_lets, product, reducing_kernel, shared_tail, stores_read_in_lane,
    tree_combine,
)
from .reduce_ordered import ordered_body, ordered_problem
from .registry import Option, register_pass

FORMS = ("tree", "chunks", "split", "ordered")
LAYOUTS = {"contiguous": "chunked", "strided": "strided"}
"""The chunks form's layouts, as reduce_forms.lane_loop names them."""
MAX_TREE_LANES = 1024
PARTIALS = "partials_of"
"""Attribute of a node form=chunks made: the node whose chunks it folds
(no second parallel-reduce splits it again)."""
SPLIT = "split"
"""Attribute of a node form=split rewrote: its lanes' count (its folds
of the partial results are short, and no later parallel-reduce spreads
them: gpu_opencl's default pipeline would give each a tree of 256)."""


@register_pass("parallel-reduce", options=[
    Option("form", str, "tree", "tree: work-group lanes combined in local memory (GPUs); "
           "chunks: a node of partial results, then the combine (CPUs); split: the same for a "
           "replicated node, its lanes a dimension outside the innermost", choices=FORMS),
    Option("lanes", int, 256, "instances sharing each reduction (tree: the work-group size)",
           minimum=2),
    Option("instances", int, 32, "ordered: the node's instances per work group (each folded "
           "by one lane)", minimum=1),
    Option("nodes", list, (), "nodes to transform, as node or graph.node "
           "(default: every eligible one)"),
    Option("layout", str, "contiguous", "chunks: each instance folds one contiguous block "
           "(CPU threads) or every lanes-th iteration (GPU: neighbours read neighbours)",
           choices=tuple(LAYOUTS)),
    Option("grain", int, 1, "chunks: fewest iterations per chunk; above 1 the number of "
           "chunks follows the sizes (at most lanes)", minimum=1),
    Option("reassociate", bool, False, "also fold loops that sum or multiply floats in a "
           "chain, in another order (their rounding changes: the caller's promise that it may)"),
    Option("lowered", bool, False, "only the kernel nodes lowered from tensor ops (attribute "
           "lowered_from), whose schedule is the lowering's, not a programmer's")])
def parallel_reduce(module: Module, form: str, lanes: int, nodes: tuple[str, ...],
                    layout: str, grain: int, reassociate: bool = False,
                    lowered: bool = False, instances: int = 32) -> Module:
    """Fold the reduction loops of kernel nodes with many instances."""
    if form == "tree" and (lanes & (lanes - 1) or lanes > MAX_TREE_LANES):
        raise PassError(Diagnostic(Location(), f"parallel-reduce: {lanes} lanes for a tree",
                                   f"give a power of two up to {MAX_TREE_LANES}: lanes=256"))
    if form == "ordered" and lanes * instances > MAX_TREE_LANES:
        raise PassError(Diagnostic(
            Location(), f"parallel-reduce: work groups of {instances} instances x {lanes} lanes",
            f"give at most {MAX_TREE_LANES} in all: instances=32 lanes=8"))
    if nodes:
        selected = named_kernel_nodes(module, nodes, "parallel-reduce")
        for graph, node in selected:
            problem = node_problem(module, graph, node, form, reassociate)
            if problem is not None:
                eligible = ", ".join(eligible_nodes(module, form, reassociate)) or "none"
                raise PassError(Diagnostic(
                    Location(graph=graph.name, node=node.name, function=node.body.function),
                    f"parallel-reduce: node '{node.name}' {problem}",
                    f"the eligible nodes are: {eligible}"))
    else:
        selected = [(g, n) for g, n in iter_nodes(module)
                    if isinstance(n.body, KernelBody)
                    and node_problem(module, g, n, form, reassociate) is None
                    and (not lowered or LOWERED_FROM in n.attributes)]
    for graph_name, node_name in [(g.name, n.name) for g, n in selected]:
        graph = module.graph(graph_name)
        if form == "tree":
            module = _tree(module, graph, graph.node(node_name), lanes, reassociate)
        elif form == "ordered":
            module = _ordered(module, graph, graph.node(node_name), lanes, instances)
        else:
            module = _chunks(module, graph, graph.node(node_name), lanes, LAYOUTS[layout], grain,
                             reassociate)
    return module


def eligible_nodes(module: Module, form: str = "tree", reassociate: bool = False) -> list[str]:
    """``graph.node`` of every node parallel-reduce can transform."""
    return [f"{g.name}.{n.name}" for g, n in iter_nodes(module) if isinstance(n.body, KernelBody)
            and node_problem(module, g, n, form, reassociate) is None]


def node_problem(module: Module, graph: Graph, node: Node, form: str,
                 reassociate: bool = False) -> str | None:
    """Why ``node`` cannot take ``form``, or None."""
    kernel = reducing_kernel(_function(module, node, reassociate or form == "ordered"),
                             lane_stores=form == "tree")
    if isinstance(kernel, str):
        return kernel
    if PARTIALS in node.attributes:
        return f"already folds chunks of node '{node.attributes[PARTIALS]}' (form=chunks made it)"
    if SPLIT in node.attributes:
        return (f"already folds the partial results of {node.attributes[SPLIT]} lanes "
                "(form=split made it)")
    if form in ("tree", "ordered"):   # one more replication dimension, work groups of it
        if form == "ordered" and not node.replication:
            return "has no replication (ordered folds the loops of many instances)"
        if len(node.replication) >= 3:
            return "already has 3 replication dimensions (the lanes need one more)"
        if "group" in node.attributes:
            return "has a work-group size already (attribute 'group')"
        if form == "tree":
            return stores_read_in_lane(kernel)
        problem = ordered_problem(kernel, len(node.replication))
        if problem is not None:
            return problem
    if form == "chunks" and node.replication:
        return ("is replicated (its instances already run in parallel; chunks is for one "
                "instance, split for each of many)")
    if form == "split":
        if not node.replication:
            return "has no replication (split is for replicated nodes, chunks for one instance)"
        if len(node.replication) >= 3:
            return "already has 3 replication dimensions (the lanes need one more)"
        extents = _extents(kernel.function, node)
        if isinstance(extents, str):
            return extents
    if graph.is_streaming:
        return "is in a streaming graph"
    early = chunk_statements(kernel)[1]
    if early is not None:
        return (f"reads '{early}' before its last reduction loop (the chunks cannot see "
                "the combined value)")
    return None


def _function(module: Module, node: Node, reassociate: bool) -> KernelFunction:
    """``node``'s kernel function, its float folds marked as reductions
    where ``reassociate`` allows their order to change."""
    function = module.function(node.body.function)
    return reassociated(function, module) if reassociate else function


def _tree(module: Module, graph: Graph, node: Node, lanes: int, reassociate: bool) -> Module:
    kernel = reducing_kernel(_function(module, node, reassociate), lane_stores=True)
    function = kernel.function
    names = NameGenerator(function_names(function))
    lane = Var(names.fresh("lane"), I64)
    body: list[Stmt] = [Let(lane.name, I64, InstanceId(len(node.replication)))]
    for index, stmt in enumerate(function.body[:kernel.tail_start]):
        if index not in kernel.loops:
            body.append(stmt)
            continue
        partials, lets = partial_lets(kernel, index, names)
        body += [*lets, *lane_loop(stmt, lane, Const(lanes, I64), "strided", names, partials),
                 *tree_combine(kernel, index, partials, lane, lanes, names)]
    body += shared_tail(function, function.body[kernel.tail_start:], lane, lanes)
    new = _added_function(module, dataclasses.replace(function, body=tuple(body)), "tree")
    rank = len(node.replication)
    rewritten = dataclasses.replace(
        node, body=KernelBody(new.name), replication=(*node.replication, Const(lanes, I64)),
        attributes={**node.attributes, "group": (1,) * rank + (lanes,)})
    return _with_nodes(module, graph, {node.name: rewritten}, (), (), new)


def _ordered(module: Module, graph: Graph, node: Node, lanes: int, instances: int) -> Module:
    kernel = reducing_kernel(_function(module, node, True))
    function = kernel.function
    names = NameGenerator(function_names(function))
    rank = len(node.replication)
    written = module.function(node.body.function)
    body = ordered_body(kernel, written.body, rank, lanes, instances, names)
    new = _added_function(module, dataclasses.replace(written, body=body), "ordered")
    rewritten = dataclasses.replace(
        node, body=KernelBody(new.name), replication=(*node.replication, Const(lanes, I64)),
        attributes={**node.attributes, "group": (1,) * (rank - 1) + (instances, lanes),
                    PADDED_GROUPS: True})
    return _with_nodes(module, graph, {node.name: rewritten}, (), (), new)


def _chunks(module: Module, graph: Graph, node: Node, lanes: int, layout: str,
            grain: int, reassociate: bool) -> Module:
    """The chunks form (a node without replication) and the split form (a
    replicated one): a producer node whose instances each fold one chunk
    of the iterations into a buffer of partial results, its lanes a
    replication dimension just outside the node's innermost (so that
    neighbouring instances stay neighbours), then the node folding them."""
    kernel = reducing_kernel(_function(module, node, reassociate))
    function = kernel.function
    names = NameGenerator(function_names(function))
    lane = Var(names.fresh("lane"), I64)
    rank = len(node.replication)
    at = max(rank - 1, 0)   # the lanes' dimension
    count = _chunk_count(kernel, lanes, grain)
    in_kernel = count if isinstance(count, Const) else InstanceCount(at)
    buffers = {r.var: names.fresh(f"{r.var}_partials")
               for index in kernel.loops for r in kernel.reductions(index)}
    outer = tuple(InstanceId(d) for d in range(at))
    shifted = _instances_shifted(function.body, at) if rank else function.body
    partial_body: list[Stmt] = [Let(lane.name, I64, InstanceId(at))]
    for index in chunk_statements(kernel)[0]:
        stmt = shifted[index]
        if index not in kernel.loops:
            partial_body.append(stmt)
            continue
        partials, lets = partial_lets(kernel, index, names)
        partial_body += [*lets, *lane_loop(stmt, lane, in_kernel, layout, names, partials)]
        position = (*outer, lane, *(InstanceId(d + 1) for d in range(at, rank)))
        partial_body += [Store(buffers[r.var], position, Var(partials[r.var], kernel.types[r.var]))
                         for r in kernel.reductions(index)]
    inner = tuple(InstanceId(d) for d in range(at, rank))
    combine_body = [fold_partials(kernel, index, buffers, count, names, outer, inner)
                    if index in kernel.loops else stmt
                    for index, stmt in enumerate(function.body)]
    extents = _extents(function, node) if rank else ()
    shape = (*extents[:at], lanes, *extents[at:])
    ports = tuple(Parameter(buffers[var], BufferType(type, shape), "out")
                  for var, type in kernel.types.items())
    partial = _added_function(module, KernelFunction(
        function.name, _read_params(function, partial_body, [e for e in extents if
                                                             isinstance(e, str)]) + ports,
        tuple(partial_body)), "partial")
    module = dataclasses.replace(module, functions={**module.functions, partial.name: partial})
    combiner = _added_function(module, KernelFunction(
        function.name, function.params + tuple(dataclasses.replace(p, direction="in")
                                               for p in ports), tuple(combine_body)), "combine")
    producer = unique_name(f"{node.name}_partial", {n.name for n in graph.nodes})
    extra_edges = tuple(Edge(producer, p.name, node.name, p.name) for p in ports)
    feeds = _feeds(graph, node.name, producer, {p.name for p in partial.params})
    attributes = {**node.attributes, **({SPLIT: lanes} if rank else {})}
    return _with_nodes(
        module, graph, {node.name: dataclasses.replace(node, body=KernelBody(combiner.name),
                                                        attributes=attributes)},
        (Node(producer, KernelBody(partial.name),
              (*node.replication[:at], count, *node.replication[at:]), node.hint,
              {PARTIALS: node.name}),),
        extra_edges + feeds, combiner)


def _instances_shifted(stmts: tuple[Stmt, ...], at: int) -> tuple[Stmt, ...]:
    """``stmts`` with the instance ids and counts of dimensions ``at`` and
    beyond one dimension further out (the lanes take dimension ``at``)."""
    def shift(node):
        if isinstance(node, (InstanceId, InstanceCount)) and node.dim >= at:
            return type(node)(node.dim + 1)
        return None
    return rewrite(stmts, shift)


def _extents(function: KernelFunction, node: Node) -> tuple[int | str, ...] | str:
    """``node``'s replication as buffer dimensions of ``function`` (a
    constant, or a size its inputs give: a symbol of an input buffer's
    shape or an integer scalar), or why not."""
    sizes = {p.name for p in function.params if not p.is_buffer and p.type.kind == "int"}
    sizes.update(symbol for p in function.params if p.is_buffer and p.direction != "out"
                 for symbol in p.type.symbols)
    extents = []
    for extent in node.replication:
        if isinstance(extent, Const):
            extents.append(int(extent.value))
        elif isinstance(extent, Var) and extent.name in sizes:
            extents.append(extent.name)
        else:
            return (f"has a replication extent that is neither a constant nor a size of its "
                    f"kernel's inputs ({print_expr(extent)}), which the partial results' "
                    "buffer needs")
    return tuple(extents)


def _chunk_count(kernel: ReducingKernel, lanes: int, grain: int) -> Expr:
    """How many chunks: ``lanes``, or with a ``grain`` above 1 as many as
    give each at least ``grain`` iterations (at most ``lanes``, at least
    one), computed from sizes and scalars when the loops' trip counts
    depend on nothing else."""
    if grain <= 1:
        return Const(lanes, I64)
    params = {p.name for p in kernel.function.params} | set(kernel.function.shape_symbols)
    work: Expr | None = None
    for index in kernel.loops:
        trips = iteration_count(kernel.function.body[index])[1]
        if any(isinstance(n, (Load, Call)) or (isinstance(n, Var) and n.name not in params)
               for n in walk(tuple(trips))):
            return Const(lanes, I64)
        total = product(trips)
        work = total if work is None else Intrinsic("max", (work, total))
    wanted = Intrinsic("max", ((work + (grain - 1)) / grain, Const(1, I64)))
    return Intrinsic("min", (wanted, Const(lanes, I64)))


def _read_params(function: KernelFunction, body, sizes=()) -> tuple[Parameter, ...]:
    """The parameters ``body`` uses, as ``in`` ports (it writes none of
    them): buffers it reads or whose shape symbols it reads, scalars; and
    those that give the ``sizes`` (shape symbols) their values."""
    used = names_read(tuple(body))
    kept = []
    for param in function.params:
        symbols = set(param.type.symbols) if param.is_buffer else set()
        sizing = param.name in sizes or (param.is_buffer and param.direction != "out"
                                         and bool(symbols & set(sizes)))
        if param.name in used or symbols & used or sizing:
            kept.append(dataclasses.replace(param, direction="in") if param.is_buffer else param)
    return tuple(kept)


def _feeds(graph: Graph, node: str, producer: str, ports: set[str]) -> tuple:
    """Copies, for ``producer``, of the edges and bindings into ``node``'s
    ``ports``."""
    edges = tuple(dataclasses.replace(e, dst_node=producer, kind="all-to-all")
                  for e in graph.edges if e.dst_node == node and e.dst_port in ports)
    binds = tuple(dataclasses.replace(b, dst_node=producer)
                  for b in graph.bind_ins if b.dst_node == node and b.dst_port in ports)
    return edges + binds


def _added_function(module: Module, function: KernelFunction, suffix: str) -> KernelFunction:
    """``function`` under a fresh name ``<name>_<suffix>``."""
    return dataclasses.replace(function, name=unique_name(f"{function.name}_{suffix}",
                                                          module.functions))


def _with_nodes(module: Module, graph: Graph, replaced: dict[str, Node], added: tuple,
                links: tuple, function: KernelFunction) -> Module:
    """``module`` with ``function`` added, ``graph``'s nodes replaced (the
    ``added`` ones go before the first), and new edges or bindings
    (``links``)."""
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.name in replaced:
            nodes += [*added, replaced[node.name]]
            added = ()
        else:
            nodes.append(node)
    edges = graph.edges + tuple(link for link in links if isinstance(link, Edge))
    bind_ins = graph.bind_ins + tuple(link for link in links if isinstance(link, BindIn))
    new_graph = dataclasses.replace(graph, nodes=tuple(nodes), edges=edges, bind_ins=bind_ins)
    return dataclasses.replace(module, functions={**module.functions, function.name: function},
                               graphs={**module.graphs, graph.name: new_graph})

