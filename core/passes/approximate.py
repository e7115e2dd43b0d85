"""``approximate``: give tensor-op and kernel nodes approximation knobs
(ApproxHPVM).

A knob is a ``+``-joined list of techniques (``exact`` for none):

- ``fp16``: the node computes in half precision (node attribute
  ``precision``, tensor_ops/precision.py); any float tensor op;
- ``int8``: a conv2d, gemm or matmul quantises its operands to 8-bit
  integers (tensor_ops/int8.py); the node must be calibrated first (the
  ``calibrate`` pass records its scales);
- ``tf32``: a conv2d, gemm or matmul rounds its operands to TensorFloat-32
  (tensor_ops/precision.py; GPUs' tensor cores);
- ``perf-rows-K-O`` / ``perf-cols-K-O``: conv2d output rows / columns
  ``i`` with ``i % K == O`` are not computed but interpolated; the node
  computes the kept ones and ``perforation_fill`` nodes (named
  ``<node>_fill_rows`` / ``_cols``) after it restore the full size;
- ``samp-K-O``: conv2d filter sampling (``sample_filter``);
- ``redsamp-K-O``: reduction sampling of a max or average pool
  (``sample``).

A kernel node takes ``perf-rows-K-O`` / ``perf-cols-K-O`` alone: loop
perforation of its instances along replication dimension 0 / 1, the
skipped rows of its outputs interpolated by ``<node>_fill_rows`` /
``_cols`` nodes (instance_perforation.py).

The option ``knobs`` lists ``node:knob`` pairs (``node`` may be
``graph.node`` where the name alone is ambiguous)::

    hpvm opt model.hpvm -p "approximate{knobs=conv1:perf-rows-2-0+fp16,conv2:samp-3-1}"
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import Diagnostic, Location, VerificationError
from ..ir.graph import BindOut, Edge, Graph, KernelBody, Module, Node, TensorBody
from ..ir.tensor_ops import tensor_node
from ..ir.tensor_ops.int8 import int8_problem
from ..ir.tensor_ops.precision import PRODUCT_OPS
from .errors import PassError
from .instance_perforation import AXES, perforate, perforation_refusal
from .names import unique_name
from .registry import Option, register_pass

TECHNIQUES = {
    "perf-rows": ("perforate_rows", ("conv2d",)),
    "perf-cols": ("perforate_cols", ("conv2d",)),
    "samp": ("sample_filter", ("conv2d",)),
    "redsamp": ("sample", ("max_pool", "avg_pool")),
}
"""Technique prefix -> (the op attribute it sets, the ops that have it)."""
EXACT = "exact"
KNOB_FIX = ("write a knob as exact, fp16, int8, tf32, perf-rows-K-O, perf-cols-K-O, samp-K-O or "
            "redsamp-K-O (K in 2..16, 0 <= O < K), joined with '+'")


@dataclass(frozen=True)
class Knob:
    """A parsed knob: the precision and the op attributes it sets."""

    name: str
    precision: str = "fp32"
    attrs: dict = field(default_factory=dict)

    def ops(self) -> set[str] | None:
        """The ops this knob applies to (None: any float tensor op)."""
        allowed = set(PRODUCT_OPS) if self.precision in ("int8", "tf32") else None
        for attr in self.attrs:
            ops = {op for prefix, (name, ops) in TECHNIQUES.items() if name == attr
                   for op in ops}
            allowed = ops if allowed is None else allowed & ops
        return allowed


def parse_knob(text: str) -> Knob:
    """``text`` as a Knob; ValueError with the grammar otherwise."""
    precision, attrs = "fp32", {}
    for part in text.strip().split("+"):
        if part in (EXACT, "fp32"):
            continue
        if part in ("fp16", "int8", "tf32"):
            if precision != "fp32":
                raise ValueError(f"knob '{text}' sets the precision twice")
            precision = part
            continue
        prefix, _, numbers = part.rpartition("-")
        prefix, _, every = prefix.rpartition("-")
        if prefix not in TECHNIQUES or not (every.isdigit() and numbers.isdigit()):
            raise ValueError(f"unknown knob part '{part}' in '{text}'")
        attr = TECHNIQUES[prefix][0]
        if attr in attrs:
            raise ValueError(f"knob '{text}' sets {prefix} twice")
        every_value, offset = int(every), int(numbers)
        if not 2 <= every_value <= 16 or not 0 <= offset < every_value:
            raise ValueError(f"knob part '{part}': need 2 <= K <= 16 and 0 <= O < K")
        attrs[attr] = (every_value, offset)
    return Knob(text.strip(), precision, attrs)


@register_pass("approximate", options=[
    Option("knobs", list, (), "node:knob pairs, e.g. conv1:perf-rows-2-0+fp16")])
def approximate(module: Module, knobs: tuple[str, ...]) -> Module:
    """Apply approximation knobs (fp16, perforation, sampling) to tensor-op
    nodes, and instance perforation to kernel nodes."""
    return apply_knobs(module, dict(_pair(item) for item in knobs))


def apply_knobs(module: Module, knobs: dict[str, str]) -> Module:
    """``module`` with ``knobs`` (node name or ``graph.node`` -> knob text)
    applied; PassError naming the node and the fix for a bad pair."""
    for where, text in knobs.items():
        graph, node = _find(module, where)
        try:
            knob = parse_knob(text)
        except ValueError as error:
            raise _error(graph, node.name, str(error), KNOB_FIX) from None
        if isinstance(node.body, KernelBody):
            module = _perforate_kernel_node(module, graph, node, knob)
        else:
            module = dataclasses.replace(module, graphs={
                **module.graphs, graph.name: _apply(graph, node, knob)})
    return module


def _perforate_kernel_node(module: Module, graph: Graph, node: Node, knob: Knob) -> Module:
    """A kernel node's knob: perforation of its instances (perf-rows on
    replication dimension 0, perf-cols on 1), rows first."""
    if knob.precision != "fp32" or set(knob.attrs) - set(AXES):
        raise _error(graph, node.name, f"knob '{knob.name}' does not apply to a kernel node",
                     "use perf-rows-K-O or perf-cols-K-O (the node's instances) or exact")
    for attr, dim in AXES.items():
        if attr not in knob.attrs:
            continue
        reason = perforation_refusal(module, graph, node, dim)
        if reason:
            raise _error(graph, node.name, f"knob '{knob.name}' does not fit: {reason}",
                         "choose another node or knob")
        functions, graph = perforate(module, graph, node, dim, *knob.attrs[attr])
        module = dataclasses.replace(module, functions=functions,
                                     graphs={**module.graphs, graph.name: graph})
        node = graph.node(node.name)
    return module


def _pair(item: str) -> tuple[str, str]:
    node, sep, knob = item.partition(":")
    if not sep or not node or not knob:
        raise PassError(Diagnostic(Location(), f"approximate: '{item}' is not node:knob",
                                   "write e.g. knobs=conv1:fp16,conv2:perf-rows-2-0"))
    return node.strip(), knob.strip()


def _find(module: Module, where: str) -> tuple[Graph, Node]:
    graph_name, _, node_name = where.rpartition(".")
    found = [(g, n) for g in module.graphs.values() for n in g.nodes
             if n.name == node_name and graph_name in ("", g.name)]
    if len(found) != 1:
        leaf_nodes = sorted(n.name for g in module.graphs.values() for n in g.nodes
                            if isinstance(n.body, (TensorBody, KernelBody)))
        problem = "is ambiguous" if found else "names no node"
        fix = ("write it as graph.node" if found else
               f"name a leaf node: {', '.join(leaf_nodes) or '(the module has none)'}")
        raise PassError(Diagnostic(Location(), f"approximate: '{where}' {problem}", fix))
    return found[0]


def _error(graph: Graph, node: str, message: str, fix: str) -> PassError:
    return PassError(Diagnostic(Location(graph=graph.name, node=node),
                                f"approximate: {message}", fix))


def _apply(graph: Graph, node: Node, knob: Knob) -> Graph:
    body = node.body
    if not isinstance(body, TensorBody) or not all(
            p.type.element.is_float for p in body.params):
        raise _error(graph, node.name, "only tensor-op nodes on floats take approximation "
                     "knobs", "choose a tensor-op node (conv2d, gemm, pools ...)")
    ops = knob.ops()
    if ops is not None and body.op not in ops:
        raise _error(graph, node.name, f"knob '{knob.name}' does not apply to a {body.op}",
                     f"use it on one of: {', '.join(sorted(ops))}; or use fp16 here")
    taken = [a for a in knob.attrs if body.attrs.get(a, ())]
    if taken:
        raise _error(graph, node.name, f"already has {taken[0]}={body.attrs[taken[0]]}",
                     "approximate each node once")
    inputs = {p.name: p.type for p in body.params if p.direction == "in"}
    attrs = {**body.attrs, **knob.attrs}
    try:
        approximated = tensor_node(node.name, body.op, inputs, attrs, node.hint)
    except VerificationError as error:
        raise _error(graph, node.name, f"knob '{knob.name}' does not fit: {error}",
                     "choose another knob for this node") from None
    attributes = dict(node.attributes)
    if knob.precision != "fp32":
        attributes["precision"] = knob.precision
    approximated = dataclasses.replace(node, body=approximated.body, attributes=attributes)
    problem = int8_problem(approximated) if knob.precision == "int8" else None
    if problem:
        raise _error(graph, node.name, f"knob '{knob.name}': {problem[0]}", problem[1])
    nodes = [approximated if n.name == node.name else n for n in graph.nodes]
    graph = dataclasses.replace(graph, nodes=tuple(nodes))
    return _add_fills(graph, node, approximated)


def _add_fills(graph: Graph, exact: Node, approximated: Node) -> Graph:
    """perforation_fill nodes after a perforated conv, the conv's readers
    moved to the last of them; an FP16 conv's fills compute in FP16 too
    (no widening of the half-precision result between the two)."""
    full = next(p.type for p in exact.body.params if p.direction == "out")
    source = (exact.name, "y")
    result = next(p.type for p in approximated.body.params if p.direction == "out")
    nodes, edges = list(graph.nodes), []
    for axis, attr in ((2, "perforate_rows"), (3, "perforate_cols")):
        pattern = approximated.body.attrs.get(attr, ())
        if not pattern:
            continue
        name = unique_name(f"{exact.name}_fill_{attr.split('_')[1]}", {n.name for n in nodes})
        fill = tensor_node(name, "perforation_fill", {"x": result},
                           {"axis": axis, "every": pattern[0], "offset": pattern[1],
                            "size": full.shape[axis]}, exact.hint)
        if approximated.attributes.get("precision") == "fp16":  # half stays half
            fill = dataclasses.replace(fill, attributes={"precision": "fp16"})
        nodes.append(fill)
        edges.append(Edge(source[0], source[1], name, "x"))
        source = (name, "y")
        result = next(p.type for p in fill.body.params if p.direction == "out")
    if source[0] == exact.name:
        return graph
    moved = tuple(dataclasses.replace(e, src_node=source[0], src_port=source[1])
                  if (e.src_node, e.src_port) == (exact.name, "y") else e for e in graph.edges)
    bind_outs = tuple(BindOut(source[0], source[1], b.param, b.streaming)
                      if (b.src_node, b.src_port) == (exact.name, "y") else b
                      for b in graph.bind_outs)
    return dataclasses.replace(graph, nodes=tuple(nodes), edges=moved + tuple(edges),
                               bind_outs=bind_outs)
