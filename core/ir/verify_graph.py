"""Graph-level checks: the root, graph nesting, node names, and every edge
and binding (endpoints, directions, types, producers, cycles, streaming).

``check_graphs(module, report)`` checks every graph of a module.
"""
from __future__ import annotations

from .graph import EDGE_KINDS, BindIn, BindOut, Edge, Graph, GraphBody
from .parameter import Parameter
from .text import print_expr
from .types import BufferType
from .verify_common import (
    Report, check_out_shapes, check_param_list, cycles, quoted, type_mismatch,
)
from .verify_node import check_node

COUNT_WORDS = {2: "two", 3: "three", 4: "four"}


def check_graphs(module, report: Report) -> None:
    """Check the root, the nesting of graphs and each graph."""
    if module.root not in module.graphs:
        report.error(f"root graph '@{module.root}' is not defined",
                     f"add graph '@{module.root}' or set root to one of "
                     f"{quoted(module.graphs)}")
    _check_nesting(module, report)
    for key, graph in module.graphs.items():
        graph_report = report.at(graph=getattr(graph, "name", key))
        if not isinstance(graph, Graph):
            graph_report.error(f"'{key}' is not a Graph",
                               "store Graph objects in module.graphs")
            continue
        if graph.name != key:
            graph_report.error(f"graph '@{graph.name}' is stored under the "
                               f"name '{key}'", "use the graph's own name as "
                               "its key in module.graphs")
        GraphChecker(module, graph, graph_report).check()


def _check_nesting(module, report: Report) -> None:
    """A graph may not contain itself, directly or through other graphs."""
    nested = [(name, node.body.graph) for name, graph in module.graphs.items()
              for node in getattr(graph, "nodes", ()) if isinstance(node.body, GraphBody)]
    for first, cycle in cycles(module.graphs, nested):
        path = " -> ".join(f"'@{g}'" for g in cycle + [first])
        report.error(f"graph '@{first}' contains itself: {path}",
                     "graphs nest as a tree; replace the inner use of "
                     f"'@{first}' by a copy or a loop inside a kernel",
                     graph=first)


def edge_text(edge: Edge) -> str:
    return f"edge {edge.src_node}.{edge.src_port} -> {edge.dst_node}.{edge.dst_port}"


