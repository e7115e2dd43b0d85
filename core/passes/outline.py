"""Outlining: a set of sibling leaf nodes becomes one internal node.

The nodes move, with the edges between them, into a new child graph; the
new internal node takes their place.  Each distinct value flowing in (a
graph parameter or a producer's port) becomes one ``in`` parameter of the
child graph, named after its source; each member port read outside the set
(by an edge or the enclosing graph's outputs) becomes one ``out``
parameter, named ``<node>_<port>``.  A member updating a buffer in place
(``inout``) is no exception: its incoming value enters as an ``in``
parameter and its updated value, when read outside, leaves as an ``out``
one, so the internal node never changes its inputs.

The runtime outlines the partitions a target asks for (Target.partitions)
so that the target runs each as one launch: an OpenVINO model, an NVDLA
loadable, a CUDA graph.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import HpvmError
from ..interp.graph_exec import topological_order
from ..ir.graph import BindIn, BindOut, Graph, GraphBody, Module, Node
from ..ir.parameter import Parameter
from ..target import NodeRef
from .names import NameGenerator, unique_name


class OutlineError(HpvmError):
    """The nodes cannot become one internal node (the message says why)."""


def outline(module: Module, graph_name: str, members: list[str], name: str) -> tuple[Module, str]:
    """``module`` with nodes ``members`` of graph ``graph_name`` moved into
    a new internal node named ``name`` (made unique); returns the module
    and the node's name.  OutlineError when the set is not one convex
    group of leaf nodes joined by plain (non-streaming, all-to-all) data."""
    graph = module.graph(graph_name)
    inside = set(members)
    _check(module, graph, inside)
    node_name = unique_name(name, {n.name for n in graph.nodes})
    child_name = unique_name(f"{graph_name}_{node_name}", module.graphs)
    params = NameGenerator()
    ins: dict[tuple[str, str], str] = {}      # source (node or "", port) -> child param
    outs: dict[tuple[str, str], str] = {}     # member port -> child param
    child_params: list[Parameter] = []
    child_bind_ins, child_bind_outs, child_edges, parent_edges = [], [], [], []

    def input_param(source: tuple[str, str], type_) -> str:
        if source not in ins:
            ins[source] = params.fresh("_".join(p for p in source if p))
            child_params.append(Parameter(ins[source], type_, "in"))
        return ins[source]

    def output_param(member: str, port: str) -> str:
        if (member, port) not in outs:
            outs[(member, port)] = params.fresh(f"{member}_{port}")
            type_ = module.node_param(graph.node(member), port).type
            child_params.append(Parameter(outs[(member, port)], type_, "out"))
        return outs[(member, port)]

    parent_bind_ins = []
    for b in graph.bind_ins:
        if b.dst_node in inside:
            param = input_param(("", b.param), graph.param(b.param).type)
            child_bind_ins.append(BindIn(param, b.dst_node, b.dst_port))
            parent_bind_ins.append(BindIn(b.param, node_name, param))
        else:
            parent_bind_ins.append(b)
    for e in graph.edges:
        if e.src_node in inside and e.dst_node in inside:
            child_edges.append(e)
        elif e.dst_node in inside:
            source_type = module.node_param(graph.node(e.src_node), e.src_port).type
            param = input_param((e.src_node, e.src_port), source_type)
            child_bind_ins.append(BindIn(param, e.dst_node, e.dst_port))
            parent_edges.append(replace(e, dst_node=node_name, dst_port=param))
        elif e.src_node in inside:
            parent_edges.append(replace(e, src_node=node_name,
                                        src_port=output_param(e.src_node, e.src_port)))
        else:
            parent_edges.append(e)
    parent_bind_outs = []
    for b in graph.bind_outs:
        if b.src_node in inside:
            parent_bind_outs.append(BindOut(node_name, output_param(b.src_node, b.src_port),
                                            b.param))
        else:
            parent_bind_outs.append(b)
    child_bind_outs = [BindOut(member, port, param) for (member, port), param in outs.items()]
    # Parameters of one graph: inputs first, as the text form prints them.
    child_params.sort(key=lambda p: p.direction != "in")
    child = Graph(child_name, tuple(child_params),
                  tuple(n for n in graph.nodes if n.name in inside), tuple(child_edges),
                  tuple(child_bind_ins), tuple(child_bind_outs))
    parent_nodes, placed = [], False
    for n in graph.nodes:
        if n.name not in inside:
            parent_nodes.append(n)
        elif not placed:
            parent_nodes.append(Node(node_name, GraphBody(child_name)))
            placed = True
    parent = Graph(graph.name, graph.params, tuple(parent_nodes), tuple(_unique(parent_edges)),
                   tuple(_unique(parent_bind_ins)), tuple(parent_bind_outs))
    graphs = {key: (parent if key == graph_name else g) for key, g in module.graphs.items()}
    graphs[child_name] = child
    return replace(module, graphs=graphs), node_name


def convex_groups(graph: Graph, chosen: set[str]) -> list[list[str]]:
    """``chosen`` nodes of ``graph`` split into as few groups as this greedy
    walk finds, each convex (outlinable): in producer-first order a node
    joins the group of its first chosen producer unless a path from that
    group reaches it through a node outside the group; a node no group can
    take starts one.  A source left alone (a constant read by a node that
    joined another group) joins its readers' group when they share one."""
    producers: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    readers: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    for e in graph.edges:
        producers[e.dst_node].append(e.src_node)
        readers[e.src_node].append(e.dst_node)
    group_of: dict[str, int] = {}
    upstream: dict[str, set[int]] = {}   # groups with a path to the node
    groups: list[list[str]] = []
    for node in topological_order(graph):
        name = node.name
        preds = list(dict.fromkeys(producers[name]))
        if name in chosen:
            allowed = list(dict.fromkeys(
                group_of[p] for p in preds if p in group_of and all(
                    group_of.get(q) == group_of[p] or group_of[p] not in upstream[q]
                    for q in preds)))
            group_of[name] = allowed[0] if allowed else len(groups)
            if not allowed:
                groups.append([])
            groups[group_of[name]].append(name)
            for other in allowed[1:]:  # the node joins two groups: one, if still convex
                if _mergeable(groups, group_of, producers, upstream, allowed[0], other):
                    _merge(groups, group_of, upstream, allowed[0], other)
        upstream[name] = set().union(*(upstream[p] for p in preds))
        if name in group_of:
            upstream[name].add(group_of[name])
    for index, group in enumerate(groups):
        # A source alone (a constant) joins its readers when they share a group.
        if len(group) == 1 and not producers[group[0]]:
            owners = {group_of.get(r) for r in readers[group[0]]}
            if len(owners) == 1 and None not in owners and owners != {index}:
                groups[owners.pop()].append(group.pop())
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    ordered = [sorted(g, key=order.__getitem__) for g in groups if g]
    return sorted(ordered, key=lambda g: order[g[0]])


