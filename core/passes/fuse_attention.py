"""``fuse-attention``: a matmul whose result only a row program reads, and
the matmul that reads that program's result as its left operand, become
one ``attention`` node (hpvm.ir.tensor_ops.attention): y = rows(a @ b) @ c
with the scores a @ b computed a block of rows at a time and never
stored whole.  Scaled dot-product attention takes this form once
fuse-rows has made its scale, mask and softmax one ``rowwise`` node; so
does any other program over the rows of a product read by a product.

The three nodes are fused when the first product's result has no other
reader, the row program (over the last axis) reads it whole (the
program's result has its shape) and has no other reader, the second
product reads the program's result as ``a`` and its ``b``'s batch dims
broadcast to the scores', all three compute in fp32 without int8 scales,
and the number of keys (the scores' last dim) is fixed.  The fused node
keeps the second product's name.

The fusion suits a target that lowers ``attention`` to one kernel per
block of rows (the cpu: the block's scores stay in its caches); the
compiler runs this pass before placement when every listed target takes
``attention`` natively and none turns it off (the cpu's option
``fuse_attention``; hpvm.runtime.compiler.TARGET_FUSIONS), and a target
that does not gets the three ops as they were.
"""
from __future__ import annotations

import dataclasses

from ..errors import VerificationError
from ..ir.graph import Graph, Module, Node, TensorBody
from ..ir.tensor_ops import get_op, tensor_node
from ..ir.tensor_ops.attention import OPERANDS
from ..ir.tensor_ops.int8 import SCALES_ATTRIBUTE
from ..ir.tensor_ops.precision import PRECISION_ATTRIBUTE
from .registry import register_pass
from .tensor_graph import (
    drop_edges_into, feeds_of, port_type, producer, remove_nodes, replace_node,
    rewrite_each_graph, sole_consumer,
)


@register_pass("fuse-attention")
def fuse_attention(module: Module) -> Module:
    """Fuse matmul -> rowwise -> matmul into attention nodes."""
    return rewrite_each_graph(module, _fuse_at)


def _tensor_op(node: Node, op: str) -> bool:
    return (isinstance(node.body, TensorBody) and node.body.op == op
            and PRECISION_ATTRIBUTE not in node.attributes
            and SCALES_ATTRIBUTE not in node.attributes)


def _fuse_at(graph: Graph, node: Node) -> Graph | None:
    """The graph with ``node`` (the second product) fused, or None."""
    if not _tensor_op(node, "matmul"):
        return None
    into_a = producer(graph, node.name, "a")
    rows = graph.node(into_a.src_node) if into_a is not None else None
    if rows is None or not _tensor_op(rows, "rowwise") or \
            get_op("rowwise").resolve_attrs(rows.body.attrs)["axes"] != 1 or \
            sole_consumer(graph, rows.name, "y") != into_a:
        return None
    found = _scores_input(graph, rows)
    if found is None:
        return None
    scores_port, first = found
    program, others = _program_on_scores(rows, scores_port)
    sources = {"x0": (first.name, "a"), "x1": (first.name, "b"), "x2": (node.name, "b")}
    sources.update({f"x{index}": (rows.name, port)
                    for index, port in enumerate(others, start=OPERANDS)})
    types = {port: port_type(graph.node(at[0]), at[1]) for port, at in sources.items()}
    try:
        fused = tensor_node(node.name, "attention", types, {"program": program},
                            hint=node.hint)
    except VerificationError:  # a symbolic number of keys, batch dims of c too wide
        return None
    if port_type(node, "y") != port_type(fused, "y"):
        return None
    edges, bind_ins = feeds_of(graph, sources, node.name)
    graph = replace_node(drop_edges_into(graph, node.name),
                         dataclasses.replace(fused, attributes=node.attributes))
    graph = dataclasses.replace(graph, edges=graph.edges + edges,
                                bind_ins=graph.bind_ins + bind_ins)
    return remove_nodes(graph, {rows.name, first.name})


def _scores_input(graph: Graph, rows: Node) -> tuple[str, Node] | None:
    """(the port, the product) of the row program's input that a matmul
    of the program's own shape feeds and nothing else reads."""
    result = port_type(rows, "y")
    for param in rows.body.params:
        if param.direction != "in" or param.type != result:
            continue
        edge = producer(graph, rows.name, param.name)
        source = graph.node(edge.src_node) if edge is not None else None
        if source is not None and _tensor_op(source, "matmul") and \
                sole_consumer(graph, source.name, "y") == edge:
            return param.name, source
    return None


def _program_on_scores(rows: Node, scores_port: str) -> tuple[tuple, list[str]]:
    """The row program with the scores as input 0 and the other inputs
    after, in their order; those inputs' ports."""
    others = [p.name for p in rows.body.params
              if p.direction == "in" and p.name != scores_port]
    number = {int(scores_port[1:]): 0}
    number.update({int(port[1:]): index for index, port in enumerate(others, start=1)})
    program = tuple(("input", number[s[1]]) if s[0] == "input" else s
                    for s in rows.body.attrs["program"])
    return program, others