class GraphChecker:
    """Checks one graph; ``report`` already names the graph."""

    def __init__(self, module, graph: Graph, report: Report):
        self.module = module
        self.graph = graph
        self.report = report
        self.nodes = {}
        self.ports: dict[str, dict[str, Parameter] | None] = {}
        self.params = {p.name: p for p in graph.params}
        # destination -> descriptions of what writes it
        self.producers: dict[tuple[str, str], list[str]] = {}
        self.out_producers: dict[str, list[str]] = {}
        self.node_edges: list[Edge] = []

    def check(self) -> None:
        owner = f"graph '@{self.graph.name}'"
        check_param_list(self.graph.params, self.report, owner)
        check_out_shapes(self.graph.params, self.report, owner)
        self._check_nodes()
        for edge in self.graph.edges:
            self._check_edge(edge)
        for binding in self.graph.bind_ins:
            self._check_bind_in(binding)
        for binding in self.graph.bind_outs:
            self._check_bind_out(binding)
        self._check_producers()
        self._check_cycles()
        self._check_streaming()

    def _check_nodes(self) -> None:
        for node in self.graph.nodes:
            node_report = self.report.at(node=node.name)
            if node.name in self.nodes:
                node_report.error(f"two nodes are named '{node.name}'",
                                  "give every node of a graph its own name")
                continue
            self.nodes[node.name] = node
            self.ports[node.name] = check_node(self.module, node, node_report)

    # -- endpoints -------------------------------------------------------
    def _node_port(self, node: str, port: str, what: str) -> Parameter | None:
        """The port ``node.port`` named by ``what``; reports if missing."""
        if node not in self.nodes:
            self.report.error(f"{what} names unknown node '{node}'",
                              f"add node '{node}' or use one of "
                              f"{quoted(self.nodes)}", node=node)
            return None
        ports = self.ports[node]
        if ports is None:
            return None  # the node's body is already reported
        if port not in ports:
            self.report.error(f"{what}: node '{node}' has no port '{port}'",
                              f"use one of its ports {quoted(ports)}",
                              node=node, port=port)
            return None
        return ports[port]

    def _graph_param(self, name: str, what: str) -> Parameter | None:
        if name not in self.params:
            self.report.error(
                f"{what} names unknown parameter '{name}' of graph "
                f"'@{self.graph.name}'", f"add the parameter or use one of "
                f"{quoted(self.params)}", port=name)
        return self.params.get(name)

    def _check_source(self, port: Parameter | None, node: str, what: str) -> None:
        if port is not None and not port.writes:
            self.report.error(
                f"{what} starts at '{port.name}' of node '{node}', which is "
                f"not an output (direction {port.direction})",
                "start it at an out or inout port", node=node, port=port.name)

    def _check_destination(self, port: Parameter | None, node: str,
                           what: str) -> None:
        if port is not None and not port.reads:
            self.report.error(
                f"{what} ends at '{port.name}' of node '{node}', which is not "
                f"an input (direction {port.direction})",
                "end it at an in, inout or private port", node=node,
                port=port.name)

    def _check_types(self, source: Parameter | None, dest: Parameter | None,
                     what: str, **where) -> None:
        if source is None or dest is None:
            return
        reason = type_mismatch(source.type, dest.type)
        if reason:
            self.report.error(
                f"{what}: type {source.type} does not match {dest.type} "
                f"({reason})", "make both ends the same element type, rank "
                "and fixed dims", **where)

    # -- edges and bindings ----------------------------------------------
    def _check_edge(self, edge: Edge) -> None:
        what = edge_text(edge)
        source = self._node_port(edge.src_node, edge.src_port, what)
        dest = self._node_port(edge.dst_node, edge.dst_port, what)
        self._check_source(source, edge.src_node, what)
        self._check_destination(dest, edge.dst_node, what)
        if edge.kind not in EDGE_KINDS:
            self.report.error(f"{what} has unknown kind '{edge.kind}'",
                              f"use one of {quoted(EDGE_KINDS)}",
                              node=edge.dst_node)
        scalar = next((p for p in (source, dest) if p is not None
                       and not isinstance(p.type, BufferType)), None)
        if scalar is not None:
            self.report.error(
                f"{what} carries scalar '{scalar.name}'; edges carry buffers "
                "only", "feed the scalar from a graph scalar parameter "
                "through a BindIn", node=edge.dst_node, port=edge.dst_port)
        else:
            self._check_types(source, dest, what, node=edge.dst_node,
                              port=edge.dst_port)
        self._check_one_to_one(edge, what)
        self.producers.setdefault((edge.dst_node, edge.dst_port), []).append(what)
        if edge.src_node in self.nodes and edge.dst_node in self.nodes:
            self.node_edges.append(edge)

    def _check_one_to_one(self, edge: Edge, what: str) -> None:
        if edge.kind != "one-to-one":
            return
        src, dst = self.nodes.get(edge.src_node), self.nodes.get(edge.dst_node)
        if src is None or dst is None or src.replication == dst.replication:
            return
        self.report.error(
            f"one-to-one {what} joins nodes of different replication "
            f"('{src.name}': {_replication_text(src)}, '{dst.name}': "
            f"{_replication_text(dst)})", "give both nodes the same "
            "replication or use an all-to-all edge", node=dst.name)

    def _check_bind_in(self, binding: BindIn) -> None:
        what = f"binding in '{binding.param}' -> {binding.dst_node}.{binding.dst_port}"
        param = self._graph_param(binding.param, what)
        dest = self._node_port(binding.dst_node, binding.dst_port, what)
        if param is not None and not param.reads:
            self.report.error(
                f"{what} reads graph parameter '{param.name}', which is an "
                f"output (direction {param.direction})", "bind outputs with "
                "BindOut, or make the parameter in or inout", port=param.name)
        self._check_destination(dest, binding.dst_node, what)
        self._check_types(param, dest, what, node=binding.dst_node,
                          port=binding.dst_port)
        self.producers.setdefault((binding.dst_node, binding.dst_port),
                                  []).append(f"graph input '{binding.param}'")

    def _check_bind_out(self, binding: BindOut) -> None:
        what = f"binding out {binding.src_node}.{binding.src_port} -> '{binding.param}'"
        source = self._node_port(binding.src_node, binding.src_port, what)
        param = self._graph_param(binding.param, what)
        self._check_source(source, binding.src_node, what)
        if param is not None and not param.writes:
            self.report.error(
                f"{what} writes graph parameter '{param.name}', which is an "
                f"input (direction {param.direction})", "bind inputs with "
                "BindIn, or make the parameter out or inout", port=param.name)
        self._check_types(source, param, what, port=binding.param)
        self.out_producers.setdefault(binding.param, []).append(
            f"node '{binding.src_node}'")

    # -- whole-graph rules -------------------------------------------------
    def _check_producers(self) -> None:
        for (node, port), sources in self.producers.items():
            if len(sources) > 1:
                self.report.error(
                    f"input '{port}' of node '{node}' is written by "
                    f"{_count(len(sources))} producers ({'; '.join(sources)})",
                    f"keep one producer for {node}.{port}", node=node, port=port)
        for name, ports in self.ports.items():
            for port in (ports or {}).values():
                if port.reads and (name, port.name) not in self.producers:
                    self.report.error(
                        f"input '{port.name}' is not connected",
                        f"add an edge into {name}.{port.name} or bind a graph "
                        "input to it", node=name, port=port.name)
        for param in self.graph.params:
            sources = self.out_producers.get(param.name, [])
            if len(sources) > 1:
                self.report.error(
                    f"output '{param.name}' is written by {_count(len(sources))} "
                    f"nodes ({', '.join(sources)})",
                    f"keep one BindOut into '{param.name}'", port=param.name)
            elif not sources and param.direction == "out":
                self.report.error(f"output '{param.name}' is never produced",
                                  f"add a BindOut from a node's output to "
                                  f"'{param.name}'", port=param.name)

    def _check_cycles(self) -> None:
        flow = [(e.src_node, e.dst_node) for e in self.node_edges]
        for first, cycle in cycles((), flow):
            path = " -> ".join(f"'{n}'" for n in cycle + [cycle[0]])
            self.report.error(f"nodes {path} form a cycle; a dataflow graph "
                              "must be acyclic", "remove one of the edges on "
                              "the cycle", node=first)

    def _check_streaming(self) -> None:
        if any(b.streaming for b in self.graph.bind_ins):
            return
        for binding in self.graph.bind_outs:
            if binding.streaming:
                self.report.error(
                    f"streaming output '{binding.param}' needs a streaming "
                    "input, but no BindIn of the graph is streaming",
                    "mark the BindIn of the per-frame input streaming, or "
                    "make this BindOut non-streaming", port=binding.param)


def _count(n: int) -> str:
    return COUNT_WORDS.get(n, str(n))


def _replication_text(node) -> str:
    if not node.replication:
        return "not replicated"
    try:
        return "(" + ", ".join(print_expr(e) for e in node.replication) + ")"
    except Exception:  # the text module may be unavailable; repr still says it
        return repr(node.replication)