def convex_partitions(module: Module, nodes) -> list[list]:
    """``nodes`` (NodeRefs) as :func:`convex_groups` splits each graph's
    share of them: what a target that runs neighbouring nodes as one
    launch returns from ``Target.partitions``."""
    by_graph: dict[str, set[str]] = {}
    for ref in nodes:
        by_graph.setdefault(ref.graph, set()).add(ref.node)
    return [[NodeRef(graph, name) for name in group]
            for graph, names in by_graph.items()
            for group in convex_groups(module.graph(graph), names)]


def _mergeable(groups, group_of, producers, upstream, first: int, second: int) -> bool:
    """No path from either group reaches the other through a node of neither."""
    both = set(groups[first]) | set(groups[second])
    for mine, theirs in ((first, second), (second, first)):
        for node in groups[theirs]:
            if any(q not in both and mine in upstream[q] for q in producers[node]):
                return False
    return True


def _merge(groups, group_of, upstream, first: int, second: int) -> None:
    for node in groups[second]:
        group_of[node] = first
    groups[first].extend(groups[second])
    groups[second] = []
    for reached in upstream.values():
        if second in reached:
            reached.discard(second)
            reached.add(first)


def _check(module: Module, graph: Graph, inside: set[str]) -> None:
    names = {n.name for n in graph.nodes}
    where = f"graph '@{graph.name}'"
    if not inside:
        raise OutlineError(f"{where}: no nodes to outline")
    if inside - names:
        raise OutlineError(f"{where} has no node(s) {sorted(inside - names)}")
    for member in sorted(inside):
        node = graph.node(member)
        if not node.is_leaf:
            raise OutlineError(f"{where}: '{member}' is an internal node; outline leaf nodes")
    for e in graph.edges:
        crossing = (e.src_node in inside) != (e.dst_node in inside)
        if crossing and (e.streaming or e.kind != "all-to-all"):
            raise OutlineError(f"{where}: edge {e.src_node}.{e.src_port} -> "
                               f"{e.dst_node}.{e.dst_port} enters or leaves the group as a "
                               f"{'streaming' if e.streaming else e.kind} edge")
    if any(b.streaming for b in graph.bind_ins if b.dst_node in inside) or any(
            b.streaming for b in graph.bind_outs if b.src_node in inside):
        raise OutlineError(f"{where}: a streaming binding reaches the group")
    escaped = (_reachable(graph, inside, forward=True)
               & _reachable(graph, inside, forward=False)) - inside
    if escaped:
        raise OutlineError(f"{where}: {sorted(escaped)} both read from and feed the group "
                           f"{sorted(inside)}; the group would depend on itself")


def _reachable(graph: Graph, inside: set[str], forward: bool) -> set[str]:
    """Nodes outside ``inside`` reachable from it along (or against) edges."""
    step: dict[str, set[str]] = {}
    for e in graph.edges:
        src, dst = (e.src_node, e.dst_node) if forward else (e.dst_node, e.src_node)
        step.setdefault(src, set()).add(dst)
    seen: set[str] = set()
    frontier = [n for m in inside for n in step.get(m, ()) if n not in inside]
    while frontier:
        node = frontier.pop()
        if node not in seen:
            seen.add(node)
            frontier.extend(step.get(node, ()))
    return seen


def _unique(items: list) -> list:
    """``items`` without repeats (two member ports fed by one source give one
    edge into the outlined node), in order."""
    return list(dict.fromkeys(items))


@dataclass(frozen=True)
class Members:
    """What a target runs for one launch, by its ports: a partition (an
    outlined internal node: its child graph) or a single leaf node.

    ``graph`` holds ``names`` (producers first); ``feeds`` maps each
    member input ``(node, port)`` coming from outside to the launch's port;
    ``results`` lists the launch's out ports with the member ``(node,
    port)`` producing each; ``inputs`` are the launch's in parameters."""

    graph: Graph
    names: tuple[str, ...]
    feeds: dict[tuple[str, str], str]
    results: tuple[tuple[str, tuple[str, str]], ...]
    inputs: tuple[Parameter, ...]


def members(module: Module, graph_name: str, node_name: str) -> Members:
    """The :class:`Members` of node ``node_name`` of ``graph_name``, as a
    target's ``compile`` receives it in ``nodes``."""
    parent = module.graph(graph_name)
    node = parent.node(node_name)
    if isinstance(node.body, GraphBody):
        graph = module.graph(node.body.graph)
        return Members(graph, tuple(n.name for n in topological_order(graph)),
                       {(b.dst_node, b.dst_port): b.param for b in graph.bind_ins},
                       tuple((b.param, (b.src_node, b.src_port)) for b in graph.bind_outs),
                       tuple(p for p in graph.params if p.direction == "in"))
    params = module.node_params(node)
    return Members(parent, (node_name,),
                   {(node_name, p.name): p.name for p in params if p.direction == "in"},
                   tuple((p.name, (node_name, p.name)) for p in params if p.writes),
                   tuple(p for p in params if p.direction == "in"))
